"""The SQLite key/value table the OSM clients cache in."""

from __future__ import annotations

import threading

import pytest

from geoql.osm.cache import SqliteStore


def test_put_get_and_put_many_keep_or_replace(tmp_path):
    store = SqliteStore(tmp_path / "sub" / "c.sqlite", "answers")
    assert store.get("a") is None
    store.put("a", b"1")
    store.put_many({"a": b"seed", "b": b"2"})  # INSERT OR IGNORE: "a" keeps its answer
    assert (store.get("a"), store.get("b"), len(store)) == (b"1", b"2", 2)
    store.put_many({"a": b"new"}, replace=True)
    assert store.get("a") == b"new"
    # A second store on the same file sees the same rows (as another process would).
    assert SqliteStore(tmp_path / "sub" / "c.sqlite", "answers").get("b") == b"2"


def test_threads_write_one_file_safely(tmp_path):
    store = SqliteStore(tmp_path / "c.sqlite", "answers")
    errors: list[BaseException] = []

    def worker(w: int):
        try:
            for i in range(25):
                store.put(f"{w}/{i}", str(i).encode())
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(store) == 150 and store.integrity_ok()


def test_a_file_that_is_not_a_database_is_moved_aside(tmp_path):
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"not a database" * 100)
    store = SqliteStore(path, "answers")
    store.put("a", b"1")
    (kept,) = tmp_path.glob("c.sqlite.corrupt-*")
    assert kept.read_bytes().startswith(b"not a database") and store.get("a") == b"1"


def test_table_names_are_checked():
    with pytest.raises(ValueError, match="lowercase letters"):
        SqliteStore("unused.sqlite", "drop table;")
