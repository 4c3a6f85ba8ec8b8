"""Fixtures for the training tests: a tiny Qwen3 model, real retrievers, one torch thread.

Imported by the test modules (``from training_fixtures import ...``): a conftest.py
here would shadow the root one that other packages import helpers from. The heavy
objects are cached per process, so each is built once however many modules use it.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    # The test machine's two cores are shared by parallel jobs; more torch threads
    # than free cores makes token-by-token generation ~50x slower.
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@lru_cache(maxsize=1)
def _tiny_model() -> Path:
    from geoql.app.tiny_model import build_tiny_model
    from geoql.eval.dataset import load_split

    root = Path(tempfile.mkdtemp(prefix="geoql-tiny-"))
    atexit.register(shutil.rmtree, root, True)
    train = load_split("train")[:2000]
    texts = [e.nl for e in train] + [e.query for e in train]
    return build_tiny_model(root / "model", texts=texts)


@lru_cache(maxsize=4)
def _retrievers(index_dir: str):
    from geoql.training.data import Retrievers

    return Retrievers.load(index_dir)


@pytest.fixture(scope="session")
def tiny_model_dir() -> Path:
    """A random tiny Qwen3 with a tokenizer trained on OverpassNL text (built once)."""
    return _tiny_model()


@pytest.fixture(scope="session")
def retrievers(small_index_dir):
    return _retrievers(str(small_index_dir))


@pytest.fixture
def tiny_overrides(tiny_model_dir, small_index_dir, tmp_path):
    """--set overrides that point a tiny recipe at the test model, index and a fresh output dir."""
    return [f"model={tiny_model_dir}", f"data.index_dir={small_index_dir}", f"train.output_dir={tmp_path / 'run'}"]
