"""Loading fails clearly (naming the build command) when the index is missing or stale."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from fixtures_index import reseal

from geoql.retrieval import ExampleRetriever, IndexMissingError, TagRetriever, default_index_dir
from geoql.retrieval import artifacts as A


def test_missing_index_names_the_build_command(tmp_path):
    for loader in (TagRetriever.load, ExampleRetriever.load):
        with pytest.raises(IndexMissingError, match=f"geoql index build --out {tmp_path}"):
            loader(tmp_path)


def test_default_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(A.ENV_VAR, str(tmp_path / "idx"))
    assert default_index_dir() == tmp_path / "idx"
    with pytest.raises(IndexMissingError, match=r"run `geoql index build`"):
        TagRetriever.load()
    monkeypatch.delenv(A.ENV_VAR)
    assert default_index_dir().name == f"v{A.FORMAT_VERSION}"


@pytest.fixture()
def copied_index(small_index_dir, tmp_path):
    return shutil.copytree(small_index_dir, tmp_path / "copy")


def test_incompatible_version_is_stale(copied_index):
    manifest = json.loads((copied_index / A.MANIFEST).read_text())
    manifest["format_version"] = A.FORMAT_VERSION + 1
    (copied_index / A.MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(IndexMissingError, match="incompatible.*rebuild"):
        TagRetriever.load(copied_index)


def test_tokenizer_change_is_stale(copied_index):
    manifest = json.loads((copied_index / A.MANIFEST).read_text())
    manifest["tokenizer_version"] = 0
    (copied_index / A.MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(IndexMissingError, match="incompatible"):
        ExampleRetriever.load(copied_index)


def test_missing_file_is_reported(copied_index):
    (copied_index / A.EXAMPLES_FAISS).unlink()
    with pytest.raises(IndexMissingError, match=f"incomplete.*{A.EXAMPLES_FAISS}"):
        TagRetriever.load(copied_index)


def test_corrupt_manifest_is_reported(copied_index):
    (copied_index / A.MANIFEST).write_text("{not json")
    with pytest.raises(IndexMissingError, match="unreadable"):
        TagRetriever.load(copied_index)


def test_mismatched_files_are_reported(copied_index):
    lines = (copied_index / A.TAG_SURFACES_JSONL).read_text().splitlines()
    (copied_index / A.TAG_SURFACES_JSONL).write_text("\n".join(lines[:-5]) + "\n")
    with pytest.raises(IndexMissingError, match=f"does not match its manifest \\({A.TAG_SURFACES_JSONL}"):
        TagRetriever.load(copied_index)
    reseal(copied_index)  # listed as they are now: the files still disagree with each other
    with pytest.raises(IndexMissingError, match="disagree"):
        TagRetriever.load(copied_index)


def _flip(path, count=1):
    """``count`` flipped bytes in the middle of ``path``, written in place (as the review's damage was)."""
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    for i in range(count):
        data[middle + i] ^= 0x5A
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("name", [A.EXAMPLES_E5, A.EXAMPLES_FAISS, A.TAG_SURFACES_FAISS, A.TAGS_JSONL, A.TAG_LEXICON,
                                  "ranker.json", f"{A.TAGS_BM25}/data.csc.index.npy"])
def test_a_damaged_file_is_a_clear_error_never_an_answer(copied_index, name):
    """64 flipped bytes in examples.e5.npy turned tram stops into parking, exit 0: now no file is read unchecked."""
    assert (copied_index / name).is_file()
    _flip(copied_index / name, 64 if name == A.EXAMPLES_E5 else 1)
    for loader in (TagRetriever.load, ExampleRetriever.load):
        with pytest.raises(IndexMissingError, match=f"does not match its manifest \\({name}.*geoql index build --out"):
            loader(copied_index)


def test_a_flip_with_the_old_modification_time_is_caught(copied_index):
    TagRetriever.load(copied_index)  # every digest remembered
    path = copied_index / A.EXAMPLES_E5
    before = path.stat()
    _flip(path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    with pytest.raises(IndexMissingError, match=A.EXAMPLES_E5):
        TagRetriever.load(copied_index)


def test_every_file_is_checked_without_the_memo(copied_index):
    A.check_files(copied_index, A.load_manifest(copied_index).data, remembered=False)
    _flip(copied_index / A.EXAMPLES_FAISS)
    with pytest.raises(IndexMissingError, match=A.EXAMPLES_FAISS):
        A.check_files(copied_index, json.loads((copied_index / A.MANIFEST).read_text()), remembered=False)


def test_an_unlisted_file_is_refused(copied_index):
    (copied_index / "glossary.de.sqlite").write_bytes(b"planted")
    with pytest.raises(IndexMissingError, match="glossary.de.sqlite"):
        TagRetriever.load(copied_index)


def test_an_edited_manifest_is_refused(copied_index):
    manifest = json.loads((copied_index / A.MANIFEST).read_text())
    manifest["languages"] = ["en"]  # valid, and it would change how requests in other languages are read
    (copied_index / A.MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(IndexMissingError, match="does not match its own checksum"):
        TagRetriever.load(copied_index)


def test_an_index_without_checksums_is_rebuilt_not_trusted(copied_index):
    manifest = json.loads((copied_index / A.MANIFEST).read_text())
    del manifest[A.FILES]
    (copied_index / A.MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(IndexMissingError, match="older GeoQL.*SHA-256.*geoql index build --out"):
        TagRetriever.load(copied_index)


def test_an_unreadable_faiss_file_names_the_fix_not_faiss(copied_index):
    (copied_index / A.EXAMPLES_FAISS).write_bytes(b"IxFI" + b"\0" * 40)  # consistent with a resealed manifest
    reseal(copied_index)
    with pytest.raises(IndexMissingError, match=f"{A.EXAMPLES_FAISS} is not a readable FAISS index.*geoql index build"):
        TagRetriever.load(copied_index)
