"""GRPO reward functions: ``f(completions, **columns) -> list[float | None]``.

Each reward is its own function so TRL logs it on its own
(``rewards/<name>/mean`` and ``/std``); the recipe weights them. The similarity
rewards call ``eval.metrics`` — the one implementation of the official metrics —
so a reward can never drift from what the benchmark measures
(``geoql train check-rewards`` verifies the wiring). A reward returns ``None``
where it does not apply (TRL then ignores it for that completion).

Columns come from the GRPO dataset (training/data.py): ``gold`` (the reference
query) and ``bbox``. ``completions`` are strings or, for chat prompts, lists of
messages whose last one is the assistant's answer.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import overpassql

from geoql.app import decoding
from geoql.core.errors import ConfigError
from geoql.eval import metrics
from geoql.eval.dataset import benchmark_geocodes
from geoql.osm.nominatim import Nominatim
from geoql.osm.overpass import OverpassClient, OverpassError

RewardFunc = Callable[..., list]


def completion_text(completion) -> str:
    """The generated text of one completion, whatever shape TRL passes it in.

    >>> completion_text([{"role": "assistant", "content": " way[a];out; "}])
    'way[a];out;'
    >>> completion_text("way[a];out;")
    'way[a];out;'
    >>> completion_text(None)
    ''
    """
    if completion is None:
        return ""
    if isinstance(completion, str):
        text = completion
    elif isinstance(completion, dict):
        text = completion.get("content") or ""
    elif isinstance(completion, (list, tuple)) and completion:
        last = completion[-1]
        text = (last.get("content") or "") if isinstance(last, dict) else str(last)
    else:
        text = ""
    return extract_query(text if isinstance(text, str) else str(text))


def extract_query(text: str) -> str:
    """The query inside a generated text, read by ``app.decoding.extract_query``.

    The compile path reads answers with the same function, so training rewards
    exactly what inference returns. Should it fail on a text, the query is the
    text without surrounding whitespace, a think block and a Markdown code fence.

    >>> extract_query("```overpassql\\nnode;out;\\n```")
    'node;out;'
    """
    try:
        return decoding.extract_query(text)
    except Exception:  # a reward must never crash a training step
        pass
    text = text.strip()
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1].strip()
    if text.startswith("```"):
        body = text.split("\n", 1)[1] if "\n" in text else ""
        text = body.rsplit("```", 1)[0].strip()
    return text


def _golds(gold: Sequence[str] | None, n: int, name: str) -> list[str]:
    if gold is None:
        raise ValueError(f"{name} needs the dataset column 'gold'; build the GRPO data with training.data")
    if len(gold) != n:
        raise ValueError(f"{name}: {n} completions but {len(gold)} gold queries")
    return [g if isinstance(g, str) else "" for g in gold]


def _metric_reward(metric: Callable[[str, str], float], completions, gold, name: str) -> list[float]:
    golds = _golds(gold, len(completions), name)
    out = []
    for completion, ref in zip(completions, golds):
        try:
            out.append(float(metric(completion_text(completion), ref)))
        except (ImportError, TypeError):
            raise  # a broken installation or wiring, not a broken prediction
        except Exception:  # a broken prediction scores 0, it does not stop training
            out.append(0.0)
    return out


def kvs_reward(completions, gold=None, **_) -> list[float]:
    """Exact KVS (official key/value similarity) of each completion against its gold.

    >>> q = 'node["amenity"="cafe"](area.a);out;'
    >>> kvs_reward([q, q.replace("cafe", "pub")], gold=[q, q])
    [1.0, 0.3333333333333333]
    """
    return _metric_reward(metrics.kvs, completions, gold, "kvs_reward")


def tree_reward(completions, gold=None, **_) -> list[float]:
    """Exact TreeS (official XML subtree similarity) against the gold.

    >>> q = 'node["amenity"="cafe"];out;'
    >>> tree_reward([q, 'way["amenity"="cafe"];out;'], gold=[q, q])[0]
    1.0
    """
    return _metric_reward(metrics.tree, completions, gold, "tree_reward")


def chrf_reward(completions, gold=None, **_) -> list[float]:
    """Official chrF (as a fraction) against the gold.

    >>> q = 'node["amenity"="cafe"];out;'
    >>> chrf_reward([q, ""], gold=[q, q])
    [1.0, 0.0]
    """
    return _metric_reward(metrics.chrf, completions, gold, "chrf_reward")


def validity_reward(completions, gold=None, **_) -> list[float | None]:
    """1.0 when the completion is valid (``overpassql.check``: no message from the
    converter after the metric's placeholder step, as for ``Compilation.valid``), else 0.0.

    ``None`` where the gold itself is not valid: then validity says nothing
    about the answer (some gold queries rely on converter quirks).

    >>> validity_reward(['node["a"="b"];out;', 'node["a"="b"', ""], gold=['way["c"];out;'] * 3)
    [1.0, 0.0, 0.0]
    """
    golds = _golds(gold, len(completions), "validity_reward") if gold is not None else [None] * len(completions)
    gold_ok: dict[str, bool] = {}
    out: list[float | None] = []
    for completion, ref in zip(completions, golds):
        if ref is not None:
            if ref not in gold_ok:
                gold_ok[ref] = not overpassql.check(ref)
            if not gold_ok[ref]:
                out.append(None)
                continue
        out.append(0.0 if overpassql.check(completion_text(completion)) else 1.0)
    return out


def length_reward(completions, gold=None, **_) -> list[float]:
    """1 - |len(pred) - len(gold)| / len(gold), floored at 0 (characters, whitespace-free).

    A weak term that discourages run-on or truncated answers without rewarding any
    particular content.

    >>> length_reward(["way[a];out;", "way[a];out;way[a];out;", ""], gold=["way[a];out;"] * 3)
    [1.0, 0.0, 0.0]
    """
    golds = _golds(gold, len(completions), "length_reward")
    out = []
    for completion, ref in zip(completions, golds):
        p = len("".join(completion_text(completion).split()))
        g = len("".join(ref.split()))
        if g == 0:
            out.append(1.0 if p == 0 else 0.0)
            continue
        out.append(max(0.0, 1.0 - abs(p - g) / g))
    return out


def jaccard(a: set, b: set) -> float:
    """Jaccard similarity of two id sets (1.0 when both are empty).

    >>> jaccard({"n1", "n2"}, {"n2", "w3"})
    0.3333333333333333
    >>> jaccard(set(), set())
    1.0
    """
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def make_execution_reward(element_ids: Callable[[str, str], set | None]) -> RewardFunc:
    """An execution reward around ``element_ids(query, bbox) -> set | None``.

    The reward is the Jaccard similarity of the element ids the completion returns
    and those the gold returns; ``None`` when the gold's answer is unknown
    (endpoint error, timeout), 0.0 when only the completion fails.

    >>> answers = {"g": {"n1", "n2"}, "p": {"n1"}}
    >>> reward = make_execution_reward(lambda q, bbox: answers.get(q))
    >>> reward(["p", "g", "broken"], gold=["g", "g", "g"], bbox=["none"] * 3)
    [0.5, 1.0, 0.0]
    >>> reward(["p"], gold=["unknown"], bbox=["none"])
    [None]
    """

    def execution_reward(completions, gold=None, bbox=None, **_) -> list[float | None]:
        golds = _golds(gold, len(completions), "execution_reward")
        boxes = list(bbox) if bbox is not None else ["none"] * len(completions)
        gold_ids: dict[tuple, set | None] = {}
        out: list[float | None] = []
        for completion, ref, box in zip(completions, golds, boxes):
            key = (ref, box)
            if key not in gold_ids:
                gold_ids[key] = _safe_ids(element_ids, ref, box)
            expected = gold_ids[key]
            if expected is None:
                out.append(None)
                continue
            got = _safe_ids(element_ids, completion_text(completion), box)
            out.append(0.0 if got is None else jaccard(got, expected))
        return out

    return execution_reward


def _safe_ids(element_ids, query: str, bbox: str):
    if not query.strip():
        return None
    try:
        ids = element_ids(query, bbox)
    except Exception:
        return None
    return None if ids is None else set(ids)


def overpass_element_ids(
    overpass_url: str, cache_dir: str | None = None, **client_options
) -> Callable[[str, str], set | None]:
    """``element_ids`` for :func:`make_execution_reward` through ``osm.overpass`` (cached).

    Returns ``None`` for a query the server could not answer (parse error,
    timeout, unexpandable placeholder): the reward decides what that means.
    """
    if "geocoder" not in client_options:
        # The benchmark's own place answers first, so train queries expand as the authors' did.
        client_options["geocoder"] = Nominatim(cache_dir=cache_dir, seed=benchmark_geocodes())
    client = OverpassClient(url=overpass_url, cache_dir=cache_dir, **client_options)

    def element_ids(query: str, bbox: str) -> set | None:
        box = None if not bbox or bbox.strip().lower() == "none" else bbox
        try:
            result = client.run(query, bbox=box)
        except OverpassError:
            return None
        return {f"{e.get('type')}/{e.get('id')}" for e in result.elements if isinstance(e, dict)}

    return element_ids


def execution_reward(completions, **_) -> list[None]:
    """Placeholder when no Overpass endpoint is configured: the reward does not apply.

    >>> execution_reward(["node;out;"])
    [None]
    """
    return [None] * len(completions)


# The registry: a recipe weights rewards by these names (training.config checks them).
# ``execution`` is swapped for a real reward by build_rewards when an endpoint is set.
REWARDS: dict[str, RewardFunc] = {
    "kvs": kvs_reward,
    "tree": tree_reward,
    "chrf": chrf_reward,
    "validity": validity_reward,
    "length": length_reward,
    "execution": execution_reward,
}


def build_rewards(
    weights: dict[str, float],
    *,
    overpass_url: str | None = None,
    overpass_cache_dir: str | None = None,
    nominatim_url: str | None = None,
    element_ids: Callable[[str, str], set | None] | None = None,
) -> tuple[list[RewardFunc], list[float]]:
    """Reward functions and weights for a recipe's ``rewards`` mapping (zero weights dropped).

    >>> funcs, w = build_rewards({"kvs": 1.0, "chrf": 0.5, "length": 0})
    >>> [f.__name__ for f in funcs], w
    (['kvs_reward', 'chrf_reward'], [1.0, 0.5])
    """
    unknown = sorted(set(weights) - set(REWARDS))
    if unknown:
        raise ConfigError(f"unknown reward {', '.join(unknown)}; use names from: {', '.join(REWARDS)}")
    funcs, ws = [], []
    for name, weight in weights.items():
        if not weight or not math.isfinite(weight):
            continue
        func = REWARDS[name]
        if name == "execution":
            if element_ids is None and overpass_url:
                options = {}
                if nominatim_url:
                    options["geocoder"] = Nominatim(url=nominatim_url, cache_dir=overpass_cache_dir, seed=benchmark_geocodes())
                element_ids = overpass_element_ids(overpass_url, overpass_cache_dir, **options)
            if element_ids is not None:
                func = make_execution_reward(element_ids)
        funcs.append(func)
        ws.append(float(weight))
    return funcs, ws
