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


def test_fold_is_the_nl_layers():
    from geoql.nl import text as nl_text

    assert fold is nl_text.fold
    assert fold("Straße") == "strasse" and fold("が") == "が"  # kana keep their marks


@pytest.mark.parametrize("request_word,name", [
    ("Apotheken", "Apotheke"),  # de plural
    ("Museen", "Museum"),
    ("Spielplätze", "Spielplatz"),
    ("аптеки", "Аптека"),  # ru plural
    ("аптек", "Аптека"),  # ru genitive plural
    ("музеев", "Музей"),
    ("pharmacies", "Pharmacie"),  # fr
])
def test_inflected_words_share_prefix_tokens(request_word, name):
    from geoql.retrieval.text import lexical_tokens

    assert set(lexical_tokens(request_word)) & set(lexical_tokens(name))


@pytest.mark.parametrize("text,expected", [
    ("博物馆", ["博物", "物馆"]),
    ("店", ["店"]),
    ("박물관을", ["박물", "물관", "관을"]),  # Hangul: the particle stays attached, the bigrams still meet
    ("カフェ", ["カフ", "フェ"]),
])
def test_spaceless_scripts_become_bigrams(text, expected):
    from geoql.retrieval.text import lexical_tokens

    assert lexical_tokens(text) == expected


def test_tokenize_cuts_cjk_into_bigrams_and_keeps_english():
    assert tokenize("Museums in 西安") == ["museum", "西安"]
    assert tokenize("List the cafés") == ["cafe"]


@pytest.mark.parametrize("text", ["", "!!!", "🏛️", "\u200f"])
def test_lexical_tokens_without_words(text):
    from geoql.retrieval.text import lexical_tokens

    assert lexical_tokens(text) == []
