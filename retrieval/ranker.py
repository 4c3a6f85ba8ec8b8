"""Learned tag ranking: a cascade of two logistic regressions over per-candidate evidence features.

The candidates of a request are the tags found by any source (dense surfaces,
BM25, tags of the nearest training requests by the English embedding and, where the
index has them, by the multilingual one, lexical matches of names in the request's
language). Each gets the features below.
Stage 1, linear in the features, orders all candidates; stage 2, linear in the
standardised features and their pairwise products, re-scores stage 1's best
``RERANK`` controlled tags (the products let one piece of evidence count for
more when another agrees). Both are fitted on the index's own training requests,
each searched leaving out every training request with the same gold query (they
neither vote nor appear as phrase surfaces; tags only they brought in are no
candidates). The fit is deterministic (lbfgs for the first stage, Newton steps for the
second, no randomness) and takes about 11 minutes on the full index on two cores (the
features are most of it: 2 for the training requests, 7 for their glossed copies, each
encoded by the multilingual model); ``geoql index fit-ranker`` (or ``geoql index build``)
writes the coefficients as readable JSON (``ranker.json``) next to the other
artifacts. Without that file the retriever uses the hand-tuned linear fusion.

The file holds a second cascade of the same form for the requests the retriever reads through their
word-by-word English gloss (``"glossed"``; every request that is not English), fitted on code-switched
copies of the training requests (``retrieval.codeswitch``), each read as a user's request is read.

Labels are the request's gold *controlled* pairs (``retrieval.gold``), the
same target ``geoql retrieval-eval`` measures.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from weakref import WeakKeyDictionary

from geoql.core.errors import ConfigError
from geoql.core.files import write_atomic
from geoql.eval.metrics import same_query_key
from geoql.nl.frame import guess_language

from .artifacts import SCHEMA_SOURCE, TRAIN_SOURCE
from .codeswitch import CodeSwitcher, code_switched_copies
from .embedding import run_single_threaded
from .gold import controlled_pairs
from .parallel import chunked_map
from .text import split_value, tokenize

RANKER_JSON = "ranker.json"
RANKER_FORMAT = 7  # 2: word-match and relative features; 3: two-stage cascade, leave-one-query-out fitting; 4: tag quality;
# 5: meaning_words (key words for yes/no-like values) instead of value_words; 6: lexical features and a second
# cascade for glossed requests; 7: the votes of the nearest requests by the multilingual embedding
RERANK = 25  # controlled candidates that the second stage re-scores
C1, C2 = 1.0, 0.01  # inverse L2 regularisation of stage 1 (linear) and stage 2 (pairwise products)
NEIGHBOURS = 50  # nearest training requests whose tags give features
# Nearest training requests by the multilingual embedding (``retrieval.multilingual``) whose tags give
# features and are candidates: they read a request in its own language, where the gloss loses words.
E5_NEIGHBOURS = 20
# Fewer glossed copies than this fit no glossed cascade (glossed requests take the English one): the small
# test index's few hundred copies put shop=chemist before amenity=pharmacy for "Apotheke"; the full index has 5,187.
MIN_GLOSSED_COPIES = 1000

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
    "meaning_words",  # share of the words naming the tag's meaning that the request uses: the value's
    # ("living streets" -> highway=living_street), the key's where the value only says yes or no
    # ("outdoor seating" -> outdoor_seating=yes)
    "key_words",  # share of the key's words that the request uses
    "name_in_request",  # some name or synonym of the tag occurs in the request word for word
    # Each request's best score per source is 1: a tag's standing against the other candidates of
    # the same request, which absolute cosines and votes do not show.
    "dense_rel",
    "bm25_rel",
    "votes20_rel",
    "votes50_rel",
    "max_cos_rel",
    # What kind of tag it is, whatever the request: gold queries bring their annotators' slips into the
    # index, and neighbours vote for them ("highway=seccondary", "amenities=atm=*").
    "in_schema",  # a current (not deprecated) id-tagging-schema preset or field knows it
    "malformed",  # the key is no plain OSM key (a regex, "*", spaces) or the value holds "=" or spaces
    "likely_typo",  # the index marked it as a slip of a clearly more used tag (``likely_typo_of``)
    # A request in another language: how well the tag's own name in that language matches it (the lexicon,
    # ``Lexicon.search``), against the request's best match. English requests have none (0).
    "lexical_rel",
    "lexical_rr",  # 1 / (1 + rank) in the lexicon's ranking
    # The E5_NEIGHBOURS nearest training requests by the multilingual embedding, the request read as written
    # (0 where the index has no multilingual vectors: such an index has its own content key, so its own ranker).
    "e5_votes",  # sum of cos^2 of those using the tag, / E5_NEIGHBOURS
    "e5_frac5",  # share of the 5 nearest using the tag
    "e5_frac20",
    "e5_top1",  # the nearest uses the tag
    "e5_max_cos",  # cosine of the nearest that uses the tag
    "e5_votes_rel",
)
_RELATIVE = tuple((FEATURES.index(name), FEATURES.index(name + "_rel"))
                  for name in ("dense", "bm25", "votes20", "votes50", "max_cos", "e5_votes"))
_FREE_TEXT = FEATURES.index("free_text")
_WIDTH = len(FEATURES) + len(FEATURES) * (len(FEATURES) + 1) // 2  # stage-2 inputs: features and their pairwise products


_PLAIN_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_:.\-]*$")  # upper case is fine: ISO3166-1, ref:INSEE


def tag_quality(doc: dict) -> tuple[float, float, float]:
    """(in_schema, malformed, likely_typo) of a tag document: the last three ranker features.

    >>> tag_quality({"key": "amenity", "value": "drinking water", "sources": ["overpassnl-train"]})
    (0.0, 1.0, 0.0)
    >>> tag_quality({"key": "highway", "value": "secondary", "sources": ["id-tagging-schema@7.2.0", "overpassnl-train"]})
    (1.0, 0.0, 0.0)
    >>> tag_quality({"key": "amenity", "value": "pharmacy|", "sources": ["overpassnl-train"]})[1]
    1.0
    """
    in_schema = any(s.startswith(SCHEMA_SOURCE) and not s.endswith(":deprecated") for s in doc.get("sources", ()))
    value = doc["value"]
    # "|" and brackets: a regex alternation or a list written as an exact value (amenity="pharmacy|") matches no real tag
    malformed = not _PLAIN_KEY.match(doc["key"]) or (value != "*" and any(ch in "=|[]" or ch.isspace() for ch in value))
    return float(in_schema), float(malformed), float(bool(doc.get("likely_typo_of")))


def is_suspect(doc: dict) -> bool:
    """A tag a prompt had better not offer: a likely typo, malformed, or known only as a deprecated
    id-tagging-schema tag that no training query uses (``geoql retrieval-eval`` counts them as ``suspect@k``).

    >>> is_suspect({"key": "amenity", "value": "toites", "sources": ["overpassnl-train"], "likely_typo_of": "amenity=toilets"})
    True
    >>> is_suspect({"key": "amenity", "value": "cafe", "sources": ["id-tagging-schema@7.2.0"]})
    False
    """
    in_schema, malformed, typo = tag_quality(doc)
    deprecated_only = not in_schema and TRAIN_SOURCE not in doc.get("sources", ())
    return bool(malformed or typo or deprecated_only)


# Values that say whether a feature has the key's property, not what it is: the key names the meaning
# (for "no" together with a negation: NEGATION words in a request count as the word "no").
FLAG_VALUES = frozenset({"yes", "no", "only", "designated"})
NEGATION = frozenset({"no", "not", "without", "non"})


def tag_words(doc: dict) -> tuple[frozenset, frozenset, tuple]:
    """(meaning words, key words, word sets of names and synonyms) of a tag document, as ``tokenize`` spells them.

    The meaning words are the value's, or the key's where the value is a flag (``FLAG_VALUES``),
    with "no" for ``key=no``.

    >>> v, k, names = tag_words({"key": "highway", "value": "living_street", "names": ["Living Street"], "terms": []})
    >>> sorted(v), sorted(k), [sorted(name) for name in names]
    (['living', 'street'], ['highway'], [['living', 'street']])
    >>> sorted(tag_words({"key": "outdoor_seating", "value": "yes"})[0])
    ['outdoor', 'seating']
    >>> sorted(tag_words({"key": "outdoor_seating", "value": "no"})[0])
    ['no', 'outdoor', 'seating']
    """
    key = frozenset(tokenize(split_value(doc["key"])))
    if doc["value"] == "*":
        value = frozenset()
    elif doc["value"] in FLAG_VALUES:
        value = key | {"no"} if doc["value"] == "no" else key
    else:
        value = frozenset(tokenize(split_value(doc["value"])))
    names = tuple(frozenset(w) for w in (tokenize(n) for n in list(doc.get("names", ()))[:3] + list(doc.get("terms", ()))[:20]) if w)
    return value, key, names


def candidate_features(docs, popularity, evidence: dict, neighbours, example_tags, train_count, excluded_tags=(), doc_words=None,
                       popularity_peak: float = 1.0, doc_quality=None):
    """(candidate doc ids, feature rows) for one request.

    ``evidence``: the retriever's ``dense``/``bm25`` score dicts, and ``e5``: [(row, cos)] of the nearest
    training requests by the multilingual embedding, best first (absent: none); ``neighbours``:
    [(row, cos)] of the nearest training requests, best first;
    ``example_tags(row)``: the doc ids a training request uses; ``train_count``:
    doc id -> number of training requests using it; ``excluded_tags``: doc ids of
    left-out requests; ``doc_words(doc)`` and ``doc_quality(doc)``: the tag's ``tag_words`` and
    ``tag_quality`` (cached by the caller; computed here when None); ``popularity_peak``: the raw
    popularity that ``popularity`` was divided by.
    The request's words are ``evidence["tokens"]``.

    Leaving requests out must look like a request the index has never seen (dev, test, users),
    or the ranker learns from tells that only fitting has: their own use is taken off
    ``log_train_count`` and off the training part of ``popularity``, and a tag that only they
    brought into the index is no candidate at all (for an unseen request it would not exist).
    """
    words = set(evidence.get("tokens", ()))
    if words & NEGATION:
        words.add("no")
    if doc_words is None:
        doc_words = lambda doc: tag_words(docs[doc])  # noqa: E731
    if doc_quality is None:
        doc_quality = lambda doc: tag_quality(docs[doc])  # noqa: E731
    dense, bm25 = evidence["dense"], evidence["bm25"]
    lexical = evidence.get("lexical") or {}  # doc -> LexicalMatch, best first
    lexical_peak = max((m.score for m in lexical.values()), default=0.0) or 1.0
    lexical_rank = {d: i for i, d in enumerate(lexical)}
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
    e5_votes: dict[int, float] = {}
    e5_frac = ({}, {})
    e5_top1: set[int] = set()
    e5_max: dict[int, float] = {}
    for rank, (row, cos) in enumerate(evidence.get("e5", ())[:E5_NEIGHBOURS]):
        for doc in example_tags(row):
            e5_votes[doc] = e5_votes.get(doc, 0.0) + max(cos, 0.0) ** 2 / E5_NEIGHBOURS
            for j, limit in enumerate((5, 20)):
                if rank < limit:
                    e5_frac[j][doc] = e5_frac[j].get(doc, 0.0) + 1 / limit
            if rank == 0:
                e5_top1.add(doc)
            e5_max[doc] = max(e5_max.get(doc, 0.0), cos)
    excluded = {}
    for doc in excluded_tags:
        excluded[doc] = excluded.get(doc, 0) + 1
    candidates = []
    rows = []
    for doc in sorted(set(dense) | set(bm25) | set(v50) | set(lexical) | set(e5_votes)):
        d = docs[doc]
        used = train_count.get(doc, 0)
        left = max(used - excluded.get(doc, 0), 0)
        if doc in excluded and left == 0 and list(d.get("sources", ())) == [TRAIN_SOURCE]:
            continue  # only the left-out requests brought this tag into the index
        candidates.append(doc)
        meaning_words, key_words, names = doc_words(doc)
        own_use = (math.log1p(used) - math.log1p(left)) / popularity_peak if doc in excluded else 0.0
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
            popularity[doc] - own_use,
            math.log1p(left),
            float(d["value"] == "*"),
            float(doc in dense),
            float(doc in bm25),
            len(meaning_words & words) / len(meaning_words) if meaning_words else 0.0,
            len(key_words & words) / len(key_words) if key_words else 0.0,
            float(any(name <= words for name in names)),
            0.0, 0.0, 0.0, 0.0, 0.0,  # the *_rel columns, filled below once every row is known
            *doc_quality(doc),
            lexical[doc].score / lexical_peak if doc in lexical else 0.0,
            1.0 / (1 + lexical_rank[doc]) if doc in lexical else 0.0,
            e5_votes.get(doc, 0.0),
            e5_frac[0].get(doc, 0.0),
            e5_frac[1].get(doc, 0.0),
            float(doc in e5_top1),
            e5_max.get(doc, 0.0),
            0.0,  # e5_votes_rel, below
        ])
    for source, relative in _RELATIVE:
        peak = max((row[source] for row in rows), default=0.0)
        if peak > 0:
            for row in rows:
                row[relative] = row[source] / peak
    return candidates, rows


class LinearRanker:
    """One logistic regression over the feature rows: ``intercept + coef · row`` (the logit)."""

    def __init__(self, coef, intercept: float) -> None:
        import numpy as np

        self.coef = np.asarray(coef, dtype=np.float64)
        self.intercept = float(intercept)

    def score(self, x):
        return x @ self.coef + self.intercept

    def to_json(self) -> dict:
        return {"coef": [round(float(c), 6) for c in self.coef], "intercept": round(self.intercept, 6)}


def pairwise_expansion(z):
    """Columns ``z`` followed by every product ``z_i * z_j`` (i <= j): what lets a logistic
    regression weigh one piece of evidence by another (votes count for more when the names match too).

    >>> pairwise_expansion(__import__("numpy").array([[1.0, 2.0]])).tolist()
    [[1.0, 2.0, 1.0, 2.0, 4.0]]
    """
    import numpy as np

    i, j = np.triu_indices(z.shape[1])
    return np.hstack([z, z[:, i] * z[:, j]])


class CascadeRanker:
    """Two logistic regressions: stage 1 (linear in the features) orders all candidates; stage 2
    (linear in the standardised features and their pairwise products) re-scores the ``rerank`` best
    controlled tags of stage 1. Plain numpy at query time; the stored JSON is readable.

    Scores are logits. Stage-2 scores are calibrated among the re-ranked candidates; the others keep
    their stage-1 logit, held below the lowest re-ranked one so one sort gives the cascade's order.
    """

    def __init__(self, stage1: LinearRanker, stage2: LinearRanker, mean, scale, rerank: int = RERANK,
                 features=FEATURES, meta: dict | None = None, glossed: "CascadeRanker | None" = None) -> None:
        import numpy as np

        if list(features) != list(FEATURES) or len(stage1.coef) != len(FEATURES) or len(mean) != len(FEATURES):
            raise ConfigError(f"ranker features {list(features)} do not match this version's {list(FEATURES)}; "
                             "refit with `geoql index fit-ranker`")
        if len(stage2.coef) != _WIDTH:
            raise ConfigError(f"stage-2 ranker has {len(stage2.coef)} coefficients, expected {_WIDTH}; refit with `geoql index fit-ranker`")
        if rerank < 1:
            raise ConfigError(f"rerank must be at least 1, got {rerank}; refit with `geoql index fit-ranker`")
        self.stage1, self.stage2, self.rerank = stage1, stage2, int(rerank)
        self.mean = np.asarray(mean, dtype=np.float64)
        self.scale = np.asarray(scale, dtype=np.float64)
        self.meta = meta or {}
        # The cascade for requests read through their word-by-word English gloss (not English): fitted on
        # code-switched copies of the training requests. None: those requests use this one.
        self.glossed = glossed

    def for_request(self, glossed: bool) -> "CascadeRanker":
        """The cascade that orders a request's candidates: the glossed one for a glossed request, where there is one."""
        return self.glossed if glossed and self.glossed is not None else self

    def second(self, x):
        return self.stage2.score(pairwise_expansion((x - self.mean) / self.scale))

    def score(self, rows) -> list[float]:
        import numpy as np

        x = np.asarray(rows, dtype=np.float64).reshape(-1, len(FEATURES))
        if not len(x):
            return []
        out = self.stage1.score(x)
        top = best_controlled(x, out, self.rerank)
        if len(top):
            second = self.second(x[top])
            rest = np.ones(len(x), dtype=bool)
            rest[top] = False
            out[rest] = np.minimum(out[rest], second.min() - 1e-3)
            out[top] = second
        return out.tolist()

    def to_json(self) -> dict:
        out = {"format": RANKER_FORMAT, "model": "cascade of two logistic regressions", "features": list(FEATURES),
               **self._stages_json(), **self.meta}
        if self.glossed is not None:
            out["glossed"] = {**self.glossed._stages_json(), **self.glossed.meta}
        return out

    def _stages_json(self) -> dict:
        return {"stage1": self.stage1.to_json(),
                "stage2": {"rerank": self.rerank,
                           "input": "(features - mean) / scale, then every pairwise product z_i * z_j (i <= j)",
                           "mean": [round(float(v), 8) for v in self.mean], "scale": [round(float(v), 8) for v in self.scale],
                           **self.stage2.to_json()}}

    @classmethod
    def load(cls, path: Path) -> "CascadeRanker":
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if data.get("format") != RANKER_FORMAT:
            raise ConfigError(f"{path}: ranker format {data.get('format')!r}, expected {RANKER_FORMAT}; "
                             "refit with `geoql index fit-ranker`")
        glossed = cls._from_stages(data["glossed"], data["features"]) if data.get("glossed") else None
        return cls._from_stages(data, data["features"], glossed)

    @classmethod
    def _from_stages(cls, data: dict, features, glossed: "CascadeRanker | None" = None) -> "CascadeRanker":
        one, two = data["stage1"], data["stage2"]
        meta = {k: v for k, v in data.items() if k not in {"format", "model", "features", "stage1", "stage2", "glossed"}}
        return cls(LinearRanker(one["coef"], one["intercept"]), LinearRanker(two["coef"], two["intercept"]),
                   two["mean"], two["scale"], two["rerank"], features, meta, glossed)


