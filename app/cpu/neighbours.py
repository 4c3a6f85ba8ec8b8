"""Nearest training requests by character n-gram TF-IDF.

Character n-grams inside word boundaries (2-4) match misspellings, plurals and
compounds ("Kindergarten"/"kindergartens") without a tokenizer; copying the
query of the top hit is the published kNN baseline of the benchmark. This is the
candidate source of the CPU default, fitted in a second from the training split.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Neighbour:
    index: int  # train index
    score: float  # cosine similarity of the TF-IDF vectors


class CharTfidfNeighbours:
    """Cosine nearest neighbours over the training requests."""

    def __init__(self, texts: list[str]):
        from sklearn.feature_extraction.text import TfidfVectorizer

        if not texts:
            raise ValueError("no training requests to index: load the train split first")
        self.vectorizer = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), dtype=np.float32)
        self.matrix = self.vectorizer.fit_transform(texts).T.tocsr()  # (features, texts)
        self.size = len(texts)

    def search(self, nl: str, k: int, exclude: frozenset[int] | set[int] = frozenset()) -> list[Neighbour]:
        return self.search_many([nl], k, [exclude])[0]

    def search_many(self, nls: list[str], k: int, excludes=None) -> list[list[Neighbour]]:
        """Top ``k`` per request, best first; ties go to the lower index (deterministic)."""
        sims = (self.vectorizer.transform(nls) @ self.matrix).toarray()
        out = []
        for row, sim in enumerate(sims):
            exclude = excludes[row] if excludes else ()
            for j in exclude:
                sim[j] = -1.0
            take = min(k + len(exclude), self.size)
            part = np.argpartition(-sim, take - 1)[:take] if take < self.size else np.arange(self.size)
            order = sorted(part, key=lambda j: (-sim[j], j))
            out.append([Neighbour(int(j), float(sim[j])) for j in order if sim[j] >= 0][:k])
        return out
