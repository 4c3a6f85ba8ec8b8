"""geoql.nl.attributes: every word of nl/data/attributes.json, in every language, names its attribute."""

from __future__ import annotations

import json
import re
from importlib import resources

import pytest

from geoql.nl.attributes import attributes, find, mended

DATA = json.loads(resources.files("geoql.nl").joinpath("data", "attributes.json").read_text(encoding="utf-8"))
CASES = [(a["id"], lang, word) for a in DATA["attributes"] for lang, words in a["words"].items() for word in words
         if not word.endswith("*")]


@pytest.mark.parametrize("attribute, lang, word", CASES, ids=[f"{a}-{l}-{w}" for a, l, w in CASES])
def test_each_word_names_its_attribute(attribute, lang, word):
    found = [m for m in find(word, lang) if m.attribute is not None]
    # the whole word, one attribute: its own (a final "." is no letter of a token: "n.p.m.")
    assert [(m.text.lower(), m.attribute.id) for m in found] == [(word.lower().rstrip("."), attribute)]


def test_every_attribute_tests_a_key_and_its_tags_are_key_value():
    # (or the key and a pattern of its values: "surface~^(unpaved|gravel|...)$", which compiles)
    for a in attributes().values():
        assert a.key and all(re.fullmatch(r"[^=~]+(=[^=]+|~\^\(.+\)\$)", t) for t in a.yes + a.no), a.id
        assert all(re.split("[=~]", t)[0] == a.key for t in a.yes + a.no), a.id
        for t in a.yes + a.no:
            if "~" in t and "=" not in t:
                re.compile(t.partition("~")[2])


def test_a_word_inside_a_phrase_is_found_with_its_span():
    m = find("Cafés mit WLAN in Bonn", "de")
    assert [(x.text, x.span, x.attribute.id) for x in m if x.attribute] == [("WLAN", (10, 14), "wifi")]
    assert find("", "de") == [] and find(None, "de") == []


# A request read as English reads other Latin-script languages' attribute stems ("vegane", German);
# their short whole words stay names ("China", the Spanish "china": Chinese).
@pytest.mark.parametrize("text, want", [("vegane restaurants freiburg", [("vegane", "vegan")]),
                                        ("places of worship in China", []),
                                        ("restaurants that are not italian", [("italian", "cuisine_italian")])])
def test_english_reads_other_languages_stems(text, want):
    assert [(m.text, m.attribute.id) for m in find(text, "en")] == want


# (request, language, what the reading reads): an attribute word with a letter left out, added or two
# swapped is the word; a word the lexicon knows, an inflection (another ending), a letter changed for
# another, a key's part or a quoted name is no typo
TYPOS = [
    ("peaks in wales no elevaton", "es", "peaks in wales no elevation"),
    ("peaks in wales no elevaton", "en", "peaks in wales no elevaton"),  # (one edit from "elevator" too)
    ("hotels in bonn without webiste", "en", "hotels in bonn without website"),
    ("toilets w/ wheelchair acess", "en", "toilets w/ wheelchair access"),
    ("Apotheken ohne Öffnugszeiten", "de", "Apotheken ohne Öffnungszeiten"),
    ("farmacias sin horaio", "es", "farmacias sin horario"),
    ("bancs avec dosier", "fr", "bancs avec dossier"),
    ("lakes with lanes", "en", "lakes with lanes"),
    ("streets without lights", "en", "streets without lights"),
    ("Apotheken in Köln", "de", "Apotheken in Köln"),
    ("chiese a roma senza nome", "it", "chiese a roma senza nome"),
    ("objects with wikimedia_commons", "en", "objects with wikimedia_commons"),
    ('shops named "Adress"', "en", 'shops named "Adress"'),
    ("wikimedia commons links", "en", "wikimedia commons links"),
]


@pytest.mark.parametrize("text, lang, want", TYPOS, ids=[t for t, _, _ in TYPOS])
def test_a_misspelt_attribute_word_is_mended_and_nothing_else(text, lang, want):
    from geoql.nl.lexicon import Lexicon
    from geoql.nl.request import Knowledge, _known_words

    assert mended(text, lang, lambda: _known_words(Knowledge(Lexicon.default()), lang)) == want
