"""Code-switched copies of training requests: iD's names and the cue tables, on the real small tag index."""

from __future__ import annotations

import json

import numpy as np
import pytest

from geoql.app.cpu.augment import LANGUAGES, CodeSwitcher
from geoql.app.cpu.hints import TagHints
from geoql.app.cpu.model import CpuConfig, CpuModel
from geoql.app.cpu.train import CpuTrainConfig, augmented_requests, training_rows
from geoql.core.errors import ConfigError
from geoql.eval.dataset import load_split
from geoql.nl.cues import table
from geoql.nl.frame import read_frame
from geoql.nl.text import fold


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


def test_training_copies_are_pools_of_their_own_scored_against_the_originals_gold(small_index_dir):
    pairs = load_split("train")[:120]
    nls, queries = [e.nl for e in pairs], [e.query for e in pairs]
    model = CpuModel.fit_retrieval(nls, queries, CpuConfig(k=5, tag_hints=True))
    model.hints = TagHints.load(small_index_dir)
    config = CpuTrainConfig(k=5, limit=40, augment_share=1.0)
    copies = augmented_requests(model, config, 40)
    assert copies and all(nls[i] != text for i, text in copies)
    langs = {read_frame(text).language for _, text in copies}  # the languages take turns
    assert len(langs) >= 3
    feats, labels, groups = training_rows(model, config, progress=False)
    plain = training_rows(model, CpuTrainConfig(k=5, limit=40, augment=""), progress=False)
    assert np.array_equal(feats[groups < 40], plain[0]) and np.array_equal(labels[groups < 40], plain[1])
    assert len(np.unique(groups[groups >= 40])) > 0
    assert 0 <= labels.min() and labels.max() <= 1


@pytest.mark.parametrize("fields, words", [
    ({"augment": "de,xx"}, "no code-switching for xx"),
    ({"augment_share": 1.5}, "augment_share must be between 0 and 1"),
])
def test_bad_augment_options_name_the_fix(fields, words):
    with pytest.raises(ConfigError, match=words):
        CpuTrainConfig(**fields)
