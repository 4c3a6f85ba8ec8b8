"""GRPO on top of the SFT model: TRL ``GRPOTrainer`` with separately logged rewards.

Guards against the failure modes of the published Qwen3-4B attempt:

* the completion cap is checked against the longest gold query in tokens and
  truncated completions are masked out of the loss (config + here);
* each reward is its own function, so ``rewards/<name>/mean`` shows which one
  moves; weights come from the recipe;
* dev OQS is measured every N steps both greedy and at the rollout
  temperature (callbacks.DevEvalCallback);
* the run stops when ``frac_reward_zero_std`` / ``reward_std`` show the
  learning signal has collapsed (callbacks.RewardSignalEarlyStopping);
* optionally only prompts where the starting model's sampled answers differ
  in quality are kept (:func:`pass_rate_filter`);
* one run per seed, summarised as mean and spread.
"""

from __future__ import annotations

import json
import os
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tqdm import tqdm

from geoql.app.backends import GenerationRequest, get_backend
from geoql.eval.metrics import oqs
from geoql.training.config import ConfigError, GRPORecipe, PassRateFilterConfig, to_dict
from geoql.training.data import load_or_build
from geoql.training.rewards import build_rewards, completion_text
from geoql.training.sft import (
    SUMMARY_FILE,
    check_lora_targets,
    clear_output_dir,
    completion_token_lengths,
    dev_evaluator,
    free_gpu_memory,
    load_model,
    load_tokenizer,
    peft_config,
    preflight_data,
    prepare_output_dir,
    reset_peak_gpu_memory,
    run_trainer,
    runtime_figures,
    save_outputs,
    time_limit,
    trainer_callbacks,
    training_args_common,
    use_bf16,
    write_summary,
)

# The columns of the GRPO dataset: TRL passes every column but the prompt to the
# reward functions (training/rewards.py reads gold and bbox).
COLUMNS = ("prompt", "gold", "bbox", "index", "nl")


@dataclass
class SeedRun:
    seed: int
    output_dir: str
    steps: int
    stopped_early: str | None
    reward_means: dict = field(default_factory=dict)  # reward name -> mean over the run's logs
    dev_eval: list = field(default_factory=list)
    adapter_dir: str | None = None
    merged_dir: str | None = None
    train_runtime_s: float | None = None
    peak_gpu_memory_gb: float | None = None


@dataclass
class GRPOResult:
    output_dir: str
    runs: list[SeedRun]
    prompts: int
    prompts_filtered_out: int = 0
    dev_summary: dict = field(default_factory=dict)  # metric -> {"mean", "std", "values"}


def check_completion_cap(tokenizer, golds: list[str], max_completion_length: int) -> int:
    """Longest gold query in tokens; a cap below it is a configuration error."""
    lengths = completion_token_lengths(tokenizer, golds)
    longest = max(lengths, default=0)
    if longest > max_completion_length:
        raise ConfigError(
            f"max_completion_length is {max_completion_length} but the longest gold query is {longest} tokens; "
            f"set max_completion_length >= {longest} (truncated queries never parse)"
        )
    return longest


# ---------------------------------------------------------------- pass-rate filter


