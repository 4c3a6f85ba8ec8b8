"""Supervised fine-tuning: TRL ``SFTTrainer`` on the retrieval-augmented prompts.

The loss covers the completion (the gold query) only; the prompt is the one
``retrieval.build_prompt`` makes at inference. LoRA (PEFT) or full fine-tuning;
outputs in ``train.output_dir``:

* ``adapter/`` — the LoRA adapter (``adapter_config.json`` +
  ``adapter_model.safetensors``), loadable by PEFT, our ``transformers`` backend
  and ``vllm serve BASE --enable-lora --lora-modules geoql=adapter/``;
* ``merged/`` — the adapter folded into the base weights (or the fully
  fine-tuned model), a plain Hugging Face model directory;
* ``metrics.jsonl``, ``dev_eval.jsonl``, ``summary.json``.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path

from geoql.app.models import resolve_model
from geoql.core.files import atomic_dir, write_atomic
from geoql.eval.dataset import DatasetError, resolve_data_dir
from geoql.retrieval import IndexMissingError
from geoql.retrieval.artifacts import load_manifest
from geoql.training.config import ConfigError, DataConfig, LoraConfig, SFTRecipe, TrainConfig, to_dict
from geoql.training.data import load_or_build

# training.callbacks is imported where it is used: its callbacks subclass
# transformers.TrainerCallback, so importing it loads torch (seconds), and this
# module's helpers (recipe checks, output folders) must stay cheap to import.

ADAPTER_DIR = "adapter"
MERGED_DIR = "merged"
SUMMARY_FILE = "summary.json"


@dataclass
class SFTResult:
    output_dir: str
    steps: int
    first_loss: float | None
    last_loss: float | None
    adapter_dir: str | None
    merged_dir: str | None
    dev_eval: list = field(default_factory=list)
    data_stats: dict = field(default_factory=dict)
    train_runtime_s: float | None = None
    peak_gpu_memory_gb: float | None = None


# ---------------------------------------------------------------- shared helpers


def use_bf16(setting: bool | None) -> bool:
    """The recipe's bf16 flag, with ``None`` meaning "when the GPU supports it"."""
    import torch

    available = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if setting is None:
        return available
    if setting and not available:
        raise ConfigError("train.bf16 is true but no bf16-capable GPU is present; set train.bf16: false (or leave it empty) on CPU")
    return setting


def prepare_output_dir(path: str | os.PathLike, *, resume: bool, overwrite: bool) -> Path:
    """Refuse to mix two runs in one directory; a finished or started run is never clobbered silently.

    Only checks: the old run is removed by :func:`clear_output_dir` once every other
    check has passed, so a bad recipe with ``--overwrite`` does not cost the old run.
    """
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"train.output_dir {out} is a file; choose a directory")
    if _holds_run(out) and not (resume or overwrite):
        raise ConfigError(
            f"{out} already holds a training run; pass --resume to continue it, --overwrite to replace it, "
            "or set train.output_dir to a new directory"
        )
    return out


def _holds_run(out: Path) -> bool:
    return out.is_dir() and any(
        p.name.startswith("checkpoint-") or p.name in (SUMMARY_FILE, ADAPTER_DIR, MERGED_DIR) or p.name.startswith("seed")
        for p in out.iterdir()
    )


def clear_output_dir(out: Path, *, resume: bool, overwrite: bool) -> Path:
    if overwrite and not resume and _holds_run(out):
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    return out


def last_checkpoint(out: Path) -> str | None:
    checkpoints = sorted((p for p in out.glob("checkpoint-*") if p.is_dir()), key=lambda p: int(p.name.split("-")[-1]))
    return str(checkpoints[-1]) if checkpoints else None


