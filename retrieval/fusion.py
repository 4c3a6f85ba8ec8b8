"""Rank fusion: combine rankings whose scores live on different scales."""

from __future__ import annotations

from collections.abc import Hashable, Sequence


def reciprocal_rank_fusion(rankings: Sequence[tuple[float, Sequence[Hashable]]], k: float = 60.0) -> dict:
    """Weighted RRF: ``sum_i w_i / (k + rank_i)`` over the rankings an item appears in.

    Ranks start at 1. Scores of BM25, cosine and vote counts are incomparable;
    ranks are not, which is why RRF needs no per-source calibration.

    >>> fused = reciprocal_rank_fusion([(1.0, ["a", "b"]), (1.0, ["b", "c"])], k=1)
    >>> sorted(fused, key=fused.get, reverse=True)
    ['b', 'a', 'c']
    """
    scores: dict = {}
    for weight, ranking in rankings:
        if weight <= 0:
            continue
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return scores


def top_indices(scores, n: int, *, exclude=()) -> list[int]:
    """Indices of the ``n`` highest positive scores of a 1-d array, best first."""
    import numpy as np

    if n <= 0 or scores.size == 0:
        return []
    if exclude:
        scores = scores.copy()
        scores[[i for i in exclude if 0 <= i < scores.size]] = -np.inf
    n = min(n, scores.size)
    part = np.argpartition(-scores, n - 1)[:n]
    order = part[np.argsort(-scores[part], kind="stable")]
    return [int(i) for i in order if scores[i] > 0]
