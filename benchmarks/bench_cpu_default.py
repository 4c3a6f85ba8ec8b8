"""Latency of the CPU default (``cpu`` backend) on a split, model loaded.

    GEOQL_DATA_DIR=../shared/overpassnl .venv/bin/python benchmarks/bench_cpu_default.py --split dev

Prints model load time, per-request p50/p90/p99 and the whole split's time, and
(unless ``--no-score``) the split's metrics, so speed and quality come from one run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=("train", "dev", "test"))
    parser.add_argument("--limit", type=int, help="only the first N requests")
    parser.add_argument("--model-dir", help="trained model (default: as for `geoql cpu train`)")
    parser.add_argument("--no-score", action="store_true", help="skip the metrics")
    args = parser.parse_args(argv)

    from tqdm import tqdm

    from geoql.app.backends import get_backend
    from geoql.app.backends.base import GenerationRequest
    from geoql.eval.dataset import load_split

    examples = load_split(args.split)[: args.limit]
    start = time.perf_counter()
    backend = get_backend("cpu", model_dir=args.model_dir, train_if_missing=False)
    backend.model  # load now, not inside the first timed request
    load_s = time.perf_counter() - start

    times, preds = [], []
    total_start = time.perf_counter()
    for ex in tqdm(examples, desc=f"compiling {args.split}"):
        t = time.perf_counter()
        preds.append(backend.generate(GenerationRequest(nl=ex.nl, messages=[]))[0])
        times.append(time.perf_counter() - t)
    total_s = time.perf_counter() - total_start
    ms = sorted(x * 1000 for x in times)

    def pct(p: float) -> float:
        return ms[min(len(ms) - 1, int(round(p / 100 * (len(ms) - 1))))]

    print(f"requests      {len(ms)}")
    print(f"model load    {load_s:.2f} s")
    print(f"latency p50   {pct(50):.1f} ms   p90 {pct(90):.1f} ms   p99 {pct(99):.1f} ms   mean {statistics.mean(ms):.1f} ms")
    print(f"whole split   {total_s:.1f} s")
    if not args.no_score:
        from geoql.eval.metrics import corpus

        m = corpus(preds, [e.query for e in examples])
        print("metrics       " + "  ".join(f"{k} {m[k]:.2f}" for k in ("oqs", "kvs", "tree", "chrf", "em")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
