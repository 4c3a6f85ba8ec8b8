"""How well cut-off queries are repaired: cut every dev gold query at a random
point, repair it with the grammar (app.decoding.repair_truncated), and compare
validity and OQS against the gold of the cut vs. the repaired query.

    GEOQL_DATA_DIR=../shared/overpassnl .venv/bin/python benchmarks/repair_truncations.py [--limit N]
"""

from __future__ import annotations

import argparse
import random
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="dev")
    ap.add_argument("--limit", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from tqdm import tqdm

    from geoql.app.decoding import repair_truncated, validate
    from geoql.eval.dataset import load_split
    from geoql.eval.metrics import get_scorer

    scorer = get_scorer()
    rng = random.Random(args.seed)
    examples = [ex for ex in load_split(args.split)[: args.limit] if not validate(ex.query)]
    cut_valid = repaired = 0
    oqs_cut = oqs_fixed = 0.0
    seconds = 0.0
    for ex in tqdm(examples, desc="repair", unit="q"):
        cut = ex.query[: rng.randrange(max(2, len(ex.query) // 3), len(ex.query))]
        t0 = time.perf_counter()
        fixed = repair_truncated(cut) if validate(cut) else cut
        seconds += time.perf_counter() - t0
        cut_valid += not validate(cut)
        if fixed is not None and not validate(fixed):
            repaired += 1
        oqs_cut += scorer.oqs(cut, ex.query)
        oqs_fixed += scorer.oqs(fixed if fixed is not None else cut, ex.query)
    n = len(examples)
    print(f"{args.split}: {n} valid gold queries cut at a random point (seed {args.seed})")
    print(f"  valid as cut:          {cut_valid / n:6.1%}")
    print(f"  valid after repair:    {repaired / n:6.1%}")
    print(f"  OQS cut vs gold:       {100 * oqs_cut / n:6.2f}")
    print(f"  OQS repaired vs gold:  {100 * oqs_fixed / n:6.2f}")
    print(f"  repair time:           {1000 * seconds / n:6.1f} ms per query")


if __name__ == "__main__":
    main()
