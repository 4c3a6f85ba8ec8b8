"""retrieval.lexicon: tag names in every language, matched by shared tokens and coverage."""

from __future__ import annotations

import pytest

from geoql.retrieval.lexicon import Lexicon

SURFACES = [
    (0, "en", "Pharmacy"), (0, "de", "Apotheke"), (0, "zh-CN", "药店"),
    (1, "en", "Museum"), (1, "de", "Museum"), (1, "zh-CN", "博物馆"), (1, "ru", "Музей"),
    (2, "en", "Food"), (2, "de", "Gibt es Essen?"),
    (3, "en", "Train Station"), (3, "de", "Bahnhof"),
]


@pytest.fixture(scope="module")
def lexicon():
    return Lexicon.build(SURFACES)


@pytest.mark.parametrize("text,doc,name", [
    ("Apotheken in Berlin", 0, "Apotheke"),
    ("西安的博物馆", 1, "博物馆"),
    ("Какие музеи есть в Казани?", 1, "Музей"),
    ("Welche Bahnhöfe gibt es in Schweden?", 3, "Bahnhof"),
])
def test_best_tag_and_its_name(lexicon, text, doc, name):
    best = lexicon.search(text, 3)[0]
    assert (best.doc, best.text) == (doc, name)


def test_a_half_covered_label_ranks_below_a_covered_name(lexicon):
    found = {m.doc: m.score for m in lexicon.search("Welche Bahnhöfe gibt es in Schweden?", 5)}
    assert found[3] > found.get(2, 0.0)


def test_one_hit_per_tag_with_its_language(lexicon):
    found = lexicon.search("Museum", 10)
    assert [m.doc for m in found] == [1] and found[0].lang in {"en", "de"}


@pytest.mark.parametrize("text", ["", "!!!", "zzzz qqqq", "🏛️"])
def test_no_shared_token_no_match(lexicon, text):
    assert lexicon.search(text) == []


def test_save_and_load_round_trip(lexicon, tmp_path):
    path = tmp_path / "tag_lexicon.npz"
    lexicon.save(path)
    again = Lexicon.load(path)
    assert len(again) == len(lexicon) == len(SURFACES) and again.langs == lexicon.langs
    assert again.search("Apotheke", 5) == lexicon.search("Apotheke", 5)


def test_build_is_deterministic():
    one, two = Lexicon.build(SURFACES), Lexicon.build(SURFACES)
    assert one.vocab == two.vocab and (one.indices == two.indices).all() and (one.idf == two.idf).all()


def test_search_within_some_languages():
    lexicon = Lexicon.build([(0, "pt", "Mastro am rádio"), (1, "de", "Radiomast am Berg"), (2, "en", "radio mast")])
    assert {m.doc for m in lexicon.search("am", 5)} == {0, 1}
    assert [m.doc for m in lexicon.search("am", 5, languages={"de", "en"})] == [1]
    assert lexicon.search("am", 5, languages={"fr"}) == [] and lexicon.search("am", 5, languages=()) == []


@pytest.mark.parametrize("text, languages, named", [
    ("博物馆", None, True), ("Museum", {"de"}, True), ("museum", {"en"}, True),  # folded
    ("Apotheke", {"fr"}, False),  # a name in another language
    ("西安", None, False), ("西安的博物馆", None, False),  # shares a token, or covers a name, but is none
    ("Train", None, False), ("", None, False),
])
def test_names_a_tag_is_a_whole_name(lexicon, text, languages, named):
    assert lexicon.names_a_tag(text, languages) is named