def best_controlled(x, scores, n: int):
    """Row indices of the ``n`` best-scored controlled (not free-text) candidates, best first."""
    import numpy as np

    controlled = np.flatnonzero(x[:, _FREE_TEXT] == 0)
    return controlled[np.argsort(-scores[controlled], kind="stable")[:n]]


def same_query_positions(queries: list[str]) -> list[tuple[int, ...]]:
    """Per position, the positions of every query that is the same query (``eval.metrics.same_query_key``), itself included.

    >>> same_query_positions(["a;", "b;", "a; "])
    [(0, 2), (1,), (0, 2)]
    """
    keys = [same_query_key(query) for query in queries]
    by_query: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        by_query.setdefault(key, []).append(i)
    return [tuple(by_query[key]) for key in keys]


def same_query_groups(examples) -> dict[int, tuple[int, ...]]:
    """Training index -> the indices of every training request with the same gold query (itself included).

    The dataset splits by query: no dev or test query occurs in train (one dev gold of 1,000 has a
    training twin), while 16 % of training requests (985 of 6,352) share their query with another
    training request. Leaving the whole group out keeps fitting honest.
    """
    positions = same_query_positions([ex.query for ex in examples])
    return {ex.index: tuple(examples[p].index for p in group) for ex, group in zip(examples, positions)}


