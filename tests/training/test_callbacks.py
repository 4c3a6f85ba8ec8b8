"""Callbacks: early stopping on a collapsed reward signal, the JSONL log, the dev subset."""

from __future__ import annotations

import json

import pytest
from transformers import TrainerControl, TrainerState

from geoql.training.callbacks import (
    STOP_FILE,
    DevEvalCallback,
    JsonlLogCallback,
    RewardSignalEarlyStopping,
    TimeLimitCallback,
    dev_subset,
    read_metrics,
    temperature_label,
)
from geoql.training.config import DevEvalConfig, EarlyStopConfig


def _feed(cb, entries, start=1):
    state, control = TrainerState(), TrainerControl()
    for step, logs in enumerate(entries, start=start):
        state.global_step = step
        cb.on_log(None, state, control, logs=logs)
        if control.should_training_stop:
            break
    return state, control


HEALTHY = {"frac_reward_zero_std": 0.1, "reward_std": 0.3}
FLAT = {"frac_reward_zero_std": 1.0, "reward_std": 0.0}


def test_stops_after_patience_and_records_reason(tmp_path):
    cb = RewardSignalEarlyStopping(EarlyStopConfig(patience=3), tmp_path)
    state, control = _feed(cb, [HEALTHY, FLAT, FLAT, HEALTHY, FLAT, FLAT, FLAT, HEALTHY])
    assert control.should_training_stop and cb.stopped_at == 7
    saved = json.loads((tmp_path / STOP_FILE).read_text())
    assert saved["step"] == 7 and "frac_reward_zero_std" in saved["reason"]


@pytest.mark.parametrize(
    "logs, stops",
    [
        ({"frac_reward_zero_std": 0.6, "reward_std": 0.5}, True),  # most groups without signal
        ({"frac_reward_zero_std": 0.0, "reward_std": 0.001}, True),  # rewards barely differ
        ({"frac_reward_zero_std": 0.2, "reward_std": 0.2}, False),
        ({"loss": 0.1}, False),  # not a GRPO training log
        ({"frac_reward_zero_std": float("nan"), "reward_std": 0.2}, False),
    ],
)
def test_thresholds(logs, stops):
    cb = RewardSignalEarlyStopping(EarlyStopConfig(patience=2, max_frac_reward_zero_std=0.5, min_reward_std=0.01))
    _, control = _feed(cb, [logs] * 4)
    assert control.should_training_stop is stops


def test_min_steps_and_disabled():
    cb = RewardSignalEarlyStopping(EarlyStopConfig(patience=1, min_steps=5))
    state, control = _feed(cb, [FLAT] * 4)
    assert not control.should_training_stop
    _, control = _feed(cb, [FLAT], start=5)
    assert control.should_training_stop
    off = RewardSignalEarlyStopping(EarlyStopConfig(enabled=False, patience=1))
    assert not _feed(off, [FLAT] * 5)[1].should_training_stop


def test_jsonl_log_appends(tmp_path):
    cb = JsonlLogCallback(tmp_path)
    state, control = TrainerState(), TrainerControl()
    for step in (1, 2):
        state.global_step = step
        cb.on_log(None, state, control, logs={"loss": 1.0 / step, "rewards/kvs_reward/mean": 0.5, "obj": object()})
    rows = read_metrics(tmp_path)
    assert [r["step"] for r in rows] == [1, 2] and rows[1]["loss"] == 0.5 and "obj" not in rows[0]


def test_dev_subset_is_fixed_and_seeded():
    items = list(range(100))
    assert dev_subset(items, 10, 0) == dev_subset(items, 10, 0)
    assert dev_subset(items, 10, 0) != dev_subset(items, 10, 1)
    assert dev_subset(items, None, 0) == items and dev_subset(items, 500, 0) == items


def test_dev_eval_callback_schedule(tmp_path):
    import torch

    calls = []
    cb = DevEvalCallback(lambda m, t, step: calls.append(step) or {"dev/oqs@greedy": 50.0},
                         DevEvalConfig(every_steps=2), tmp_path)
    state, control = TrainerState(), TrainerControl()
    model = torch.nn.Linear(2, 2)  # any module: the callback switches it to eval and back
    for step in range(1, 6):
        state.global_step = step
        cb.on_step_end(None, state, control, model=model)
    cb.on_train_end(None, state, control, model=model)
    assert calls == [2, 4, 5] and model.training
    assert [json.loads(l)["step"] for l in (tmp_path / "dev_eval.jsonl").read_text().splitlines()] == [2, 4, 5]
    assert any(e.get("dev/oqs@greedy") == 50.0 for e in state.log_history)


def test_dev_eval_at_start_scores_step_zero_once(tmp_path):
    import torch

    calls = []
    cb = DevEvalCallback(lambda m, t, step: calls.append(step) or {"dev/oqs@greedy": 1.0},
                         DevEvalConfig(at_start=True), tmp_path)
    state, control = TrainerState(), TrainerControl()
    model = torch.nn.Linear(2, 2)
    cb.on_train_begin(None, state, control, model=model)
    state.global_step = 3
    cb.on_train_end(None, state, control, model=model)
    assert calls == [0, 3]
    # Off by default; a resumed run (global_step > 0 at the start) is not re-scored.
    calls.clear()
    DevEvalCallback(lambda m, t, s: calls.append(s) or {}, DevEvalConfig(), tmp_path).on_train_begin(
        None, TrainerState(), control, model=model)
    resumed = TrainerState()
    resumed.global_step = 7
    DevEvalCallback(lambda m, t, s: calls.append(s) or {}, DevEvalConfig(at_start=True), tmp_path).on_train_begin(
        None, resumed, control, model=model)
    assert calls == []


def test_time_limit_stops_and_saves_after_the_step_that_crosses_it():
    cb = TimeLimitCallback(minutes=1.0)
    state, control = TrainerState(), TrainerControl()
    cb.on_train_begin(None, state, control)
    state.global_step = 1
    cb.on_step_end(None, state, control)
    assert not control.should_training_stop
    cb.started -= 61.0  # a minute and a second later
    state.global_step = 2
    cb.on_step_end(None, state, control)
    assert control.should_training_stop and control.should_save and cb.stopped_at == 2


def test_temperature_label():
    assert temperature_label(0) == "greedy" and temperature_label(1.0) == "t1"
