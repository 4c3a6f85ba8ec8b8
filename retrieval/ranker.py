"""Learned tag ranking: a logistic regression over per-candidate evidence features.

The candidates of a request are the tags found by any source (dense surfaces,
BM25, tags of the nearest training requests). Each gets the features below;
a logistic regression fitted on the index's own training requests, each
searched leave-one-out (its own example neither votes nor appears as a
phrase surface), scores them. The fit is deterministic (lbfgs, fixed sample
of every ``every``-th request, no randomness) and takes about a minute on the
full index; ``geoql index fit-ranker`` (or ``geoql index build``) writes the
coefficients as readable JSON (``ranker.json``) next to the other artifacts.
Without that file the retriever uses the hand-tuned linear fusion.

Labels are the request's gold *controlled* pairs (``retrieval.gold``), the
same target ``geoql retrieval-eval`` measures.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

RANKER_JSON = "ranker.json"
RANKER_FORMAT = 2  # 2: word-match and within-request relative features
NEIGHBOURS = 50  # nearest training requests whose tags give features

FEATURES = (
    "dense",  # max cosine of the request to the tag's names/synonyms/phrases
    "dense_rr",  # 1 / (1 + rank) in the dense ranking
    "bm25",  # BM25 normalised by the request's best tag
    "bm25_rr",
    "votes20",  # sum of cos^2 of the 20 nearest requests using the tag, / 20
    "votes50",
    "frac5",  # share of the 5 nearest requests that use the tag
    "frac10",
    "frac20",
    "top1",  # the nearest request uses the tag
    "max_cos",  # cosine of the nearest request that uses the tag
    "key_frac20",  # share of the 20 nearest requests using the tag's key (any value)
    "popularity",  # the index's 0..1 log-popularity prior
    "log_train_count",  # log(1 + training requests using the tag)
    "free_text",  # key=* tag of a free-text or bare key (not a recall target)
    "in_dense",
    "in_bm25",
    "value_words",  # share of the tag value's words that the request uses ("living streets" -> living_street)
    "key_words",  # share of the key's words that the request uses
    "name_in_request",  # some name or synonym of the tag occurs in the request word for word
    # Each request's best score per source is 1: a tag's standing against the other candidates of
    # the same request, which absolute cosines and votes do not show.
    "dense_rel",
    "bm25_rel",
    "votes20_rel",
    "votes50_rel",
    "max_cos_rel",
)
_RELATIVE = tuple((FEATURES.index(name), FEATURES.index(name + "_rel")) for name in ("dense", "bm25", "votes20", "votes50", "max_cos"))


def tag_words(doc: dict) -> tuple[frozenset, frozenset, tuple]:
    """(value words, key words, word sets of names and synonyms) of a tag document, as ``tokenize`` spells them.

    >>> v, k, names = tag_words({"key": "highway", "value": "living_street", "names": ["Living Street"], "terms": []})
    >>> sorted(v), sorted(k), [sorted(name) for name in names]
    (['living', 'street'], ['highway'], [['living', 'street']])
    """
    from .text import split_value, tokenize

    value = frozenset(tokenize(split_value(doc["value"]))) if doc["value"] != "*" else frozenset()
    key = frozenset(tokenize(split_value(doc["key"])))
    names = tuple(frozenset(w) for w in (tokenize(n) for n in list(doc.get("names", ()))[:3] + list(doc.get("terms", ()))[:20]) if w)
    return value, key, names


def candidate_features(docs, popularity, evidence: dict, neighbours, example_tags, train_count, excluded_tags=(), doc_words=None):
    """(candidate doc ids, feature rows) for one request.

    ``evidence``: the retriever's ``dense``/``bm25`` score dicts; ``neighbours``:
    [(row, cos)] of the nearest training requests, best first;
    ``example_tags(row)``: the doc ids a training request uses; ``train_count``:
    doc id -> number of training requests using it; ``excluded_tags``: doc ids of
    left-out requests (their own use is taken off ``log_train_count``); ``doc_words(doc)``: the
    tag's ``tag_words`` (cached by the caller; computed here when None). The request's words are
    ``evidence["tokens"]``.
    """
    words = set(evidence.get("tokens", ()))
    if doc_words is None:
        doc_words = lambda doc: tag_words(docs[doc])  # noqa: E731
    dense, bm25 = evidence["dense"], evidence["bm25"]
    dense_rank = {d: i for i, d in enumerate(sorted(dense, key=lambda d: (-dense[d], d)))}
    bm25_rank = {d: i for i, d in enumerate(sorted(bm25, key=lambda d: (-bm25[d], d)))}
    v20: dict[int, float] = {}
    v50: dict[int, float] = {}
    frac = ({}, {}, {})
    top1: set[int] = set()
    max_cos: dict[int, float] = {}
    key_frac: dict[str, float] = {}
    for rank, (row, cos) in enumerate(neighbours[:NEIGHBOURS]):
        used = example_tags(row)
        weight = max(cos, 0.0) ** 2
        for doc in used:
            if rank < 20:
                v20[doc] = v20.get(doc, 0.0) + weight / 20
            v50[doc] = v50.get(doc, 0.0) + weight / NEIGHBOURS
            for j, limit in enumerate((5, 10, 20)):
                if rank < limit:
                    frac[j][doc] = frac[j].get(doc, 0.0) + 1 / limit
            if rank == 0:
                top1.add(doc)
            max_cos[doc] = max(max_cos.get(doc, 0.0), cos)
        if rank < 20:
            for key in {docs[d]["key"] for d in used}:
                key_frac[key] = key_frac.get(key, 0.0) + 1 / 20
    excluded = {}
    for doc in excluded_tags:
        excluded[doc] = excluded.get(doc, 0) + 1
    candidates = sorted(set(dense) | set(bm25) | set(v50))
    rows = []
    for doc in candidates:
        d = docs[doc]
        value_words, key_words, names = doc_words(doc)
        rows.append([
            dense.get(doc, 0.0),
            1.0 / (1 + dense_rank.get(doc, 1000)),
            bm25.get(doc, 0.0),
            1.0 / (1 + bm25_rank.get(doc, 1000)),
            v20.get(doc, 0.0),
            v50.get(doc, 0.0),
            frac[0].get(doc, 0.0),
            frac[1].get(doc, 0.0),
            frac[2].get(doc, 0.0),
            float(doc in top1),
            max_cos.get(doc, 0.0),
            key_frac.get(d["key"], 0.0),
            popularity[doc],
            math.log1p(max(train_count.get(doc, 0) - excluded.get(doc, 0), 0)),
            float(d["value"] == "*"),
            float(doc in dense),
            float(doc in bm25),
            len(value_words & words) / len(value_words) if value_words else 0.0,
            len(key_words & words) / len(key_words) if key_words else 0.0,
            float(any(name <= words for name in names)),
            0.0, 0.0, 0.0, 0.0, 0.0,  # the *_rel columns, filled below once every row is known
        ])
    for source, relative in _RELATIVE:
        peak = max((row[source] for row in rows), default=0.0)
        if peak > 0:
            for row in rows:
                row[relative] = row[source] / peak
    return candidates, rows


class LinearRanker:
    """Scores feature rows with fitted coefficients (plain Python, no sklearn at query time)."""

    def __init__(self, coef, intercept: float, features=FEATURES, meta: dict | None = None) -> None:
        if list(features) != list(FEATURES) or len(coef) != len(FEATURES):
            raise ValueError(f"ranker features {list(features)} do not match this version's {list(FEATURES)}; "
                             "refit with `geoql index fit-ranker`")
        self.coef = [float(c) for c in coef]
        self.intercept = float(intercept)
        self.meta = meta or {}

    def score(self, rows) -> list[float]:
        return [self.intercept + sum(c * x for c, x in zip(self.coef, row)) for row in rows]

    def to_json(self) -> dict:
        return {"format": RANKER_FORMAT, "model": "logistic_regression", "features": list(FEATURES),
                "coef": [round(c, 6) for c in self.coef], "intercept": round(self.intercept, 6), **self.meta}

    @classmethod
    def load(cls, path: Path) -> "LinearRanker":
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if data.get("format") != RANKER_FORMAT:
            raise ValueError(f"{path}: ranker format {data.get('format')!r}, expected {RANKER_FORMAT}; "
                             "refit with `geoql index fit-ranker`")
        meta = {k: v for k, v in data.items() if k not in {"format", "model", "features", "coef", "intercept"}}
        return cls(data["coef"], data["intercept"], data["features"], meta)


def training_matrix(retriever, *, every: int = 3, progress: bool = False):
    """Leave-one-out features and labels of every ``every``-th indexed training request."""
    import numpy as np
    from tqdm import tqdm

    from .gold import controlled_pairs

    examples = retriever.examples
    xs, ys = [], []
    rows = range(0, len(examples.examples), max(1, every))
    for row in tqdm(rows, desc="ranker features", disable=not progress):
        ex = examples.examples[row]
        gold = set(controlled_pairs(ex.query))
        vector = examples.vectors[row]  # the indexed embedding: no encoder call
        candidates, feats = retriever._features(ex.nl, vector, (ex.index,))
        if not candidates:
            continue
        xs.extend(feats)
        ys.extend(retriever.docs[d]["tag"] in gold for d in candidates)
    return np.asarray(xs, dtype=np.float64).reshape(-1, len(FEATURES)), np.asarray(ys, dtype=bool), len(rows)


def fit_ranker(retriever, *, every: int = 3, c: float = 1.0, progress: bool = False) -> LinearRanker:
    """Fit the logistic regression on the index's own training requests (leave-one-out)."""
    from sklearn.linear_model import LogisticRegression

    from .embedding import run_single_threaded

    x, y, n_requests = run_single_threaded(training_matrix, retriever, every=every, progress=progress)
    if len(y) == 0 or y.all() or not y.any():
        raise ValueError("too few training requests with gold tags to fit a ranker; use a larger index")
    model = LogisticRegression(C=c, max_iter=5000, solver="lbfgs").fit(x, y)
    meta = {"trained_on": {"split": "train", "leave_one_out": True, "every": every, "requests": n_requests,
                           "candidates": int(len(y)), "positives": int(y.sum()), "C": c},
            "index_built_at": retriever.manifest.data.get("built_at")}
    return LinearRanker(model.coef_[0].tolist(), float(model.intercept_[0]), FEATURES, meta)


def write_ranker(ranker: LinearRanker, index_dir: Path) -> Path:
    out = Path(index_dir) / RANKER_JSON
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(ranker.to_json(), indent=2) + "\n", encoding="utf-8")
    tmp.replace(out)
    return out
