"""Trainer callbacks: stop when GRPO's learning signal collapses, score dev, keep a log.

* :class:`RewardSignalEarlyStopping` — GRPO learns only from prompt groups whose
  rewards differ. When ``frac_reward_zero_std`` (share of groups with identical
  rewards) stays high or ``reward_std`` stays near zero for ``patience`` logging
  steps, further steps only add noise (the published Qwen3-4B run went on for 300
  steps after that point); the callback stops the run and writes the reason.
* :class:`DevEvalCallback` — exact dev OQS of the model being trained, decoded
  through the app's compile path (greedy and, for GRPO, at the rollout
  temperature too, to see the gap the published run ignored).
* :class:`JsonlLogCallback` — every log entry as one JSON line in
  ``<output_dir>/metrics.jsonl`` (survives a crash; plots need no TensorBoard).
* :class:`StepTimeCallback` — wall time of every optimizer step, GPU work
  included (benchmarks/bench_train_shape.py).
"""

from __future__ import annotations

import gc
import json
import math
import os
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from tqdm import tqdm
from transformers import TrainerCallback

from geoql.app.backends import BackendError, get_backend
from geoql.app.backends.base import Backend
from geoql.app.compile import Compiler
from geoql.core.files import write_atomic
from geoql.eval.dataset import load_split
from geoql.eval.metrics import corpus
from geoql.training.config import DevEvalConfig, EarlyStopConfig

STOP_FILE = "early_stop.json"
METRICS_FILE = "metrics.jsonl"


def write_json_atomic(path: str | os.PathLike, payload) -> None:
    """Write ``payload`` as indented JSON through a temporary file and a rename (readers never see half a file)."""
    write_atomic(path, json.dumps(payload, indent=2, sort_keys=True) + "\n")


def _lookup(logs: dict, name: str):
    # TRL logs train metrics bare and eval metrics with an "eval_" prefix.
    value = logs.get(name)
    if value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


class RewardSignalEarlyStopping(TrainerCallback):
    """Stop GRPO when the reward variance across each group has collapsed.

    >>> from transformers import TrainerControl, TrainerState
    >>> cb = RewardSignalEarlyStopping(EarlyStopConfig(patience=2))
    >>> state, control = TrainerState(), TrainerControl()
    >>> for step in (1, 2):
    ...     state.global_step = step
    ...     _ = cb.on_log(None, state, control, logs={"frac_reward_zero_std": 1.0, "reward_std": 0.0})
    >>> control.should_training_stop, cb.stopped_at
    (True, 2)
    """

    def __init__(self, config: EarlyStopConfig, output_dir: str | os.PathLike | None = None):
        self.config = config
        self.output_dir = Path(output_dir) if output_dir else None
        self.bad_logs = 0
        self.stopped_at: int | None = None
        self.reason: str | None = None

    def check(self, logs: dict) -> str | None:
        """The reason this log entry shows a collapsed signal, or ``None``."""
        frac = _lookup(logs, "frac_reward_zero_std")
        std = _lookup(logs, "reward_std")
        if frac is not None and frac >= self.config.max_frac_reward_zero_std:
            return f"frac_reward_zero_std {frac:.3f} >= {self.config.max_frac_reward_zero_std}"
        if std is not None and std <= self.config.min_reward_std:
            return f"reward_std {std:.4f} <= {self.config.min_reward_std}"
        return None

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not self.config.enabled or not logs or self.stopped_at is not None:
            return control
        if "frac_reward_zero_std" not in logs and "reward_std" not in logs:
            return control  # an eval or dev log line, not a training step
        reason = self.check(logs)
        self.bad_logs = self.bad_logs + 1 if reason else 0
        if reason and self.bad_logs >= self.config.patience and state.global_step >= self.config.min_steps:
            self.stopped_at = state.global_step
            self.reason = f"{reason} for {self.bad_logs} consecutive logs"
            control.should_training_stop = True
            if self.output_dir is not None:
                write_json_atomic(self.output_dir / STOP_FILE, {"step": state.global_step, "reason": self.reason})
        return control


class TimeLimitCallback(TrainerCallback):
    """Ends training after ``minutes`` of wall time (checked after every optimizer step).

    The trainer then finishes as it does at ``max_steps``: the final save, the dev
    evaluation of the last model and the export all still run.
    """

    def __init__(self, minutes: float):
        self.seconds = 60.0 * minutes
        self.started: float | None = None
        self.stopped_at: int | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        self.started = time.monotonic()
        return control

    def on_step_end(self, args, state, control, **kwargs):
        if self.started is not None and time.monotonic() - self.started >= self.seconds:
            self.stopped_at = state.global_step
            control.should_training_stop = True
            control.should_save = True
        return control


