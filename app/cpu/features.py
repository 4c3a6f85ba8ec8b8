"""Numbers that describe how well one candidate query fits the request.

One row per candidate; the selection model learns how to weigh them. Columns
are named (``FEATURE_NAMES``) so a saved model can check it was trained on the
same features. Reading the query for features uses plain patterns (a feature
may be approximate); only edits must go through the parser.
"""

from __future__ import annotations

import math
import re

import numpy as np

from geoql.app.cpu.compose import query_shape
from geoql.app.cpu.hints import WANTED
from geoql.app.cpu.lexicon import TagLexicon, tag_names
from geoql.nl.english import EnglishReading
from geoql.nl.words import word_stems

_TYPE = re.compile(r"\b(node|way|relation|rel|nwr|nw|wr|nr|area)\b(?=[\[(.;])")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_PLACE = re.compile(r'\{\{(?:geocodeArea|nominatimArea):\s*"?(.*?)"?\s*\}\}|area\["name"="([^"]*)"\]')

BASE_FEATURES = (
    "similarity",
    "rank",
    "similarity_gap",
    "similarity_ratio",
    "votes",
    "vote_share",
    "word_jaccard",
    "request_words_missing",
    "example_words_extra",
    "tag_support_mean",
    "tag_support_min",
    "tag_count",
    "predicted_tags_covered",
    "request_area",
    "query_area",
    "query_name_area",
    "place_match",
    "request_view",
    "query_bbox",
    "request_count",
    "query_count",
    "request_types",
    "type_agreement",
    "query_nwr",
    "numbers_found",
    "quoted_found",
    "request_time",
    "query_time",
    "request_user",
    "query_user",
    "request_around",
    "query_around",
    "consensus_chrf",
    "consensus_tags",
    "query_length",
    "length_ratio",
    "edits",
    "added_tags",
    "dropped_tags",
    "wanted_missing",
    "wanted_missing_support",
    "idf_recall",
    "idf_precision",
    "key_support_mean",
    "unexplained_tags",
    # The tag retriever's view (app.cpu.hints; -1 when the model has no index): its best tag's
    # probability, how much it backs the candidate's tags, and what the candidate lacks.
    "hint_top",
    "hint_support_mean",
    "hint_support_min",
    "hint_top_in",
    "hint_top_key_in",
    "hint_missing",
    "hint_missing_max",
    "hint_covered",
    "hint_tags",
    # Where the candidate came from and what it shows of the request (app.cpu.compose, faithful,
    # neighbours.FrameNeighbours): composed from the request alone, a neighbour picked by tags and
    # shape, how many kinds of constants were repaired, whether its shape is the request's, and
    # whether the request is in a Latin script (its character n-grams meet the training requests').
    "composed",
    "frame_pick",
    "repairs",
    "shape_match",
    "request_latin",
    # The tag index's sentence embedding (app.cpu.model; -1 without an index or for a query composed
    # from the request alone): the cosine of the candidate's example request with the request, and
    # whether the index's example search picked that neighbour.
    "dense_similarity",
    "example_pick",
    # The multilingual embedding (retrieval.multilingual; -1 without it or for a composed query): the cosine
    # of the candidate's example request with the request as written, in any language, and whether that
    # embedding picked the neighbour.
    "e5_cosine",
    "e5_pick",
)
# Columns also given relative to the pool (minus the pool's best, minus its mean): the
# selector compares candidates of one request, and "the most similar of this pool"
# means more than a similarity of 0.6 does across requests.
RELATIVE = (
    "similarity",
    "votes",
    "word_jaccard",
    "idf_recall",
    "key_support_mean",
    "tag_support_mean",
    "tag_support_min",
    "predicted_tags_covered",
    "consensus_chrf",
    "consensus_tags",
    "length_ratio",
    "type_agreement",
    "place_match",
    "hint_support_mean",
    "hint_missing",
    "shape_match",
    "dense_similarity",
    "e5_cosine",
)
FEATURE_NAMES = (
    BASE_FEATURES
    + tuple(f"{n}_{how}" for n in RELATIVE for how in ("below_best", "below_mean"))
    + ("pool_size",)
)
_BASE_SET = frozenset(BASE_FEATURES)
_RELATIVE_COLUMNS = [BASE_FEATURES.index(n) for n in RELATIVE]
_HINT_COLUMNS = ("hint_top", "hint_support_mean", "hint_support_min", "hint_top_in", "hint_top_key_in",
                 "hint_missing", "hint_missing_max", "hint_covered")


