"""Execution accuracy (EX) and soft execution accuracy (EX-soft), as OverpassNL defines them.

For each example both the gold and the predicted query are prepared the way
the official evaluation prepares them (shortcuts expanded with the benchmark's
geocoder answers and the gold ``.bbox``, ``[timeout:300]``, maxsize capped,
``[out:json]``), run on the same Overpass endpoint, and each answer is
reduced to an *outcome*:

* an error name (``parse_error``, ``static_error_re``, ``runtime_error_timeout``,
  ``unknown_error``, ...) -- never matches anything;
* ``count_<n>`` when the answer is one or two elements and the first is a
  ``count`` element (``out count;``);
* otherwise the sorted list of ``<type>_<id>`` strings of all elements.

EX is 1 when the gold and predicted outcomes are equal, EX-soft is the overlap
of the two element sets divided by the larger set (for two counts: 1 when the
numbers are equal). Empty results (0 elements, or a count of 0) on either side
never match. Scores are percentages over all examples.

Outcomes are cached per final query text and endpoint in SQLite, so an
interrupted run resumes where it stopped. Answers that say nothing about the
query (rate limiting, a busy gateway, an unreachable server) are scored as
``unknown_error`` for this run but not cached, so the next run asks again.

>>> outcome_from_text('{"elements": [{"type": "way", "id": 7}, {"type": "node", "id": 3}]}')
(['node_3', 'way_7'], 2)
>>> outcome_from_text('{"elements": [{"type": "count", "id": 0, "tags": {"total": "12"}}]}')
('count_12', 12)
>>> compare(('count_12', 12), ('count_12', 12))
(1, 1.0)
>>> compare((['node_1', 'node_2'], 2), (['node_2', 'node_3'], 2))
(0, 0.5)
"""

from __future__ import annotations

import json
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence, Union

from geoql.core.paths import user_dir
from geoql.eval.dataset import benchmark_geocodes
from geoql.osm.cache import SqliteStore
from geoql.osm.nominatim import Nominatim, NominatimConfig
from geoql.osm.overpass import DEFAULT_OVERPASS_URL, OverpassClient, OverpassConfig, prepare_query
from geoql.osm.turbo import ExpansionError, expand

__all__ = [
    "Outcome",
    "outcome_from_text",
    "compare",
    "prepare_official",
    "ExecutionRunner",
    "evaluate_execution",
]

Outcome = tuple[Union[str, list], int]

# The official evaluation reads the answer text for these markers, in this
# order, before it tries JSON; the first that applies names the error.
_STATIC = "static error:"
_MARKERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("parse_error", ("parse error:",)),
    ("static_error_diff", (_STATIC + " The selected output format does not support the diff or adiff mode.",)),
    ("static_error_timestamp", (_STATIC, "timestamp")),
    ("static_error_re", (_STATIC, "Invalid regular expression")),
    ("static_error_re", (_STATIC, "Unknown attribute &quot;regexp&quot;")),
    ("runtime_error_timeout", ("runtime error:", "Query timed out in")),
    ("static_error_convert", (_STATIC, "A convert statement can have")),
    ("static_error_bbox", (_STATIC, "in bounding boxes must be between")),
    ("static_error_bbox", (_STATIC, "bbox-query")),
    ("static_error_attribute_value", (_STATIC, "the only allowed values are non-empty strings")),
    ("static_error_attribute_value", (_STATIC, "For the attribute")),
)
_TOO_BIG = 2_000_000_000  # characters; the official "memory_error"
# Transport failures that are about the server, not the query: not cached.
_TRANSIENT = ("rate_limited", "gateway_timeout", "unreachable")


def outcome_from_text(text: str) -> Outcome:
    """Reduce one Overpass answer text to the official outcome ``(result, number)``."""
    if len(text) > _TOO_BIG:
        return ("memory_error", -1)
    for name, needles in _MARKERS:
        if all(n in text for n in needles):
            return (name, -1)
    try:
        elements = json.loads(text)["elements"]
        if len(elements) in (1, 2) and elements[0]["type"] == "count":
            tags = elements[0]["tags"]
            number = tags["total"] if "total" in tags else tags["all"]
            return (f"count_{number}", int(number))
        return (sorted(f"{e['type']}_{e['id']}" for e in elements), len(elements))
    except Exception:  # anything unreadable is the official "unknown_error"
        return ("unknown_error", -2)


def is_error(outcome: Outcome) -> bool:
    return isinstance(outcome[0], str) and not outcome[0].startswith("count_")


def compare(gold: Outcome, pred: Outcome) -> tuple[int, float]:
    """(EX, EX-soft) for one example from the two outcomes."""
    if is_error(gold) or is_error(pred) or gold[1] == 0 or pred[1] == 0:
        return 0, 0.0
    ex = int(gold[0] == pred[0])
    gold_is_count, pred_is_count = isinstance(gold[0], str), isinstance(pred[0], str)
    if gold_is_count and pred_is_count:
        return ex, float(gold[1] == pred[1])
    if gold_is_count or pred_is_count:
        return ex, 0.0  # a count and an element list share nothing
    gold_set, pred_set = set(gold[0]), set(pred[0])
    return ex, len(gold_set & pred_set) / max(len(gold_set), len(pred_set))


def prepare_official(query: str, bbox: str, geocoder) -> tuple[str | None, str | None]:
    """The official preparation of one query: ``(final_query, None)`` or ``(None, error_type)``."""
    try:
        expanded = expand(query, geocoder=geocoder, bbox=bbox, official=True)
    except ExpansionError as exc:
        return None, exc.kind
    return prepare_query(expanded), None


