"""Shared test fixtures: the dataset directory, the reference files and one small CPU model per session."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from geoql.app.cpu.train import CpuTrainConfig, train
from geoql.eval.dataset import load_split
from testdata import data_dir, reference_rows  # noqa: F401 (re-exported for old imports)


def pytest_configure(config):
    # Hermetic: a tag index or CPU model that this machine's user built must not change what
    # the tests see (training with tag_hints "auto" would pick up a default index). Tests that
    # need either build a small one and pass its path.
    empty = Path(tempfile.mkdtemp(prefix="geoql-tests-"))
    os.environ["GEOQL_INDEX_DIR"] = str(empty / "no-index")
    os.environ["GEOQL_CPU_MODEL_DIR"] = str(empty / "no-cpu-model")
    os.environ["GEOQL_CACHE_DIR"] = str(empty / "cache")  # nor its caches; nothing is left in theirs
    config._geoql_empty_dir = empty


def pytest_unconfigure(config):
    # The session's caches (an ONNX export and its prepared copy: ~0.2 GB) go with it.
    empty = getattr(config, "_geoql_empty_dir", None)
    if empty is not None:
        shutil.rmtree(empty, ignore_errors=True)


@pytest.fixture(scope="session")
def overpassnl_dir() -> Path:
    return data_dir()


@pytest.fixture(scope="session")
def small_cpu_model():
    """A real CPU-default model trained on a slice of train (the full one trains for minutes)."""
    pairs = load_split("train")[:300]
    return train([e.nl for e in pairs], [e.query for e in pairs], CpuTrainConfig(k=5, limit=40, max_iter=30),
                 progress=False)


@pytest.fixture(scope="session")
def small_cpu_model_dir(small_cpu_model, tmp_path_factory):
    return small_cpu_model.save(tmp_path_factory.mktemp("cpu-model"))


pytest_plugins = ["fixtures_index"]
