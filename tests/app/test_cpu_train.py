"""Training the selection model on a small subset of the training split."""

from __future__ import annotations

import numpy as np
import pytest

from geoql.app.cpu.features import FEATURE_NAMES
from geoql.app.cpu.hints import TagHints
from geoql.app.cpu.train import CpuTrainConfig, augmented_requests, train, training_rows
from geoql.app.cpu.model import CpuModel, CpuConfig
from geoql.core.errors import ConfigError
from geoql.eval.dataset import load_split
from geoql.nl.frame import read_frame
from geoql.retrieval.ranker import same_query_positions

N_PAIRS = 400


@pytest.fixture(scope="module")
def pairs():
    train_split = load_split("train")[:N_PAIRS]
    return [e.nl for e in train_split], [e.query for e in train_split]


@pytest.fixture(scope="module")
def small_model(pairs):
    return train(*pairs, CpuTrainConfig(k=5, limit=60, max_iter=50), progress=False)


def test_training_rows_are_scored_with_the_official_metric(pairs):
    from geoql.eval.metrics import oqs

    model = CpuModel.fit_retrieval(*pairs, CpuConfig(k=5))
    feats, labels, groups = training_rows(model, CpuTrainConfig(k=5, limit=20), progress=False)
    assert feats.shape == (len(labels), len(FEATURE_NAMES)) and len(groups) == len(labels)
    assert np.all((labels >= 0) & (labels <= 1))
    # Recompute one request's labels directly: the pool is the same as at inference.
    first = groups == groups[0]
    req = int(groups[0])
    _, cands, _ = model.pool(pairs[0][req], exclude=set(same_query_positions(pairs[1])[req]), config=CpuConfig(k=5))
    assert np.allclose(sorted(labels[first]), sorted(oqs(c.query, pairs[1][req]) for c in cands), atol=1e-6)


def test_requests_with_the_same_gold_query_never_meet_in_training(pairs):
    """As for dev and test requests, whose queries train never holds: a request's pool comes without its twins."""
    nls, queries = list(pairs[0][:40]), list(pairs[1][:40])
    nls.append(nls[3] + " please")
    queries.append(" " + queries[3] + "\n")  # another request for the same query
    model = CpuModel.fit_retrieval(nls, queries, CpuConfig(k=5))
    found = {}
    search_many = model.neighbours.search_many

    def spy(batch, k, excludes=None):
        found["excludes"], found["neighbours"] = excludes, search_many(batch, k, excludes)
        return found["neighbours"]

    model.neighbours.search_many = spy
    training_rows(model, CpuTrainConfig(k=5, limit=41), progress=False)
    assert found["excludes"][3] == found["excludes"][40] == {3, 40} and found["excludes"][0] == {0}
    assert 3 not in {n.index for n in found["neighbours"][40]} and 40 not in {n.index for n in found["neighbours"][3]}
    # unexcluded, the twin is the nearest request: the leak this closes
    assert {n.index for n in search_many([nls[40]], 2)[0]} == {3, 40}


def test_selector_learns_something(small_model):
    fit = small_model.stats["train_fit_oqs"]
    assert fit["oracle"] >= fit["selected"] >= fit["nearest"]
    assert fit["selected"] > fit["nearest"]  # on its own training rows the model must beat copying top-1
    assert small_model.stats["train_requests"] == 60


def test_training_is_deterministic(pairs, small_model):
    again = train(*pairs, CpuTrainConfig(k=5, limit=60, max_iter=50), progress=False)
    nls = [e.nl for e in load_split("dev")[:15]]
    assert [small_model.compile(nl)[0] for nl in nls] == [again.compile(nl)[0] for nl in nls]


def test_rows_scored_on_two_processes_are_the_rows_of_one(small_index_dir, monkeypatch):
    """Spawned workers load the model and the tag hints again: the same features, labels and pools, in order."""
    from geoql.retrieval import parallel

    train_split = load_split("train")[:200]
    model = CpuModel.fit_retrieval([e.nl for e in train_split], [e.query for e in train_split], CpuConfig(k=5, tag_hints=True))
    model.hints = TagHints.load(small_index_dir)
    config = dict(k=5, limit=24, tag_hints="on", index_dir=str(small_index_dir), augment="de,zh")
    one = training_rows(model, CpuTrainConfig(**config, workers=1), progress=False)
    monkeypatch.setattr(parallel, "MIN_CHUNK", 5)  # 24 requests and their copies are worth two processes here
    two = training_rows(model, CpuTrainConfig(**config, workers=2), progress=False)
    assert len(np.unique(one[2])) > 24  # the copies are scored too
    for a, b in zip(one, two):
        assert a.shape == b.shape and np.array_equal(a, b)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"folds": 1}, "folds must be >= 2"), ({"limit": 3}, "limit must be at least 20"),
     ({"k": 0}, "k must be between 1 and 100"),
     ({"workers": 0}, "workers must be >= 1"), ({"edits": "colour"}, "unknown edit group")],
)
def test_config_errors_name_the_fix(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CpuTrainConfig(**kwargs)


def test_training_copies_are_pools_of_their_own_scored_against_the_originals_gold(small_index_dir):
    pairs = load_split("train")[:120]
    nls, queries = [e.nl for e in pairs], [e.query for e in pairs]
    model = CpuModel.fit_retrieval(nls, queries, CpuConfig(k=5, tag_hints=True))
    model.hints = TagHints.load(small_index_dir)
    config = CpuTrainConfig(k=5, limit=40, augment_share=1.0)
    copies = augmented_requests(model, config, 40)
    assert copies and all(nls[i] != text for i, text in copies)
    langs = {read_frame(text).language for _, text in copies}  # the languages take turns
    assert len(langs) >= 3
    feats, labels, groups = training_rows(model, config, progress=False)
    plain = training_rows(model, CpuTrainConfig(k=5, limit=40, augment=""), progress=False)
    assert np.array_equal(feats[groups < 40], plain[0]) and np.array_equal(labels[groups < 40], plain[1])
    assert len(np.unique(groups[groups >= 40])) > 0
    assert 0 <= labels.min() and labels.max() <= 1


@pytest.mark.parametrize("fields, words", [
    ({"augment": "de,xx"}, "no code-switching for xx"),
    ({"augment_share": 1.5}, "augment_share must be between 0 and 1"),
])
def test_bad_augment_options_name_the_fix(fields, words):
    with pytest.raises(ConfigError, match=words):
        CpuTrainConfig(**fields)
