"""Reward validation before any GPU time: correlate each reward with the official metric.

Gold queries are perturbed in the ways models get them wrong (another tag value,
another key, a filter dropped, another element type, truncation, a deleted
character, a different query altogether, ...). Each reward scores the perturbed
queries — passed as chat completions, the way TRL passes them — and the official
per-example metric from ``eval.metrics`` scores the same pairs. The exact rewards
(KVS, TreeS, chrF) must correlate >= 0.99 with their metric by construction; a
lower figure means the reward is wired wrong (swapped arguments, a completion
that is not unpacked, a different normalisation) and training would optimise
something else than the benchmark.
"""

from __future__ import annotations

import math
import random
import re
import time
from dataclasses import dataclass, field
from typing import Callable

from tqdm import tqdm

from geoql.eval.metrics import get_scorer, score
from geoql.training.rewards import REWARDS

# reward -> the official per-example metric it must reproduce (None: a proxy, compared with OQS only)
EXACT_TARGETS = {"kvs": "kvs", "tree": "tree", "chrf": "chrf"}
THRESHOLD = 0.99

_TAG = re.compile(r'\["([^"\]]+)"(=|!=|~)"([^"\]]*)"\]')
_FILTER = re.compile(r'\[[^\[\]]*\]')
_ELEMENT = re.compile(r"\b(node|way|relation|nwr)\b")
_OUT_FORMAT = re.compile(r"\[out:(json|xml|csv[^\]]*)\]")


def _replace_nth(pattern: re.Pattern, text: str, rng: random.Random, repl: Callable[[re.Match], str]) -> str | None:
    matches = list(pattern.finditer(text))
    if not matches:
        return None
    m = rng.choice(matches)
    return text[: m.start()] + repl(m) + text[m.end():]


def perturbations(gold: str, pool: list[str], rng: random.Random) -> list[tuple[str, str]]:
    """(kind, perturbed query) pairs for one gold query; deterministic given ``rng``.

    >>> kinds = [k for k, _ in perturbations('node["amenity"="cafe"](area.a);out;', ['way["shop"="bakery"];out;'], random.Random(0))]
    >>> "identity" in kinds and "other_value" in kinds and "truncate" in kinds
    True
    """
    values = [m.group(3) for q in pool for m in _TAG.finditer(q)] or ["yes"]
    keys = [m.group(1) for q in pool for m in _TAG.finditer(q)] or ["name"]
    out: list[tuple[str, str | None]] = [("identity", gold)]
    out.append(("other_value", _replace_nth(_TAG, gold, rng, lambda m: f'["{m.group(1)}"{m.group(2)}"{rng.choice(values)}"]')))
    out.append(("other_key", _replace_nth(_TAG, gold, rng, lambda m: f'["{rng.choice(keys)}"{m.group(2)}"{m.group(3)}"]')))
    out.append(("drop_filter", _replace_nth(_FILTER, gold, rng, lambda m: "")))
    swap = {"node": "way", "way": "node", "relation": "way", "nwr": "node"}
    out.append(("other_element", _replace_nth(_ELEMENT, gold, rng, lambda m: swap[m.group(1)])))
    out.append(("out_format", _replace_nth(_OUT_FORMAT, gold, rng, lambda m: "[out:xml]" if m.group(1) == "json" else "[out:json]")))
    if len(gold) > 4:
        cut = rng.randrange(1, len(gold) - 1)
        out.append(("truncate", gold[:cut]))
        pos = rng.randrange(len(gold))
        out.append(("delete_char", gold[:pos] + gold[pos + 1:]))
    out.append(("whitespace", gold.replace(";", ";\n")))
    out.append(("other_query", rng.choice(pool)))
    out.append(("empty", ""))
    return [(k, q) for k, q in out if q is not None]


def _ranks(xs: list[float]) -> list[float]:
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1  # ties share the average rank
        i = j + 1
    return ranks


def pearson(xs: list[float], ys: list[float]) -> float:
    """Pearson correlation; NaN when either side is constant.

    >>> round(pearson([1, 2, 3], [2, 4, 7]), 4)
    0.9934
    >>> math.isnan(pearson([1, 1], [1, 2]))
    True
    """
    n = len(xs)
    if n < 2:
        return math.nan
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx <= 1e-15 or syy <= 1e-15:
        return math.nan
    return sxy / math.sqrt(sxx * syy)


def spearman(xs: list[float], ys: list[float]) -> float:
    """Spearman rank correlation (average ranks for ties).

    >>> spearman([1, 2, 3], [2, 4, 70])
    1.0
    """
    return pearson(_ranks(xs), _ranks(ys))


