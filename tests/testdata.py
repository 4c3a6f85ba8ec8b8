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


def osmnl_dir() -> Path:
    """The OsmNL dev files (``dev.<lang>.{nl,query,bbox}``): ``$GEOQL_OSMNL_DIR``, else ``osmnl``
    next to the OverpassNL copy (CI has ``../shared/osmnl``). Missing, the tests that need it fail."""
    configured = os.environ.get("GEOQL_OSMNL_DIR")
    path = Path(configured) if configured else data_dir().parent / "osmnl"
    if not (path / "dev.en.nl").is_file():
        pytest.fail(f"OsmNL dev files not found at {path}: set GEOQL_OSMNL_DIR", pytrace=False)
    return path


@lru_cache(maxsize=None)
def reference_rows(name: str) -> tuple[dict, ...]:
    with open(data_dir() / "reference" / name, encoding="utf-8") as f:
        return tuple(json.loads(line) for line in f)


FRAME_CASES_DIR = REPO_ROOT / "tests" / "nl" / "frame_cases"


def frame_cases() -> list:
    """The cue tables' cases (``tests/nl/frame_cases/<lang>.jsonl``, one file per language, written
    from that language's cue table): ``pytest.param(lang, {"nl": ..., "frame": {field: value}})``."""
    out = []
    for path in sorted(FRAME_CASES_DIR.glob("*.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                out.append(pytest.param(path.stem, json.loads(line), id=f"{path.stem}-{n}"))
    return out
