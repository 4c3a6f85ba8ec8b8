"""The on-disk layout of an index directory, and its checks on load.

``index/`` writes these files; ``retrieval/`` only reads them. A directory is
usable when its ``manifest.json`` exists, carries the current
``FORMAT_VERSION`` and ``TOKENIZER_VERSION``, lists every file of the directory with
its SHA-256 (``files``), and every file matches (``geoql.core.checksums``: stat-remembered
digests, so a cold start does not hash 150 MB). A damaged, edited, missing or unlisted
file is an :class:`IndexMissingError` that names the rebuild, never a different answer.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from geoql.core import checksums
from geoql.core.errors import GeoqlError
from geoql.core.files import remove_dead_staging
from geoql.core.paths import user_dir

from .text import TOKENIZER_VERSION

FORMAT_VERSION = 1
ENV_VAR = "GEOQL_INDEX_DIR"
BUILD_COMMAND = "geoql index build"
TRAIN_SOURCE = "overpassnl-train"  # a tag document's source name for tags that the training split brought in
SCHEMA_SOURCE = "id-tagging-schema"  # ... and its prefix for id-tagging-schema ("id-tagging-schema@7.2.0", "...:deprecated")

MANIFEST = "manifest.json"
FILES = "files"  # the manifest's {relative path: SHA-256} of every other file of the index
TAGS_JSONL = "tags.jsonl"
TAG_SURFACES_JSONL = "tag_surfaces.jsonl"
TAG_SURFACES_FAISS = "tag_surfaces.faiss"
TAGS_BM25 = "tags.bm25"
EXAMPLES_JSONL = "examples.jsonl"
EXAMPLES_FAISS = "examples.faiss"
EXAMPLES_BM25 = "examples.bm25"
EXAMPLES_E5 = "examples.e5.npy"  # the training requests' multilingual vectors (retrieval.multilingual); optional
TAG_LEXICON = "tag_lexicon.npz"  # tag names in every language of the schema (retrieval.lexicon)
GLOSSARY_PREFIX, GLOSSARY_SUFFIX = "glossary.", ".sqlite"  # glossary.<lang>.sqlite: a language's words -> English
# (retrieval.glossary); optional


def glossary_file(lang: str) -> str:
    """File name of ``lang``'s glossary in an index directory."""
    return f"{GLOSSARY_PREFIX}{lang}{GLOSSARY_SUFFIX}"


REQUIRED_FILES = (
    MANIFEST,
    TAGS_JSONL,
    TAG_SURFACES_JSONL,
    TAG_SURFACES_FAISS,
    TAGS_BM25,
    EXAMPLES_JSONL,
    EXAMPLES_FAISS,
    EXAMPLES_BM25,
    TAG_LEXICON,
)


class IndexMissingError(GeoqlError):
    """No usable index at the expected place; the message names the build command."""


def default_index_dir() -> Path:
    """``$GEOQL_INDEX_DIR`` if set, else a versioned folder in the user data directory."""
    return user_dir("data", "index", f"v{FORMAT_VERSION}", env=ENV_VAR)


def _build_hint(index_dir: Path) -> str:
    default = default_index_dir()
    if index_dir.resolve() == default.resolve():
        return f"run `{BUILD_COMMAND}`"
    return f"run `{BUILD_COMMAND} --out {index_dir}`"


@dataclass(frozen=True)
class Manifest:
    path: Path
    data: dict

    @property
    def embedding_model(self) -> str:
        return self.data["embedding"]["model"]

    @property
    def counts(self) -> dict:
        return self.data.get("counts", {})


def resolve_index_dir(index_dir: str | os.PathLike | None) -> Path:
    return Path(index_dir).expanduser() if index_dir is not None else default_index_dir()


def load_manifest(index_dir: str | os.PathLike | None = None) -> Manifest:
    """Read and check ``manifest.json``; raise :class:`IndexMissingError` naming the fix."""
    path = resolve_index_dir(index_dir)
    manifest_path = path / MANIFEST
    if not manifest_path.is_file():
        raise IndexMissingError(f"no GeoQL tag index at {path}; {_build_hint(path)}")
    try:
        data = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise IndexMissingError(f"{manifest_path} is unreadable ({exc}); {_build_hint(path)}") from None
    found = (data.get("format_version"), data.get("tokenizer_version"))
    if found != (FORMAT_VERSION, TOKENIZER_VERSION):
        raise IndexMissingError(
            f"the index at {path} was built by an incompatible GeoQL (format/tokenizer {found[0]}/{found[1]}, "
            f"this version reads {FORMAT_VERSION}/{TOKENIZER_VERSION}); {_build_hint(path)} to rebuild it"
        )
    missing = [name for name in REQUIRED_FILES if not (path / name).exists()]
    if missing:
        raise IndexMissingError(f"the index at {path} is incomplete (missing {', '.join(missing)}); {_build_hint(path)}")
    check_files(path, data)
    remove_dead_staging(path)  # what killed builds of this index left beside it (up to 150 MB each)
    return Manifest(manifest_path, data)


