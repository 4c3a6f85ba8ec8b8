"""The word -> tag lexicon learned from training pairs."""

from __future__ import annotations

import pytest

from geoql.app.cpu.lexicon import TagLexicon, query_tags, tag_names
from geoql.nl.words import word_stems
from geoql.eval.dataset import load_split


@pytest.fixture(scope="module")
def lexicon():
    train = load_split("train")
    return TagLexicon.fit([e.nl for e in train], [e.query for e in train])


@pytest.mark.parametrize(
    ("words", "tag"),
    [("castle", "historic=castle"), ("pharmacy", "amenity=pharmacy"), ("bench", "amenity=bench"),
     ("hotel", "tourism=hotel"), ("bakery", "shop=bakery")],
)
def test_common_words_predict_their_tag(lexicon, words, tag):
    assert tag in [t for t, _ in lexicon.best_tags(word_stems(words), limit=3)]


def test_support_is_low_for_unrelated_tags(lexicon):
    assert lexicon.support(word_stems("castles"), "natural=spring") < 0.05


def test_query_tags_reads_all_filter_forms():
    q = 'node["amenity"="cafe"]["wifi"]["name"!="x"]["highway"~"^(primary|secondary)$"][!"fee"];out;'
    assert query_tags(q) == [("amenity", "=", "cafe"), ("wifi", "", ""), ("name", "!=", "x"),
                             ("highway", "~", "^(primary|secondary)$"), ("fee", "!", "")]
    assert tag_names(q) >= {"amenity=cafe", "amenity", "wifi", "fee"}


def test_main_keys_and_qualifiers(lexicon):
    assert lexicon.main_share("amenity") > 0.9 and lexicon.main_share("wheelchair") < 0.75
    assert lexicon.main_share("never_seen_key") == 1.0
    tags = [t for t, _ in lexicon.qualifiers(word_stems("wheelchair toilets"), threshold=0.3)]
    assert "wheelchair" in tags or "wheelchair=yes" in tags
    assert not any(t.startswith("amenity") for t in tags)  # "toilets" calls for a main tag
