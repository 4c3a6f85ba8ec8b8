"""The selector as numpy trees chooses exactly as the scikit-learn regressor it was converted from."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from geoql.app.cpu.lite import NotConvertible, TreeEnsemble
from geoql.app.cpu.model import CpuModel
from geoql.app.cpu.train import CpuTrainConfig, fit_selector, training_rows
from geoql.eval.dataset import load_split


@pytest.fixture(scope="module")
def dev_requests():
    return [e.nl for e in load_split("dev")[:80]] + ["", "!!!", "Кафе в Москве", "benches near a playground in Zurich"]


@pytest.fixture(scope="module")
def fitted(small_cpu_model):
    """The scikit-learn regressor and its training rows, fitted as ``geoql cpu train`` fits it."""
    config = CpuTrainConfig(k=5, limit=40, max_iter=30)
    features, labels, groups = training_rows(small_cpu_model, config, progress=False)
    return fit_selector(features, labels, config, groups), features


def test_the_trees_predict_what_scikit_learn_predicts_bit_for_bit(fitted, small_cpu_model, dev_requests):
    regressor, features = fitted
    trees = TreeEnsemble.from_sklearn(regressor)
    assert np.array_equal(trees.predict(features), regressor.predict(features))
    for nl in dev_requests:
        _, cands, pool = small_cpu_model.pool(nl)
        if cands:
            assert np.array_equal(trees.predict(pool), regressor.predict(pool)), nl
    # odd feature values: NaN goes where the tree says, infinities compare as numbers
    probe = np.tile(features[:1], (4, 1))
    probe[1, :] = np.nan
    probe[2, :] = np.inf
    probe[3, :] = -np.inf
    assert np.array_equal(trees.predict(probe), regressor.predict(probe))


def test_the_arrays_round_trip(fitted):
    regressor, features = fitted
    trees = TreeEnsemble.from_sklearn(regressor)
    again = TreeEnsemble.from_arrays(trees.to_arrays())
    assert np.array_equal(again.predict(features), trees.predict(features))


def test_other_regressors_are_not_guessed_at(fitted):
    from sklearn.linear_model import Ridge

    _, features = fitted
    with pytest.raises(NotConvertible, match="Ridge"):
        TreeEnsemble.from_sklearn(Ridge().fit(features[:5], np.arange(5.0)))


def test_the_numpy_product_is_the_scipy_product(small_cpu_model, dev_requests):
    neighbours = small_cpu_model.neighbours
    rows = neighbours.vectorizer.transform(dev_requests)
    assert np.array_equal(rows.matmul_numpy(neighbours.matrix), (rows @ neighbours.matrix).toarray())


def test_the_neighbours_are_scikit_learns(small_cpu_model, dev_requests):
    from sklearn.feature_extraction.text import TfidfVectorizer

    reference = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), dtype=np.float32)
    matrix = reference.fit_transform(small_cpu_model.train_nls).T.tocsr()
    want = (reference.transform(dev_requests) @ matrix).toarray()
    neighbours = small_cpu_model.neighbours
    assert np.array_equal((neighbours.vectorizer.transform(dev_requests) @ neighbours.matrix).toarray(), want)


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
    assert query == CpuModel.load(hinted_cpu_model_dir, small_index_dir).compile("pubs in Dublin")[0]
