"""Cold start, before and after, from one run: the CLI's cold time and memory, and a fresh clone's first answer.

    GEOQL_DATA_DIR=../shared/overpassnl .venv/bin/python benchmarks/bench_cold_start.py \\
        --index-dir IDX --model-dir MODEL [--runs 5] [--skip-fresh]

Both sides are committed revisions checked out into temporary git worktrees and run by
this interpreter (``PYTHONPATH`` at the worktree, so the installed packages are the same):
``--after`` (default ``HEAD``) and ``--before`` (default: the parent of the commit that
made the CPU default's cold path torch- and scikit-learn-free, the one that added
``retrieval/char_tfidf.py``). Nothing in this checkout's working tree is used.

1. ``geoql compile REQUEST`` in a new process, ``--runs`` times per side, the sides taking
   turns (a busy machine slows both alike), after one unmeasured warm-up each (the page
   cache, and the one-time ONNX export and TF-IDF fit of the "after" side, which are
   cached in the user cache by content hash). Per run: wall time, CPU time (user + sys,
   steadier than wall on a shared machine) and peak RSS of the child (``os.wait4``);
   medians are printed with before/after ratios. ``--index-dir``/``--model-dir`` must be
   readable by both sides, or give the "before" side its own with ``--before-index-dir`` /
   ``--before-model-dir`` (an index format change makes the old side train a model on
   the spot, which is no cold start).
2. The first answer from nothing (unless ``--skip-fresh``): in empty temporary data and
   cache directories, ``geoql index build``, ``geoql cpu train`` and one ``geoql compile``,
   each step timed, per side. This is what the demo does on its first start (about
   8 minutes for the "before" side on 2 cores).

Timings on a machine shared with other jobs vary by 2-3x; the CPU times and the ratio
between sides, taken in the same minutes, are the steadier figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SUBPACKAGES = ("core", "osm", "nl", "eval", "retrieval", "index", "app", "training")


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True, text=True).stdout.strip()


def default_before() -> str:
    added = _git("log", "--diff-filter=A", "--format=%H", "--", "retrieval/char_tfidf.py").splitlines()
    if not added:
        raise SystemExit("cannot find the cold-start commit (retrieval/char_tfidf.py); pass --before REV")
    return f"{added[-1]}^"


class Tree:
    """A revision checked out into a temporary worktree, importable as ``geoql`` through PYTHONPATH."""

    def __init__(self, label: str, rev: str, root: Path) -> None:
        self.label, self.rev = label, _git("rev-parse", "--short", rev)
        self.path = root / label
        _git("worktree", "add", "--detach", str(self.path), rev)
        for name in SUBPACKAGES:  # the checkout's layout: geoql/<sub> -> ../<sub>, as scripts/setup.sh links them
            link = self.path / "geoql" / name
            if (self.path / name).is_dir() and not link.exists():
                link.symlink_to(Path("..") / name, target_is_directory=True)

    def env(self, **extra: str) -> dict:
        # A user's Python writes bytecode: without it every run recompiles the project (~0.3 s).
        env = {k: v for k, v in os.environ.items() if k not in ("GEOQL_ENCODER", "PYTHONDONTWRITEBYTECODE")}
        env.update(PYTHONPATH=str(self.path), HF_HUB_OFFLINE="1", **extra)
        return env

    def remove(self) -> None:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(self.path)], capture_output=True)


def cold_cli(trees: list[Tree], request: str, runs: int, dirs: dict[str, tuple[str, str, str | None]]) -> dict:
    results: dict[str, list[dict]] = {t.label: [] for t in trees}
    answers: dict[str, str] = {}
    for i in range(runs + 1):
        for tree in trees:
            index_dir, model_dir, cache_dir = dirs[tree.label]
            env = tree.env(GEOQL_INDEX_DIR=index_dir, GEOQL_CPU_MODEL_DIR=model_dir,
                           **({"GEOQL_CACHE_DIR": cache_dir} if cache_dir else {}))
            r = _measured([sys.executable, "-m", "geoql", "compile", request], env, tree.path)
            if r["code"] != 0:
                raise SystemExit(f"{tree.label} ({tree.rev}) failed: {r['err'][-2000:]}")
            answers[tree.label] = r["out"].strip()
            if i:  # the first round warms caches
                results[tree.label].append(r)
    return {"runs": results, "answers": answers}


def _measured(argv: list[str], env: dict, cwd: Path) -> dict:
    """Run ``argv``: its wall time, and the child's own CPU time and peak RSS (``os.wait4``)."""
    start = time.perf_counter()
    with subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        # Read the pipes on threads so that wait4 reaps the child itself and returns its rusage.
        chunks = {"out": [], "err": []}

        def drain(stream, key):
            chunks[key].append(stream.read())

        readers = [threading.Thread(target=drain, args=(proc.stdout, "out")), threading.Thread(target=drain, args=(proc.stderr, "err"))]
        for r in readers:
            r.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        for r in readers:
            r.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out, err = b"".join(chunks["out"]), b"".join(chunks["err"])
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024,
            "code": proc.returncode, "out": out.decode(errors="replace"), "err": err.decode(errors="replace")}


