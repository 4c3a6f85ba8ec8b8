"""``geoql compile --workers N`` against one worker, from one run: the speed-up, the memory, the start-up.

    GEOQL_DATA_DIR=../shared/overpassnl HF_HUB_OFFLINE=1 flock /tmp/geoql-heavy.lock \\
        .venv/bin/python benchmarks/bench_batch_workers.py [--split dev] [--limit N] [--workers 2] [--before REV]

Every run is ``geoql compile --split SPLIT --out FILE`` in a new process, on the index and CPU model
that ``GEOQL_INDEX_DIR`` / ``GEOQL_CPU_MODEL_DIR`` (or the user directories) hold, after one unmeasured
warm-up of 32 requests (the page cache). In this order: ``--before REV`` (optional: that revision
checked out into a temporary worktree, one process, as batch runs were before ``--workers``), this
checkout with ``--workers 1``, this checkout with ``--workers N``, ``--rounds`` times, every other
round in reverse order (``--one-thread`` adds ``--workers 1`` with one OpenBLAS/OpenMP thread, as
each worker runs: the CPU default's single process otherwise spends about half its CPU time in
OpenBLAS's second thread). Printed per run: the wall time,
the CPU time of the whole process tree, the time to the first answer in the run's log (start-up:
the processes' start, imports and model load), the peak RSS of each process of the tree (every
worker holds its own model and index) and of the tree, and whether the prediction file is
byte-identical to the one-worker run's; then the speed-up of N workers over one, per round and its median.

On a machine shared with other jobs the wall times vary from day to day; take the ratio, measured
within the same minutes, as the figure (and run it under the heavy-job lock).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_cold_start import Tree, _measured  # noqa: E402 (a revision's worktree; the child's wall, CPU, peak RSS)

from geoql.app.batch import ONE_THREAD  # noqa: E402


class TreeWatch:
    """Polls this process's descendants (the run and its workers): each one's peak RSS, the sum's
    peak, and when the run's log got its first answer."""

    def __init__(self, log: Path, header_lines: int):
        self.log, self.header_lines = log, header_lines
        self.peaks: dict[int, int] = {}
        self.tree_peak = 0
        self.first_answer: float | None = None
        self.root: int | None = None  # the run's own process (this one's child)
        self.started = time.perf_counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _poll(self) -> None:
        me = os.getpid()
        while not self._stop.is_set():
            total = 0
            for pid in _tree(me)[1:]:
                if self.root is None:
                    self.root = pid
                rss = _rss(pid)
                self.peaks[pid] = max(self.peaks.get(pid, 0), rss)
                total += rss
            self.tree_peak = max(self.tree_peak, total)
            if self.first_answer is None and self.log.exists():
                with open(self.log, "rb") as f:
                    if f.read().count(b"\n") > self.header_lines:
                        self.first_answer = time.perf_counter() - self.started
            time.sleep(0.1)