_QUERY_GROUPS: WeakKeyDictionary = WeakKeyDictionary()  # retriever -> same_query_groups of its examples


def _training_group(retriever, item):
    """One training request's candidates' features and gold labels, or None without candidates.

    ``item``: a training row, or ``(row, text)``: the row's gold with another wording of its request
    (a code-switched copy, read as a user's request is: glossed, with its lexical matches)."""
    import numpy as np

    row, text = item if isinstance(item, tuple) else (item, None)
    examples = retriever.examples
    groups = _QUERY_GROUPS.get(retriever)
    if groups is None:
        groups = _QUERY_GROUPS[retriever] = same_query_groups(examples.examples)
    ex = examples.examples[row]
    gold = set(controlled_pairs(ex.query))
    exclude = groups.get(ex.index, (ex.index,))
    if text is None:  # the indexed embeddings (both in examples.jsonl's row order): no encoder call
        e5_vector = retriever.multilingual.vectors[row] if retriever.multilingual is not None else None
        candidates, feats = retriever._features(ex.nl, examples.vectors[row], exclude, e5_vector)
    else:
        candidates, feats = retriever._features(text, None, exclude)
    if not candidates:
        return None
    return np.asarray(feats, dtype=np.float64), np.asarray([retriever.docs[d]["tag"] in gold for d in candidates])


