"""The words of a request: the one home of its content words, their stems and its topic words.

A request's words are read once, by :func:`geoql.nl.read_request`, into ``Request.words``,
``Request.stems`` and ``Request.topic_words``; the functions here are what it calls, and what a
caller uses on other text (a tag hit's name, a training request's words).

* :func:`content_words`: the folded words a query should account for, in order, each once:
  numbers whole ("50.86"), no function word of any cue table or of ``words.json``, no word of a
  script written without spaces (no segmenter here). The confidence checks these against the
  answer.
* :func:`word_stems`: the CPU default's word features: lower-cased without accents, English stop
  words out, a crude plural stem ("cafes" -> "cafe"). Its tag lexicon was fitted on these
  stems, so they stay as they are until the model is retrained on another definition.
* :func:`topic_words`: the words that make a request one about OpenStreetMap data when no tag
  is named (element types, ids, users, the map view, kinds of places).

>>> content_words("Show me all benches within 100 m of a playground in Zürich")
['benches', '100', 'playground', 'zurich']
>>> sorted(word_stems("Cafes in Bonn that have wifi"))
['bonn', 'cafe', 'have', 'wifi']
>>> stem("cities"), stem("benches"), stem("bus")
('city', 'bench', 'bus')
>>> topic_words("Ways and nodes changed by uid:10019212"), topic_words("tell me a joke")
(('ways', 'nodes', 'changed', 'uid'), ())
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import lru_cache
from importlib import resources
from typing import Iterable, Mapping

from geoql.nl.cues import all_tables, own_table
from geoql.nl.text import fold, spaceless

WORDS_FILE = "words.json"
# Numbers whole ("50.86", not "50" and "86"; a comma separates: "1000,50.93"), letters apart
# from digits ("1km" -> "1", "km").
WORD = re.compile(r"\d+(?:\.\d+)?|[^\W\d_]+")

# The database's own name says where the elements live, not which ones: "What OpenStreetMap
# features are in Sumy Oblast?" asks for every element (retrieval.text.without_database_name).
DATABASE_NAMES = frozenset({"openstreetmap", "osm"})
# The stems' function words: they occur in every request and would tie every tag to every other.
STEM_STOPWORDS = frozenset(
    """a an and are as at be by for from in into is it of on or that the their there these this those to with
    all any me my show find give list get where which what who whose please i we you""".split()
) | DATABASE_NAMES
_STEM_WORD = re.compile(r"[^\W_]+", re.UNICODE)


# ------------------------------------------------------------------ tables

@lru_cache(maxsize=1)
def words_table() -> dict:
    """``words.json``: English stop words and topic words, and words never taken for function words."""
    return json.loads(resources.files("geoql.nl").joinpath(WORDS_FILE).read_text(encoding="utf-8"))


def entry_words(value) -> Iterable[str]:
    """Every word of a cue entry: a phrase, a list of them, or a dict of lists."""
    if isinstance(value, str):
        yield from WORD.findall(fold(value))
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from entry_words(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from entry_words(v)


def _cue_words(tables) -> dict[str, frozenset[str]]:
    """Folded words of ``tables`` by what they say (see :func:`cue_words`)."""
    sections = {
        "stop": (("stop",), ("markers",), ("place", "prepositions"), ("place", "postpositions"), ("place", "articles"),
                 ("place", "particles"), ("negation", "scope_end")),
        "node": (("types", "node"),), "way": (("types", "way"),), "relation": (("types", "relation"),),
        "view": (("view",),), "user": (("users",), ("ids", "uid")), "ids": (("ids", "id"),),
        "name": (("names",),), "around": (("units",), ("around",)), "negation": (("negation", "before"), ("negation", "after")),
        "area": (("ids", "area"), ("place", "nouns")),
    }
    out: dict[str, set[str]] = {name: set() for name in sections}
    for table in tables:
        for name, paths in sections.items():
            for path in paths:
                value = table
                for part in path:
                    value = value.get(part, {}) if isinstance(value, Mapping) else {}
                out[name].update(entry_words(value))
    return {name: frozenset(words) for name, words in out.items()}


@lru_cache(maxsize=1)
def cue_words() -> dict[str, frozenset[str]]:
    """Folded words of the cue tables by what they say, every language together (no language guess
    needed: a word is a function word or a construct's word in any of them): ``stop``, ``node``,
    ``way``, ``relation``, ``view``, ``user``, ``ids``, ``name``, ``around``, ``negation``, ``area``."""
    return _cue_words(all_tables().values())


@lru_cache(maxsize=16)
def _own_cue_words(lang: str) -> dict[str, frozenset[str]]:
    """Those of ``lang``'s own table where ``all_tables`` leaves it out (Polish, Turkish, Dutch), else none."""
    own = own_table(lang)
    return _cue_words([own] if own is not None else [])


@lru_cache(maxsize=16)
def stopwords(lang: str = "en") -> frozenset[str]:
    """Function and request-frame words no query needs to cover (folded): ``words.json``'s list of
    ``lang`` (English's where it has none) and every cue table's, less the words never taken for them."""
    table = words_table()["stop"]
    content = {fold(w) for w in words_table()["content"]}
    own = _own_cue_words(lang)["stop"]
    return (frozenset(fold(w) for w in table.get(lang, table["en"])) | cue_words()["stop"] | own) - content


@lru_cache(maxsize=16)
def topic_vocabulary(lang: str = "en") -> frozenset[str]:
    """Words that name OpenStreetMap data: ``words.json``'s topic words and the cue tables' element
    types, view, user, id and area words, without their function words ("in" of "in the current view")."""
    table = words_table()["topic"]
    cues = cue_words()
    own = _own_cue_words(lang)
    phrases = frozenset().union(*(cues[name] | own.get(name, frozenset())
                                  for name in ("node", "way", "relation", "view", "user", "ids", "area")))
    return frozenset(fold(w) for w in table.get(lang, table["en"])) | (phrases - stopwords(lang))


# ------------------------------------------------------------------ words

def _is_number(text: str) -> bool:
    return text[:1].isdigit()


def content_words(text: str, lang: str = "en") -> list[str]:
    """The folded words of ``text`` a query should account for, in order, each once.

    Function words go, and so do words of scripts written without spaces (no segmenter
    here: they can be neither listed nor checked word by word).
    """
    stop = stopwords(lang)
    out: dict[str, None] = {}
    for w in WORD.findall(fold(text if isinstance(text, str) else "")):
        if w in stop or any(spaceless(ch) for ch in w) or (len(w) == 1 and not _is_number(w)):
            continue
        out[w] = None
    return list(out)


def stem(word: str) -> str:
    """A crude English plural stem: "cities" -> "city", "benches" -> "bench", "pubs" -> "pub"."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def within_one_edit(a: str, b: str) -> bool:
    """Damerau-Levenshtein distance of at most 1: one letter wrong, missing, extra, or two neighbours
    swapped ("corssing"/"crossing", "Brazil"/"Brasil").

    >>> within_one_edit("corssing", "crossing"), within_one_edit("Brazil", "Brasil"), within_one_edit("cafe", "cafes")
    (True, True, True)
    >>> within_one_edit("cafe", "bar")
    False
    """
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        return a[i + 1:] == b[i + 1:] or (i + 1 < len(a) and a[i] == b[i + 1] and a[i + 1] == b[i]
                                          and a[i + 2:] == b[i + 2:])
    return a[i:] == b[i + 1:]


def alike(word: str, token: str) -> bool:
    """Two folded words that are forms of one another ("restaurants"/"restaurant", "parking"/"park"),
    one misspelt ("resturants"), or a number and its rounding ("50.937468375" / "50.9374"): how a
    request's word meets a query's (the confidence's covered words, the answer's licence).

    >>> alike("restaurants", "restaurant"), alike("50.937468375", "50.9374"), alike("bench", "benches")
    (True, True, True)
    >>> alike("resturants", "restaurants"), alike("bar", "pub"), alike("50", "500")
    (True, False, False)
    """
    if word == token:
        return True
    if _is_number(word) or _is_number(token):
        return _is_number(word) and _is_number(token) and "." in word + token and (
            word.startswith(token) or token.startswith(word))
    if len(word) < 3 or len(token) < 3:
        return False
    if stem(word) == stem(token):
        return True
    short, long_ = sorted((word, token), key=len)
    if long_.startswith(short) and len(long_) - len(short) <= 3 and len(short) >= 4:
        return True
    common = 0
    for a, b in zip(word, token):
        if a != b:
            break
        common += 1
    if common >= 6 and common >= len(short) - 2:
        return True
    return len(short) >= 5 and within_one_edit(stem(word), stem(token))


def topic_words(text: str, lang: str = "en") -> tuple[str, ...]:
    """The folded words of ``text`` (or their plural stems) that name OpenStreetMap data, in order."""
    vocabulary = topic_vocabulary(lang)
    found = [w for w in WORD.findall(fold(text if isinstance(text, str) else "")) if w in vocabulary or stem(w) in vocabulary]
    return tuple(dict.fromkeys(found))


# ------------------------------------------------------------------ the CPU default's stems

def stem_fold(text: str) -> str:
    """Lower case without accents (NFKD, combining marks dropped): the folding of :func:`word_stems`."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def word_stems(text: str) -> frozenset[str]:
    """Folded words (:func:`stem_fold`) with a crude plural stem, stop words out: the CPU default's
    word features and the keys of its tag lexicon."""
    out = set()
    for w in _STEM_WORD.findall(stem_fold(text)):
        if w in STEM_STOPWORDS:
            continue
        if len(w) > 3 and w.endswith("ies"):
            w = w[:-3] + "y"
        elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
            w = w[:-1]
        out.add(w)
    return frozenset(out)
