"""``compile()`` latency and OQS, this checkout against another one, from one run.

    GEOQL_DATA_DIR=../shared/overpassnl .venv/bin/python benchmarks/bench_compile_checkouts.py \
        --before ../scratch/before --limit 200 [--rounds 2]

``--before`` (and ``--after``, default this checkout) is a checkout of another commit (``git worktree
add DIR main``): it needs no virtual
environment of its own, since its packages are imported from a folder of links that maps the
``geoql.*`` names to its folders, ahead of this checkout's editable install. Each round compiles
the first ``--limit`` requests of the split with the default backend (model loaded, one request
compiled first to warm up) in a fresh process for each checkout, in turn, before first in even
rounds and after first in odd ones, so both meet the same machine. It prints the per-request
p50/p90 of each, the ratio of the p50s, the OQS of each on those requests and how many answers
differ.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def worker(split: str, limit: int) -> None:
    """Compile the first ``limit`` requests; print one JSON line: seconds and queries."""
    from geoql.app import Compiler
    from geoql.eval.dataset import load_split

    examples = load_split(split)[:limit]
    compiler = Compiler()
    compiler.compile(examples[0].nl)  # model, index and lexicon loaded before the clock runs
    secs, queries = [], []
    for ex in examples:
        t = time.perf_counter()
        comp = compiler.compile(ex.nl)
        secs.append(time.perf_counter() - t)
        queries.append(comp.query)
    print(json.dumps({"secs": secs, "queries": queries, "code": sys.modules[Compiler.__module__].__file__}))


def import_root(checkout: Path, into: Path) -> Path:
    """A folder whose ``geoql`` and ``overpassql`` are links to ``checkout``'s folders (its
    ``pyproject.toml``'s package-dir), so ``PYTHONPATH`` puts that checkout's code first."""
    dirs = tomllib.loads((checkout / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    pkg = into / "geoql"
    pkg.mkdir(parents=True)
    for name, folder in dirs.items():
        if name == "geoql":
            for f in (checkout / folder).glob("*.py"):  # copies: a link would lead the import back there
                (pkg / f.name).write_bytes(f.read_bytes())
        elif name.startswith("geoql."):
            (pkg / name.split(".", 1)[1]).symlink_to(checkout / folder)
        else:
            (into / name).symlink_to(checkout / folder)
    return into


def run(split: str, limit: int, root: Path | None, more_env: dict | None = None) -> dict:
    env = {**os.environ, **(more_env or {})}
    if root is not None:
        env["PYTHONPATH"] = str(root) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", "--split", split,
                          "--limit", str(limit)], env=env, cwd=str(ROOT), capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="another checkout to compare with (a git worktree)")
    parser.add_argument("--after", help="the checkout to measure (default: this one)")
    parser.add_argument("--split", default="dev", choices=("train", "dev"))
    parser.add_argument("--limit", type=int, default=200, help="the first N requests")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--before-env", action="append", default=[], metavar="KEY=VALUE",
                        help="an environment variable for the before side only (repeatable), e.g. "
                             "GEOQL_CPU_MODEL_DIR=DIR when the two sides save their model in other formats")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.split, args.limit)
        return 0
    from geoql.eval.dataset import load_split
    from geoql.eval.metrics import corpus

    golds = [e.query for e in load_split(args.split)[: args.limit]]
    with tempfile.TemporaryDirectory() as tmp:
        after = Path(args.after).resolve() if args.after else None
        sides = {"after": (after, import_root(after, Path(tmp) / "after") if after else None)}
        if args.before:
            before = Path(args.before).resolve()
            sides = {"before": (before, import_root(before, Path(tmp) / "before")), **sides}
        secs: dict[str, list[float]] = {name: [] for name in sides}
        queries: dict[str, list[str]] = {}
        for r in range(args.rounds):
            for name in (list(sides) if r % 2 == 0 else list(sides)[::-1]):
                result = run(args.split, args.limit, sides[name][1],
                             dict(item.split("=", 1) for item in args.before_env) if name == "before" else None)
                secs[name] += result["secs"]
                queries[name] = result["queries"]
                print(f"round {r + 1} {name:6s} p50 {pct(result['secs'], 50) * 1000:.1f} ms ({result['code']})", flush=True)
    print(f"requests      {args.limit} of {args.split}, {args.rounds} rounds")
    for name in sides:
        ms = [s * 1000 for s in secs[name]]
        oqs = corpus(queries[name], golds)["oqs"]
        print(f"{name:6s} p50 {pct(ms, 50):.1f} ms  p90 {pct(ms, 90):.1f} ms  mean {statistics.mean(ms):.1f} ms  OQS {oqs:.2f}")
    if "before" in sides:
        print(f"ratio p50     {pct(secs['after'], 50) / pct(secs['before'], 50):.3f} (after / before)")
        differ = sum(a != b for a, b in zip(queries["before"], queries["after"]))
        print(f"answers that differ: {differ} of {args.limit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
