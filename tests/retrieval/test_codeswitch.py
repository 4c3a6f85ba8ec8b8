"""Code-switched copies of training requests: iD's names and the cue tables, on the real small tag index."""

from __future__ import annotations

import json

import pytest

from geoql.nl.cues import table
from geoql.nl.frame import read_frame
from geoql.nl.text import fold
from geoql.retrieval.codeswitch import LANGUAGES, CodeSwitcher, code_switched_copies


@pytest.fixture(scope="module")
def switcher(small_index_dir):
    return CodeSwitcher.from_index(small_index_dir)


@pytest.fixture(scope="module")
def preset(small_index_dir):
    """A one-word iD preset of the small index with a name in every language the copies are written in."""
    for line in (small_index_dir / "tags.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        names = doc.get("names") or []
        if len(names) == 1 and names[0].isalpha() and all(doc["names_by_lang"].get(s) for s in LANGUAGES.values()):
            return doc
    pytest.fail("the small index has no preset translated into every language")


@pytest.mark.parametrize("lang", list(LANGUAGES))
def test_a_request_is_written_with_the_languages_preset_name_and_cues(switcher, preset, lang):
    english = preset["names"][0]
    text = switcher.switch(f"{english}s in the current view", lang)
    assert text is not None and "current" not in text and "the" not in text.split()
    target = preset["names_by_lang"][LANGUAGES[lang]][0]
    assert fold(target.split("（")[0].split("(")[0].strip()) in fold(text)
    assert fold(table(lang)["view"][0]).replace(" ", "") in fold(text).replace(" ", "")
    # the frame reads the copy in its language as the original is read in English
    assert read_frame(text).in_view


@pytest.mark.parametrize("lang", ["zh", "yue", "ja"])
def test_scripts_without_spaces_are_joined_without_them(switcher, preset, lang):
    text = switcher.switch(f"{preset['names'][0]} in the current view", lang)
    assert " " not in text


def test_names_numbers_and_places_stay_and_a_request_without_a_preset_gets_no_copy(switcher, preset):
    text = switcher.switch(f"{preset['names'][0]} within 300 m of Bahnhof in Heidelberg", "de")
    assert "Heidelberg" in text and "300" in text and "Bahnhof" in text
    assert switcher.switch("Ways last edited by user Nakaner", "de") is None


def test_copies_of_many_requests_take_the_languages_in_turn(switcher, small_index_dir):
    requests = [json.loads(line)["nl"] for line in (small_index_dir / "examples.jsonl").read_text(encoding="utf-8").splitlines()][:200]
    copies = code_switched_copies(switcher, requests)
    positions = [i for i, _ in copies]
    assert copies and positions == sorted(set(positions)) and all(requests[i] != text for i, text in copies)
    # one turn per request: the copy of request i is in language i mod 7
    for i, text in copies[:30]:
        assert text == switcher.switch(requests[i], switcher.languages[i % len(switcher.languages)])
    assert len({read_frame(text).language for _, text in copies}) >= 4
    assert code_switched_copies(switcher, requests, positions=[]) == []