def _worker_retriever(load, index_dir, config):
    """A worker process's own retriever (``load`` is the retriever class's ``load``), faiss on one thread."""
    import faiss

    faiss.omp_set_num_threads(1)
    return load(index_dir, config)


def training_groups(retriever, *, every: int = 1, copies=None, progress: bool = False, workers: int | None = None):
    """Per training request (every ``every``-th), or per ``(row, text)`` of ``copies`` where given: its
    candidates' feature matrix and gold labels, searched leaving out every request with the same gold
    query. The requests are independent: with ``workers`` > 1 (default: the usable cores) they are split
    over processes that load the same index, and the result is the one-process list."""
    from functools import partial

    from tqdm import tqdm

    if copies is None:
        rows = list(range(0, len(retriever.examples.examples), max(1, every)))
    else:
        rows = [(int(r), str(t)) for r, t in copies]
    setup = partial(_worker_retriever, type(retriever).load, retriever.index_dir, retriever.config)
    desc = "ranker features" if copies is None else "ranker features (glossed copies)"
    with tqdm(total=len(rows), desc=desc, disable=not progress) as bar:
        found = chunked_map(_training_group, rows, setup, workers=workers, context=retriever, progress=bar.update)
    return [g for g in found if g is not None], len(rows)


def glossed_copies(retriever, *, every: int = 1) -> list[tuple[int, str]]:
    """``(row, text)``: code-switched copies of the index's training requests (every ``every``-th; the
    languages of ``retrieval.codeswitch`` in turn) that the retriever reads through a gloss, as it reads a
    request that is not English. None where the index's tag documents carry no translations."""
    switcher = CodeSwitcher.from_index(retriever.index_dir)
    requests = [e.nl for e in retriever.examples.examples]
    copies = code_switched_copies(switcher, requests, range(0, len(requests), max(1, every)))
    return [(row, text) for row, text in copies if not retriever.is_english(text)]


