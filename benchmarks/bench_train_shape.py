"""Step time and GPU memory of the training recipes at the production model's shape.

Training cost depends on the architecture and the sequence lengths, not on the
weights, so this needs no download: a randomly initialised Qwen3ForCausalLM with
Qwen3-4B-Instruct-2507's architecture (``app.tiny_model.QWEN3_4B_SHAPE``, 4.02 B
parameters, Qwen's 151,936-row vocabulary) is trained for a few steps through
``run_sft`` / ``run_grpo`` with the recipes' settings (LoRA r64, bf16, gradient
checkpointing, batch sizes, completion length). It prints the mean step time (after the first),
tokens per second, peak GPU memory and what the full recipe would take at that speed.

    geoql train data --out DATA --config training/configs/qwen3-4b-sft-lora-r64.yaml --set limit=512
    python benchmarks/bench_train_shape.py --dataset DATA --work /tmp/shape [--json OUT]

Caveats, printed with the figures: token counts come from a byte-level BPE trained
here on the prompts (``--vocab``), not Qwen's tokenizer, so tokens/s carries over
and per-example lengths are approximate; GRPO rollouts use transformers'
``generate`` (the recipe uses vLLM, which is faster), and a random policy writes
until ``max_completion_length``, the worst case.

CPU check of the plumbing (seconds): ``--shape tiny --vocab 3000 --set train.bf16=false
--set train.gradient_checkpointing=false --set train.per_device_train_batch_size=2
--grpo-set num_generations=2 --grpo-set max_completion_length=384``.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from geoql.app.tiny_model import QWEN3_4B_SHAPE, TINY_SHAPE, build_random_model, train_tokenizer  # noqa: E402
from geoql.eval.dataset import SPLIT_SIZES  # noqa: E402
from geoql.training.callbacks import StepTimeCallback, read_metrics  # noqa: E402
from geoql.training.config import default_configs_dir, load_recipe  # noqa: E402
from geoql.training.data import read_dataset  # noqa: E402
from geoql.training.grpo import run_grpo  # noqa: E402
from geoql.training.sft import free_gpu_memory, run_sft, sequence_token_lengths  # noqa: E402

SHAPES = {"qwen3-4b": QWEN3_4B_SHAPE, "tiny": TINY_SHAPE}
MARKER = ".bench_train_shape"


def _texts(rows: list[dict]) -> list[str]:
    texts = []
    for row in rows:
        texts += [m["content"] for m in row["prompt"]] + [m["content"] for m in row.get("completion", [])]
    return texts


def bench_sft(args, model_dir: Path, tokenizer, sft_rows: list[dict], data_stats: dict) -> dict:
    out = Path(args.work) / "sft"
    recipe = load_recipe("sft", args.sft_recipe, [
        f"model={model_dir}", f"train.output_dir={out}", f"train.max_steps={args.sft_steps}",
        f"data.dataset_dir={args.dataset}", "dev_eval.enabled=false", "export_merged=false",
        "train.logging_steps=1", "train.save_steps=1000000", *args.set,
    ])
    timer = StepTimeCallback()
    result = run_sft(recipe, overwrite=True, extra_callbacks=[timer])
    t = recipe.train
    per_step = t.per_device_train_batch_size * t.gradient_accumulation_steps
    lengths = sequence_token_lengths(tokenizer, sft_rows)
    mean_len = sum(lengths) / len(lengths)
    step_s = timer.steady_mean()
    # The written dataset may be a subset (data.limit); scale its row count to the whole split.
    limit = (data_stats.get("config") or {}).get("limit")
    main_rows = sum(1 for r in sft_rows if r.get("kind", "main") == "main")
    full_rows = round(len(sft_rows) * SPLIT_SIZES["train"] / main_rows) if limit else len(sft_rows)
    full_steps = math.ceil(full_rows / per_step) * int(math.ceil(t.num_train_epochs))
    return {
        "recipe": Path(args.sft_recipe).name, "steps": result.steps, "step_seconds": [round(s, 3) for s in timer.seconds],
        "mean_step_s": round(step_s, 3), "median_step_s": round(timer.steady_median(), 3), "sequences_per_step": per_step,
        "mean_tokens_per_sequence": round(mean_len, 1), "max_tokens_per_sequence": max(lengths),
        "tokens_per_s": round(per_step * mean_len / step_s), "peak_gpu_memory_gb": result.peak_gpu_memory_gb,
        "first_loss": result.first_loss, "last_loss": result.last_loss,
        "full_rows": full_rows, "full_steps": full_steps, "full_run_min": round(full_steps * step_s / 60, 1),
    }


def bench_grpo(args, model_dir: Path) -> dict:
    out = Path(args.work) / "grpo"
    recipe = load_recipe("grpo", args.grpo_recipe, [
        f"model={model_dir}", f"train.output_dir={out}", f"train.max_steps={args.grpo_steps}",
        f"data.dataset_dir={args.dataset}", "use_vllm=false", "seeds=[0]", "dev_eval.enabled=false",
        "early_stop.enabled=false", "train.logging_steps=1", "train.save_steps=1000000", *args.set, *args.grpo_set,
    ])
    full_steps = args.grpo_recipe_steps or load_recipe("grpo", args.grpo_recipe).train.max_steps
    timer = StepTimeCallback()
    result = run_grpo(recipe, overwrite=True, extra_callbacks=[timer])
    run = result.runs[0]
    logs = read_metrics(Path(run.output_dir))
    lengths = [e["completions/mean_length"] for e in logs if "completions/mean_length" in e]
    step_s = timer.steady_mean()
    t = recipe.train
    return {
        "recipe": Path(args.grpo_recipe).name, "steps": run.steps, "step_seconds": [round(s, 3) for s in timer.seconds],
        "mean_step_s": round(step_s, 3), "median_step_s": round(timer.steady_median(), 3),
        "completions_per_step": t.per_device_train_batch_size * t.gradient_accumulation_steps,
        "num_generations": recipe.num_generations, "max_completion_length": recipe.max_completion_length,
        "mean_completion_tokens": round(sum(lengths) / len(lengths), 1) if lengths else None,
        "peak_gpu_memory_gb": run.peak_gpu_memory_gb, "rollouts": "transformers generate",
        "full_steps_per_seed": full_steps, "full_seed_h": round(full_steps * step_s / 3600, 2),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, help="a `geoql train data --out` directory")
    parser.add_argument("--work", required=True,
                        help="scratch directory for the model and runs (replaced on the next run; must be new or this script's)")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="qwen3-4b")
    parser.add_argument("--vocab", type=int, default=32000, help="size of the locally trained tokenizer")
    parser.add_argument("--sft-recipe", default=str(default_configs_dir() / "qwen3-4b-sft-lora-r64.yaml"))
    parser.add_argument("--grpo-recipe", default=str(default_configs_dir() / "qwen3-4b-grpo.yaml"))
    parser.add_argument("--sft-steps", type=int, default=6, help="optimizer steps to time (0 skips SFT)")
    parser.add_argument("--grpo-steps", type=int, default=2, help="optimizer steps to time (0 skips GRPO)")
    parser.add_argument("--grpo-recipe-steps", type=int, help="steps of a full GRPO seed (default: the recipe's)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a setting of both recipes, e.g. train.bf16=false on a CPU")
    parser.add_argument("--grpo-set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a GRPO-only setting, e.g. num_generations=2")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)

    import torch

    sft_rows, _, payload = read_dataset(args.dataset)
    work = Path(args.work)
    if work.exists() and any(work.iterdir()):
        if not (work / MARKER).is_file():  # never delete a directory this script did not make
            parser.error(f"--work {work} is not empty and was not made by this benchmark; choose a new directory")
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    (work / MARKER).write_text("scratch directory of benchmarks/bench_train_shape.py; replaced on each run\n")
    cuda = torch.cuda.is_available()
    t0 = time.perf_counter()
    tokenizer = train_tokenizer(_texts(sft_rows), vocab_size=args.vocab)
    model_dir = build_random_model(work / "model", tokenizer, SHAPES[args.shape],
                                   device="cuda" if cuda else None, dtype=torch.bfloat16 if cuda else None)
    free_gpu_memory()
    from transformers import AutoConfig, AutoModelForCausalLM

    with torch.device("meta"):  # counts the parameters without allocating them
        n_params = sum(p.numel() for p in AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(model_dir)).parameters())
    report = {
        "shape": args.shape, "device": torch.cuda.get_device_name(0) if cuda else "cpu",
        "torch": torch.__version__, "tokenizer_vocab": len(tokenizer),
        "model_build_s": round(time.perf_counter() - t0, 1), "parameters": n_params,
    }
    print(json.dumps(report), flush=True)
    if args.sft_steps:
        report["sft"] = bench_sft(args, model_dir, tokenizer, sft_rows, payload)
        print("sft:", json.dumps(report["sft"]), flush=True)
        free_gpu_memory()
    if args.grpo_steps:
        report["grpo"] = bench_grpo(args, model_dir)
        print("grpo:", json.dumps(report["grpo"]), flush=True)
    print(summary_lines(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


def summary_lines(r: dict) -> str:
    lines = [f"{r['shape']} shape on {r['device']} (torch {r['torch']}), tokenizer vocabulary {r['tokenizer_vocab']}"]
    if "sft" in r:
        s = r["sft"]
        lines += [
            f"SFT  {s['recipe']}: {s['mean_step_s']} s per step (mean after the first; median {s['median_step_s']}) "
            f"over {s['steps']} steps "
            f"({s['sequences_per_step']} sequences of {s['mean_tokens_per_sequence']} tokens on average, "
            f"{s['tokens_per_s']} tokens/s), peak GPU memory {s['peak_gpu_memory_gb']} GB",
            f"     full run: {s['full_rows']} rows -> {s['full_steps']} steps -> {s['full_run_min']} min at this speed",
        ]
    if "grpo" in r:
        g = r["grpo"]
        lines += [
            f"GRPO {g['recipe']}: {g['mean_step_s']} s per step (mean after the first; median {g['median_step_s']}) "
            f"over {g['steps']} steps "
            f"({g['completions_per_step']} completions of {g['mean_completion_tokens']} tokens, {g['rollouts']}), "
            f"peak GPU memory {g['peak_gpu_memory_gb']} GB",
            f"     one seed: {g['full_steps_per_seed']} steps -> {g['full_seed_h']} h at this speed",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
