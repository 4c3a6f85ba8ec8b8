"""Few-shot retrieval: the training requests most similar to a new request.

Three views of similarity are fused by reciprocal rank: sentence embeddings
(paraphrases), BM25 over words (rare tag words such as "beekeeper"), and
character n-gram TF-IDF (place names, misspellings, non-English words).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from . import artifacts as A
from .bm25_reader import load_bm25
from .char_tfidf import CharTfidf
from .config import MAX_REQUEST_CHARS, RetrievalConfig
from .embedding import QueryEncoder, run_single_threaded
from .fusion import reciprocal_rank_fusion, top_indices
from .text import tokenize


@dataclass(frozen=True)
class RetrievedExample:
    index: int  # position in the OverpassNL training split
    nl: str
    query: str
    score: float
    tags: tuple[str, ...] = field(default=(), compare=False)


def clean_request(nl) -> str:
    """The request as the retrievers see it: a string, whitespace-collapsed, capped in length."""
    if nl is None:
        return ""
    if not isinstance(nl, str):
        nl = str(nl)
    return " ".join(nl[:MAX_REQUEST_CHARS].split())


def has_content(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


class ExampleRetriever:
    """Hybrid nearest-neighbour search over the indexed training requests."""

    def __init__(self, index_dir: Path, manifest: A.Manifest, config: RetrievalConfig | None = None,
                 examples: list[RetrievedExample] | None = None) -> None:
        """``examples``: the rows of ``examples.jsonl`` when the caller has read them already (``TagRetriever``)."""
        import numpy as np

        self.index_dir = index_dir
        self.manifest = manifest
        self.config = config or RetrievalConfig()
        if examples is None:
            rows = A.read_jsonl(index_dir / A.EXAMPLES_JSONL)
            examples = [RetrievedExample(r["index"], r["nl"], r["query"], 0.0, tuple(r.get("tags", ()))) for r in rows]
        self.examples = list(examples)
        self._row_of = {ex.index: row for row, ex in enumerate(self.examples)}
        self._dense = A.read_faiss(index_dir / A.EXAMPLES_FAISS)
        self._bm25 = load_bm25(index_dir / A.EXAMPLES_BM25)
        if self._dense.ntotal != len(self.examples) or self._bm25.scores["num_docs"] != len(self.examples):
            raise A.IndexMissingError(f"the example files in {index_dir} disagree in size; rebuild with `{A.BUILD_COMMAND}`")
        # scikit-learn's TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), sublinear_tf=True, min_df=2,
        # dtype=float32), bit for bit, without importing it; fitted from the indexed requests (deterministic)
        # and kept in the user cache by their content hash.
        self._char = CharTfidf((2, 4), sublinear_tf=True, min_df=2, dtype=np.float32)
        self._char_matrix = self._char.fit_columns([ex.nl for ex in self.examples])
        self.encoder = QueryEncoder(manifest.embedding_model, int8=self.config.int8_query_encoder)
        self.vectors = self._dense.reconstruct_n(0, self._dense.ntotal)  # for cosines of fused hits

    def cosine(self, vector, rows) -> list[float]:
        return [float(self.vectors[r] @ vector) for r in rows]

    def nearest_cosine(self, nl: str) -> float:
        """Embedding cosine of the training request most similar to ``nl`` (0.0 for a request with no words):
        how familiar the request's task is to the index."""
        text = clean_request(nl)
        if not has_content(text) or not len(self.examples):
            return 0.0
        scores, _ = run_single_threaded(lambda: self._dense.search(self.encoder(text).reshape(1, -1), 1))
        return float(scores[0][0])

    @classmethod
    def load(cls, index_dir: str | os.PathLike | None = None, config: RetrievalConfig | None = None) -> "ExampleRetriever":
        path = A.resolve_index_dir(index_dir)
        return cls(path, A.load_manifest(path), config)

    def __len__(self) -> int:
        return len(self.examples)

    def nl_of(self, index: int) -> str | None:
        """The indexed request at train ``index`` (None when it is not indexed)."""
        row = self._row_of.get(index)
        return self.examples[row].nl if row is not None else None

    def search(self, nl: str, k: int = 5, exclude=()) -> list[RetrievedExample]:
        """The ``k`` most similar training examples, best first; ``exclude`` holds train indices."""
        text = clean_request(nl)
        if not isinstance(k, int) or k <= 0 or not has_content(text):
            return []
        rows = run_single_threaded(lambda: self._fused_rows(text, self.encoder(text), k, tuple(exclude or ())))
        return [
            RetrievedExample(self.examples[r].index, self.examples[r].nl, self.examples[r].query, round(s, 6), self.examples[r].tags)
            for r, s in rows
        ]

    def cosines(self, nl: str, indices) -> list[float]:
        """Embedding cosine of ``nl`` with the training requests at train ``indices`` (0.0 for one not indexed
        or for a request with no words); the encoder's cache makes a second call for one request cheap."""
        text = clean_request(nl)
        if not has_content(text):
            return [0.0 for _ in indices]
        vector = run_single_threaded(lambda: self.encoder(text))
        indexed = [i for i in indices if i in self._row_of]
        found = dict(zip(indexed, self.cosine(vector, [self._row_of[i] for i in indexed])))
        return [found.get(i, 0.0) for i in indices]

    def _fused_rows(self, text: str, vector, k: int, exclude=()) -> list[tuple[int, float]]:
        cfg = self.config
        excluded = {self._row_of[i] for i in exclude if i in self._row_of}
        pool = cfg.example_pool + len(excluded)
        rankings = []
        if cfg.example_dense_weight > 0:
            _, ids = self._dense.search(vector.reshape(1, -1), min(pool, len(self.examples)))
            rankings.append((cfg.example_dense_weight, [int(i) for i in ids[0] if i >= 0 and int(i) not in excluded]))
        tokens = tokenize(text)
        if cfg.example_bm25_weight > 0 and tokens:
            scores = self._bm25.get_scores(tokens)
            rankings.append((cfg.example_bm25_weight, top_indices(scores, pool, exclude=excluded)))
        if cfg.example_char_weight > 0:
            q = self._char.transform([text])
            scores = (q @ self._char_matrix).toarray()[0]
            rankings.append((cfg.example_char_weight, top_indices(scores, pool, exclude=excluded)))
        fused = reciprocal_rank_fusion(rankings, cfg.rrf_k)
        best = sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        return best