def fit_ranker(retriever, *, every: int = 1, glossed: bool = False, c: float = C1, c2: float = C2,
               rerank: int = RERANK, min_copies: int = MIN_GLOSSED_COPIES, progress: bool = False) -> CascadeRanker:
    """Fit both stages on the index's own training requests (leave-one-query-out), and with ``glossed`` the
    glossed cascade on :func:`glossed_copies` (every ``every``-th request's: training requests in other
    words, with the row's gold), read as :meth:`TagRetriever.search` reads a request that is not English.
    With fewer than ``min_copies`` copies there is no glossed cascade and glossed requests take the
    English one. Deterministic."""
    if rerank < 1:
        raise ConfigError(f"rerank must be at least 1, got {rerank}; the default is {RERANK}")
    groups, n_requests = run_single_threaded(training_groups, retriever, every=every, progress=progress)
    stages, counts = _fit_cascade(groups, c, c2, rerank)
    meta = {"trained_on": {"split": "train", "leave_one_out": "every training request with the same gold query",
                           "every": every, "requests": n_requests, **counts, "C": c, "C2": c2},
            "index_built_at": retriever.manifest.data.get("built_at")}
    glossed_cascade = None
    copies = glossed_copies(retriever, every=every) if glossed else []
    if copies and len(copies) >= min_copies:
        copy_groups, n_copies = run_single_threaded(training_groups, retriever, copies=copies, progress=progress)
        copy_stages, copy_counts = _fit_cascade(copy_groups, c, c2, rerank)
        languages = sorted({guess_language(text) for _, text in copies})
        glossed_cascade = CascadeRanker(*copy_stages, rerank, FEATURES, {"trained_on": {
            "split": "train", "copies": n_copies, "what": "code-switched copies of the training requests, glossed",
            "guessed_languages": languages, "leave_one_out": "every training request with the same gold query",
            **copy_counts, "C": c, "C2": c2}})
    return CascadeRanker(*stages, rerank, FEATURES, meta, glossed_cascade)