class JsonlLogCallback(TrainerCallback):
    """Append each log entry (with its step) to ``<output_dir>/metrics.jsonl``."""

    def __init__(self, output_dir: str | os.PathLike):
        self.path = Path(output_dir) / METRICS_FILE

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and state.is_world_process_zero:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            entry = {"step": state.global_step}
            for k, v in logs.items():
                if isinstance(v, (int, float, str, bool)) or v is None:
                    entry[k] = v
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")
        return control


class StepTimeCallback(TrainerCallback):
    """Seconds of every optimizer step, from its first micro-batch to after the update.

    The clock is read after a CUDA synchronize: kernels are queued asynchronously,
    so an unsynchronised clock would time the launches, not the work. A GRPO step's
    time includes its rollouts (TRL generates inside the step).
    """

    def __init__(self):
        self.seconds: list[float] = []
        self._start: float | None = None

    @staticmethod
    def _now() -> float:
        import torch

        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return time.perf_counter()

    def on_step_begin(self, args, state, control, **kwargs):
        self._start = self._now()

    def on_step_end(self, args, state, control, **kwargs):
        if self._start is not None:
            self.seconds.append(self._now() - self._start)
            self._start = None

    def steady(self) -> list[float]:
        """Step times without the first step (which pays for warm-up and allocation)."""
        return self.seconds[1:] or self.seconds

    def steady_median(self) -> float | None:
        return statistics.median(self.steady()) if self.seconds else None

    def steady_mean(self) -> float | None:
        """What a long run's steps cost on average (its total time / steps): batches differ in length."""
        return statistics.fmean(self.steady()) if self.seconds else None


def read_metrics(output_dir: str | os.PathLike) -> list[dict]:
    path = Path(output_dir) / METRICS_FILE
    if not path.is_file():
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def dev_subset(examples: list, size: int | None, seed: int) -> list:
    """A fixed seeded subset of dev (the same one for every checkpoint and run)."""
    if size is None or size >= len(examples):
        return list(examples)
    picked = sorted(random.Random(seed).sample(range(len(examples)), size))
    return [examples[i] for i in picked]


class DevEvalCallback(TrainerCallback):
    """Score dev with the exact OQS at checkpoint saves or every ``every_steps`` steps.

    ``evaluate(model, tokenizer, step) -> dict`` does the decoding and scoring
    (:func:`make_dev_evaluator`); results go into the trainer's log history
    (``dev/oqs@greedy``, ``dev/oqs@t0.7``, ...) and ``<output_dir>/dev_eval.jsonl``.
    """

    def __init__(self, evaluate, config: DevEvalConfig, output_dir: str | os.PathLike):
        self.evaluate = evaluate
        self.config = config
        self.path = Path(output_dir) / "dev_eval.jsonl"
        self.history: list[dict] = []
        self._last_step = -1

    def _run(self, state, model, tokenizer):
        if state.global_step == self._last_step or not state.is_world_process_zero:
            return
        self._last_step = state.global_step
        was_training = model.training
        model.eval()
        try:
            result = self.evaluate(model, tokenizer, state.global_step)
        finally:
            if was_training:
                model.train()
        entry = {"step": state.global_step, **result}
        self.history.append(entry)
        state.log_history.append(dict(entry))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    def on_train_begin(self, args, state, control, model=None, processing_class=None, **kwargs):
        # The starting point of a fresh run, so dev_eval.jsonl shows the change training made.
        if self.config.enabled and self.config.at_start and state.global_step == 0 and model is not None:
            self._run(state, model, processing_class)
        return control

    def on_step_end(self, args, state, control, model=None, processing_class=None, **kwargs):
        every = self.config.every_steps
        if self.config.enabled and every and state.global_step % every == 0 and model is not None:
            self._run(state, model, processing_class)
        return control

    def on_save(self, args, state, control, model=None, processing_class=None, **kwargs):
        if self.config.enabled and not self.config.every_steps and model is not None:
            self._run(state, model, processing_class)
        return control

    def on_train_end(self, args, state, control, model=None, processing_class=None, **kwargs):
        # The final model is always scored, whatever the step count.
        if self.config.enabled and model is not None:
            self._run(state, model, processing_class)
        return control


def temperature_label(t: float) -> str:
    """``greedy`` for 0, else ``t0.7``.

    >>> temperature_label(0.0), temperature_label(0.7)
    ('greedy', 't0.7')
    """
    return "greedy" if t == 0 else f"t{t:g}"


