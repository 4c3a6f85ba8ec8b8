"""Saved files checked against their SHA-256: remembered by stamp, never trusted past a change."""

from __future__ import annotations

import json
import os

import pytest

from geoql.core import checksums


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GEOQL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_digests_are_remembered_and_found_again(tmp_path, cache):
    path = tmp_path / "vectors.npy"
    path.write_bytes(b"a" * 1000)
    digest = checksums.sha256_file(path)
    assert checksums.file_digests([path]) == [digest]
    memo = json.loads((cache / checksums.MEMO_FILE).read_text())
    assert memo[str(path.resolve())]["sha256"] == digest
    # a remembered digest is used while the stamp holds: the memo is the only thing read
    memo[str(path.resolve())]["sha256"] = "0" * 64
    (cache / checksums.MEMO_FILE).write_text(json.dumps(memo))
    assert checksums.file_digests([path]) == ["0" * 64]
    assert checksums.file_digests([path], remembered=False) == [digest]


@pytest.mark.parametrize("how", ["rewrite", "same size and mtime", "replaced by a copy"])
def test_any_change_through_the_file_system_is_hashed_again(tmp_path, cache, how):
    path = tmp_path / "examples.e5.npy"
    path.write_bytes(b"a" * 1000)
    checksums.file_digests([path])
    before = path.stat()
    if how == "rewrite":
        path.write_bytes(b"b" * 1001)
    elif how == "same size and mtime":
        with open(path, "r+b") as f:
            f.seek(500)
            f.write(b"X")
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # ctime still moves
    else:
        other = tmp_path / "other"
        other.write_bytes(b"a" * 999 + b"c")
        os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
        os.replace(other, path)  # a new inode
    assert checksums.file_digests([path]) == [checksums.sha256_file(path)]


def test_mismatches_name_missing_and_changed_files(tmp_path, cache):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a").write_bytes(b"1")
    (tmp_path / "sub" / "b").write_bytes(b"2")
    listed = checksums.digest_folder(tmp_path)
    assert sorted(listed) == ["a", "sub/b"] and checksums.mismatches(tmp_path, listed) == []
    (tmp_path / "sub" / "b").write_bytes(b"3")
    (tmp_path / "a").unlink()
    assert checksums.mismatches(tmp_path, listed) == ["a", "sub/b"]


def test_an_unwritable_memo_costs_only_time(tmp_path, monkeypatch):
    blocked = tmp_path / "cache-is-a-file"
    blocked.write_text("")
    monkeypatch.setenv("GEOQL_CACHE_DIR", str(blocked))
    path = tmp_path / "x"
    path.write_bytes(b"x")
    assert checksums.file_digests([path]) == [checksums.sha256_file(path)]


def test_a_manifest_seals_itself():
    sealed = checksums.seal({"config": {"k": 10}, "files": {"model.json": "ab" * 32}})
    assert checksums.is_sealed(json.loads(json.dumps(sealed)))  # survives a JSON round trip
    assert not checksums.is_sealed({**sealed, "config": {"k": 11}})
    assert not checksums.is_sealed({k: v for k, v in sealed.items() if k != checksums.SEAL})
