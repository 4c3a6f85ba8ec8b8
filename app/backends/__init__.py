"""Backend registry: ``get_backend(name, **options)``.

Backends are imported lazily so that a missing optional extra (vllm, a model
library) only matters when that backend is asked for.

``retrieval`` is the old name of the CPU default, ``cpu``: it still works in
this release and warns (``FutureWarning``, shown to end users), and goes in the next.

>>> sorted(BACKENDS)
['cpu', 'openai', 'transformers', 'vllm']
>>> get_backend("nope")
Traceback (most recent call last):
...
geoql.app.backends.base.BackendError: unknown backend 'nope': choose one of cpu, openai, transformers, vllm
"""

from __future__ import annotations

import importlib
import warnings

from geoql.app.backends.base import Backend, BackendError, Evidence, Generation, GenerationRequest

DEFAULT_BACKEND = "cpu"

# name -> (module, class name)
BACKENDS: dict[str, tuple[str, str]] = {
    "cpu": ("geoql.app.backends.cpu", "CpuBackend"),
    "transformers": ("geoql.app.backends.transformers_backend", "TransformersBackend"),
    "openai": ("geoql.app.backends.openai_backend", "OpenAIBackend"),
    "vllm": ("geoql.app.backends.vllm_backend", "VLLMBackend"),
}
# Old name -> name: kept for one release so that configs and scripts keep working.
ALIASES: dict[str, str] = {"retrieval": "cpu"}


def canonical_name(name: str) -> str:
    """``name``, or the backend an old name stands for (with a warning that says the new name).

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     canonical_name("retrieval"), str(caught[0].message)
    ('cpu', "backend 'retrieval' is now called 'cpu': use that name ('retrieval' goes in the next release)")
    """
    new = ALIASES.get(name)
    if new is None:
        return name
    warnings.warn(f"backend {name!r} is now called {new!r}: use that name ({name!r} goes in the next release)",
                  FutureWarning, stacklevel=3)
    return new


def backend_class(name: str) -> type[Backend]:
    """The class registered under ``name`` (imports its module)."""
    name = canonical_name(name)
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


_EXTRA = {"cpu": "index", "transformers": "hf", "openai": "hf", "vllm": "vllm"}


def get_backend(name: str | None = None, **options) -> Backend:
    """Instantiate the backend ``name`` (default: the CPU default, ``cpu``)."""
    cls = backend_class(name or DEFAULT_BACKEND)
    try:
        return cls(**options)
    except TypeError as exc:
        # Unknown keyword options are a user mistake (config file / CLI), not a bug.
        raise BackendError(f"bad options for backend {cls.name!r}: {exc}") from exc


__all__ = ["Backend", "BackendError", "Evidence", "Generation", "GenerationRequest", "get_backend", "backend_class", "canonical_name",
           "BACKENDS", "ALIASES", "DEFAULT_BACKEND"]