def load_tokenizer(model: str):
    """The tokenizer of ``model``: a directory, hub id, registered name or ``.gguf`` file."""
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(resolve_model(model))
    except OSError as exc:
        raise ConfigError(
            f"cannot load the tokenizer of {model!r} ({str(exc).splitlines()[0]}); set model to a Hugging Face id "
            "you can download (huggingface-cli login for gated ones) or a local model directory"
        ) from None
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_model(model: str, bf16: bool, attn_implementation: str | None = None, *, full_fine_tuning: bool = False):
    """The base model in the dtype its training needs.

    LoRA: bf16 weights (frozen; PEFT keeps the adapter itself in fp32). Full
    fine-tuning: fp32 master weights, with bf16 autocast doing the matrix work.
    Pure bf16 weights would lose most updates: around a weight of 0.02 bf16
    steps by 2^-13 (1.2e-4), while an AdamW step at the recipe's lr of 1e-5
    moves it by about 1e-5, which rounds back to the old value.
    """
    import torch
    from transformers import AutoModelForCausalLM

    kwargs = {"dtype": torch.bfloat16 if bf16 and not full_fine_tuning else torch.float32}
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    return AutoModelForCausalLM.from_pretrained(resolve_model(model), **kwargs)


def peft_config(lora: LoraConfig):
    if not lora.enabled:
        return None
    from peft import LoraConfig as PeftLoraConfig

    return PeftLoraConfig(
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=list(lora.target_modules),
        task_type="CAUSAL_LM",
        bias="none",
    )


def check_lora_targets(model, lora: LoraConfig) -> None:
    """``lora.target_modules`` must name modules of the model (a model or its name/path)."""
    if not lora.enabled:
        return
    if isinstance(model, (str, os.PathLike)):
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM

        # Built on the meta device: module names without loading any weights.
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(resolve_model(model)))
    names = {name.rsplit(".", 1)[-1] for name, _ in model.named_modules()}
    missing = [t for t in lora.target_modules if t not in names]
    if missing:
        raise ConfigError(
            f"lora.target_modules {', '.join(missing)} do not exist in this model; choose from e.g. "
            + ", ".join(sorted(n for n in names if n.endswith("proj"))[:10])
        )


def completion_token_lengths(tokenizer, texts: list[str]) -> list[int]:
    # +1: the end-of-turn token the model must also produce.
    return [len(ids) + 1 for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]


def sequence_token_lengths(tokenizer, rows: list[dict]) -> list[int]:
    """Tokens of prompt + completion as the chat template renders them."""
    lengths = []
    for row in rows:
        ids = tokenizer.apply_chat_template(row["prompt"] + row["completion"], tokenize=True)
        if isinstance(ids, dict) or hasattr(ids, "keys"):
            ids = ids["input_ids"]
        lengths.append(len(ids))
    return lengths


def save_outputs(model, tokenizer, out: Path, *, lora_enabled: bool, export_merged: bool) -> tuple[str | None, str | None]:
    """Write ``adapter/`` (LoRA) and ``merged/``; return their paths."""
    adapter_dir = merged_dir = None
    if lora_enabled:
        def write_adapter(d: Path):
            model.save_pretrained(d, safe_serialization=True)
            tokenizer.save_pretrained(d)

        adapter_dir = str(atomic_dir(out / ADAPTER_DIR, write_adapter))
    if export_merged or not lora_enabled:
        def write_merged(d: Path):
            merged = model.merge_and_unload() if lora_enabled else model
            merged.save_pretrained(d, safe_serialization=True)
            tokenizer.save_pretrained(d)

        # merge_and_unload folds the adapter into the base in place, so it runs only
        # after the adapter is safely on disk; the caller must not train further.
        merged_dir = str(atomic_dir(out / MERGED_DIR, write_merged))
    return adapter_dir, merged_dir


def write_summary(out: Path, payload: dict) -> None:
    write_atomic(out / SUMMARY_FILE, json.dumps(payload, indent=2, sort_keys=True) + "\n")


def runtime_figures(log_history: list[dict]) -> dict:
    """Wall time of ``train()`` and peak GPU memory: the figures the recipes' comments quote."""
    import torch

    runtime = next((float(e["train_runtime"]) for e in reversed(log_history) if "train_runtime" in e), None)
    peak = round(torch.cuda.max_memory_allocated() / 2**30, 2) if torch.cuda.is_available() else None
    return {"train_runtime_s": runtime, "peak_gpu_memory_gb": peak}


