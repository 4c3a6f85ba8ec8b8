"""Tag grounding: which OSM tags a request is about.

Three kinds of evidence are fused by weighted reciprocal rank:

* dense: the request's embedding against every name, synonym and training
  phrase of every tag (max over a tag's surfaces);
* lexical: BM25 over each tag's names, synonyms and key/value words;
* examples: the tags used by the gold queries of the nearest training
  requests, voted with the examples' fused scores.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from . import artifacts as A
from .config import RetrievalConfig
from .examples import ExampleRetriever, clean_request, has_content
from .fusion import reciprocal_rank_fusion, top_indices
from .text import split_value, tokenize


@dataclass(frozen=True)
class TagHit:
    tag: str  # "key=value" or "key=*"
    key: str
    value: str
    name: str
    score: float
    why: str  # the name, synonym or similar request that matched


class TagRetriever:
    """Hybrid tag search; ``.examples`` is the example retriever it draws evidence from."""

    def __init__(self, index_dir: Path, manifest: A.Manifest, config: RetrievalConfig | None = None) -> None:
        import bm25s
        import faiss

        self.index_dir = index_dir
        self.manifest = manifest
        self.config = config or RetrievalConfig()
        self.docs = A.read_jsonl(index_dir / A.TAGS_JSONL)
        self._doc_of = {d["tag"]: i for i, d in enumerate(self.docs)}
        surfaces = A.read_jsonl(index_dir / A.TAG_SURFACES_JSONL)
        self._surface_doc = [s["doc"] for s in surfaces]
        self._surface_text = [s["text"] for s in surfaces]
        self._surface_kind = [s["kind"] for s in surfaces]
        self._dense = faiss.read_index(str(index_dir / A.TAG_SURFACES_FAISS))
        self._bm25 = bm25s.BM25.load(str(index_dir / A.TAGS_BM25), show_progress=False)
        if self._dense.ntotal != len(surfaces) or self._bm25.scores["num_docs"] != len(self.docs):
            raise A.IndexMissingError(f"the tag files in {index_dir} disagree in size; rebuild with `{A.BUILD_COMMAND}`")
        self._popularity = [math.log1p(d.get("popularity", 0.0)) for d in self.docs]
        self.examples = ExampleRetriever(index_dir, manifest, self.config)

    @classmethod
    def load(cls, index_dir: str | os.PathLike | None = None, config: RetrievalConfig | None = None) -> "TagRetriever":
        path = A.resolve_index_dir(index_dir)
        return cls(path, A.load_manifest(path), config)

    def __len__(self) -> int:
        return len(self.docs)

    def __contains__(self, tag: str) -> bool:
        return tag in self._doc_of

    def doc(self, tag: str) -> dict | None:
        i = self._doc_of.get(tag)
        return self.docs[i] if i is not None else None

    def search(self, nl: str, k: int = 10, exclude=()) -> list[TagHit]:
        """The ``k`` tags most likely meant by ``nl``, best first.

        ``exclude`` holds training indices whose examples must not vote (use the
        request's own index when searching for a training request).
        """
        text = clean_request(nl)
        if k <= 0 or not has_content(text):
            return []
        cfg = self.config
        vector = self.examples.encoder(text)
        rankings = []
        why: dict[int, str] = {}

        if cfg.tag_dense_weight > 0:
            scores, ids = self._dense.search(vector.reshape(1, -1), min(cfg.surface_pool, self._dense.ntotal))
            dense_rank: list[int] = []
            for sid in ids[0]:
                if sid < 0:
                    continue
                doc = self._surface_doc[sid]
                if doc not in why:
                    kind = self._surface_kind[sid]
                    label = "similar request" if kind == "phrase" else kind
                    why[doc] = f"{label}: {self._surface_text[sid]}"
                if doc not in dense_rank:
                    dense_rank.append(doc)
                if len(dense_rank) >= cfg.tag_pool:
                    break
            rankings.append((cfg.tag_dense_weight, dense_rank))

        tokens = tokenize(text)
        if cfg.tag_bm25_weight > 0 and tokens:
            bm25_rank = top_indices(self._bm25.get_scores(tokens), cfg.tag_pool)
            query_words = set(tokens)
            for doc in bm25_rank[:k * 2]:
                if doc not in why or why[doc].startswith("similar request"):
                    d = self.docs[doc]
                    matched = [n for n in d["names"] + d["terms"] if query_words & set(tokenize(n))]
                    if matched:
                        why[doc] = f"name: {matched[0]}"
            rankings.append((cfg.tag_bm25_weight, bm25_rank))

        if cfg.tag_example_weight > 0 and cfg.evidence_examples > 0:
            votes: dict[int, float] = {}
            voters: dict[int, str] = {}
            for row, score in self.examples._fused_rows(text, vector, cfg.evidence_examples, exclude):
                for tag in self.examples.examples[row].tags:
                    doc = self._doc_of.get(tag)
                    if doc is None:
                        continue
                    votes[doc] = votes.get(doc, 0.0) + score
                    voters.setdefault(doc, self.examples.examples[row].nl)
            example_rank = sorted(votes, key=lambda d: (-votes[d], d))[: cfg.tag_pool]
            for doc in example_rank:
                if doc not in why:
                    why[doc] = f"used for similar request: {voters[doc]}"
            rankings.append((cfg.tag_example_weight, example_rank))

        fused = reciprocal_rank_fusion(rankings, cfg.rrf_k)
        if cfg.popularity_weight:
            for doc in fused:
                fused[doc] += cfg.popularity_weight * self._popularity[doc] / (cfg.rrf_k + 1)
        best = sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        return [self._hit(doc, score, why.get(doc, "")) for doc, score in best]

    def _hit(self, doc: int, score: float, why: str) -> TagHit:
        d = self.docs[doc]
        name = d["names"][0] if d["names"] else (split_value(d["value"]) if d["value"] != "*" else d["key"])
        return TagHit(d["tag"], d["key"], d["value"], name, round(score, 6), why)
