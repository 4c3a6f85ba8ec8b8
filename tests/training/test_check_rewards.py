"""check-rewards: exact rewards correlate >= 0.99 with their official metric; a miswired reward fails."""

from __future__ import annotations

import math
import random

import pytest

from geoql.training.check_rewards import THRESHOLD, check_rewards, pearson, perturbations, spearman
from geoql.training.rewards import REWARDS


@pytest.fixture(scope="module")
def golds():
    from geoql.eval.dataset import load_split

    dev = load_split("dev")
    return [dev[i].query for i in sorted(random.Random(1).sample(range(len(dev)), 40))]


def test_exact_rewards_pass(golds):
    rewards = {k: v for k, v in REWARDS.items() if k != "execution"}
    report = check_rewards(golds, rewards, progress=False)
    assert report.ok, report.table()
    exact = [c for c in report.checks if c.required is not None]
    assert {c.reward for c in exact} == {"kvs", "tree", "chrf"}
    for c in exact:
        assert c.pearson >= THRESHOLD and c.spearman >= THRESHOLD and c.n == report.pairs
    # Perturbations really move the scores: identity is perfect, a truncated query is not.
    kvs = next(c for c in exact if c.reward == "kvs")
    assert kvs.by_kind["identity"] == 1.0 and kvs.by_kind["empty"] < 0.5
    assert "FAIL" not in report.table()


def test_a_miswired_reward_is_caught(golds):
    from geoql.eval.metrics import chrf

    def chrf_swapped(completions, gold=None, **_):
        # A classic wiring bug: reference and hypothesis swapped, chat message not unpacked.
        return [chrf(g, str(c)) for c, g in zip(completions, gold)]

    report = check_rewards(golds, {"chrf": chrf_swapped}, progress=False)
    assert not report.ok
    assert "FAIL" in report.table()


def test_perturbations_are_deterministic(golds):
    a = perturbations(golds[0], golds, random.Random(3))
    b = perturbations(golds[0], golds, random.Random(3))
    assert a == b and a[0] == ("identity", golds[0])
    assert len({q for _, q in a}) > 5


def test_correlations():
    assert pearson([1, 2, 3, 4], [2, 4, 6, 8]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [1, 8, 27, 64]) == pytest.approx(1.0)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(pearson([0.5] * 4, [1, 2, 3, 4]))


def test_cli_check_rewards(capsys):
    from geoql.app.cli import main

    assert main(["train", "check-rewards", "-n", "20"]) == 0
    out = capsys.readouterr().out
    assert "kvs        kvs" in out and "perturbed pairs from 20 gold queries" in out
    assert main(["train", "check-rewards", "-n", "1"]) == 2