def pass_rate_filter(
    rows: list[dict],
    sample,
    cfg: PassRateFilterConfig,
    cache_file: str | os.PathLike,
    *,
    cache_key: str = "",
    batch_size: int = 16,
    progress: bool = True,
) -> tuple[list[dict], list[dict]]:
    """Keep the rows where the starting model's sampled answers vary in quality.

    ``sample(list_of_messages, n) -> list[list[str]]`` draws ``n`` completions per
    prompt at the rollout temperature. Each prompt's OQS mean and std are appended
    to ``cache_file`` batch by batch, so an interrupted filter resumes where it
    stopped; ``cache_key`` (model and temperature) keeps scores of another model
    from being reused. Returns (kept rows, score records).
    """
    cache_path = Path(cache_file)
    known: dict[int, dict] = {}
    if cache_path.is_file():
        with open(cache_path, encoding="utf-8") as f:
            for line in f:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue  # a line cut by a crash
                if record.get("samples") == cfg.samples and record.get("key", "") == cache_key:
                    known[int(record["index"])] = record
    todo = [row for row in rows if int(row["index"]) not in known]
    cache_path.parent.mkdir(parents=True, exist_ok=True)
    with open(cache_path, "a", encoding="utf-8") as cache, \
            tqdm(total=len(todo), desc="pass-rate filter", disable=not progress or not todo) as bar:
        for start in range(0, len(todo), batch_size):
            chunk = todo[start:start + batch_size]
            outputs = sample([row["prompt"] for row in chunk], cfg.samples)
            for row, texts in zip(chunk, outputs):
                scores = [oqs(completion_text(t), row["gold"]) for t in texts] or [0.0]
                record = {
                    "index": int(row["index"]),
                    "key": cache_key,
                    "samples": cfg.samples,
                    "mean": statistics.fmean(scores),
                    "std": statistics.pstdev(scores),
                }
                known[record["index"]] = record
                cache.write(json.dumps(record) + "\n")
            cache.flush()
            bar.update(len(chunk))
    records = [known[int(row["index"])] for row in rows]
    kept = [
        row
        for row, r in zip(rows, records)
        if cfg.min_mean_oqs <= r["mean"] <= cfg.max_mean_oqs and r["std"] >= cfg.min_std
    ]
    return kept, records


def backend_sampler(backend, temperature: float, top_p: float, max_new_tokens: int, seed: int):
    """``sample(list_of_messages, n)`` through an app backend (batched, no grammar: like the rollouts)."""

    def sample(prompts, n):
        requests = [
            GenerationRequest(messages=messages, n=n, temperature=temperature, top_p=top_p,
                              max_new_tokens=max_new_tokens, seed=seed)
            for messages in prompts
        ]
        return [generation.texts for generation in backend.generate_batch(requests)]

    return sample


# ---------------------------------------------------------------- run


def _reward_means(log_history: list[dict]) -> dict:
    sums: dict[str, list[float]] = {}
    for entry in log_history:
        for key, value in entry.items():
            if key.startswith("rewards/") and key.endswith("/mean") and isinstance(value, (int, float)):
                sums.setdefault(key.split("/")[1], []).append(float(value))
    return {k: statistics.fmean(v) for k, v in sums.items()}


def _summarise(runs: list[SeedRun]) -> dict:
    """Mean and spread of each dev metric over seeds (the last evaluation of each run)."""
    finals: dict[str, list[float]] = {}
    for run in runs:
        if not run.dev_eval:
            continue
        for key, value in run.dev_eval[-1].items():
            if key != "step" and isinstance(value, (int, float)):
                finals.setdefault(key, []).append(float(value))
    return {
        k: {"mean": statistics.fmean(v), "std": statistics.stdev(v) if len(v) > 1 else 0.0, "values": v}
        for k, v in finals.items()
    }


def check_vllm(use_vllm: bool) -> None:
    """vLLM rollouts need vLLM installed: say so before anything loads."""
    if not use_vllm:
        return
    try:
        import vllm  # noqa: F401
    except ImportError:
        raise ConfigError("use_vllm is true but vLLM is not installed; pip install 'geoql[vllm]' or set use_vllm: false") from None


def prompt_rows(recipe: GRPORecipe, tokenizer, retrievers=None, *, progress: bool = True) -> tuple[list[dict], dict]:
    """The GRPO prompts and their statistics; every gold query must fit the completion cap."""
    _, rows, stats = load_or_build(recipe.data, retrievers, progress=progress)
    if not rows:
        raise ConfigError("the GRPO prompt set is empty; check data.limit and the dataset directory")
    check_completion_cap(tokenizer, [r["gold"] for r in rows], recipe.max_completion_length)
    return rows, stats


