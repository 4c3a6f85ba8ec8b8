"""A saved CPU model read without scikit-learn or scipy chooses exactly as the scikit-learn objects do."""

from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

from geoql.app.cpu.lite import NotLite, TreeEnsemble, read_lite, read_model
from geoql.app.cpu.model import MODEL_FILE, CpuModel, _ModelUnpickler, current_name
from geoql.eval.dataset import load_split


@pytest.fixture(scope="module")
def dev_requests():
    return [e.nl for e in load_split("dev")[:80]] + ["", "!!!", "Кафе в Москве", "benches near a playground in Zurich"]


def _lite(model_dir):
    with open(model_dir / MODEL_FILE, "rb") as f:
        return read_lite(f, current_name)


def test_the_lite_model_has_no_scikit_learn_objects(small_cpu_model_dir):
    lite = _lite(small_cpu_model_dir)
    assert isinstance(lite, CpuModel) and isinstance(lite.selector, TreeEnsemble)
    assert type(lite.neighbours.vectorizer).__module__ == "geoql.retrieval.char_tfidf"


def test_neighbours_and_selector_agree_bit_for_bit(small_cpu_model_dir, dev_requests):
    full = CpuModel.load(small_cpu_model_dir)  # scikit-learn objects
    lite = _lite(small_cpu_model_dir)
    for nl in dev_requests:
        want, got = full.neighbours.search(nl, 10), lite.neighbours.search(nl, 10)
        assert got == want, nl
        _, cands, features = full.pool(nl)
        if not cands:
            continue
        assert np.array_equal(lite.selector.predict(features), full.selector.predict(features)), nl
        assert lite.compile(nl, n=3) == full.compile(nl, n=3), nl
    # odd feature values: NaN goes where the tree says, infinities compare as numbers
    probe = np.tile(features[:1], (4, 1))
    probe[1, :] = np.nan
    probe[2, :] = np.inf
    probe[3, :] = -np.inf
    assert np.array_equal(lite.selector.predict(probe), full.selector.predict(probe))


def test_the_numpy_product_is_the_scipy_product(small_cpu_model_dir, dev_requests):
    lite = _lite(small_cpu_model_dir)
    rows = lite.neighbours.vectorizer.transform(dev_requests)
    assert np.array_equal(rows.matmul_numpy(lite.neighbours.matrix), (rows @ lite.neighbours.matrix).toarray())


def test_anything_else_is_unpickled_the_ordinary_way(small_cpu_model):
    from sklearn.linear_model import Ridge

    model = pickle.loads(pickle.dumps(small_cpu_model))
    model.selector = Ridge().fit(np.zeros((3, len(model.feature_names))), [0.0, 1.0, 0.5])
    data = pickle.dumps(model)
    with pytest.raises(NotLite, match="Ridge"):
        read_lite(io.BytesIO(data))
    loaded = read_model(io.BytesIO(data), _ModelUnpickler, current_name)
    assert isinstance(loaded.selector, Ridge)


def test_a_request_on_the_cpu_default_loads_no_sklearn_scipy_or_torch(hinted_cpu_model_dir, small_index_dir):
    """The cold `geoql compile` path: the model, the tag index and the query encoder without the heavy stacks."""
    from geoql.retrieval.embedding import DEFAULT_MODEL, onnx_export_dir

    onnx_export_dir(DEFAULT_MODEL)  # made here once (the export needs torch), in the tests' cache
    code = ("import sys, geoql; print(geoql.compile('pubs in Dublin').query); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'sklearn', 'scipy', 'torch', 'transformers', 'pandas'}))")
    env = {**os.environ, "GEOQL_CPU_MODEL_DIR": str(hinted_cpu_model_dir), "GEOQL_INDEX_DIR": str(small_index_dir)}
    env.pop("GEOQL_ENCODER", None)
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    query, heavy = result.stdout.strip().splitlines()
    assert "Dublin" in query and heavy == "[]"