def _vector(row: dict) -> list:
    """A candidate's named values in ``BASE_FEATURES`` order; a name missing or extra is an error."""
    if row.keys() != _BASE_SET:
        missing = [n for n in BASE_FEATURES if n not in row]
        extra = sorted(n for n in row if n not in _BASE_SET)
        raise ValueError(f"feature row and BASE_FEATURES differ (missing {missing}, extra {extra}): "
                         f"name each column in both, once")
    return [row[n] for n in BASE_FEATURES]


def _jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def _char_grams(text: str, n: int = 4) -> frozenset:
    text = re.sub(r"\s+", "", text)
    return frozenset(text[i : i + n] for i in range(max(len(text) - n + 1, 1)))


def _overlaps(sets: list) -> tuple[np.ndarray, np.ndarray]:
    """``(|A ∩ B| for every pair, |A| for each)`` of ``sets``: one matrix product instead of a
    Python loop over the pairs, which grows with the square of the pool (~40 candidates).

    >>> inter, size = _overlaps([{"a", "b"}, {"b", "c", "d"}, set()])
    >>> inter.tolist(), size.tolist()
    ([[2.0, 1.0, 0.0], [1.0, 3.0, 0.0], [0.0, 0.0, 0.0]], [2.0, 3.0, 0.0])
    """
    vocab: dict = {}
    rows, cols = [], []
    for i, items in enumerate(sets):
        for x in items:
            rows.append(i)
            cols.append(vocab.setdefault(x, len(vocab)))
    # dense: a pool's few thousand 4-grams fit, and a request must not load scipy (tests/app/test_cpu_lite.py)
    incidence = np.zeros((len(sets), max(len(vocab), 1)))
    incidence[rows, cols] = 1.0
    return incidence @ incidence.T, np.array([float(len(x)) for x in sets])


def _consensus(sets: list, weights: np.ndarray, dice: bool) -> np.ndarray:
    """Each set's similarity-weighted mean agreement with the others of the pool: Dice overlap
    (of character 4-grams: a cheap stand-in for chrF between candidates) or Jaccard (of tags);
    two empty sets agree fully. 1.0 for a pool of one.

    >>> _consensus([{"a", "b"}, {"b", "c"}, {"b"}], np.array([1.0, 1.0, 2.0]), dice=False).round(3).tolist()
    [0.444, 0.444, 0.5]
    """
    n = len(sets)
    if n == 1:
        return np.ones(1)
    inter, size = _overlaps(sets)
    total = size[:, None] + size[None, :]
    denom = total if dice else total - inter
    numer = 2 * inter if dice else inter
    with np.errstate(divide="ignore", invalid="ignore"):
        agree = np.where(denom > 0, numer / np.where(denom > 0, denom, 1.0), 1.0)
    out = np.empty(n)
    for i in range(n):  # the same sums, in the same order, as one candidate at a time
        others = [j for j in range(n) if j != i]
        w = weights[others]
        out[i] = float(np.dot(w, agree[i, others]) / w.sum())
    return out


def _idf_share(words: set, other: set, lexicon: TagLexicon) -> float:
    """The rarity-weighted share of ``words`` that ``other`` has too: "castle" counts more than "show"."""
    # fsum: exact, so the result does not depend on the set's iteration order (which changes with
    # PYTHONHASHSEED) and `geoql cpu train` gives the same model in every process.
    total = math.fsum(lexicon.idf(w) for w in words)
    return math.fsum(lexicon.idf(w) for w in words & other) / total if total else 1.0


