"""geoql.nl.cues: the cue tables, the tokeniser and the matcher that reads them."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from geoql.nl import cues
from geoql.nl.cues import LANGUAGES, REQUIRED, CueError, Matcher, table, tokens, without_stop_words


def test_tokens_split_letters_of_scripts_without_spaces():
    assert [t.fold for t in tokens("Cafés in 成都, 100 m")] == ["cafes", "in", "成", "都", "100", "m"]
    assert [t.text for t in tokens("ID为7725447的用户")] == ["ID", "为", "7725447", "的", "用", "户"]
    assert [t.text for t in tokens("49.798213, 5.522851")] == ["49.798213", "5.522851"]
    assert [t.fold for t in tokens("독일에 있는")] == ["독", "일", "에", "있", "는"]
    toks = tokens("Zürich ist schön")
    assert toks[0].upper and not toks[1].upper and toks[0].fold == "zurich"
    assert tokens("") == [] and tokens("🏛️ !") == []


def test_matcher_finds_the_longest_cue_and_prefix_cues():
    m = Matcher(["in the current view", "current view", ("tabelle*", "csv"), ("当前视图", "view")])
    assert m.find(tokens("cafes in the current view")) == [(1, 5, "in the current view")]
    assert m.find(tokens("als Tabellenform")) == [(1, 2, "csv")]
    assert m.find(tokens("当前视图中有哪些")) == [(0, 4, "view")]
    toks = tokens("cafes in the current view")
    assert m.find(toks, [False, True, False, False, False]) == [(3, 5, "current view")]  # taken tokens
    assert not Matcher([]) and Matcher(["x"])


def test_every_required_language_has_a_table_shipped_as_package_data():
    assert set(REQUIRED) <= set(LANGUAGES) and LANGUAGES[0] == "en"
    folder = resources.files("geoql.nl").joinpath("cues")
    for lang in LANGUAGES:
        data = json.loads(folder.joinpath(f"{lang}.json").read_text(encoding="utf-8"))
        assert data == table(lang)


def test_an_unknown_language_is_a_clear_error():
    with pytest.raises(CueError, match="no cue table for language 'xx'"):
        table("xx")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_cue_words_are_strings_that_tokenise(lang):
    def walk(value, where):
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{where}.{k}")
        elif isinstance(value, list):
            for v in value:
                walk(v, where)
        else:
            assert isinstance(value, (str, bool)), where
            # place.and splits names at punctuation too ("、"); name_chars is a string of letters
            if isinstance(value, str) and not where.endswith((".and", ".name_chars", ".scope_end")) \
                    and ".language" not in where:
                assert value.strip() and cues.cue_tokens(value)[0], (where, value)
    walk(table(lang), lang)


def test_every_language_at_once_for_faithfulness():
    words = cues.output_words()
    assert set(words) == {"count", "geom", "center", "csv", "meta"}
    assert {"how many", "wie viele", "combien", "сколько", "有多少", "몇 개"} <= set(words["count"])
    months = cues.month_names()
    assert months["february"] == months["fevrier"] == months["февраля"] == months["febrero"] == 2
    units = cues.time_unit_words()
    assert units["week"] == units["woche"] == units["неделю"] == units["周"] == "week"
    assert "公里" in cues.distance_unit_words()["km"] and "km" in cues.distance_unit_words()["km"]
    assert "letzte" in cues.one_words()


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_stop_word_is_blanked_out_of_its_language(lang):
    """Each stop word or phrase of the table, alone, leaves nothing (single letters of scripts
    without spaces stay: they are as often part of a longer word)."""
    for stop in table(lang)["stop"]:
        toks = tokens(stop)
        if len(toks) == 1 and toks[0].spaceless:
            assert without_stop_words(stop, lang) == stop
        else:
            assert not any(ch.isalnum() for ch in without_stop_words(stop, lang)), (lang, stop)


@pytest.mark.parametrize("lang,nl,left", [
    ("de", "Welche Bars gibt es in den Niederlanden?", "Bars Niederlanden?"),
    ("fr", "Quels sont les musées à Lyon ?", "musées Lyon ?"),
    ("ru", "Какие музеи есть в Москве?", "музеи Москве?"),
    ("ja", "東京にある美術館を教えてください", "東京に 美術館"),
    ("zh", "成都有哪些博物馆", "成都 博物馆"),
    ("ko", "부산에 있는 박물관은 어디에 있습니까", "부산에 박물관은"),
])
def test_what_is_left_names_things(lang, nl, left):
    assert without_stop_words(nl, lang) == left


def test_a_language_without_a_table_is_left_as_it_is():
    assert without_stop_words("Makumbusho ya Taifa", "sw") == "Makumbusho ya Taifa"