def reset_peak_gpu_memory() -> None:
    """Start the peak count at this run: summary.json's figure is the run's, not the process's."""
    if _cuda():
        import torch

        torch.cuda.reset_peak_memory_stats()


def free_gpu_memory() -> None:
    """Return a finished run's memory, so the next model in this process starts clean."""
    gc.collect()
    if _cuda():
        import torch

        torch.cuda.empty_cache()


def losses(log_history: list[dict]) -> list[float]:
    return [float(e["loss"]) for e in log_history if "loss" in e]


def preflight_data(data: DataConfig) -> None:
    """Fail before any model loads when the dataset or the index is missing."""
    if data.dataset_dir:
        return
    try:
        resolve_data_dir(data.data_dir, download=False)
    except DatasetError as exc:
        raise ConfigError(f"OverpassNL not found: {exc} (or set data.data_dir in the recipe)") from None
    if not (data.k_tags or data.k_examples):
        return  # prompts without retrieval: no index needed
    try:
        load_manifest(data.index_dir)
    except IndexMissingError as exc:
        raise ConfigError(f"{exc} (or set data.index_dir in the recipe)") from None


def training_args_common(train: TrainConfig, out: Path, bf16: bool) -> dict:
    return dict(
        output_dir=str(out),
        learning_rate=train.learning_rate,
        num_train_epochs=train.num_train_epochs,
        max_steps=train.max_steps,
        per_device_train_batch_size=train.per_device_train_batch_size,
        gradient_accumulation_steps=train.gradient_accumulation_steps,
        # transformers 5 reads a float below 1 as a ratio of the total steps.
        warmup_steps=float(train.warmup_ratio),
        lr_scheduler_type=train.lr_scheduler_type,
        weight_decay=train.weight_decay,
        max_grad_norm=train.max_grad_norm,
        bf16=bf16,
        gradient_checkpointing=train.gradient_checkpointing,
        logging_steps=train.logging_steps,
        save_strategy="steps",
        save_steps=train.save_steps,
        save_total_limit=train.save_total_limit,
        seed=train.seed,
        data_seed=train.seed,
        report_to=list(train.report_to) or "none",
        use_cpu=not _cuda(),
    )


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def dev_evaluator(recipe, temperatures, out: Path):
    """The dev scorer of ``recipe.dev_eval`` at ``temperatures`` (``None`` when dev evaluation is off)."""
    if not recipe.dev_eval.enabled:
        return None
    from geoql.training.callbacks import make_dev_evaluator

    return make_dev_evaluator(recipe.dev_eval, temperatures, recipe.data, base_model=recipe.model, output_dir=out)


def trainer_callbacks(out: Path, evaluator, dev_cfg, *run_callbacks, extra=None) -> tuple[list, object]:
    """The callbacks of one training run, and its dev callback (``None`` without an evaluator).

    The order is: the JSONL log, ``run_callbacks``, dev evaluation, ``extra``.
    """
    from geoql.training.callbacks import DevEvalCallback, JsonlLogCallback

    callbacks = [JsonlLogCallback(out), *run_callbacks]
    dev_cb = None
    if evaluator is not None:
        dev_cb = DevEvalCallback(evaluator, dev_cfg, out)
        callbacks.append(dev_cb)
    callbacks += list(extra or [])
    return callbacks, dev_cb


def time_limit(train: TrainConfig) -> list:
    """The callback that enforces ``train.max_train_minutes`` (none without a limit)."""
    if not train.max_train_minutes:
        return []
    from geoql.training.callbacks import TimeLimitCallback

    return [TimeLimitCallback(train.max_train_minutes)]


def run_trainer(trainer, out: Path, *, resume: bool, progress: bool) -> None:
    """``trainer.train()``, from the last checkpoint in ``out`` when resuming; no progress bar unless asked."""
    if not progress:
        from transformers.trainer_callback import ProgressCallback

        trainer.remove_callback(ProgressCallback)
    trainer.train(resume_from_checkpoint=last_checkpoint(out) if resume else None)


# ---------------------------------------------------------------- SFT


