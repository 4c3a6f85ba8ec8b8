"""Loading fails clearly (naming the build command) when the index is missing or stale."""

from __future__ import annotations

import json
import shutil

import pytest

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
    with pytest.raises(IndexMissingError, match="disagree"):
        TagRetriever.load(copied_index)
