"""Shared fixtures of the compile tests: one tiny Qwen3 model and one hint-trained CPU model per session."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, overpassnl_dir):
    from geoql.app.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="session")
def tiny_backend(tiny_model_dir):
    from geoql.app.backends.transformers_backend import TransformersBackend

    backend = TransformersBackend(tiny_model_dir, device="cpu", batch_size=32)
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def prompt():
    return [{"role": "system", "content": "Translate the request into OverpassQL."},
            {"role": "user", "content": "drinking water taps in Vienna"}]


@pytest.fixture(scope="session")
def hinted_cpu_model(small_index_dir):
    """A small CPU model trained with the small tag index: it needs that index to load."""
    from geoql.app.cpu.train import CpuTrainConfig, train
    from geoql.eval.dataset import load_split

    pairs = load_split("train")[:300]
    return train([e.nl for e in pairs], [e.query for e in pairs],
                 CpuTrainConfig(k=5, limit=30, max_iter=20, tag_hints="on", index_dir=str(small_index_dir)),
                 progress=False)


@pytest.fixture(scope="session")
def hinted_cpu_model_dir(hinted_cpu_model, tmp_path_factory):
    return hinted_cpu_model.save(tmp_path_factory.mktemp("hinted-cpu-model"))
