"""user_dir: the one place that chooses GeoQL's user directories."""

from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest

from geoql.core.paths import CACHE_ENV_VAR, user_dir


def test_data_lives_in_the_platform_data_dir(monkeypatch):
    monkeypatch.delenv(CACHE_ENV_VAR, raising=False)
    assert user_dir("data", "index", "v5") == Path(platformdirs.user_data_dir("geoql")) / "index" / "v5"


def test_cache_follows_geoql_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv(CACHE_ENV_VAR, str(tmp_path))
    assert user_dir("cache", "overpassnl") == tmp_path / "overpassnl"
    monkeypatch.delenv(CACHE_ENV_VAR)
    assert user_dir("cache", "overpassnl") == Path(platformdirs.user_cache_dir("geoql")) / "overpassnl"


def test_a_component_variable_is_the_directory_itself(monkeypatch, tmp_path):
    monkeypatch.setenv("GEOQL_INDEX_DIR", str(tmp_path / "my-index"))
    assert user_dir("data", "index", "v5", env="GEOQL_INDEX_DIR") == tmp_path / "my-index"
    monkeypatch.setenv("GEOQL_INDEX_DIR", "")  # empty counts as unset
    assert user_dir("data", "index", "v5", env="GEOQL_INDEX_DIR").parts[-2:] == ("index", "v5")


def test_a_tilde_is_expanded(monkeypatch):
    monkeypatch.setenv("GEOQL_CPU_MODEL_DIR", "~/models/cpu")
    assert user_dir("data", env="GEOQL_CPU_MODEL_DIR") == Path.home() / "models" / "cpu"


def test_the_callers_use_it(monkeypatch, tmp_path):
    from geoql.app.cpu.model import default_model_dir
    from geoql.eval.dataset import default_cache_dir
    from geoql.index.config import default_cache_dir as index_sources_dir
    from geoql.retrieval.artifacts import default_index_dir

    monkeypatch.setenv(CACHE_ENV_VAR, str(tmp_path / "cache"))
    monkeypatch.delenv("GEOQL_INDEX_DIR", raising=False)
    monkeypatch.delenv("GEOQL_CPU_MODEL_DIR", raising=False)
    data = Path(platformdirs.user_data_dir("geoql"))
    assert default_index_dir().parent == data / "index"
    assert default_model_dir().parent == data / "cpu-default"
    assert default_cache_dir() == tmp_path / "cache" / "overpassnl"
    assert index_sources_dir() == tmp_path / "cache" / "index-sources"


def test_unknown_kind():
    with pytest.raises(ValueError, match="use 'data' or 'cache'"):
        user_dir("tmp")