def filter_prompts(recipe: GRPORecipe, rows: list[dict], out: Path, *, progress: bool = True) -> list[dict]:
    """The prompts to train on: all of ``rows``, or those the pass-rate filter keeps."""
    if not recipe.pass_rate_filter.enabled:
        return rows
    # The starting policy as the rollouts will see it, batched through the app's backend.
    backend = get_backend("transformers", model=recipe.model, batch_size=recipe.dev_eval.batch_size)
    try:
        sample = backend_sampler(backend, recipe.temperature, recipe.top_p, recipe.max_completion_length,
                                 recipe.seeds[0])
        cache = recipe.pass_rate_filter.cache_file or (out / "pass_rates.jsonl")
        key = f"{Path(recipe.model).resolve() if Path(recipe.model).exists() else recipe.model}|t={recipe.temperature}"
        kept, _ = pass_rate_filter(rows, sample, recipe.pass_rate_filter, cache, cache_key=key,
                                   batch_size=recipe.dev_eval.batch_size, progress=progress)
    finally:
        backend.close()
        free_gpu_memory()
    if len(kept) < recipe.num_generations:
        raise ConfigError(
            f"the pass-rate filter kept {len(kept)} of {len(rows)} prompts; widen "
            "pass_rate_filter.min_mean_oqs / max_mean_oqs or disable it"
        )
    return kept


def prompt_dataset(rows: list[dict]):
    """The prompts as a ``datasets.Dataset`` of :data:`COLUMNS`."""
    from datasets import Dataset

    return Dataset.from_list([{k: r[k] for k in COLUMNS} for r in rows])


def grpo_args(recipe: GRPORecipe, seed: int, out: Path, bf16: bool, reward_weights: list[float]):
    """The TRL ``GRPOConfig`` of one seed's run."""
    from trl import GRPOConfig

    common = training_args_common(recipe.train, out, bf16)
    common["seed"] = common["data_seed"] = seed
    extra = {}
    if recipe.use_vllm:
        extra = dict(
            use_vllm=True,
            vllm_mode="colocate",
            vllm_gpu_memory_utilization=recipe.vllm_gpu_memory_utilization,
            vllm_max_model_length=recipe.vllm_max_model_length,
        )
    return GRPOConfig(
        **common,
        num_generations=recipe.num_generations,
        max_completion_length=recipe.max_completion_length,
        mask_truncated_completions=recipe.mask_truncated_completions,
        temperature=recipe.temperature,
        top_p=recipe.top_p,
        beta=recipe.beta,
        loss_type=recipe.loss_type,
        scale_rewards=recipe.scale_rewards,
        reward_weights=reward_weights,
        log_completions=False,
        **extra,
    )


def train_seed(
    recipe: GRPORecipe,
    seed: int,
    out: Path,
    *,
    dataset,
    tokenizer,
    rewards: tuple[list, list[float]],
    evaluator,
    bf16: bool,
    resume: bool,
    progress: bool,
    extra_callbacks: list | None,
) -> SeedRun:
    """One GRPO run with ``seed`` in ``out``: load the starting policy, train, save, summarise, free the GPU."""
    from trl import GRPOTrainer

    # Imported here: training.callbacks loads torch (see training/sft.py).
    from geoql.training.callbacks import RewardSignalEarlyStopping

    reward_funcs, weights = rewards
    reset_peak_gpu_memory()
    model = load_model(recipe.model, bf16, recipe.attn_implementation, full_fine_tuning=not recipe.lora.enabled)
    args = grpo_args(recipe, seed, out, bf16, weights)
    early = RewardSignalEarlyStopping(recipe.early_stop, out)
    callbacks, dev_cb = trainer_callbacks(out, evaluator, recipe.dev_eval, early, *time_limit(recipe.train),
                                          extra=extra_callbacks)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward_funcs,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config(recipe.lora),
        callbacks=callbacks,
    )
    run_trainer(trainer, out, resume=resume, progress=progress)
    adapter_dir, merged_dir = save_outputs(
        trainer.model, tokenizer, out, lora_enabled=recipe.lora.enabled, export_merged=True
    )
    run = SeedRun(
        seed=seed,
        output_dir=str(out),
        steps=trainer.state.global_step,
        stopped_early=early.reason,
        reward_means=_reward_means(trainer.state.log_history),
        dev_eval=dev_cb.history if dev_cb else [],
        adapter_dir=adapter_dir,
        merged_dir=merged_dir,
        **runtime_figures(trainer.state.log_history),
    )
    write_summary(out, {"kind": "grpo-seed", "result": asdict(run)})
    del trainer, model
    free_gpu_memory()
    return run


