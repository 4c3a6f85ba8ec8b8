"""Where the tests find OverpassNL and the reference files (import from here, not from conftest).

Several test folders have a conftest.py of their own, so ``from conftest import`` would
pick whichever was imported first.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """The OverpassNL copy the tests read (CI sets GEOQL_DATA_DIR=../shared/overpassnl)."""
    configured = os.environ.get("GEOQL_DATA_DIR")
    path = Path(configured) if configured else REPO_ROOT.parent / "shared" / "overpassnl"
    if not (path / "dataset.train.nl").is_file():
        pytest.exit(f"OverpassNL data not found at {path}: set GEOQL_DATA_DIR", returncode=2)
    return path


@lru_cache(maxsize=None)
def reference_rows(name: str) -> tuple[dict, ...]:
    with open(data_dir() / "reference" / name, encoding="utf-8") as f:
        return tuple(json.loads(line) for line in f)