@dataclass
class RewardCheck:
    reward: str
    target: str  # the official metric compared with
    pearson: float
    spearman: float
    n: int  # pairs where the reward applied (not None)
    required: float | None  # minimum correlation, for exact rewards
    by_kind: dict = field(default_factory=dict)  # perturbation kind -> mean reward
    ms_per_item: float = 0.0  # reward time per completion, metric caches cleared first (as for fresh rollouts)

    @property
    def ok(self) -> bool:
        if self.required is None:
            return True
        return not math.isnan(self.pearson) and self.pearson >= self.required and self.spearman >= self.required


@dataclass
class CheckReport:
    checks: list[RewardCheck]
    pairs: int
    golds: int

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def table(self) -> str:
        def f(x: float) -> str:
            return "   n/a" if math.isnan(x) else f"{x:6.3f}"

        lines = [f"{'reward':<10} {'vs':<5} {'pearson':>7} {'spearman':>8} {'n':>6}  {'required':>8}  {'ms/item':>7}  status"]
        for c in self.checks:
            req = f"{c.required:.2f}" if c.required is not None else "-"
            status = "ok" if c.ok else "FAIL"
            if c.required is None:
                status = "info"
            lines.append(f"{c.reward:<10} {c.target:<5} {f(c.pearson):>7} {f(c.spearman):>8} {c.n:>6}  {req:>8}  "
                         f"{c.ms_per_item:>7.3f}  {status}")
        lines.append(f"{self.pairs} perturbed pairs from {self.golds} gold queries")
        return "\n".join(lines)

    def kinds_table(self) -> str:
        """Mean reward per perturbation kind (one column per reward)."""
        checks = {c.reward: c for c in self.checks}  # by_kind does not depend on the target
        kinds = sorted({k for c in checks.values() for k in c.by_kind})
        lines = [f"{'perturbation':<14}" + "".join(f"{name:>10}" for name in checks)]
        for kind in kinds:
            cells = "".join(
                f"{checks[n].by_kind[kind]:>10.3f}" if kind in checks[n].by_kind else f"{'-':>10}" for n in checks
            )
            lines.append(f"{kind:<14}{cells}")
        return "\n".join(lines)


def check_rewards(
    golds: list[str],
    rewards: dict[str, Callable] | None = None,
    *,
    seed: int = 0,
    bboxes: list[str] | None = None,
    progress: bool = True,
) -> CheckReport:
    """Score perturbed pairs with every reward and with the official metrics; correlate."""
    rewards = dict(rewards if rewards is not None else REWARDS)
    rng = random.Random(seed)
    preds: list[str] = []
    refs: list[str] = []
    boxes: list[str] = []
    kinds: list[str] = []
    for i, gold in enumerate(golds):
        for kind, pred in perturbations(gold, golds, rng):
            preds.append(pred)
            refs.append(gold)
            boxes.append(bboxes[i] if bboxes else "none")
            kinds.append(kind)
    official = [score(p, g) for p, g in tqdm(list(zip(preds, refs)), desc="official metric", disable=not progress)]
    # Completions in the chat shape TRL hands to reward functions.
    completions = [[{"role": "assistant", "content": p}] for p in preds]
    checks = []
    for name, func in rewards.items():
        get_scorer().clear_cache()  # rollouts are new text: time the rewards without warm caches
        started = time.perf_counter()
        values = func(completions, gold=refs, bbox=boxes)
        ms = (time.perf_counter() - started) * 1000 / max(len(completions), 1)
        targets = [EXACT_TARGETS.get(name, "oqs")] + (["oqs"] if name in EXACT_TARGETS else [])
        for target in targets:
            xs, ys = [], []
            for v, s in zip(values, official):
                if v is not None:
                    xs.append(float(v))
                    ys.append(getattr(s, target))
            by_kind: dict[str, list[float]] = {}
            for v, k in zip(values, kinds):
                if v is not None:
                    by_kind.setdefault(k, []).append(float(v))
            required = THRESHOLD if EXACT_TARGETS.get(name) == target else None
            checks.append(RewardCheck(
                reward=name, target=target, pearson=pearson(xs, ys), spearman=spearman(xs, ys), n=len(xs),
                required=required, by_kind={k: sum(v) / len(v) for k, v in sorted(by_kind.items())},
                ms_per_item=ms,
            ))
    return CheckReport(checks=checks, pairs=len(preds), golds=len(golds))