def make_dev_evaluator(cfg: DevEvalConfig, temperatures, data_cfg, *, base_model: str, output_dir):
    """``evaluate(model, tokenizer, step) -> {"dev/oqs@greedy": ..., ...}`` on a fixed dev subset.

    The model is saved the way the run will export it (a LoRA adapter, or the
    full weights), loaded back by the app's ``transformers`` backend and driven
    by ``app.Compiler.compile_batch`` — the compile path: the same retrieval and
    ``build_prompt``, grammar-constrained decoding as configured, extraction,
    validation and choice — before the exact metric in ``eval.metrics`` scores
    the queries. So the figure is what ``compile()`` would score with these weights.
    """
    examples = dev_subset(load_split("dev", data_cfg.data_dir), cfg.subset_size, cfg.seed)
    temps = sorted(set(float(t) for t in temperatures))
    slot = SwappableBackend()
    state: dict = {}

    def compiler():
        if "compiler" not in state:
            # One compiler per run: it keeps the retrieval index loaded; only the weights change.
            state["compiler"] = Compiler(slot, k_tags=data_cfg.k_tags, k_examples=data_cfg.k_examples,
                                         index_dir=data_cfg.index_dir, max_new_tokens=cfg.max_new_tokens,
                                         seed=cfg.seed, grammar=cfg.grammar, n=1)
        return state["compiler"]

    def evaluate(model, tokenizer, step) -> dict:
        result: dict = {"dev/n": len(examples)}
        with loaded_backend(model, tokenizer, base_model, output_dir, batch_size=cfg.batch_size) as backend:
            slot.inner = backend
            try:
                for t in temps:
                    label = temperature_label(t)
                    comps = []
                    for start in tqdm(range(0, len(examples), cfg.batch_size), leave=False, unit="batch",
                                      desc=f"dev @ step {step}, {label}"):
                        chunk = [ex.nl for ex in examples[start:start + cfg.batch_size]]
                        comps += compiler().compile_batch(chunk, batch_size=cfg.batch_size, temperature=t)
                    scores = corpus([c.query for c in comps], [ex.query for ex in examples])
                    for metric in ("oqs", "kvs", "tree", "chrf", "em"):
                        result[f"dev/{metric}@{label}"] = round(scores[metric], 4)
                    result[f"dev/valid@{label}"] = round(100 * sum(c.valid for c in comps) / max(len(comps), 1), 2)
                    failed = [c for c in comps if not c.query and c.errors]
                    if failed:
                        # Reported, not raised: a broken evaluation must not cost the training run.
                        result[f"dev/failed@{label}"] = len(failed)
                        result["dev/first_error"] = failed[0].errors[0]
            finally:
                slot.inner = None
        return result

    return evaluate


class SwappableBackend(Backend):
    """A backend slot for ``app.Compiler``: the weights change at every evaluation, the compiler stays."""

    name = "transformers"
    supports_grammar = True
    needs_prompt = True

    def __init__(self):
        self.inner = None

    def _backend(self):
        if self.inner is None:
            raise BackendError("no model loaded for dev evaluation")
        return self.inner

    def generate(self, request):
        return self._backend().generate(request)

    def generate_batch(self, requests):
        return self._backend().generate_batch(requests)

    def close(self) -> None:
        self.inner = None


class loaded_backend:
    """Context manager: the model in training, saved and loaded by the transformers backend.

    PEFT models are saved as an adapter on top of ``base_model``; other models as
    full weights. The copy lives in a hidden folder of the run and is removed after.
    """

    def __init__(self, model, tokenizer, base_model: str, output_dir, *, batch_size: int = 8):
        self.model, self.tokenizer, self.base_model = model, tokenizer, base_model
        self.output_dir = Path(output_dir)
        self.batch_size = batch_size
        self.backend = None
        self.tmp: Path | None = None

    def __enter__(self):
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix=".dev-eval-model.", dir=self.output_dir))
        self.model.save_pretrained(self.tmp, safe_serialization=True)
        if self.tokenizer is not None:
            self.tokenizer.save_pretrained(self.tmp)
        if hasattr(self.model, "peft_config"):
            self.backend = get_backend("transformers", model=self.base_model, adapter=str(self.tmp),
                                       batch_size=self.batch_size)
        else:
            self.backend = get_backend("transformers", model=str(self.tmp), batch_size=self.batch_size)
        return self.backend

    def __exit__(self, *exc):
        if self.backend is not None:
            self.backend.close()
            self.backend = None
        gc.collect()
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except ImportError:
            pass
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
        return False
