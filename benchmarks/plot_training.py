"""A training run's loss curve (and its dev OQS) as a PNG: ``python benchmarks/plot_training.py RUN OUT.png``.

Reads ``RUN/metrics.jsonl`` (the JSONL log of every run) and ``RUN/dev_eval.jsonl``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run")
    parser.add_argument("out")
    parser.add_argument("--title", default=None)
    args = parser.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    run = Path(args.run)
    losses = [(r["step"], r["loss"]) for r in _rows(run / "metrics.jsonl") if "loss" in r]
    dev = [(r["step"], r["dev/oqs@greedy"]) for r in _rows(run / "dev_eval.jsonl") if "dev/oqs@greedy" in r]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    if losses:
        ax.plot(*zip(*losses), color="tab:blue", marker=".", label="training loss (completion tokens)")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("loss", color="tab:blue")
    if dev:
        ax2 = ax.twinx()
        ax2.plot(*zip(*dev), color="tab:red", marker="o", linestyle="--", label="dev OQS (greedy)")
        ax2.set_ylabel("dev OQS", color="tab:red")
        for step, oqs in dev:
            ax2.annotate(f"{oqs:.1f}", (step, oqs), textcoords="offset points", xytext=(4, 4), color="tab:red")
    ax.set_title(args.title or run.name)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out)
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
