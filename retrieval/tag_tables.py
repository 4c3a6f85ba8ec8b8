"""What a tag search needs of an index's JSON files, read in milliseconds from a derived cache.

``tags.jsonl`` holds every tag's names and terms in ~100 languages (``names_by_lang``,
``terms_by_lang``: nine tenths of its 15 MB); the English sources read none of them
(``retrieval.lexicon`` has its own file), and parsing them cost ~0.7 s of every cold
``geoql compile``. :func:`load_tag_tables` returns the tag documents without them, the tag
surfaces and the training examples as columns, and the index's English words
(``TagRetriever.is_english``, ~0.2 s to tokenise), and keeps them in the user cache as one
JSON file named by the SHA-256 of

- the bytes of ``tags.jsonl``, ``tag_surfaces.jsonl`` and ``examples.jsonl``,
- the source of the tokeniser and of the folding it uses (the English words are ``tokenize``'s),
- :data:`TABLES_FORMAT`.

A rebuilt or edited index, or another tokeniser, gets an entry of its own; the index directory
is never written (it may be read-only). Each file's SHA-256 is remembered against its stamp
(``geoql.core.checksums``, the same digests that check the index on load), so a cold start
stats the files instead of hashing 20 MB. A cache file that does not parse or does not fit is
rebuilt from the index; one that cannot be written costs only the parse next time. Writes are
atomic (``geoql.core.files.write_atomic``): concurrent processes write the same bytes, and a
reader sees a whole file or none.
"""

from __future__ import annotations

import gc
import hashlib
import json
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import geoql.nl.text as nl_text
from geoql.core import checksums
from geoql.core.files import write_atomic
from geoql.core.paths import user_dir

from . import artifacts as A
from . import text as text_module
from .text import tokenize

TABLES_FORMAT = 1  # bump when what the cache holds changes
CACHE_FOLDER = "tag-tables"
KEEP = 8  # cache files kept (the most recently written): one per index a user has loaded lately
PER_LANGUAGE = ("names_by_lang", "terms_by_lang")  # the lexicon's part of a tag document
SOURCES = (A.TAGS_JSONL, A.TAG_SURFACES_JSONL, A.EXAMPLES_JSONL)
EXAMPLE_COLUMNS = ("index", "nl", "query", "tags")


@dataclass(frozen=True)
class TagTables:
    """The tag documents (without their per-language names), the tag surfaces and the training
    examples (``EXAMPLE_COLUMNS``) as columns, and the index's English words."""

    docs: list[dict]
    surface_doc: list[int]
    surface_text: list[str]
    surface_kind: list[str]
    examples: dict[str, list]
    english: frozenset


def cache_key(index_dir: Path) -> str:
    """SHA-256 of the index files the tables come from, the tokeniser's code and the format."""
    digest = hashlib.sha256(f"geoql-tag-tables-{TABLES_FORMAT}".encode())
    for module in (text_module, nl_text):
        digest.update(hashlib.sha256(Path(module.__file__).read_bytes()).digest())
    for sha in checksums.file_digests([Path(index_dir) / name for name in SOURCES]):
        digest.update(bytes.fromhex(sha))
    return digest.hexdigest()


def cache_path(key: str) -> Path:
    return user_dir("cache", CACHE_FOLDER, f"{key}.json")


def load_tag_tables(index_dir: Path, *, cache: bool = True) -> TagTables:
    """The tables of the index in ``index_dir``: from the cache when it holds them, else parsed and cached."""
    index_dir = Path(index_dir)
    if not cache:
        return build_tag_tables(index_dir)
    key = cache_key(index_dir)
    path = cache_path(key)
    tables = _read(path, key)
    if tables is None:
        tables = build_tag_tables(index_dir)
        _write(path, key, tables)
    return tables


def build_tag_tables(index_dir: Path) -> TagTables:
    """The tables from the index's JSON files (what the cache holds)."""
    with _gc_paused():
        docs = A.read_jsonl(index_dir / A.TAGS_JSONL)
        surfaces = A.read_jsonl(index_dir / A.TAG_SURFACES_JSONL)
        rows = A.read_jsonl(index_dir / A.EXAMPLES_JSONL)
    for d in docs:
        for field in PER_LANGUAGE:
            d.pop(field, None)
    examples = {"index": [r["index"] for r in rows], "nl": [r["nl"] for r in rows],
                "query": [r["query"] for r in rows], "tags": [list(r.get("tags", ())) for r in rows]}
    words: set[str] = set()
    for nl in examples["nl"]:
        words.update(tokenize(nl, keep_stopwords=True))
    for d in docs:
        for name in d["names"] + d["terms"]:
            words.update(tokenize(name, keep_stopwords=True))
    return TagTables(docs, [s["doc"] for s in surfaces], [s["text"] for s in surfaces], [s["kind"] for s in surfaces],
                     examples, frozenset(words))


@contextmanager
def _gc_paused():
    """Parsing builds ~100,000 objects and no cycles: the collector's passes over them are wasted (~15 %)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _read(path: Path, key: str) -> TagTables | None:
    """The cached tables, or None when the file is missing, damaged or not this key's."""
    try:
        with _gc_paused():
            data = json.loads(path.read_bytes())
        if data["key"] != key or data["format"] != TABLES_FORMAT:
            return None
        docs, surfaces, examples, english = data["docs"], data["surfaces"], data["examples"], data["english"]
        doc, text, kind = surfaces["doc"], surfaces["text"], surfaces["kind"]
        columns = [examples[name] for name in EXAMPLE_COLUMNS]
        fits = (
            isinstance(docs, list) and all(isinstance(d, dict) for d in docs)
            and all(isinstance(c, list) for c in (doc, text, kind, english, *columns))
            and len(doc) == len(text) == len(kind)
            and all(type(i) is int for i in doc) and min(doc, default=0) >= 0 and max(doc, default=-1) < len(docs)
            and len({len(c) for c in columns}) == 1
        )
        if not fits:
            return None
        return TagTables(docs, doc, text, kind, {name: examples[name] for name in EXAMPLE_COLUMNS}, frozenset(english))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write(path: Path, key: str, tables: TagTables) -> None:
    data = {
        "format": TABLES_FORMAT,
        "key": key,
        "docs": tables.docs,
        "surfaces": {"doc": tables.surface_doc, "text": tables.surface_text, "kind": tables.surface_kind},
        "examples": tables.examples,
        "english": sorted(tables.english),
    }
    try:
        write_atomic(path, json.dumps(data, ensure_ascii=False, separators=(",", ":")))
        _prune(path.parent)
    except OSError:  # a read-only or full cache only costs the parse next time
        pass


def _prune(folder: Path) -> None:
    """Keep the :data:`KEEP` most recently written cache files (each index build makes a new one)."""
    entries = []
    for p in folder.glob("*.json"):
        try:
            entries.append((p.stat().st_mtime_ns, p))
        except OSError:  # removed by another process meanwhile
            pass
    for _, p in sorted(entries, reverse=True)[KEEP:]:
        try:
            p.unlink()
        except OSError:
            pass


__all__ = ["TABLES_FORMAT", "TagTables", "build_tag_tables", "cache_key", "cache_path", "load_tag_tables"]
