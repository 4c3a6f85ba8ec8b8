"""chunked_map: the plain loop's list, whether it runs here or on worker processes."""

from __future__ import annotations

from functools import partial

import numpy as np

from geoql.retrieval import parallel
from geoql.retrieval.config import RetrievalConfig
from geoql.retrieval.parallel import chunked_map
from geoql.retrieval.ranker import training_groups
from geoql.retrieval.tags import TagRetriever


def _offset(base: int) -> int:
    return base


def _add(ctx: int, item: int) -> int:
    return ctx + item * item


def test_workers_give_the_plain_loops_list(monkeypatch):
    monkeypatch.setattr(parallel, "MIN_CHUNK", 5)
    items = list(range(103))
    want = [7 + i * i for i in items]
    seen = []
    assert chunked_map(_add, items, partial(_offset, 7), workers=2, progress=seen.append) == want
    assert sum(seen) == len(items)
    assert chunked_map(_add, items, partial(_offset, 7), workers=1) == want
    assert chunked_map(_add, [], partial(_offset, 7), workers=2) == []


def test_few_items_stay_in_this_process():
    assert chunked_map(_add, [1, 2, 3], partial(_offset, 0), workers=8, context=100) == [101, 104, 109]


def test_ranker_features_on_two_processes_are_the_same(small_index_dir, monkeypatch):
    retriever = TagRetriever.load(small_index_dir, RetrievalConfig(fusion="linear"))
    one, n_one = training_groups(retriever, every=3, workers=1)
    monkeypatch.setattr(parallel, "MIN_CHUNK", 10)
    two, n_two = training_groups(retriever, every=3, workers=2)
    assert n_one == n_two and len(one) == len(two) > 10
    for (x1, y1), (x2, y2) in zip(one, two):
        assert np.array_equal(x1, x2) and np.array_equal(y1, y2)
