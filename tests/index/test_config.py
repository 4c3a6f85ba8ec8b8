from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from geoql.index.config import IndexConfig


def test_defaults_are_the_pinned_sources():
    config = IndexConfig()
    assert config.schema_version == "7.2.0" and config.registry == "https://registry.npmjs.org"
    assert config.embedding_model == "all-MiniLM-L6-v2"
    assert config.glossaries == ("de", "fr", "es", "it", "pt", "ja", "ru", "zh", "yue", "ko") and config.debian_mirror == "https://deb.debian.org/debian"
    assert all(f.metadata.get("help") for f in dataclasses.fields(IndexConfig))


def test_paths_are_expanded():
    assert IndexConfig(out_dir="~/x").out_dir == Path("~/x").expanduser()


@pytest.mark.parametrize("kwargs,fix", [
    ({"registry": "registry.npmjs.org"}, "--registry"),
    ({"train_limit": 0}, "omit it"),
    ({"batch_size": 0}, "batch_size"),
    ({"embedding_model": " "}, "all-MiniLM-L6-v2"),
    ({"taginfo_timeout": 0}, "taginfo=False"),
    ({"glossaries": ("de", "xx")}, "glossaries can be de, fr"),
    ({"debian_mirror": "deb.debian.org"}, "https://deb.debian.org/debian"),
])
def test_bad_settings_name_the_fix(kwargs, fix):
    with pytest.raises(ValueError, match=fix):
        IndexConfig(**kwargs)