def check_files(path: Path, data: dict, *, remembered: bool = True) -> None:
    """Raise :class:`IndexMissingError` unless every file of the index at ``path`` is listed in its
    manifest ``data`` with the SHA-256 it has now (``remembered=False``: hash every file, trust no memo)."""
    listed = data.get(FILES)
    if not (isinstance(listed, dict) and listed and all(isinstance(v, str) for v in listed.values())):
        raise IndexMissingError(f"the index at {path} was built by an older GeoQL that did not record its files' "
                                f"SHA-256, so damage could not be told; {_build_hint(path)} to rebuild it")
    if not checksums.is_sealed(data):
        raise IndexMissingError(f"{path / MANIFEST} does not match its own checksum (damaged or edited since the "
                                f"build); {_build_hint(path)} to rebuild it")
    unlisted = [n for n in checksums.folder_files(path, skip=(MANIFEST,)) if n not in listed]
    bad = checksums.mismatches(path, listed, remembered=remembered) + unlisted
    if bad:
        shown = ", ".join(bad[:4]) + (f" and {len(bad) - 4} more" if len(bad) > 4 else "")
        raise IndexMissingError(f"the index at {path} does not match its manifest ({shown}: damaged, changed or "
                                f"added since it was built); {_build_hint(path)} to rebuild it")


def read_faiss(path: Path):
    """A saved FAISS index for searching, its vectors memory-mapped where FAISS can (flat indexes since
    FAISS 1.9): the page cache serves them, instead of ~35 ms of copying the tag surfaces on every cold start."""
    import faiss

    flag = getattr(faiss, "IO_FLAG_MMAP_IFC", 0)
    if flag:
        try:
            return faiss.read_index(str(path), flag)
        except RuntimeError:  # an index type that cannot be mapped: read it whole (a damaged file fails there too)
            pass
    try:
        return faiss.read_index(str(path))
    except RuntimeError as exc:  # FAISS's own words ("read error ... ret == (1)") say nothing of the fix
        why = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise IndexMissingError(f"{path} is not a readable FAISS index ({why}); {_build_hint(path.parent)} to rebuild it") from None


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        lines = [line for line in f if line.strip()]
    # One parse of the whole file: a json.loads per line took twice as long for the index's
    # 26,000 tag surfaces, on every cold start.
    return json.loads("[" + ",".join(lines) + "]") if lines else []


def content_key(index_dir: str | os.PathLike | None = None) -> str:
    """What an index holds, as a SHA-256: equal for two builds from the same sources by the same code.

    Learned parts fitted once on one index (the ranker ``index.prebuilt`` ships, the CPU
    default's selector ``app.cpu.prebuilt`` ships) fit another index with this key. It reads the
    documents the build wrote (tag documents with their taginfo counts, surfaces, training
    requests) and the manifest's sources, but not the build's time, place or floating-point
    vectors: the same texts give the same vectors up to the last bits of the processor's arithmetic.
    """
    path = resolve_index_dir(index_dir)
    manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    sources = manifest.get("sources", {})
    schema = sources.get(SCHEMA_SOURCE, {})
    # a glossary's whole entry: its dictionary, its word count, its pivot's, and how renderings were chosen
    glossaries = dict(sorted(sources.get("glossaries", {}).items()))
    # the multilingual vectors feed the ranker's e5_* features: an index without them fits its own ranker
    multilingual = manifest.get("multilingual") or {}
    digest = hashlib.sha256()
    digest.update(json.dumps({
        "format": manifest.get("format_version"), "tokenizer": manifest.get("tokenizer_version"),
        "embedding": manifest.get("embedding", {}).get("model"),
        "schema": [schema.get("version"), schema.get("integrity")],
        "train": sources.get(TRAIN_SOURCE, {}).get("sha256"), "glossaries": glossaries,
        "multilingual": multilingual.get("model") if multilingual.get("status") == "ok" else None,
    }, sort_keys=True).encode())
    # the files' digests as loading checks them (remembered by stamp: a stat, not 20 MB of hashing, per call)
    for sha in checksums.file_digests([path / name for name in (TAGS_JSONL, TAG_SURFACES_JSONL, EXAMPLES_JSONL)]):
        digest.update(bytes.fromhex(sha))
    return digest.hexdigest()