def finished_run(out: Path) -> SeedRun:
    """The result of a seed's run that an earlier call completed (its ``summary.json``)."""
    return SeedRun(**json.loads((out / SUMMARY_FILE).read_text())["result"])


def run_grpo(
    recipe: GRPORecipe,
    *,
    resume: bool = False,
    overwrite: bool = False,
    retrievers=None,
    progress: bool = True,
    element_ids=None,
    extra_callbacks: list | None = None,
) -> GRPOResult:
    """One GRPO run per seed in ``recipe.seeds``; every check runs before the first model loads."""
    bf16 = use_bf16(recipe.train.bf16)
    check_vllm(recipe.use_vllm)
    preflight_data(recipe.data)
    out = prepare_output_dir(recipe.train.output_dir, resume=resume, overwrite=overwrite)
    tokenizer = load_tokenizer(recipe.model)
    rows, stats = prompt_rows(recipe, tokenizer, retrievers, progress=progress)
    rewards = build_rewards(
        recipe.rewards,
        overpass_url=recipe.overpass_url,
        overpass_cache_dir=recipe.overpass_cache_dir,
        nominatim_url=recipe.nominatim_url,
        element_ids=element_ids,
    )
    evaluator = dev_evaluator(recipe, sorted(set(recipe.dev_eval.temperatures) | {0.0, recipe.temperature}), out)
    check_lora_targets(recipe.model, recipe.lora)
    clear_output_dir(out, resume=resume, overwrite=overwrite)

    kept = filter_prompts(recipe, rows, out, progress=progress)
    dataset = prompt_dataset(kept)
    runs: list[SeedRun] = []
    for seed in recipe.seeds:
        seed_out = out / f"seed{seed}"
        seed_out.mkdir(parents=True, exist_ok=True)
        if resume and (seed_out / SUMMARY_FILE).is_file():
            runs.append(finished_run(seed_out))
            continue
        runs.append(train_seed(recipe, seed, seed_out, dataset=dataset, tokenizer=tokenizer, rewards=rewards,
                               evaluator=evaluator, bf16=bf16, resume=resume, progress=progress,
                               extra_callbacks=extra_callbacks))

    result = GRPOResult(output_dir=str(out), runs=runs, prompts=len(kept), prompts_filtered_out=len(rows) - len(kept),
                        dev_summary=_summarise(runs))
    write_summary(out, {"kind": "grpo", "result": asdict(result), "recipe": to_dict(recipe), "data_stats": stats})
    return result


def result_lines(result: GRPOResult) -> str:
    lines = [f"prompts: {result.prompts} (filtered out: {result.prompts_filtered_out})"]
    for run in result.runs:
        means = ", ".join(f"{k}={v:.3f}" for k, v in sorted(run.reward_means.items()))
        stop = f", stopped early: {run.stopped_early}" if run.stopped_early else ""
        lines.append(f"seed {run.seed}: {run.steps} steps{stop}; reward means {means}; "
                     f"{run.train_runtime_s} s, peak GPU memory {run.peak_gpu_memory_gb} GB")
    for metric, s in sorted(result.dev_summary.items()):
        if metric == "dev/n":
            continue
        lines.append(f"{metric}: {s['mean']:.2f} ± {s['std']:.2f} over {len(s['values'])} seed(s)")
    return "\n".join(lines)