@dataclass
class _Execution:
    outcome: Outcome
    cached: bool
    error_kind: str | None = None  # client-level kind, for the transient check


class ExecutionRunner:
    """Runs final queries through an :class:`~geoql.osm.overpass.OverpassClient` with an outcome cache."""

    CACHE_FILE = "execution_outcomes.sqlite"

    def __init__(self, client, cache_dir: str | Path | None = None, *, retry_errors: bool = False):
        self.client = client
        directory = Path(cache_dir) if cache_dir else user_dir("cache", "execution")
        self.store = SqliteStore(directory / self.CACHE_FILE, "outcomes")
        self.retry_errors = retry_errors
        self.requests = 0
        self.cache_hits = 0

    def run(self, final_query: str) -> _Execution:
        key = self.client.config.url + "\n" + final_query
        blob = self.store.get(key)
        if blob is not None:
            result, number = json.loads(blob)
            outcome = (result, number)
            if not (self.retry_errors and is_error(outcome)):
                self.cache_hits += 1
                return _Execution(outcome, True)
        self.requests += 1
        raw = self.client.fetch(final_query, use_cache=False)
        kind = raw.error.kind if raw.error is not None else None
        if kind in _TRANSIENT:
            if kind == "unreachable":
                raise raw.error  # no point scoring a whole split as errors
            return _Execution(("unknown_error", -2), False, kind)
        if kind == "timeout":
            outcome: Outcome = ("server_error_timeout", -1)
        else:
            outcome = outcome_from_text(raw.text)
        self.store.put(key, json.dumps(list(outcome)).encode())
        return _Execution(outcome, False, kind)


def _summary(outcome: Outcome | None, prep_error: str | None) -> dict[str, Any]:
    if prep_error is not None:
        return {"result": prep_error, "num": -1}
    result, number = outcome
    return {"result": "elements" if isinstance(result, list) else result, "num": number}


def evaluate_execution(
    preds: Sequence[str],
    examples: Sequence,
    overpass_url: str | None = None,
    cache_dir: str | Path | None = None,
    *,
    nominatim_url: str | None = None,
    client=None,
    geocoder=None,
    workers: int = 1,
    retry_errors: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """EX and EX-soft (percent) of ``preds`` against ``examples`` (``eval.dataset.Example``).

    Returns ``{"ex", "ex_soft", "n", "per_example", "pred_errors", "gold_errors",
    "pred_empty", "gold_empty", "requests", "cache_hits", "overpass_url"}``;
    ``per_example`` rows hold ``index, ex, ex_soft, gold, pred`` (outcome
    summaries). ``workers`` > 1 runs examples in parallel (use it only with
    your own Overpass server; the public one allows two slots per address).
    Raises :class:`geoql.osm.overpass.OverpassError` (kind ``unreachable``) when
    the server cannot be reached at all; finished examples stay cached.
    """
    from tqdm import tqdm

    if len(preds) != len(examples):
        raise ValueError(f"{len(preds)} predictions for {len(examples)} examples: give one query per example")
    if workers < 1:
        raise ValueError(f"workers must be >= 1 (got {workers})")
    if client is None:
        client = OverpassClient(
            OverpassConfig(url=overpass_url or DEFAULT_OVERPASS_URL, cache_dir=str(cache_dir) if cache_dir else None)
        )
    if geocoder is None:
        options = {"cache_dir": str(cache_dir) if cache_dir else None}
        if nominatim_url:
            options["url"] = nominatim_url
        geocoder = Nominatim(NominatimConfig(**options), seed=benchmark_geocodes())
    runner = ExecutionRunner(client, cache_dir, retry_errors=retry_errors)

    def one(pair) -> dict[str, Any]:
        pred, example = pair
        gold_query, gold_prep = prepare_official(example.query, example.bbox, geocoder)
        pred_query, pred_prep = (
            prepare_official(pred, example.bbox, geocoder) if pred and pred.strip() else (None, "parse_error")
        )
        gold = runner.run(gold_query).outcome if gold_query is not None else None
        out = runner.run(pred_query).outcome if pred_query is not None else None
        if gold is None or out is None:
            ex, soft = 0, 0.0
        else:
            ex, soft = compare(gold, out)
        return {
            "index": example.index,
            "ex": ex,
            "ex_soft": soft,
            "gold": _summary(gold, gold_prep),
            "pred": _summary(out, pred_prep),
        }

    pairs = list(zip(preds, examples))
    bar = tqdm(total=len(pairs), desc="execution", unit="ex", disable=not progress)
    rows: list[dict[str, Any]] = []
    try:
        if workers == 1:
            for pair in pairs:
                rows.append(one(pair))
                bar.update()
        else:
            with ThreadPoolExecutor(workers) as pool:
                for row in pool.map(one, pairs):
                    rows.append(row)
                    bar.update()
    finally:
        bar.close()

    n = len(rows)

    def is_err(summary):
        return summary["num"] < 0

    return {
        "ex": 100.0 * sum(r["ex"] for r in rows) / n if n else 0.0,
        "ex_soft": 100.0 * sum(r["ex_soft"] for r in rows) / n if n else 0.0,
        "n": n,
        "per_example": rows,
        "pred_errors": dict(Counter(r["pred"]["result"] for r in rows if is_err(r["pred"]))),
        "gold_errors": dict(Counter(r["gold"]["result"] for r in rows if is_err(r["gold"]))),
        "pred_empty": sum(1 for r in rows if r["pred"]["num"] == 0),
        "gold_empty": sum(1 for r in rows if r["gold"]["num"] == 0),
        "requests": runner.requests,
        "cache_hits": runner.cache_hits,
        "overpass_url": client.config.url,
    }
