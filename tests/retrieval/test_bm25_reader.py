"""The numpy reader of a saved bm25s index scores exactly as bm25s does."""

from __future__ import annotations

import numpy as np
import pytest

from geoql.eval.dataset import load_split
from geoql.retrieval import artifacts as A
from geoql.retrieval.bm25_reader import load_bm25
from geoql.retrieval.text import tokenize


@pytest.mark.parametrize("name", [A.TAGS_BM25, A.EXAMPLES_BM25])
def test_scores_equal_bm25s(small_index_dir, name):
    import bm25s

    want = bm25s.BM25.load(str(small_index_dir / name), show_progress=False)
    got = load_bm25(small_index_dir / name)
    assert got.scores["num_docs"] == want.scores["num_docs"]
    requests = [e.nl for e in load_split("dev")[:200]] + ["bench bench bench", "zzzz-unknown-word"]
    checked = 0
    for nl in requests:
        tokens = tokenize(nl)
        if not tokens:
            continue
        a, b = want.get_scores(tokens), got.get_scores(tokens)
        assert a.dtype == b.dtype and np.array_equal(a, b), nl
        checked += 1
    assert checked > 150


def test_unknown_tokens_score_zero(small_index_dir):
    index = load_bm25(small_index_dir / A.TAGS_BM25)
    scores = index.get_scores(["zzzz-unknown-word"])
    assert scores.shape == (index.scores["num_docs"],) and not scores.any()
