"""How fast `geoql eval` and the metric functions are.

    GEOQL_DATA_DIR=../shared/overpassnl .venv/bin/python benchmarks/bench_eval.py

Prints (CPU seconds of this process unless said otherwise): the wall time of the whole `geoql eval` command on the dev split
(start-up included, best and median of --repeat runs), where the time goes
(converter, XML features, chrF n-grams), and the per-pair cost of cached
scoring as MBR decoding uses it (n candidates scored against each other).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def command_wall(pred: Path, data_dir: Path, repeat: int) -> tuple[list[float], list[float]]:
    """Wall and CPU (user + system) seconds of each run of the whole command."""
    import resource

    cmd = [sys.executable, "-m", "geoql", "eval", "--pred", str(pred), "--split", "dev",
           "--data-dir", str(data_dir), "--no-progress"]
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if done.returncode != 0:
            sys.exit(f"geoql eval failed: {done.stderr.strip()}")
    return walls, cpus


def breakdown(pred: Path, data_dir: Path, n_candidates: int, n_groups: int) -> None:
    from geoql.eval.dataset import load_split
    from geoql.eval.metrics import Scorer, default_xml_source
    from geoql.eval.report import read_predictions

    t = time.perf_counter()
    examples = load_split("dev", data_dir)
    print(f"load dev split           {time.perf_counter() - t:8.3f} s")
    golds = [e.query for e in examples]
    preds = read_predictions(pred, expected=len(examples))
    distinct = sorted(set(golds) | set(preds))

    t = time.process_time()
    for q in distinct:
        default_xml_source(q)
    convert = time.process_time() - t
    print(f"converter (to_xml)       {convert:8.3f} s  {convert / len(distinct) * 1e3:.2f} ms/query, {len(distinct)} queries")

    converted = {q: default_xml_source(q) for q in distinct}
    scorer = Scorer(xml_source=converted.__getitem__)
    t = time.process_time()
    for q in distinct:
        scorer.features(q)
    features = time.process_time() - t
    print(f"XML parse + signatures   {features:8.3f} s  {features / len(distinct) * 1e3:.2f} ms/query")
    t = time.process_time()
    for q in distinct:
        scorer.ngrams(q)
    ngrams = time.process_time() - t
    print(f"chrF n-grams             {ngrams:8.3f} s  {ngrams / len(distinct) * 1e3:.2f} ms/query")
    t = time.process_time()
    scorer.score_many(preds, golds)
    print(f"score 1000 pairs, warm   {time.process_time() - t:8.3f} s")

    # MBR: every candidate against every other, candidates drawn from the dev golds.
    groups = [golds[i * n_candidates:(i + 1) * n_candidates] for i in range(n_groups)]
    for group in groups:
        for q in group:
            scorer.features(q)
            scorer.ngrams(q)
    t = time.process_time()
    pairs = 0
    for group in groups:
        for a in group:
            for b in group:
                scorer.oqs(a, b)
                pairs += 1
    per_pair = (time.process_time() - t) / pairs
    print(f"MBR oqs(a, b), cached    {per_pair * 1e6:8.1f} µs/pair ({n_candidates}² pairs × {n_groups} groups)"
          f" -> {per_pair * n_candidates**2 * 1e3:.1f} ms per example with {n_candidates} candidates")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=os.environ.get("GEOQL_DATA_DIR"), help="OverpassNL directory")
    parser.add_argument("--pred", help="prediction file (default: reference/knn_dev.pred in the data dir)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of the whole command")
    parser.add_argument("--candidates", type=int, default=16, help="MBR candidates per example")
    parser.add_argument("--groups", type=int, default=50, help="MBR examples")
    args = parser.parse_args()
    if not args.data_dir:
        parser.error("pass --data-dir or set GEOQL_DATA_DIR")
    data_dir = Path(args.data_dir)
    pred = Path(args.pred) if args.pred else data_dir / "reference" / "knn_dev.pred"
    print(f"cpu cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.2f}")
    walls, cpus = command_wall(pred, data_dir, args.repeat)
    print(f"geoql eval --split dev   wall best {min(walls):.2f} s, median {statistics.median(walls):.2f} s;"
          f" CPU best {min(cpus):.2f} s over {len(walls)} runs (target <= 5 s wall, start-up included;"
          " on a busy machine the CPU time is the fair figure)")
    breakdown(pred, data_dir, args.candidates, args.groups)
    return 0


if __name__ == "__main__":
    sys.exit(main())