def _hint_summary(hints: dict[str, float] | None):
    """What every candidate of a pool is compared with: (hints, best tag, its probability, the
    wanted tags best first, their probability mass); ``None`` when the model has no index."""
    if hints is None:
        return None
    ranked = sorted(hints.items(), key=lambda kv: (-kv[1], kv[0]))
    top_tag, top = ranked[0] if ranked else ("", 0.0)
    wanted = [(t, p) for t, p in ranked if p >= WANTED]
    return hints, top_tag, top, wanted, math.fsum(p for _, p in wanted)


def _hint_columns(summary, tags: set[str], kv_tags: list[str]) -> dict[str, float]:
    """The ``hint_*`` columns of one candidate (its ``tag_names`` and sorted ``key=value`` tags)."""
    if summary is None:
        return dict.fromkeys(_HINT_COLUMNS, -1.0)
    hints, top_tag, top, wanted, wanted_mass = summary
    backed = [hints.get(t, 0.0) for t in kv_tags]
    missing = [p for t, p in wanted if t not in tags]
    return {
        "hint_top": top,
        "hint_support_mean": math.fsum(backed) / len(backed) if backed else -1.0,
        "hint_support_min": min(backed) if backed else -1.0,
        "hint_top_in": float(top_tag in tags) if top_tag else -1.0,
        "hint_top_key_in": float(top_tag.split("=", 1)[0] in tags) if top_tag else -1.0,
        "hint_missing": math.fsum(missing),
        "hint_missing_max": max(missing, default=0.0),
        "hint_covered": 1.0 - math.fsum(missing) / wanted_mass if wanted_mass else -1.0,
    }


