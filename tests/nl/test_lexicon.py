"""geoql.nl.lexicon: request words in 13 languages reach iD's preset tags and NSI's brands.

The cases are data (``lexicon_cases/<lang>.jsonl``; ``brands.jsonl`` is read as English): each
line a request and either the tags one of its matches must carry (``tags``) or tags no match may
carry (``not``). They run on the committed data files, built from the pinned id-tagging-schema and
name-suggestion-index (no network).
"""

from __future__ import annotations

import gzip
import json
from importlib import resources
from pathlib import Path

import pytest

from geoql.index.config import SCHEMA_VERSION
from geoql.nl.cues import LANGUAGES as CUE_LANGUAGES
from geoql.nl.lexicon import (LANGUAGES, MIN_SCORE, STEMMERS, FeatureMatch, Lexicon, LexiconError, key_of, lookup,
                              place_lemmas, stemmer_version)

CASES_DIR = Path(__file__).parent / "lexicon_cases"
DATA = resources.files("geoql.nl").joinpath("data", "lexicon")


def _cases() -> list:
    out = []
    for path in sorted(CASES_DIR.glob("*.jsonl")):
        lang = "en" if path.stem == "brands" else path.stem
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                out.append(pytest.param(lang, json.loads(line), id=f"{path.stem}-{n}"))
    return out


@pytest.mark.parametrize("lang,case", _cases())
def test_lexicon_case(lang, case):
    found = [m.tags for m in lookup(case["nl"], lang)]
    if "tags" in case:
        assert tuple(case["tags"]) in found, f"{case['nl']!r} ({lang}) gave {found}"
    for tag in case.get("not", ()):
        assert not any(tag in tags for tags in found), f"{case['nl']!r} ({lang}) gave {tag}: {found}"


def test_every_language_has_cases_and_a_file():
    have = {p.stem for p in CASES_DIR.glob("*.jsonl")}
    assert set(LANGUAGES) | {"brands"} <= have
    # every language the cue tables read
    assert set(CUE_LANGUAGES) <= set(LANGUAGES)
    for name in [*LANGUAGES, "brands"]:
        assert DATA.joinpath(f"{name}.json.gz").is_file(), name


def test_data_records_its_pinned_sources():
    sources = Lexicon.default().sources
    assert sources["sources"]["@openstreetmap/id-tagging-schema"]["version"] == SCHEMA_VERSION
    assert sources["sources"]["name-suggestion-index"]["integrity"].startswith("sha512-")
    # the surfaces' keys are Snowball stems: the installed stemmer must be the one that made them
    assert sources["sources"]["snowballstemmer"]["version"] == stemmer_version()


@pytest.mark.parametrize("lang", LANGUAGES)
def test_stored_keys_are_todays_stems(lang):
    data = json.loads(gzip.decompress(DATA.joinpath(f"{lang}.json.gz").read_bytes()))
    forms = data["forms"]
    checked = 0
    for key, rows in list(data["keys"].items())[::50]:
        for row in rows:
            if row[3] != "edit":
                assert key_of(row[0], lang, forms) == key, (row[0], key)
                checked += 1
    assert checked > 10
    assert (data["stemmer"] is None) == (STEMMERS.get(lang) is None)


def test_match_fields_and_spans():
    text = "Tankstellen und Museen in Stuttgart"
    found = lookup(text, "de")
    assert [m.text for m in found] == ["Tankstellen", "Museen"]
    fuel = found[0]
    assert isinstance(fuel, FeatureMatch)
    assert text[fuel.span[0]:fuel.span[1]] == fuel.text
    assert (fuel.surface, fuel.source, fuel.ref, fuel.lang) == ("Tankstelle", "preset", "amenity/fuel", "de")
    assert MIN_SCORE <= fuel.score <= 1.0


def test_longest_phrase_wins_and_neighbours_merge():
    assert [(m.text, m.tags) for m in lookup("car parks", "en")] == [("car parks", ("amenity=parking",))]
    assert [(m.text, m.tags) for m in lookup("fast food", "en")] == [("fast food", ("amenity=fast_food",))]
    # "mountain" (a term of natural=peak) and "peaks" are one feature
    assert [m.text for m in lookup("mountain peaks in Austria", "en", min_score=0.0)] in (["mountain peaks"], ["peaks"])


