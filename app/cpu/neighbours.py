"""Nearest training requests by character n-gram TF-IDF.

Character n-grams inside word boundaries (2-4) match misspellings, plurals and
compounds ("Kindergarten"/"kindergartens") without a tokenizer; copying the
query of the top hit is the published kNN baseline of the benchmark. This is the
candidate source of the CPU default, fitted in a second from the training split.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from geoql.retrieval.char_tfidf import CharTfidf


@dataclass(frozen=True)
class Neighbour:
    index: int  # train index
    score: float  # cosine similarity of the TF-IDF vectors
    frame: bool = False  # picked by the request's tags and shape (FrameNeighbours), not by its wording
    example: bool = False  # picked by the tag index's fused search of the training requests (retrieval.examples)
    e5: bool = False  # picked by the multilingual embedding of the request as written (retrieval.multilingual)


class CharTfidfNeighbours:
    """Cosine nearest neighbours over the training requests.

    scikit-learn's ``TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), dtype=float32)`` bit for bit,
    without importing it (``retrieval.char_tfidf``); saved as plain arrays (:meth:`to_arrays`).
    """

    def __init__(self, texts: list[str]):
        if not texts:
            raise ValueError("no training requests to index: load the train split first")
        self.vectorizer = CharTfidf((2, 4), dtype=np.float32)
        self.matrix = self.vectorizer.fit_transform(list(texts)).transpose()  # (features, texts)
        self.size = len(texts)

    def to_arrays(self) -> dict:
        """The fitted vectorizer and matrix as arrays, for ``np.savez``."""
        return self.vectorizer.to_arrays(self.matrix)

    @classmethod
    def from_arrays(cls, arrays) -> "CharTfidfNeighbours":
        """The inverse of :meth:`to_arrays`; ``ValueError`` when the arrays do not make one."""
        self = cls.__new__(cls)
        self.vectorizer, self.matrix = CharTfidf.from_arrays(arrays)
        self.size = self.matrix.shape[1]
        return self

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


def similarities(index: CharTfidfNeighbours, nl: str, positions: list[int]) -> list[float]:
    """The TF-IDF cosine of ``nl`` with the training requests at ``positions``."""
    if not positions:
        return []
    sims = (index.vectorizer.transform([nl]) @ index.matrix).toarray()[0]
    return [float(sims[i]) for i in positions]


class FrameNeighbours:
    """Training requests picked by what the request asks for rather than by its wording.

    A translated or rephrased request shares few character n-grams with the training
    request of the same intent, but the tags the tag index finds for it and its shape
    (a place, the map view, around, ids; counting or not) still point at training
    queries that use those tags in that shape. Each training query is indexed by its
    controlled ``key=value`` tags; a request's score for a query is the probability mass
    of its hinted tags the query uses, less a little for each tag the query has beyond
    them, plus a bonus when the shape and the counting agree.
    """

    def __init__(self, queries: list[str], tag_names, query_shape):
        self._fill([frozenset(t for t in tag_names(q) if "=" in t) for q in queries], [query_shape(q) for q in queries],
                   ["out count" in q or "::count" in q for q in queries])

    def _fill(self, tags: list[frozenset], shapes: list[str], counts: list[bool]) -> None:
        self.tags, self.shapes, self.counts = tags, shapes, counts
        self.by_tag: dict[str, list[int]] = {}
        for i, used in enumerate(tags):
            for t in used:
                self.by_tag.setdefault(t, []).append(i)

    def to_json(self) -> dict:
        return {"tags": [sorted(t) for t in self.tags], "shapes": list(self.shapes), "counts": list(self.counts)}

    @classmethod
    def from_json(cls, data: dict) -> "FrameNeighbours":
        """The inverse of :meth:`to_json`; ``ValueError`` when the columns do not fit together."""
        try:
            tags, shapes, counts = data["tags"], data["shapes"], data["counts"]
            if not (len(tags) == len(shapes) == len(counts)):
                raise ValueError("columns of different lengths")
            self = cls.__new__(cls)
            self._fill([frozenset(map(str, t)) for t in tags], [str(s) for s in shapes], [bool(c) for c in counts])
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not frame neighbours ({type(exc).__name__}: {exc})") from None
        return self

    def search(self, hints: dict[str, float] | None, shape: str, count: bool, k: int,
               exclude=frozenset(), *, min_p: float = 0.1) -> list[tuple[int, float]]:
        """Up to ``k`` ``(train index, score)``, best first; ties go to the lower index."""
        if not hints or k <= 0:
            return []
        wanted = {t: p for t, p in hints.items() if p >= min_p}
        scores: dict[int, float] = {}
        for t, p in wanted.items():
            for i in self.by_tag.get(t, ()):
                if i not in exclude:
                    scores[i] = scores.get(i, 0.0) + p
        for i in scores:
            extra = len(self.tags[i]) - sum(t in wanted for t in self.tags[i])
            scores[i] += 0.3 * (self.shapes[i] == shape) + 0.2 * (self.counts[i] == count) - 0.05 * extra
        return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