def pool_features(info: EnglishReading, candidates, lexicon: TagLexicon, place: str | None = None,
                  hints: dict[str, float] | None = None, *, shape: str | None = None, latin: bool = True,
                  dense: dict[int, float] | None = None, e5: dict[int, float] | None = None) -> np.ndarray:
    """The feature matrix (len(candidates) x len(FEATURE_NAMES)) of one request's pool.

    ``place`` is the request's place as the queries would spell it (after aliases);
    ``hints`` the tag retriever's tags for the request (``None``: the model has no index);
    ``shape`` the request's (``app.cpu.compose.request_shape``), ``latin`` whether it is written in a Latin script;
    ``dense`` the embedding cosine of the request with each candidate's example (train index -> cosine),
    ``e5`` the same under the multilingual embedding.
    """
    place = place or info.area
    if not candidates:
        return np.zeros((0, len(FEATURE_NAMES)), dtype=np.float32)
    top = max(c.similarity for c in candidates)
    total_votes = sum(c.votes for c in candidates) or 1.0
    tagsets = [tag_names(c.query) for c in candidates]
    weights = np.array([c.similarity for c in candidates], dtype=np.float64) + 1e-6
    consensus_chrf = _consensus([_char_grams(c.query) for c in candidates], weights, dice=True)
    consensus_tags = _consensus(tagsets, weights, dice=False)
    best = lexicon.best_tags(info.stems, limit=8)
    predicted = {t for t, p in best if p >= 0.3}
    # Tags the request's words call for strongly: one missing from a candidate is a tag it lacks.
    strong = [(t, p) for t, p in best if p >= 0.5]
    request_time = bool(info.time_words or info.dates)
    request_user = info.user_words
    request_around = info.around_words
    mean_len = float(np.mean([len(c.query) for c in candidates]))
    hint_summary = _hint_summary(hints)
    rows = []
    for i, c in enumerate(candidates):
        q = c.query
        example_words = word_stems(c.example_nl)
        kv_tags = sorted(t for t in tagsets[i] if "=" in t)  # sorted: float means must not depend on set order
        supports = [lexicon.support(info.stems, t) for t in kv_tags]
        valued_keys = {t.split("=", 1)[0] for t in kv_tags}
        key_supports = [lexicon.support(info.stems, t) for t in sorted(tagsets[i]) if "=" not in t and t not in valued_keys]
        qtypes = {m if m != "rel" else "relation" for m in _TYPE.findall(q)}
        if "nwr" in qtypes:
            qtypes |= {"node", "way", "relation"}
        missing = [p for t, p in strong if t not in tagsets[i]]
        qnumbers = set(_NUMBER.findall(q))
        places = {a or b for a, b in _PLACE.findall(q)}
        # 1: the query names the request's place, 0: another place, -1: nothing to compare
        place_match = float(places == {place}) if places and place else -1.0
        rows.append(_vector({
            "similarity": c.similarity,
            "rank": c.rank,
            "similarity_gap": top - c.similarity,
            "similarity_ratio": c.similarity / top if top > 0 else 0.0,
            "votes": c.votes,
            "vote_share": c.votes / total_votes,
            "word_jaccard": _jaccard(info.stems, example_words),
            "request_words_missing": len(info.stems - example_words),
            "example_words_extra": len(example_words - info.stems),
            "tag_support_mean": float(np.mean(supports)) if supports else -1.0,
            "tag_support_min": min(supports) if supports else -1.0,
            "tag_count": len(tagsets[i]),
            "predicted_tags_covered": len(predicted & tagsets[i]) / len(predicted) if predicted else -1.0,
            "request_area": info.area is not None,
            "query_area": "{{geocodeArea" in q or "{{nominatimArea" in q or "area(" in q,
            "query_name_area": 'area["name' in q or "area[name" in q,
            "place_match": place_match,
            "request_view": info.in_view,
            "query_bbox": "{{bbox}}" in q or "[bbox" in q,
            "request_count": info.count,
            "query_count": "out count" in q or "::count" in q,
            "request_types": len(info.types),
            "type_agreement": _jaccard(info.types, qtypes & {"node", "way", "relation"}) if info.types else -1.0,
            "query_nwr": "nwr" in qtypes,
            "numbers_found": sum(n in qnumbers for n in info.numbers) / len(info.numbers) if info.numbers else -1.0,
            "quoted_found": sum(s in q for s in info.quoted) / len(info.quoted) if info.quoted else -1.0,
            "request_time": request_time,
            "query_time": "newer" in q or "changed" in q or "{{date" in q,
            "request_user": request_user,
            "query_user": "user" in q or "uid" in q,
            "request_around": request_around,
            "query_around": "around" in q,
            "consensus_chrf": float(consensus_chrf[i]),
            "consensus_tags": float(consensus_tags[i]),
            "query_length": len(q),
            "length_ratio": len(q) / mean_len if mean_len else 1.0,
            "edits": len(c.edits),
            "added_tags": "add_tags" in c.edits,
            "dropped_tags": "drop_tags" in c.edits,
            "wanted_missing": len(missing),
            "wanted_missing_support": max(missing, default=0.0),
            "idf_recall": _idf_share(info.stems, example_words, lexicon),
            "idf_precision": _idf_share(example_words, info.stems, lexicon),
            "key_support_mean": float(np.mean(key_supports)) if key_supports else -1.0,
            "unexplained_tags": sum(p < 0.05 for p in supports),
            **_hint_columns(hint_summary, tagsets[i], kv_tags),
            "hint_tags": "hint_tags" in c.edits,
            "composed": getattr(c, "composed", False),
            "frame_pick": getattr(c, "frame_pick", False),
            "repairs": getattr(c, "repairs", 0),
            "shape_match": float(query_shape(q) == shape) if shape else -1.0,
            "request_latin": latin,
            "dense_similarity": dense.get(c.source, -1.0) if dense is not None else -1.0,
            "example_pick": getattr(c, "example_pick", False),
            "e5_cosine": e5.get(c.source, -1.0) if e5 is not None else -1.0,
            "e5_pick": getattr(c, "e5_pick", False),
        }))
    base = np.asarray(rows, dtype=np.float64)
    cols = [base]
    for column in _RELATIVE_COLUMNS:
        x = base[:, column]
        cols += [(x - x.max())[:, None], (x - x.mean())[:, None]]
    cols.append(np.full((len(candidates), 1), float(len(candidates))))
    return np.hstack(cols).astype(np.float32)
