"""retrieval-eval figures on the small index: definitions checked against a hand count."""

from __future__ import annotations

import pytest

from geoql.eval.dataset import load_split
from geoql.retrieval import TagHit, TagRetriever
from geoql.retrieval.evaluate import evaluate, percentile
from geoql.retrieval.gold import controlled_pairs


class FixedRetriever:
    """Answers from a table: lets the test know every figure in advance."""

    def __init__(self, answers, known):
        self.answers, self.known = answers, known

    def __contains__(self, tag):
        return tag in self.known

    def search(self, nl, k):
        return [TagHit(t, t.split("=")[0], t.split("=")[1], t, 1.0, "") for t in self.answers.get(nl, [])][:k]


class RetrieverWithDocs(FixedRetriever):
    def doc(self, tag):
        key, _, value = tag.partition("=")
        typo = "filler=x" if tag == "filler1=x" else ""
        return {"key": key, "value": value, "sources": ["overpassnl-train"], "likely_typo_of": typo}


def test_recall_counts_occurrences_and_coverage(overpassnl_dir):
    dev = load_split("dev", overpassnl_dir)
    chosen = [e for e in dev if len(controlled_pairs(e.query)) == 2][:3]
    pairs = [controlled_pairs(e.query) for e in chosen]
    answers = {
        chosen[0].nl: pairs[0],  # both found at ranks 1-2
        # one found at rank 7, the other a candidate at rank 12
        chosen[1].nl: [f"filler{i}=x" for i in range(6)] + pairs[1][:1] + [f"filler{i}=x" for i in range(6, 10)] + pairs[1][1:],
        chosen[2].nl: [],  # none found
    }
    known = set(pairs[0]) | set(pairs[1]) | {pairs[2][0]}
    report = evaluate(FixedRetriever(answers, known), chosen, (5, 10), progress=False)
    assert report.n_pairs == 6
    assert report.recall == {5: 2 / 6, 10: 3 / 6}
    assert report.coverage == pytest.approx(5 / 6)
    # perfect ordering would put both pairs of the first two lists in any top 5; the third list has no candidates
    assert report.candidate_recall == pytest.approx(4 / 6) and report.ceiling == {5: 4 / 6, 10: 4 / 6}
    assert len(report.misses) == 3
    # rank 12 of the second list and both pairs of the third: one known to the index, one in no source
    assert [(m["index"], m["pair"], m["why"]) for m in report.misses] == [
        (chosen[1].index, pairs[1][1], "ranked below 10"),
        (chosen[2].index, pairs[2][0], "not a candidate"),
        (chosen[2].index, pairs[2][1], "not in index"),
    ]
    assert report.misses[0]["listed"] == answers[chosen[1].nl][:10] and report.misses[0]["request"] == chosen[1].nl
    assert report.by_neighbour == {}  # a table has no training requests to be near
    figures = report.as_json()
    assert set(figures) >= {"recall@5", "recall@10", "key_recall@10", "coverage", "p50_ms", "p95_ms", "ceiling@10", "candidate_recall"}
    assert report.suspect == {} and "suspect@10" not in figures  # the table has no tag documents
    # 2 + 10 listed tags in the top 10, one of them a likely typo (filler1=x, rank 2 of the second list)
    with_docs = evaluate(RetrieverWithDocs(answers, known), chosen, (1, 5, 10), progress=False)
    assert with_docs.suspect == {1: 0 / 2, 5: 1 / 7, 10: 1 / 12} and with_docs.as_json()["suspect@10"] == round(1 / 12, 4)


def test_on_the_small_real_index(small_index_dir, overpassnl_dir):
    dev = load_split("dev", overpassnl_dir)[:40]
    report = evaluate(TagRetriever.load(small_index_dir), dev, (5, 10, 20), progress=False)
    assert 0 < report.recall[5] <= report.recall[10] <= report.recall[20] <= report.coverage <= 1
    for k in (5, 10, 20):
        assert report.recall[k] <= report.ceiling[k] <= report.candidate_recall <= report.coverage
    assert 0 < report.key_recall[10] <= 1
    assert 0 <= report.suspect[10] < 0.1
    assert 0 < report.p50_ms <= report.p95_ms


def test_recall_by_nearest_request(small_index_dir, overpassnl_dir):
    """The bands split the requests with gold pairs; their recalls average back to the overall one."""
    dev = load_split("dev", overpassnl_dir)[:40]
    retriever = TagRetriever.load(small_index_dir)
    report = evaluate(retriever, dev, (5, 10), progress=False)
    bands = report.by_neighbour
    assert set(bands) <= {"<0.6", "0.6-0.7", "0.7-0.8", "0.8-0.9", ">=0.9"} and len(bands) >= 2
    assert list(bands) == [b for b in ["<0.6", "0.6-0.7", "0.7-0.8", "0.8-0.9", ">=0.9"] if b in bands]  # in cosine order
    assert sum(b["requests"] for b in bands.values()) == sum(1 for e in dev if controlled_pairs(e.query))
    assert sum(b["pairs"] for b in bands.values()) == report.n_pairs
    for k in (5, 10):
        pooled = sum(b[f"recall@{k}"] * b["pairs"] for b in bands.values()) / report.n_pairs
        assert pooled == pytest.approx(report.recall[k], abs=1e-3)
    assert report.as_json()["by_nearest_request_cosine"] == bands
    # an indexed request finds itself (the int8 query encoder is ~0.95 cosine to the fp32 index vectors);
    # a request without words has no neighbour
    indexed = retriever.examples.examples[0]
    assert retriever.examples.nearest_cosine(indexed.nl) > 0.85 > retriever.examples.nearest_cosine("zqxv wkjh")
    assert retriever.examples.nearest_cosine(" ?! ") == 0.0


def test_percentile():
    assert percentile([], 50) == 0.0
    assert percentile([3, 1, 2], 50) == 2 and percentile(list(range(1, 101)), 95) == 95


class CountingRetriever(FixedRetriever):
    def __init__(self, answers, known):
        super().__init__(answers, known)
        self.calls: list[tuple[str, int]] = []

    def search(self, nl, k):
        self.calls.append((nl, k))
        return super().search(nl, k)


def test_a_shared_cache_searches_each_request_once_for_two_golds(overpassnl_dir):
    from dataclasses import replace

    dev = load_split("dev", overpassnl_dir)[:6]
    answers = {e.nl: controlled_pairs(e.query) for e in dev}
    retriever = CountingRetriever(answers, {p for ps in answers.values() for p in ps})
    cache: dict = {}
    own = evaluate(retriever, dev, (5, 10), progress=False, cache=cache, candidates=False)
    other_gold = [replace(e, query=dev[0].query) for e in dev]
    other = evaluate(retriever, other_gold, (5, 10), progress=False, cache=cache, candidates=False)
    assert own.recall[10] == 1.0 and other.n_pairs == 6 * len(controlled_pairs(dev[0].query))
    assert len(retriever.calls) == 1 + len(dev)  # the warm-up call, then one search per request for both golds
    assert own.candidate_recall is None and own.ceiling == {} and "ceiling@10" not in own.as_json()
    assert all(m["why"] == "not listed" for m in other.misses)
