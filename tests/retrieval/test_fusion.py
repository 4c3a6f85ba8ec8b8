from __future__ import annotations

import numpy as np

from geoql.retrieval.fusion import reciprocal_rank_fusion, top_indices


def test_rrf_rewards_agreement_and_respects_weights():
    fused = reciprocal_rank_fusion([(1.0, ["a", "b", "c"]), (1.0, ["b", "c"])], k=60)
    assert max(fused, key=fused.get) == "b"
    heavy = reciprocal_rank_fusion([(1.0, ["a", "b"]), (3.0, ["b", "a"])], k=60)
    assert max(heavy, key=heavy.get) == "b"
    assert reciprocal_rank_fusion([(0.0, ["x"])]) == {}


def test_top_indices_orders_and_excludes():
    scores = np.array([0.1, 0.9, 0.0, 0.5, 0.7])
    assert top_indices(scores, 3) == [1, 4, 3]
    assert top_indices(scores, 10, exclude={1}) == [4, 3, 0]  # zero scores are no match
    assert top_indices(np.array([]), 3) == [] and top_indices(scores, 0) == []
