"""The tag ranker fitted once on the canonical index and shipped with GeoQL.

Fitting ``ranker.json`` is the longest step of ``geoql index build`` that needs no
download (leave-one-out features of 6,352 training requests, then two regressions:
about 45 s on two cores). Every build from the pinned sources by the same code writes
the same documents (``retrieval.artifacts.content_key``), and the fit on them is the
same too, so the project fits it once, ships the result in ``shipped/ranker.json`` and
a build whose documents have that key takes it instead of fitting again. Any other
index (taginfo's counts in it, a dictionary missing, a test's small schema) is fitted
as before. ``geoql cpu ship`` (``app.cpu.prebuilt``) writes this file.
"""

from __future__ import annotations

import json
from pathlib import Path

from geoql.core.files import write_atomic
from geoql.retrieval.artifacts import MANIFEST, content_key
from geoql.retrieval.ranker import RANKER_FORMAT, RANKER_JSON

SHIPPED_DIR = Path(__file__).resolve().parent / "shipped"
RANKER_FILE = SHIPPED_DIR / "ranker.json"


def shipped_ranker(index_key: str, path: Path | None = None) -> dict | None:
    """The shipped ranker's JSON (``path``: default :data:`RANKER_FILE`) when it was fitted on an index with
    ``index_key``, else None."""
    try:
        data = json.loads(Path(path or RANKER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # none shipped, or a damaged file: fit as before
        return None
    if not isinstance(data, dict) or data.get("index_key") != index_key or data.get("format") != RANKER_FORMAT:
        return None
    return data


def use_shipped_ranker(index_dir: Path, path: Path | None = None) -> bool:
    """Write the shipped ranker into ``index_dir`` when it fits that index's content; False when it does not."""
    index_dir = Path(index_dir)
    data = shipped_ranker(content_key(index_dir), path)
    if data is None:
        return False
    built_at = json.loads((index_dir / MANIFEST).read_text(encoding="utf-8")).get("built_at")
    data = {**{k: v for k, v in data.items() if k != "index_key"}, "index_built_at": built_at, "prebuilt": True}
    write_atomic(index_dir / RANKER_JSON, json.dumps(data, indent=2) + "\n")
    return True


def ship_ranker(index_dir: Path, path: Path | None = None) -> Path:
    """Copy ``index_dir``'s fitted ranker into the package, keyed by the index's content."""
    index_dir = Path(index_dir)
    data = json.loads((index_dir / RANKER_JSON).read_text(encoding="utf-8"))
    data = {k: v for k, v in data.items() if k not in ("index_built_at", "prebuilt")}
    data["index_key"] = content_key(index_dir)
    return write_atomic(Path(path or RANKER_FILE), json.dumps(data, indent=2) + "\n")
