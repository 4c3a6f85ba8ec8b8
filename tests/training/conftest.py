"""Fixtures for the training tests: a tiny Qwen3 model, real retrievers, one torch thread."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    # The test machine's two cores are shared by parallel jobs; more torch threads
    # than free cores makes token-by-token generation ~50x slower.
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A random tiny Qwen3 with a tokenizer trained on OverpassNL text (built once)."""
    from app.tiny_model import build_tiny_model
    from eval.dataset import load_split

    train = load_split("train")[:2000]
    texts = [e.nl for e in train] + [e.query for e in train]
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", texts=texts)


@pytest.fixture(scope="session")
def retrievers(small_index_dir):
    from training.data import Retrievers

    return Retrievers.load(small_index_dir)


@pytest.fixture
def tiny_overrides(tiny_model_dir, small_index_dir, tmp_path):
    """--set overrides that point a tiny recipe at the test model, index and a fresh output dir."""
    return [f"model={tiny_model_dir}", f"data.index_dir={small_index_dir}", f"train.output_dir={tmp_path / 'run'}"]