def test_skip_leaves_spans_unread():
    text = "bus stops in Zurich"
    assert any(m.source == "brand" for m in lookup(text, "en"))  # Zurich the insurer
    at = text.index("Zurich")
    assert [m.text for m in lookup(text, "en", skip=[(at, len(text))])] == ["bus stops"]


def test_brands_carry_their_wikidata_and_need_their_case_when_short():
    (m,) = lookup("Starbucks in Seoul", "en")
    assert (m.source, m.ref, m.tags) == ("brand", "Q37158", ("amenity=cafe", "brand=Starbucks"))
    assert lookup("a dm store", "de") and not lookup("a DM store", "de")  # dm, the German chemist


def test_a_single_cjk_letter_counts_only_standing_alone():
    # "駅" (station) alone after の; inside "駅前" (in front of the station) it is part of a word
    alone = lookup("東京の駅", "ja", min_score=0.0)
    inside = lookup("駅前広場", "ja", min_score=0.0)
    assert all(m.text != "駅" for m in inside)
    assert all(len(m.text) >= 1 for m in alone)


@pytest.mark.parametrize("text", ["", "   ", "🏛️🏛️", "1234 5678", "x" * 10_000, "Café" * 3000, "\u200f\u202e"])
def test_bad_input_gives_a_list(text):
    assert isinstance(lookup(text, "en"), list)


@pytest.mark.parametrize("lang", ["und", "sw", "zh-TW", "pt-BR", "be@tarask", ""])
def test_any_language_code_reads(lang):
    assert isinstance(lookup("museums Museen 博物館", lang), list)
    assert [m.tags for m in lookup("museos", "es-419")] == [("tourism=museum",)]


def test_a_damaged_file_names_the_fix(tmp_path):
    (tmp_path / "en.json.gz").write_bytes(b"not gzip")
    with pytest.raises(LexiconError, match="build_nl_lexicon"):
        Lexicon(tmp_path).lookup("museums", "en")
    assert Lexicon(tmp_path).lookup("музеи", "ru") == []  # a language without a file reads nothing


PLACES = [
    ("pl", "Krakowie", "Kraków"), ("pl", "Warszawie", "Warszawa"), ("pl", "Gdańsku", "Gdańsk"),
    ("pl", "Poznaniu", "Poznań"), ("pl", "Wrocławiu", "Wrocław"), ("pl", "Katowicach", "Katowice"),
    ("pl", "Polsce", "Polska"), ("pl", "Niemczech", "Niemcy"), ("pl", "Łodzi", "Łódź"), ("pl", "Lublinie", "Lublin"),
    ("ru", "Москве", "Москва"), ("ru", "Петербурге", "Петербург"), ("ru", "Казани", "Казань"),
    ("ru", "России", "Россия"), ("ru", "Новосибирске", "Новосибирск"), ("ru", "Ростове", "Ростов"),
    ("ru", "Самаре", "Самара"), ("ru", "Германии", "Германия"), ("ru", "Москвы", "Москва"),
    ("tr", "İstanbul'da", "İstanbul"), ("tr", "Ankara'nın", "Ankara"), ("tr", "Türkiye’de", "Türkiye"),
    ("de", "Berlins", "Berlin"),
]


@pytest.mark.parametrize("lang,token,lemma", PLACES)
def test_place_lemmas(lang, token, lemma):
    got = place_lemmas(token, lang)
    assert lemma in got[:4], got
    assert token in got


@pytest.mark.parametrize("lang,token,first", [("pl", "Krakowie", "Kraków"), ("ru", "Москве", "Москва"),
                                              ("tr", "İstanbul'da", "İstanbul"), ("de", "Stuttgart", "Stuttgart"),
                                              ("ru", "Москва", "Москва"), ("fr", "Paris", "Paris")])
def test_place_lemmas_likeliest_first(lang, token, first):
    assert place_lemmas(token, lang)[0] == first


def test_place_lemmas_bad_input():
    assert place_lemmas("", "pl") == [] and place_lemmas(None, "ru") == []  # type: ignore[arg-type]
    assert place_lemmas("Kraków", "xx") == ["Kraków"]
