"""Latency of the CPU default (``cpu`` backend) on a split, model loaded.

    GEOQL_DATA_DIR=../shared/overpassnl .venv/bin/python benchmarks/bench_cpu_default.py --split dev

Prints model load time, per-request p50/p90/p99 and the whole split's time, and
(unless ``--no-score``) the split's metrics, so speed and quality come from one run.
``--against example_k=0`` also times the same model with other backend options, request
by request in alternating order (the one that goes second meets warm caches), and prints
the ratio of the two: a before/after from one run on a shared, noisy machine.
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
    parser.add_argument("--against", action="append", default=[], metavar="KEY=VALUE",
                        help="also time the model with these backend options (repeatable), e.g. example_k=0")
    args = parser.parse_args(argv)
    against = dict(opt.split("=", 1) for opt in args.against if "=" in opt)
    if len(against) != len(args.against):
        parser.error("--against takes KEY=VALUE")

    from tqdm import tqdm

    from geoql.app.backends import get_backend
    from geoql.app.backends.base import GenerationRequest
    from geoql.eval.dataset import load_split

    examples = load_split(args.split)[: args.limit]
    start = time.perf_counter()
    backend = get_backend("cpu", model_dir=args.model_dir, train_if_missing=False)
    backend.model  # load now, not inside the first timed request
    load_s = time.perf_counter() - start

    backends = {"": backend}
    if against:
        backends[" ".join(f"{k}={v}" for k, v in against.items())] = get_backend(
            "cpu", model_dir=args.model_dir, train_if_missing=False, **against)
        list(backends.values())[1].model
    times: dict[str, list[float]] = {name: [] for name in backends}
    preds = []
    total_start = time.perf_counter()
    for i, ex in enumerate(tqdm(examples, desc=f"compiling {args.split}")):
        order = list(backends.items()) if i % 2 == 0 else list(backends.items())[::-1]
        for name, b in order:
            t = time.perf_counter()
            # the reading is part of compile(): timed with the backend's work, as compile() does it
            answer = b.generate(GenerationRequest(b.read(ex.nl.strip()))).texts[0]
            times[name].append(time.perf_counter() - t)
            if not name:
                preds.append(answer)
    total_s = time.perf_counter() - total_start

    def pct(ms: list[float], p: float) -> float:
        return ms[min(len(ms) - 1, int(round(p / 100 * (len(ms) - 1))))]

    print(f"requests      {len(examples)}")
    print(f"model load    {load_s:.2f} s")
    p50 = {}
    for name, secs in times.items():
        ms = sorted(x * 1000 for x in secs)
        p50[name] = pct(ms, 50)
        print(f"latency p50   {pct(ms, 50):.1f} ms   p90 {pct(ms, 90):.1f} ms   p99 {pct(ms, 99):.1f} ms   "
              f"mean {statistics.mean(ms):.1f} ms" + (f"   ({name})" if name else ""))
    if against:
        other = list(p50)[1]
        print(f"ratio p50     {p50[''] / p50[other]:.2f} (the model's options / {other})")
    print(f"whole split   {total_s:.1f} s")
    if not args.no_score:
        from geoql.eval.metrics import corpus

        m = corpus(preds, [e.query for e in examples])
        print("metrics       " + "  ".join(f"{k} {m[k]:.2f}" for k in ("oqs", "kvs", "tree", "chrf", "em")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