def _tree(root: int) -> list[int]:
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        try:
            for task in Path(f"/proc/{pid}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run(label: str, argv: list[str], env: dict, cwd: Path, out: Path, header_lines: int) -> dict:
    watch = TreeWatch(out.with_name(out.name + ".tmp"), header_lines)
    try:
        result = _measured(argv, env, cwd)
    finally:
        watch.stop()
    if result["code"] != 0:
        raise SystemExit(f"{label} failed ({result['code']}): {result['err'][-3000:]}")
    workers = sorted((rss for pid, rss in watch.peaks.items() if pid != watch.root), reverse=True)
    return {**result, "first": watch.first_answer, "tree_mb": watch.tree_peak / 2**20,
            "root_mb": watch.peaks.get(watch.root, 0) / 2**20, "workers_mb": [w / 2**20 for w in workers if w > 50 << 20],
            "pred": out.read_bytes()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=("train", "dev"))
    parser.add_argument("--limit", type=int, help="only the first N requests of the split")
    parser.add_argument("--workers", type=int, default=2, help="workers of the parallel run (default 2)")
    parser.add_argument("--before", help="also run this revision (one process, as before --workers), e.g. main")
    parser.add_argument("--rounds", type=int, default=1, help="runs per side, the sides taking turns (default 1)")
    parser.add_argument("--one-thread", action="store_true",
                        help="also run --workers 1 with one OpenBLAS/OpenMP thread, as each worker runs")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="geoql-bench-workers-"))
    trees: list[Tree] = []
    for name in ("GEOQL_DATA_DIR", "GEOQL_INDEX_DIR", "GEOQL_CPU_MODEL_DIR", "GEOQL_CACHE_DIR"):
        if os.environ.get(name):  # the "before" side runs in its worktree: relative paths would move
            os.environ[name] = str(Path(os.environ[name]).resolve())
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    limit = ["--limit", str(args.limit)] if args.limit else []
    try:
        sides = []
        if args.before:
            tree = Tree("before", args.before, work)
            trees.append(tree)
            sides.append((f"before ({tree.rev}), 1 process", tree.env(), tree.path, [], [], 0))
        one = ["--workers", "1"]
        sides.append(("--workers 1", env, REPO, one, one, 1))
        if args.one_thread:  # what each worker gets: one thread for OpenBLAS and OpenMP
            sides.append(("--workers 1, one thread", {**env, **ONE_THREAD}, REPO, one, one, 1))
        sides.append((f"--workers {args.workers}", env, REPO, ["--workers", str(args.workers)], one, 1))
        print(f"{args.split}{f' (first {args.limit})' if args.limit else ''}; {os.cpu_count()} CPUs; index "
              f"{os.environ.get('GEOQL_INDEX_DIR', '(user dir)')}; {args.rounds} round(s), the sides taking turns", flush=True)
        for n, (label, side_env, cwd, extra, warm_extra, header) in enumerate(sides):
            _measured([sys.executable, "-m", "geoql", "compile", "--split", args.split, "--limit", "32", "--out",
                       str(work / f"warm{n}.pred"), *warm_extra], side_env, cwd)  # the page cache
        results: dict[str, list[dict]] = {side[0]: [] for side in sides}
        for round_ in range(args.rounds):
            order = list(enumerate(sides))
            if round_ % 2:
                order.reverse()  # a machine that gets busier or quieter during the run favours no side
            for n, (label, side_env, cwd, extra, _, header) in order:
                out = work / f"run{round_}-{n}.pred"
                load = os.getloadavg()[0]
                r = run(label, [sys.executable, "-m", "geoql", "compile", "--split", args.split, *limit,
                                "--out", str(out), *extra], side_env, cwd, out, header)
                results[label].append(r)
                print(f"round {round_ + 1} {label:24} wall {r['wall']:6.1f} s  CPU {r['cpu']:6.1f} s  first answer "
                      f"{r['first'] or 0:4.1f} s  peak RSS: tree {r['tree_mb']:5.0f} MB, main process "
                      f"{r['root_mb']:4.0f} MB, workers {', '.join(f'{w:.0f}' for w in r['workers_mb']) or '-'} MB  "
                      f"(load before {load:.1f})", flush=True)
        ones, manys = results["--workers 1"], results[f"--workers {args.workers}"]
        ratios = [a["wall"] / b["wall"] for a, b in zip(ones, manys)]
        lines = ones[0]["pred"].count(b"\n")
        print(f"\nspeed-up of --workers {args.workers} over --workers 1 on {lines} requests, per round: "
              + ", ".join(f"{x:.2f}x" for x in ratios) + f"; median {statistics.median(ratios):.2f}x "
              f"(median wall {statistics.median(r['wall'] for r in ones):.1f} s -> "
              f"{statistics.median(r['wall'] for r in manys):.1f} s; CPU {statistics.median(r['cpu'] for r in ones):.1f} s "
              f"-> {statistics.median(r['cpu'] for r in manys):.1f} s)")
        reference = ones[0]["pred"]
        for label, runs in results.items():
            print(f"  {label:24} predictions byte-identical to the first --workers 1 run: "
                  f"{all(r['pred'] == reference for r in runs)} ({len(runs)} runs)")
        if args.one_thread:
            lone = results["--workers 1, one thread"]
            ratios = [a["wall"] / b["wall"] for a, b in zip(lone, manys)]
            print(f"speed-up of --workers {args.workers} over --workers 1 with one thread, per round: "
                  + ", ".join(f"{x:.2f}x" for x in ratios) + f"; median {statistics.median(ratios):.2f}x "
                  f"(median wall {statistics.median(r['wall'] for r in lone):.1f} s, CPU "
                  f"{statistics.median(r['cpu'] for r in lone):.1f} s)")
        if args.before:
            before = statistics.median(r["wall"] for r in results[sides[0][0]])
            print(f"  against before (median wall {before:.1f} s): --workers 1 "
                  f"{before / statistics.median(r['wall'] for r in ones):.2f}x, --workers {args.workers} "
                  f"{before / statistics.median(r['wall'] for r in manys):.2f}x")
    finally:
        for tree in trees:
            tree.remove()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
