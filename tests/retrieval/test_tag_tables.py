"""The derived cache of an index's tag documents, surfaces, examples and English words."""

from __future__ import annotations

import json
import shutil

import pytest
from fakes.support import run_concurrently

from geoql.core import checksums
from geoql.retrieval import TagRetriever
from geoql.retrieval import artifacts as A
from geoql.retrieval import tag_tables as T
from geoql.retrieval.text import tokenize


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty user cache of this test's own."""
    monkeypatch.setenv("GEOQL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / T.CACHE_FOLDER


@pytest.fixture
def index_copy(small_index_dir, tmp_path):
    """A copy of the small index that a test may edit."""
    return shutil.copytree(small_index_dir, tmp_path / "index")


def _entries(folder):
    return sorted(p.name for p in folder.iterdir())


def test_tables_are_the_index_files_without_per_language_names(small_index_dir, cache):
    tables = T.load_tag_tables(small_index_dir)
    docs = A.read_jsonl(small_index_dir / A.TAGS_JSONL)
    assert any(d.get("names_by_lang") for d in docs)  # the small index has iD's translations
    for d in docs:
        d.pop("names_by_lang", None)
        d.pop("terms_by_lang", None)
    assert tables.docs == docs
    surfaces = A.read_jsonl(small_index_dir / A.TAG_SURFACES_JSONL)
    assert list(zip(tables.surface_doc, tables.surface_text, tables.surface_kind)) == [
        (s["doc"], s["text"], s["kind"]) for s in surfaces]
    rows = A.read_jsonl(small_index_dir / A.EXAMPLES_JSONL)
    assert tables.examples == {"index": [r["index"] for r in rows], "nl": [r["nl"] for r in rows],
                               "query": [r["query"] for r in rows], "tags": [r["tags"] for r in rows]}
    assert set(tokenize(rows[0]["nl"], keep_stopwords=True)) <= tables.english
    assert _entries(cache) == [f"{T.cache_key(small_index_dir)}.json"]
    assert T.load_tag_tables(small_index_dir) == tables == T.build_tag_tables(small_index_dir)


def test_the_retriever_reads_the_cache_and_answers_alike(small_index_dir, cache):
    cold = TagRetriever.load(small_index_dir)
    assert _entries(cache)
    warm = TagRetriever.load(small_index_dir)
    for nl in ("cafes in Heidelberg", "Apotheken in Berlin", "西安的博物馆"):
        assert warm.search(nl, 10) == cold.search(nl, 10)
        assert warm.is_english(nl) == cold.is_english(nl)


def test_a_changed_index_gets_new_tables(index_copy, cache):
    before = T.load_tag_tables(index_copy)
    docs = A.read_jsonl(index_copy / A.TAGS_JSONL)
    docs[0]["description"] = "edited after the build"
    (index_copy / A.TAGS_JSONL).write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    after = T.load_tag_tables(index_copy)
    assert after.docs[0]["description"] == "edited after the build" != before.docs[0]["description"]
    assert len(_entries(cache)) == 2


@pytest.mark.parametrize("content", [
    b"",
    b"{\"format\": 1, \"key\"",  # cut short
    b"\xff\xfe not json",
    b"[]",
    b"{\"format\": 1}",
    None,  # the right key and format, columns of different lengths
])
def test_a_damaged_cache_file_is_rebuilt(small_index_dir, cache, content):
    key = T.cache_key(small_index_dir)
    good = T.build_tag_tables(small_index_dir)
    path = T.cache_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    if content is None:
        content = json.dumps({"format": T.TABLES_FORMAT, "key": key, "docs": good.docs,
                              "surfaces": {"doc": [0], "text": [], "kind": []},
                              "examples": good.examples, "english": []}).encode()
    path.write_bytes(content)
    assert T.load_tag_tables(small_index_dir) == good
    assert T._read(path, key) == good  # and rewritten whole


def test_an_unwritable_cache_only_costs_the_parse(small_index_dir, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("GEOQL_CACHE_DIR", str(blocker))
    assert T.load_tag_tables(small_index_dir) == T.build_tag_tables(small_index_dir)


def test_concurrent_loads_agree_and_leave_one_whole_file(small_index_dir, cache):
    results, errors = run_concurrently(lambda: T.load_tag_tables(small_index_dir), 6)
    assert not errors
    assert len(results) == 6 and all(r == results[0] for r in results)
    key = T.cache_key(small_index_dir)
    assert _entries(cache) == [f"{key}.json"]  # no temporary file left behind
    assert T._read(T.cache_path(key), key) == results[0]


def test_old_cache_files_are_pruned(small_index_dir, cache):
    cache.mkdir(parents=True)
    for i in range(T.KEEP + 3):
        (cache / f"{i:064x}.json").write_text("{}")
    T.load_tag_tables(small_index_dir)
    names = _entries(cache)
    assert len(names) == T.KEEP and f"{T.cache_key(small_index_dir)}.json" in names


def test_file_hashes_follow_the_files(index_copy, cache):
    key = T.cache_key(index_copy)
    assert T.cache_key(index_copy) == key  # from the remembered hashes
    memo = cache.parent / checksums.MEMO_FILE
    memo.write_text(json.dumps({str((index_copy / name).resolve()): {"stat": [0], "sha256": "zz"} for name in T.SOURCES}))
    assert T.cache_key(index_copy) == key  # a stale or bad entry is hashed again
    memo.write_text("[1, 2")
    assert T.cache_key(index_copy) == key
    path = index_copy / A.EXAMPLES_JSONL
    path.write_bytes(path.read_bytes() + b"\n")
    assert T.cache_key(index_copy) != key
