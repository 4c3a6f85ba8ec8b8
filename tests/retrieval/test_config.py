from __future__ import annotations

import dataclasses

import pytest

from geoql.retrieval import RetrievalConfig


def test_every_setting_is_documented():
    assert all(f.metadata.get("help") for f in dataclasses.fields(RetrievalConfig))


@pytest.mark.parametrize("kwargs,fix", [
    ({"rrf_k": 0}, "60"),
    ({"tag_pool": 0}, "tag_pool"),
    ({"evidence_examples": -1}, "turns example evidence off"),
    ({"fusion": "max"}, "'learned', 'linear' or 'rrf'"),
    ({"free_text_shift": -1}, "free_text_shift"),
    ({"example_dense_weight": 0, "example_bm25_weight": 0, "example_char_weight": 0}, "at least one"),
    ({"tag_dense_weight": 0, "tag_bm25_weight": 0, "tag_example_weight": 0}, "at least one"),
])
def test_bad_settings_name_the_fix(kwargs, fix):
    with pytest.raises(ValueError, match=fix):
        RetrievalConfig(**kwargs)
