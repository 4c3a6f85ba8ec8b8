"""Shared test fixtures: the dataset directory and the reference files."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from testdata import data_dir, reference_rows  # noqa: F401 (re-exported for old imports)


def pytest_configure(config):
    # Hermetic: a tag index or CPU model that this machine's user built must not change what
    # the tests see (training with tag_hints "auto" would pick up a default index). Tests that
    # need either build a small one and pass its path.
    empty = Path(tempfile.mkdtemp(prefix="geoql-tests-"))
    os.environ["GEOQL_INDEX_DIR"] = str(empty / "no-index")
    os.environ["GEOQL_CPU_MODEL_DIR"] = str(empty / "no-cpu-model")


@pytest.fixture(scope="session")
def overpassnl_dir() -> Path:
    return data_dir()


pytest_plugins = ["fixtures_index"]