def fresh_first_answer(tree: Tree, request: str, data_dir: str | None) -> dict:
    base = Path(tempfile.mkdtemp(prefix=f"geoql-fresh-{tree.label}-"))
    try:
        env = tree.env(GEOQL_INDEX_DIR=str(base / "index"), GEOQL_CPU_MODEL_DIR=str(base / "model"),
                       GEOQL_CACHE_DIR=str(base / "cache"), XDG_DATA_HOME=str(base / "data"))
        if data_dir:
            env["GEOQL_DATA_DIR"] = data_dir
        steps = {}
        for name, argv in (("index build", ["index", "build"]), ("cpu train", ["cpu", "train"]), ("first compile", ["compile", request])):
            r = _measured([sys.executable, "-m", "geoql", *argv], env, tree.path)
            if r["code"] != 0:
                raise SystemExit(f"{tree.label}: `geoql {' '.join(argv)}` failed: {r['err'][-2000:]}")
            steps[name] = r
        return steps
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _ratio(before: float, after: float) -> str:
    return f"{before / after:.2f}x" if after > 0 else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="revision for 'before' (default: the parent of the cold-start commit)")
    parser.add_argument("--after", default="HEAD", help="revision for 'after' (default HEAD)")
    parser.add_argument("--request", default="pubs in Dublin")
    parser.add_argument("--runs", type=int, default=5, help="measured cold runs per side (default 5)")
    parser.add_argument("--index-dir", required=True, help="a built tag index both sides can read: the folder "
                        "holding its manifest.json (~/.local/share/geoql/index/v1), not its parent")
    parser.add_argument("--model-dir", required=True, help="a trained CPU model both sides can read")
    parser.add_argument("--before-cache-dir", help="the 'before' side's user cache (default: the same as 'after'). Give it "
                        "its own when the two sides cache something under one name in different forms: each would "
                        "otherwise redo the other's work on every run (8faaaee's character TF-IDF cache, for one)")
    parser.add_argument("--before-index-dir", help="the 'before' side's index when the formats differ (default --index-dir)")
    parser.add_argument("--before-model-dir", help="the 'before' side's model when the formats differ (default --model-dir)")
    parser.add_argument("--data-dir", default=os.environ.get("GEOQL_DATA_DIR"), help="OverpassNL (default $GEOQL_DATA_DIR)")
    parser.add_argument("--skip-fresh", action="store_true", help="skip the fresh-clone first answer (minutes per side)")
    args = parser.parse_args(argv)
    for flag, folder in (("--index-dir", args.index_dir), ("--before-index-dir", args.before_index_dir)):
        # a folder without a built index would be built into by the timed side, which replaces the
        # folder whole: given the parent of the user's index (~/.local/share/geoql/index), it removed v1
        path = Path(folder).expanduser() if folder else None
        if path is not None and (not (path / "manifest.json").is_file()
                                 or any((sub / "manifest.json").is_file() for sub in path.iterdir() if sub.is_dir())):
            parser.error(f"{flag} {folder}: no built tag index there, or one with another index inside; give the "
                         "index folder itself, e.g. ~/.local/share/geoql/index/v1")

    root = Path(tempfile.mkdtemp(prefix="geoql-bench-cold-"))
    trees: list[Tree] = []
    try:
        trees = [Tree("before", args.before or default_before(), root), Tree("after", args.after, root)]
        print(f"before = {trees[0].rev}, after = {trees[1].rev}; load average {os.getloadavg()[0]:.1f} on "
              f"{os.cpu_count()} CPUs (a shared machine slows both sides alike)")
        dirs = {"before": (args.before_index_dir or args.index_dir, args.before_model_dir or args.model_dir,
                           args.before_cache_dir),
                "after": (args.index_dir, args.model_dir, None)}
        cli = cold_cli(trees, args.request, args.runs, dirs)
        print(f"\n`geoql compile {args.request!r}`, cold, median of {args.runs} runs per side:")
        print(f"{'':8} {'wall s':>8} {'CPU s':>8} {'peak RSS MB':>12}")
        medians = {}
        for tree in trees:
            runs = cli["runs"][tree.label]
            medians[tree.label] = {k: statistics.median(r[k] for r in runs) for k in ("wall", "cpu", "rss_mb")}
            m = medians[tree.label]
            print(f"{tree.label:8} {m['wall']:8.2f} {m['cpu']:8.2f} {m['rss_mb']:12.0f}")
        b, a = medians["before"], medians["after"]
        print(f"{'ratio':8} {_ratio(b['wall'], a['wall']):>8} {_ratio(b['cpu'], a['cpu']):>8} {_ratio(b['rss_mb'], a['rss_mb']):>12}")
        same = cli["answers"]["before"] == cli["answers"]["after"]
        print(f"same answer on both sides: {same}")
        if not same:
            print(f"  before: {cli['answers']['before']}\n  after:  {cli['answers']['after']}")
        if not args.skip_fresh:
            print("\nfirst answer from empty data and cache directories (index build + cpu train + compile):")
            totals = {}
            for tree in trees:
                steps = fresh_first_answer(tree, args.request, args.data_dir)
                totals[tree.label] = sum(s["wall"] for s in steps.values())
                parts = ", ".join(f"{name} {s['wall']:.0f} s (CPU {s['cpu']:.0f} s)" for name, s in steps.items())
                print(f"{tree.label:8} {totals[tree.label]:7.0f} s  ({parts})")
            print(f"{'ratio':8} {_ratio(totals['before'], totals['after']):>9}")
    finally:
        for tree in trees:
            tree.remove()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
