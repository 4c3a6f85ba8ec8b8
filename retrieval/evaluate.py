"""``geoql retrieval-eval``: how well the tag retriever grounds requests.

Recall is defined over *occurrences*: every (example, distinct controlled
``key=value`` pair of its gold query) counts once, so a tag used by 300 dev
queries weighs 300 times. Key recall uses the keys of all positive filters.
Coverage is the share of those pair occurrences that exist anywhere in the
index — the ceiling of any recall@k. ``candidate_recall`` is the share the retriever
considers at all (its whole candidate list), and ``ceiling@k`` what recall@k
would be if it ordered those candidates perfectly: the part of the gap that
ordering alone can close. ``suspect@k`` is the share of the first k
listed tags that a prompt had better not offer (``retrieval.ranker.is_suspect``:
likely typos, malformed tags, tags only deprecated).

For failure analysis the report also keeps every missed pair (why it was missed
and what was listed instead), and recall by how close the request's nearest
training request is: the split is by query, so a dev request whose task the index
has never seen depends on what generalises from its neighbours.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .gold import controlled_pairs, query_keys
from .ranker import is_suspect


@dataclass
class RetrievalReport:
    split: str
    n_examples: int
    n_pairs: int
    n_keys: int
    recall: dict[int, float]
    key_recall: dict[int, float]
    coverage: float
    p50_ms: float
    p95_ms: float
    misses: list[dict] = field(default_factory=list)  # one per gold pair missed at max k: index, request, pair, why, listed
    suspect: dict[int, float] = field(default_factory=dict)  # k -> share of listed tags that are suspect (when the retriever has docs)
    by_neighbour: dict[str, dict] = field(default_factory=dict)  # nearest-request cosine band -> requests, pairs, recall@k
    candidate_recall: float | None = None  # share of gold pairs anywhere in the retriever's candidate list
    ceiling: dict[int, float] = field(default_factory=dict)  # k -> recall@k with the candidates ordered perfectly

    def as_json(self) -> dict:
        out = {f"recall@{k}": round(v, 4) for k, v in sorted(self.recall.items())}
        out.update({f"key_recall@{k}": round(v, 4) for k, v in sorted(self.key_recall.items())})
        out.update({f"suspect@{k}": round(v, 4) for k, v in sorted(self.suspect.items())})
        out.update({f"ceiling@{k}": round(v, 4) for k, v in sorted(self.ceiling.items())})
        if self.candidate_recall is not None:
            out["candidate_recall"] = round(self.candidate_recall, 4)
        out.update(coverage=round(self.coverage, 4), p50_ms=round(self.p50_ms, 2), p95_ms=round(self.p95_ms, 2),
                   split=self.split, n_examples=self.n_examples, n_pairs=self.n_pairs, n_keys=self.n_keys,
                   recall_definition="micro-average over (example, distinct controlled key=value pair) occurrences")
        if self.by_neighbour:
            out["by_nearest_request_cosine"] = self.by_neighbour
        return out


# A k no retriever reaches: search(nl, CANDIDATE_POOL) lists every candidate it scored.
CANDIDATE_POOL = 100_000

# Bands of the cosine between a request and its nearest training request (the index's own embedding).
NEIGHBOUR_BANDS = (0.6, 0.7, 0.8, 0.9)


def band_labels(bands=NEIGHBOUR_BANDS) -> list[str]:
    """The bands' labels, lowest first.

    >>> band_labels((0.6, 0.7))
    ['<0.6', '0.6-0.7', '>=0.7']
    """
    return [f"<{bands[0]}"] + [f"{low}-{high}" for low, high in zip(bands, bands[1:])] + [f">={bands[-1]}"]


def neighbour_band(cosine: float, bands=NEIGHBOUR_BANDS) -> str:
    """The band label of a nearest-request cosine.

    >>> [neighbour_band(c) for c in (0.1, 0.6, 0.75, 0.95)]
    ['<0.6', '0.6-0.7', '0.7-0.8', '>=0.9']
    """
    return band_labels(bands)[sum(1 for edge in bands if cosine >= edge)]


def miss_summary(misses: list[dict], top: int = 10) -> dict:
    """Counts of missed pairs by reason and by key (the most missed keys first).

    >>> miss_summary([{"pair": "admin_level=8", "why": "ranked below 20"}, {"pair": "admin_level=6", "why": "not in index"}])
    {'by_reason': {'not in index': 1, 'ranked below 20': 1}, 'by_key': {'admin_level': 2}}
    """
    from collections import Counter

    reasons = Counter(m["why"] for m in misses)
    keys = Counter(m["pair"].split("=", 1)[0] for m in misses)
    return {"by_reason": dict(sorted(reasons.items())), "by_key": dict(keys.most_common(top))}


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100).

    >>> percentile([1, 2, 3, 4], 50), percentile([5.0], 95)
    (2, 5.0)
    """
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), -(-len(ordered) * q // 100)))
    return ordered[int(rank) - 1]


def _why_missed(pair: str, retriever, pool: set, kmax: int) -> str:
    if pair not in retriever:
        return "not in index"
    return f"ranked below {kmax}" if pair in pool else "not a candidate"


def evaluate(retriever, examples, ks=(5, 10, 20), *, progress: bool = True, cache: dict | None = None,
             candidates: bool = True) -> RetrievalReport:
    """Run ``retriever.search`` once per example at ``max(ks)`` and score every k from that list.

    ``cache`` (a dict the caller keeps) remembers each request's results, so the same requests
    scored against a second gold (OsmNL's own and OverpassNL's) are searched once; latencies are
    those of the first search. ``candidates=False`` skips the second, untimed search of each request's
    whole candidate list (no ``candidate_recall``/``ceiling@k``; misses are "not listed").
    """
    from tqdm import tqdm

    ks = sorted(set(ks))
    kmax = ks[-1]
    hits = {k: 0 for k in ks}
    key_hits = {k: 0 for k in ks}
    n_pairs = n_keys = covered = 0
    latencies: list[float] = []
    misses: list[dict] = []
    doc = getattr(retriever, "doc", None)  # tag documents, for suspect@k
    nearest = getattr(getattr(retriever, "examples", None), "nearest_cosine", None)
    bands: dict[str, list[int]] = {}  # band -> [requests, pairs, hits at each k]
    listed = {k: 0 for k in ks}
    suspect = {k: 0 for k in ks}
    in_candidates = 0
    ceiling = {k: 0 for k in ks}
    if examples and not cache:
        retriever.search(examples[0].nl, kmax)  # first call pays one-off costs (lazy init, allocators)
    for ex in tqdm(examples, desc="retrieval-eval", disable=not progress):
        pairs = controlled_pairs(ex.query)
        keys = query_keys(ex.query)
        cached = cache.get((ex.nl, kmax)) if cache is not None else None
        if cached is None:
            started = time.perf_counter()
            result = retriever.search(ex.nl, kmax)
            cached = {"ms": (time.perf_counter() - started) * 1000, "tags": [h.tag for h in result], "keys": [h.key for h in result]}
            if cache is not None:
                cache[(ex.nl, kmax)] = cached
        latencies.append(cached["ms"])
        ranked, ranked_keys = cached["tags"], cached["keys"]
        n_pairs += len(pairs)
        n_keys += len(keys)
        covered += sum(1 for p in pairs if p in retriever)
        found = {k: len(set(pairs) & set(ranked[:k])) for k in ks}  # this request's hits at each k (pairs are distinct)
        for k in ks:
            hits[k] += found[k]
            top_keys = set(ranked_keys[:k])
            key_hits[k] += sum(1 for key in keys if key in top_keys)
        if candidates and pairs and "pool" not in cached:  # untimed
            cached["pool"] = {h.tag for h in retriever.search(ex.nl, CANDIDATE_POOL)}
        pool = cached.get("pool", set()) if pairs else set()
        pooled = sum(1 for p in pairs if p in pool)
        in_candidates += pooled
        for k in ks:
            ceiling[k] += min(k, pooled)
        misses.extend({"index": ex.index, "request": ex.nl, "pair": p,
                       "why": _why_missed(p, retriever, pool, kmax) if candidates else "not listed",
                       "listed": ranked[:10]}
                      for p in pairs if p not in ranked)
        if nearest is not None and pairs:  # after the timed search: the extra encoder call is not latency
            if "nearest" not in cached:
                cached["nearest"] = nearest(ex.nl)
            band = bands.setdefault(neighbour_band(cached["nearest"]), [0, 0] + [0] * len(ks))
            band[0] += 1
            band[1] += len(pairs)
            for j, k in enumerate(ks):
                band[2 + j] += found[k]
        if doc is not None:
            flags = [is_suspect(doc(tag) or {"key": "", "value": "", "sources": ()}) for tag in ranked]
            for k in ks:
                listed[k] += len(flags[:k])
                suspect[k] += sum(flags[:k])
    return RetrievalReport(
        split=examples[0].split if examples else "",
        n_examples=len(examples),
        n_pairs=n_pairs,
        n_keys=n_keys,
        recall={k: hits[k] / n_pairs if n_pairs else 0.0 for k in ks},
        key_recall={k: key_hits[k] / n_keys if n_keys else 0.0 for k in ks},
        coverage=covered / n_pairs if n_pairs else 0.0,
        p50_ms=percentile(latencies, 50),
        p95_ms=percentile(latencies, 95),
        misses=misses,
        suspect={k: suspect[k] / listed[k] for k in ks if listed[k]} if doc is not None else {},
        candidate_recall=(in_candidates / n_pairs if n_pairs else 0.0) if candidates else None,
        ceiling={k: ceiling[k] / n_pairs if n_pairs else 0.0 for k in ks} if candidates else {},
        by_neighbour={label: {"requests": b[0], "pairs": b[1], **{f"recall@{k}": round(b[2 + j] / b[1], 4) for j, k in enumerate(ks)}}
                      for label, b in ((label, bands[label]) for label in band_labels() if label in bands)},
    )
