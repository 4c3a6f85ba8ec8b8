"""Place names a request may write without a preposition: the gazetteer (``nl/data/places.json.gz``).

The cue tables read a place after its preposition or particle ("in Toronto", "苏州的"); people also
type the name alone ("dentist toronto", "苏州酒店", "서울 카페"). The gazetteer holds the names of the
world's cities of 100,000 people or more and of the countries, in the scripts the cue tables read,
and the towns of 15,000 or more by their own Latin-script name ("Galway", "Zakopane"), from GeoNames
(``scripts/build_places.py``, which says what is left out and why). Keys are ``stem_fold`` of a name;
values the place's English name.

>>> gazetteer()[stem_fold("Toronto")], gazetteer()[stem_fold("苏州")], stem_fold("nice") in gazetteer()
('Toronto', 'Suzhou', False)
>>> dictionary_form("казани", "ru"), dictionary_form("Krakowie", "pl"), dictionary_form("питере", "ru")
('казань', 'Kraków', 'Санкт-Петербург')
"""

from __future__ import annotations

import gzip
import itertools
import json
from functools import lru_cache
from importlib import resources

from geoql.core.errors import GeoqlError
from geoql.nl.lexicon import phrase_lemma, place_lemmas
from geoql.nl.words import stem_fold

FORMAT = 1

__all__ = ["dictionary_form", "gazetteer", "is_town", "nicknames", "word_cities", "word_cities_in"]


@lru_cache(maxsize=1)
def _data() -> dict:
    try:
        raw = resources.files("geoql.nl").joinpath("data", "places.json.gz").read_bytes()
        data = json.loads(gzip.decompress(raw))
    except (OSError, ValueError) as e:
        raise GeoqlError(f"nl/data/places.json.gz unreadable ({e}); reinstall geoql") from e
    if data.get("format") != FORMAT:
        raise GeoqlError(f"nl/data/places.json.gz has format {data.get('format')}, this GeoQL reads {FORMAT}; reinstall geoql")
    return data


@lru_cache(maxsize=1)
def gazetteer() -> dict[str, str]:
    """``stem_fold`` of a place name -> the place's English name (read once, on first use); nicknames too."""
    return {**{key: value[0] for key, value in _data()["names"].items()},
            **{key: value[1] for key, value in _data().get("nicknames", {}).items()}}


@lru_cache(maxsize=1)
def _towns() -> frozenset[str]:
    least = _data()["source"].get("min_population", 0)
    return frozenset(key for key, value in _data()["names"].items() if value[1] < least)


def is_town(name: str) -> bool:
    """Whether the gazetteer holds ``name`` only as a town under its ``min_population`` (Galway, Amet), a
    name that is read as a place only beside a thing the request names.

    >>> is_town("Galway"), is_town("amet"), is_town("London")
    (True, True, False)
    """
    return isinstance(name, str) and stem_fold(name) in _towns()


@lru_cache(maxsize=1)
def nicknames() -> dict[str, str]:
    """``stem_fold`` of what people call a city -> the city's own name: what a query names it by.

    >>> nicknames()[stem_fold("Питер")], nicknames()[stem_fold("NYC")]
    ('Санкт-Петербург', 'New York')
    """
    return {key: value[0] for key, value in _data().get("nicknames", {}).items()}


@lru_cache(maxsize=1)
def word_cities() -> dict[str, tuple[str, frozenset[str]]]:
    """Cities spelled like a common word ("Bristol", "Porto", "Nice"), which :func:`gazetteer` leaves
    out, each with the languages whose dictionaries hold the word (:func:`word_cities_in` leaves out a
    language's words: the reader takes English words out of an English request, "restaurants nice").

    >>> word_cities()[stem_fold("bristol")][0], stem_fold("bristol") in gazetteer(), sorted(word_cities()[stem_fold("nice")][1])
    ('Bristol', False, ['de', 'en'])
    """
    return {key: (value[0], frozenset(value[2])) for key, value in _data().get("word_names", {}).items()}


@lru_cache(maxsize=32)
def word_cities_in(language: str | None) -> dict[str, str]:
    """:func:`word_cities` a request in ``language`` may end on, name -> English name: those that are no
    word of it (all of them for ``None``, a request whose words tell no language: "conad bologna").

    >>> "nice" in word_cities_in("en"), "nice" in word_cities_in("fr"), "bologna" in word_cities_in(None)
    (False, True, True)
    """
    return {key: name for key, (name, langs) in word_cities().items() if language is None or language not in langs}


# Of a name of several words, this many spellings of it are looked up in the gazetteer.
MAX_SPELLINGS = 64


@lru_cache(maxsize=4096)
def dictionary_form(name: str, lang: str) -> str:
    """``name`` in its dictionary form where ``lang`` inflects it (``geoql.nl.lexicon.place_lemmas``):
    the likeliest spelling the gazetteer knows ("казани" -> "казань", not the first rule's "казан"),
    else the likeliest spelling. Of a name of several words, the spelling the gazetteer knows ("нижнем
    новгороде" -> "нижний новгород"), else what the language's phrase rules make of it
    (:func:`~geoql.nl.lexicon.phrase_lemma`: "pałacu kultury" -> "pałac kultury"), else the name as written
    ("starym mieście": which of its words agree with the noun the rules cannot tell).

    >>> dictionary_form("нижнем новгороде", "ru"), dictionary_form("pałacu kultury", "pl")
    ('нижний новгород', 'pałac kultury')

    Cached: the reading, its faithfulness evidence, the checks and the composition each ask it of the
    same places.
    """
    if not isinstance(name, str):
        return name
    form = _dictionary_form(name, lang)
    return nicknames().get(stem_fold(form), form)  # ("в питере" -> "Санкт-Петербург")


def _dictionary_form(name: str, lang: str) -> str:
    words = name.split()
    if len(words) > 1:
        lemmas = [place_lemmas(w, lang) or [w] for w in words]
        if all(len(options) == 1 for options in lemmas):
            return name  # a language without rules: the gazetteer is not read
        known = gazetteer()
        for spelling in itertools.islice(itertools.product(*lemmas), MAX_SPELLINGS):
            if stem_fold(" ".join(spelling)) in known:
                return " ".join(spelling)
        return phrase_lemma(name, lang) or name
    lemmas = place_lemmas(name, lang)
    known = gazetteer()
    return next((w for w in lemmas if stem_fold(w) in known), lemmas[0] if lemmas else name)
