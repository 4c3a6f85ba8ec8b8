"""`geoql cpu train` on one process and on every core, from one run: wall, CPU, memory, same model.

    GEOQL_DATA_DIR=../shared/overpassnl .venv/bin/python benchmarks/bench_cpu_train.py \\
        --index-dir IDX [--limit 600] [--workers 2]

Each side is a fresh ``geoql cpu train --workers N`` process (the sides alternate when
``--rounds`` > 1, as a shared machine slows both alike) writing into a temporary model
directory. Per side: wall time, CPU time of the process and its worker processes
(``os.wait4``), peak RSS of the largest one, and the requests per second of the whole
command. Then both models' selectors are compared byte for byte (the trainer promises
the same model on any number of processes).

``--limit`` keeps it to minutes; without it (all 6,352 requests and their copies) one
process takes about a quarter of an hour on an idle 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench_cold_start import _measured  # noqa: E402 (the child's wall, CPU with its workers, peak RSS)
from geoql.app.cpu.model import SELECTOR_NPZ  # noqa: E402


def _selector_bytes(model_dir: Path) -> bytes:
    """The saved trees' arrays, name by name (the .npz's own bytes carry the time it was written)."""
    import numpy as np

    with np.load(model_dir / SELECTOR_NPZ, allow_pickle=False) as arrays:
        return b"".join(name.encode() + arrays[name].tobytes() for name in sorted(arrays.files))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-dir", required=True, help="a built tag index (`geoql index build`)")
    parser.add_argument("--limit", type=int, default=600, help="training requests (default 600; 0: all)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="the parallel side (default: the CPUs)")
    parser.add_argument("--rounds", type=int, default=1, help="runs per side, alternating (default 1)")
    args = parser.parse_args(argv)

    root = Path(tempfile.mkdtemp(prefix="geoql-bench-train-"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO))
    sides = {"1 process": 1, f"{args.workers} processes": args.workers}
    runs: dict[str, list[dict]] = {name: [] for name in sides}
    try:
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
              f"{'all' if not args.limit else args.limit} training requests")
        for r in range(args.rounds):
            for name, workers in sides.items():
                out = root / f"{workers}-{r}"
                argv = [sys.executable, "-m", "geoql", "cpu", "train", "--out", str(out), "--index-dir", args.index_dir,
                        "--workers", str(workers)] + (["--limit", str(args.limit)] if args.limit else [])
                result = _measured(argv, env, REPO)
                if result["code"] != 0:
                    raise SystemExit(f"`{' '.join(argv)}` failed with exit code {result['code']}: {result['err'][-2000:]}")
                result["model"] = out
                runs[name].append(result)
        print(runs[next(iter(sides))][0]["out"].strip())
        print(f"\n{'':12} {'wall s':>8} {'CPU s':>8} {'peak RSS MB':>12}")
        medians = {}
        for name in sides:
            medians[name] = {k: statistics.median(x[k] for x in runs[name]) for k in ("wall", "cpu", "rss_mb")}
            m = medians[name]
            print(f"{name:12} {m['wall']:8.1f} {m['cpu']:8.1f} {m['rss_mb']:12.0f}")
        one, many = medians.values()
        print(f"{'ratio':12} {one['wall'] / many['wall']:7.2f}x {one['cpu'] / many['cpu']:7.2f}x "
              f"{one['rss_mb'] / many['rss_mb']:11.2f}x")
        models = [runs[name][0]["model"] for name in sides]
        print(f"same selector on both sides: {_selector_bytes(models[0]) == _selector_bytes(models[1])}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
