"""ExampleRetriever on the small real index: nearest requests, leave-one-out, bad input."""

from __future__ import annotations

import pytest

from geoql.retrieval import ExampleRetriever, RetrievalConfig, RetrievedExample


@pytest.fixture(scope="module")
def examples(small_index_dir):
    return ExampleRetriever.load(small_index_dir)


def test_a_training_request_finds_itself(examples):
    for ex in examples.examples[:40:8]:
        top = examples.search(ex.nl, 1)[0]
        assert (top.index, top.nl, top.query) == (ex.index, ex.nl, ex.query)


def test_leave_one_out(examples):
    ex = examples.examples[3]
    hits = examples.search(ex.nl, 5, exclude=[ex.index])
    assert len(hits) == 5 and ex.index not in [h.index for h in hits]
    assert all(isinstance(h, RetrievedExample) for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_paraphrase_finds_the_example(examples):
    target = next(e for e in examples.examples if "florist" in e.nl.lower())
    hits = examples.search("flower shops in Forlì-Cesena", 3)
    assert target.index in [h.index for h in hits]


@pytest.mark.parametrize("weights", [(1, 0, 0), (0, 1, 0), (0, 0, 1)])
def test_each_view_alone_retrieves(small_index_dir, weights):
    d, b, c = weights
    single = ExampleRetriever.load(small_index_dir, RetrievalConfig(example_dense_weight=d, example_bm25_weight=b, example_char_weight=c))
    ex = single.examples[10]
    assert single.search(ex.nl, 1)[0].index == ex.index


@pytest.mark.parametrize("nl", ["", "...", None, "x" * 10_000, "東京のカフェ"])
def test_bad_input(examples, nl):
    hits = examples.search(nl, 3)
    assert isinstance(hits, list) and len(hits) <= 3


def test_exclude_everything(examples):
    every = [e.index for e in examples.examples]
    assert examples.search("cafe", 5, exclude=every) == []


def test_cosines_of_a_request_with_training_requests(examples):
    """A training request is nearest in meaning to itself; an index outside the split and a request without words give 0."""
    ex = examples.examples[7]
    others = [e.index for e in examples.examples[:40] if e.nl != ex.nl]
    own, *rest = examples.cosines(ex.nl, [ex.index, *others])
    assert own > 0.9 and own > max(rest) and all(-1.0 <= c <= 1.0 for c in rest)
    assert examples.cosines(ex.nl, [10**9]) == [0.0]
    assert examples.cosines("...", [ex.index, others[0]]) == [0.0, 0.0]
    hit = examples.search("flower shops in Forlì-Cesena", 1)[0]  # the same vectors as the dense search
    assert examples.cosines("flower shops in Forlì-Cesena", [hit.index])[0] > 0.3