def sft_rows(recipe: SFTRecipe, tokenizer, retrievers=None, *, progress: bool = True) -> tuple[list[dict], dict]:
    """The training rows and their statistics; every row must fit ``train.max_length`` untruncated."""
    rows, _, stats = load_or_build(recipe.data, retrievers, progress=progress)
    if not rows:
        raise ConfigError("the training set is empty; check data.limit and the dataset directory")
    longest = max(sequence_token_lengths(tokenizer, rows))
    if longest > recipe.train.max_length:
        raise ConfigError(
            f"the longest prompt + query is {longest} tokens but train.max_length is {recipe.train.max_length}; "
            f"raise train.max_length to >= {longest} (truncation would cut gold queries) or lower data.k_examples"
        )
    return rows, stats


def sft_trainer(recipe: SFTRecipe, rows: list[dict], tokenizer, model, out: Path, bf16: bool, callbacks=()):
    """The TRL trainer for conversational prompt/completion rows, loss on the completion only."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    dataset = Dataset.from_list([{"prompt": r["prompt"], "completion": r["completion"]} for r in rows])
    args = SFTConfig(
        **training_args_common(recipe.train, out, bf16),
        completion_only_loss=True,
        max_length=recipe.train.max_length,
        packing=False,
        dataset_num_proc=None,
    )
    return SFTTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config(recipe.lora),
        callbacks=list(callbacks),
    )


def run_sft(
    recipe: SFTRecipe,
    *,
    resume: bool = False,
    overwrite: bool = False,
    retrievers=None,
    progress: bool = True,
    extra_callbacks: list | None = None,
) -> SFTResult:
    """Train ``recipe`` end to end; every check that can fail runs before the model loads."""
    bf16 = use_bf16(recipe.train.bf16)
    preflight_data(recipe.data)
    out = prepare_output_dir(recipe.train.output_dir, resume=resume, overwrite=overwrite)
    tokenizer = load_tokenizer(recipe.model)
    rows, stats = sft_rows(recipe, tokenizer, retrievers, progress=progress)
    evaluator = dev_evaluator(recipe, recipe.dev_eval.temperatures, out)

    reset_peak_gpu_memory()
    model = load_model(recipe.model, bf16, recipe.attn_implementation, full_fine_tuning=not recipe.lora.enabled)
    check_lora_targets(model, recipe.lora)
    clear_output_dir(out, resume=resume, overwrite=overwrite)
    callbacks, dev_cb = trainer_callbacks(out, evaluator, recipe.dev_eval, *time_limit(recipe.train),
                                          extra=extra_callbacks)
    trainer = sft_trainer(recipe, rows, tokenizer, model, out, bf16, callbacks)
    run_trainer(trainer, out, resume=resume, progress=progress)
    adapter_dir, merged_dir = save_outputs(
        trainer.model, tokenizer, out, lora_enabled=recipe.lora.enabled, export_merged=recipe.export_merged
    )
    history = losses(trainer.state.log_history)
    result = SFTResult(
        output_dir=str(out),
        steps=trainer.state.global_step,
        first_loss=history[0] if history else None,
        last_loss=history[-1] if history else None,
        adapter_dir=adapter_dir,
        merged_dir=merged_dir,
        dev_eval=dev_cb.history if dev_cb else [],
        data_stats=stats,
        **runtime_figures(trainer.state.log_history),
    )
    write_summary(out, {"kind": "sft", "result": asdict(result), "recipe": to_dict(recipe)})
    return result


def result_lines(result: SFTResult) -> str:
    lines = [f"steps: {result.steps}", f"loss: {result.first_loss} -> {result.last_loss}",
             f"train time: {result.train_runtime_s} s, peak GPU memory: {result.peak_gpu_memory_gb} GB"]
    if result.adapter_dir:
        lines.append(f"adapter: {result.adapter_dir}")
    if result.merged_dir:
        lines.append(f"merged model: {result.merged_dir}")
    for entry in result.dev_eval:
        lines.append("dev @ step {step}: ".format(**entry) + json.dumps({k: v for k, v in entry.items() if k != "step"}))
    return "\n".join(lines)
