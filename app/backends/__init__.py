"""Backend registry: ``get_backend(name, **options)``.

Backends are imported lazily so that a missing optional extra (vllm, a model
library) only matters when that backend is asked for.

>>> sorted(BACKENDS)
['openai', 'retrieval', 'transformers', 'vllm']
>>> get_backend("nope")
Traceback (most recent call last):
...
geoql.app.backends.base.BackendError: unknown backend 'nope': choose one of openai, retrieval, transformers, vllm
"""

from __future__ import annotations

import importlib

from geoql.app.backends.base import Backend, BackendError, GenerationRequest

DEFAULT_BACKEND = "retrieval"

# name -> (module, class name)
BACKENDS: dict[str, tuple[str, str]] = {
    "retrieval": ("geoql.app.backends.retrieval", "RetrievalBackend"),
    "transformers": ("geoql.app.backends.transformers_backend", "TransformersBackend"),
    "openai": ("geoql.app.backends.openai_backend", "OpenAIBackend"),
    "vllm": ("geoql.app.backends.vllm_backend", "VLLMBackend"),
}


def backend_class(name: str) -> type[Backend]:
    """The class registered under ``name`` (imports its module)."""
    if name not in BACKENDS:
        raise BackendError(f"unknown backend {name!r}: choose one of {', '.join(sorted(BACKENDS))}")
    module_name, class_name = BACKENDS[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise BackendError(
                f"backend {name!r} is not available in this build ({module_name} is missing)"
            ) from exc
        raise BackendError(
            f"backend {name!r} needs the Python package {exc.name!r}: install it "
            f"(e.g. pip install 'geoql[{_EXTRA.get(name, 'all')}]')"
        ) from exc
    cls = getattr(module, class_name, None)
    if cls is None:
        raise BackendError(f"backend {name!r} is not available in this build ({module_name}.{class_name} is missing)")
    return cls


_EXTRA = {"retrieval": "index", "transformers": "hf", "openai": "hf", "vllm": "vllm"}


def get_backend(name: str | None = None, **options) -> Backend:
    """Instantiate the backend ``name`` (default: the CPU ``retrieval`` backend)."""
    cls = backend_class(name or DEFAULT_BACKEND)
    try:
        return cls(**options)
    except TypeError as exc:
        # Unknown keyword options are a user mistake (config file / CLI), not a bug.
        raise BackendError(f"bad options for backend {name or DEFAULT_BACKEND!r}: {exc}") from exc


__all__ = ["Backend", "BackendError", "GenerationRequest", "get_backend", "backend_class", "BACKENDS", "DEFAULT_BACKEND"]
