from __future__ import annotations

import pytest

from geoql.retrieval.text import fold, split_value, stem, tokenize


@pytest.mark.parametrize("word,expected", [("benches", "bench"), ("libraries", "library"), ("boxes", "box"), ("toilets", "toilet"),
                                           ("bus", "bus"), ("glass", "glass"), ("cafes", "cafe"), ("gas", "gas")])
def test_stem(word, expected):
    assert stem(word) == expected


def test_tokenize_folds_accents_and_splits_tag_syntax():
    assert tokenize("Cafés in Zürich; amenity=post_box") == ["cafe", "zurich", "amenity", "post", "box"]
    assert tokenize("Post Boxes") == tokenize("post box")


@pytest.mark.parametrize("text", ["", "!!! ??? ...", "   ", "\x00"])
def test_tokenize_without_words(text):
    assert tokenize(text) == []


def test_non_latin_text_keeps_its_words():
    assert tokenize("кафе в Москве") == ["кафе", "в", "москве"]
    assert fold("Ärzte") == "arzte"


def test_split_value():
    assert split_value("recycling:glass_bottles") == "recycling glass bottles"
