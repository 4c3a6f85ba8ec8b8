"""Shared fixtures of the compile tests: one tiny Qwen3 model per session."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, overpassnl_dir):
    from app.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="session")
def tiny_backend(tiny_model_dir):
    from app.backends.transformers_backend import TransformersBackend

    backend = TransformersBackend(tiny_model_dir, device="cpu", batch_size=32)
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def prompt():
    return [{"role": "system", "content": "Translate the request into OverpassQL."},
            {"role": "user", "content": "drinking water taps in Vienna"}]
