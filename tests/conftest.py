"""Shared test fixtures: the dataset directory and the reference files."""

from __future__ import annotations

from pathlib import Path

import pytest

from testdata import data_dir, reference_rows  # noqa: F401 (re-exported for old imports)


@pytest.fixture(scope="session")
def overpassnl_dir() -> Path:
    return data_dir()


pytest_plugins = ["fixtures_index"]
