"""Latency of ``compile()`` (the whole pipeline: reading, the backend, the checks, the confidence), here and
in a "before" checkout, from one run.

    GEOQL_DATA_DIR=../shared/overpassnl .venv/bin/python benchmarks/bench_compile.py --limit 300 \\
        --before ../main-before [--rounds 3]

Each side runs in its own process with its own interpreter (``DIR/.venv/bin/python`` for ``--before``:
its editable install maps ``geoql`` to its folders), loads the default backend (the CPU default, its
model in the user data dir unless ``GEOQL_CPU_MODEL_DIR`` says otherwise), compiles one warm-up
request, then times ``Compiler.compile`` on the first N requests of the split. The sides alternate
round by round (before, after, after, before, ...), so both meet the same load on a shared machine;
the figures pool every round. Prints p50 / p90 / mean per side and the after / before ratio of p50.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def worker(split: str, limit: int) -> list[float]:
    """Seconds per ``compile()`` call, model loaded and one request compiled first."""
    from geoql.app.compile import Compiler
    from geoql.eval.dataset import load_split

    examples = load_split(split)[:limit]
    compiler = Compiler()
    compiler.compile(examples[0].nl)  # loads the model, the aliases and the calibrator: not timed
    times = []
    for ex in examples:
        t = time.perf_counter()
        compiler.compile(ex.nl)
        times.append(time.perf_counter() - t)
    return times


def run_side(python: str, root: Path, split: str, limit: int) -> list[float]:
    env = dict(os.environ)
    if env.get("GEOQL_DATA_DIR"):  # a relative one would name another folder from the other checkout
        env["GEOQL_DATA_DIR"] = str(Path(env["GEOQL_DATA_DIR"]).resolve())
    out = subprocess.run([python, str(Path(__file__).resolve()), "--worker", "--split", split, "--limit", str(limit)],
                         cwd=root, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{root}: the timing run failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def summary(times: list[float]) -> dict:
    ordered = sorted(times)
    return {"n": len(times), "p50": statistics.median(times), "p90": ordered[int(0.9 * (len(ordered) - 1))],
            "mean": statistics.fmean(times)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--split", default="dev", choices=("train", "dev"))
    p.add_argument("--limit", type=int, default=300, help="the first N requests")
    p.add_argument("--before", metavar="DIR", help="a checkout with its own .venv: the 'before' side")
    p.add_argument("--rounds", type=int, default=3, help="runs per side, alternating")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.split, args.limit)))
        return 0
    sides = {"after": (sys.executable, HERE)}
    if args.before:
        before = Path(args.before).resolve()
        sides = {"before": (str(before / ".venv" / "bin" / "python"), before), **sides}
    times: dict[str, list[float]] = {name: [] for name in sides}
    for r in range(args.rounds):
        order = list(sides) if r % 2 == 0 else list(sides)[::-1]
        for name in order:
            python, root = sides[name]
            got = run_side(python, root, args.split, args.limit)
            times[name] += got
            print(f"round {r + 1} {name:6s}: p50 {statistics.median(got) * 1000:6.1f} ms over {len(got)}", flush=True)
    stats = {name: summary(t) for name, t in times.items()}
    for name, s in stats.items():
        print(f"{name:6s} n {s['n']:5d}  p50 {s['p50'] * 1000:6.1f} ms  p90 {s['p90'] * 1000:6.1f} ms  "
              f"mean {s['mean'] * 1000:6.1f} ms")
    if "before" in stats:
        print(f"p50 after / before: {stats['after']['p50'] / stats['before']['p50']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
