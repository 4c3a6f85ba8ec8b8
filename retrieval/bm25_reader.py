"""Reading a saved bm25s index with numpy alone.

``bm25s`` imports scipy.sparse when it is installed (close to a second and ~50 MB
on a cold start) although a saved index is three ``.npy`` arrays (a CSC matrix of
precomputed per-token scores) and two JSON files. The retrievers only ask a loaded
index for ``get_scores(tokens)``, which is a sum over the query tokens' columns;
this module does that sum the way ``bm25s.BM25.get_scores`` does (token ids from
the vocabulary, unknown tokens skipped, ``np.add.at`` column by column in the
index's dtype, plus the non-occurrence scores of BM25L/BM25+), so the scores are
the same numbers. Building an index stays with ``bm25s`` (``index.build``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path


PARAMS = "params.index.json"
VOCAB = "vocab.index.json"
DATA, INDICES, INDPTR = "data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy"
NONOCCURRENCE = "nonoccurrence_array.index.npy"
_NONOCCURRENCE_METHODS = ("bm25l", "bm25+")


class Bm25Index:
    """A loaded bm25s index: ``.scores`` (``data``, ``indices``, ``indptr``, ``num_docs``) and :meth:`get_scores`."""

    def __init__(self, save_dir: str | os.PathLike) -> None:
        import numpy as np

        save_dir = Path(save_dir)
        params = json.loads((save_dir / PARAMS).read_text(encoding="utf-8"))
        self.vocab_dict: dict[str, int] = json.loads((save_dir / VOCAB).read_text(encoding="utf-8"))
        self.params = params
        self.method = params.get("method", "lucene")
        self.dtype = np.dtype(params.get("dtype", "float32"))
        self.int_dtype = np.dtype(params.get("int_dtype", "int32"))
        self.scores = {
            "data": np.load(save_dir / DATA, allow_pickle=False),
            "indices": np.load(save_dir / INDICES, allow_pickle=False),
            "indptr": np.load(save_dir / INDPTR, allow_pickle=False),
            "num_docs": params.get("num_docs"),
        }
        self.nonoccurrence_array = None
        if self.method in _NONOCCURRENCE_METHODS:
            self.nonoccurrence_array = np.load(save_dir / NONOCCURRENCE, allow_pickle=False)

    def get_scores(self, query_tokens: list[str]) -> np.ndarray:
        """BM25 score of every document for the tokens (repeats count again), shape (num_docs,)."""
        import numpy as np

        ids = np.asarray([self.vocab_dict[t] for t in query_tokens if t in self.vocab_dict], dtype=self.int_dtype)
        data, indices, indptr = self.scores["data"], self.scores["indices"], self.scores["indptr"]
        if int(ids.max(initial=0)) >= len(indptr) - 1:
            raise ValueError("a query token id is outside the index: the vocabulary and arrays disagree")
        scores = np.zeros(self.scores["num_docs"], dtype=self.dtype)
        for start, end in zip(indptr[ids], indptr[ids + 1]):
            np.add.at(scores, indices[start:end], data[start:end])
        if self.nonoccurrence_array is not None:
            scores += self.nonoccurrence_array[ids].sum()
        return scores


def load_bm25(save_dir: str | os.PathLike) -> Bm25Index:
    return Bm25Index(save_dir)