def _fit_cascade(groups, c: float, c2: float, rerank: int):
    """``((stage1, stage2, mean, scale), counts)`` fitted on training groups (:func:`training_groups`)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    too_few = "too few training requests with gold tags to fit a ranker; use a larger index"
    if not groups:
        raise ConfigError(too_few)
    x = np.vstack([g[0] for g in groups])
    y = np.concatenate([g[1] for g in groups])
    if y.all() or not y.any():
        raise ConfigError(too_few)
    one = LogisticRegression(C=c, max_iter=5000, solver="lbfgs").fit(x, y)
    stage1 = LinearRanker(one.coef_[0], one.intercept_[0])
    x2, y2 = [], []
    for gx, gy in groups:  # stage 2 learns from what stage 1 puts in front of it
        top = best_controlled(gx, stage1.score(gx), rerank)
        x2.append(gx[top])
        y2.append(gy[top])
    x2, y2 = np.vstack(x2), np.concatenate(y2)
    if y2.all() or not y2.any():
        raise ConfigError(too_few)
    mean = x2.mean(axis=0)
    scale = x2.std(axis=0)
    scale[scale == 0] = 1.0
    # Newton steps with the exact Hessian: ~400 expanded features against ~160,000 rows, so each step
    # is one small Cholesky solve and 8 of them reach the optimum that lbfgs approached in ~470 (5x slower).
    two = LogisticRegression(C=c2, max_iter=100, solver="newton-cholesky").fit(pairwise_expansion((x2 - mean) / scale), y2)
    counts = {"candidates": int(len(y)), "positives": int(y.sum()), "reranked_candidates": int(len(y2)),
              "reranked_positives": int(y2.sum())}
    return (stage1, LinearRanker(two.coef_[0], two.intercept_[0]), mean, scale), counts


def write_ranker(ranker: CascadeRanker, index_dir: Path) -> Path:
    return write_atomic(Path(index_dir) / RANKER_JSON, json.dumps(ranker.to_json(), indent=2) + "\n")
