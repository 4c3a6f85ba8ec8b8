"""Latency of the demo under simultaneous requests, over real HTTP on loopback; before and after in one run.

Prints figures; asserts nothing. Run from the repository root:

    GEOQL_DATA_DIR=../shared/overpassnl HF_HUB_OFFLINE=1 flock /tmp/geoql-heavy.lock \\
        .venv/bin/python benchmarks/ui_concurrency.py --backend cpu [--before ../scratch/before-checkout] \\
        [--requests 20] [--overpass-delay 0.5] [--long-chars 480] [--longs 1,4] [--repeats 5] [--rounds 2]

Two measurements, each on the Gradio app launched for real and driven with gradio_client
(Overpass and Nominatim are the loopback protocol servers of tests/fakes; each Overpass
answer waits ``--overpass-delay`` seconds, standing in for server time):

1. ``--requests`` simultaneous compile+run requests (dev requests, each with its own map
   box): time to answer, median, p95 and max;
2. a short request (a dev request) compiled alone, and right after ``--longs`` long ones
   (``--long-chars`` characters of real dev requests run together) were sent: how much the
   long ones delay it (the issue's target: no more than its own compile time).

``--before CHECKOUT`` runs the same measurements on another checkout (its own ``.venv``,
its own code and fakes) in the same run, alternating ``--rounds`` times, and prints both
and their ratios. Install both sides alike (the same ``scripts/setup.sh`` extras): gradio
switches matplotlib's backend around every call where matplotlib is installed (``--dev`` has
it), so sides with different extras differ by more than their code. ``--backend lookup`` answers dev requests with their gold query (no model);
``--backend cpu`` uses the CPU default (its model and index in the user directories).
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(round(0.95 * len(ordered))) - 1)]


def _long_request(chars: int, offset: int, texts: list[str]) -> str:
    """``chars`` characters of real requests run together, starting at a different one each time
    (no cache of any kind has seen it)."""
    words, i = [], offset
    while len(" ".join(words)) < chars:
        words.extend(texts[i % len(texts)].split())
        i += 1
    return " ".join(words)[:chars].strip()


def measure(args) -> dict:
    """One side: this interpreter's geoql, ``args.root``'s test fakes."""
    from gradio_client import Client

    from geoql.app import Compiler
    from geoql.app.ui import COMPILE_OUTPUTS, launch
    from geoql.eval.dataset import load_split

    # After the packages: tests/ has folders named like them (tests/overpassql) that would shadow them.
    sys.path.append(str(Path(args.root) / "tests"))
    from fakes.servers import FakeNominatim, FakeOverpass, json_reply
    from fakes.support import dev_requests, free_port, make_service

    summary_at = len(COMPILE_OUTPUTS) + 2  # compile_and_run: the compile outputs, then map, table, summary, download
    texts = [e.nl for e in load_split("dev")]
    out: dict = {}
    with FakeOverpass() as overpass, FakeNominatim() as nominatim, tempfile.TemporaryDirectory() as tmp:
        overpass.default = json_reply("heidelberg_cafes.json", delay_s=args.overpass_delay)
        service = make_service(overpass, nominatim, tmp)
        if args.backend != "lookup":
            service._compiler = Compiler(args.backend)
            service.compile(dev_requests()[0].nl)  # load the model before timing
        port = free_port()
        demo = launch(service, port=port, block=False)
        try:
            client = Client(f"http://127.0.0.1:{port}/", verbose=False)
            # 1. Simultaneous compile+run.
            # Independent requests, as on a public page: the lookup backend knows only the few dev requests
            # of its table (repeated); a real backend gets that many distinct dev requests.
            if args.backend == "lookup":
                requests = [dev_requests()[i % len(dev_requests())].nl for i in range(args.requests)]
            else:
                requests = texts[100:100 + args.requests]
            boxes = [f"49.{i:03d},8.60,49.{i + 1:03d},8.70" for i in range(args.requests)]
            started = time.perf_counter()
            jobs = [(time.perf_counter(), client.submit(r, b, api_name="/compile_and_run")) for r, b in zip(requests, boxes)]
            latencies, answered = [], 0
            for sent, job in jobs:
                result = job.result(timeout=600)
                latencies.append(time.perf_counter() - sent)
                answered += "elements" in str(result[summary_at] or "")
            out["parallel"] = {"wall_s": time.perf_counter() - started, "answered": answered,
                               "median_s": statistics.median(latencies), "p95_s": _p95(latencies),
                               "max_s": max(latencies)}

            # 2. A short request alone, and right behind long ones.
            short = [e for e in texts if 40 <= len(e) <= 80][: args.repeats * (1 + len(args.longs))]

            def compile_once(text: str) -> float:
                t0 = time.perf_counter()
                client.predict(text, api_name="/compile")
                return time.perf_counter() - t0

            alone = [compile_once(short[i]) for i in range(args.repeats)]
            out["short_alone_s"] = statistics.median(alone)
            offset = 0
            for n in args.longs:
                waits, long_times = [], []
                for r in range(args.repeats):
                    longs = [_long_request(args.long_chars, offset + j * 7, texts) for j in range(n)]
                    offset += 7 * n + 1
                    sent = [(time.perf_counter(), client.submit(text, api_name="/compile")) for text in longs]
                    time.sleep(0.05)  # the long ones are at work when the short one comes
                    waits.append(compile_once(short[args.repeats * (1 + args.longs.index(n)) + r]))
                    for t0, job in sent:
                        job.result(timeout=600)
                        long_times.append(time.perf_counter() - t0)
                out[f"short_behind_{n}_long_s"] = statistics.median(waits)
                out[f"long_{n}_s"] = statistics.median(long_times)
        finally:
            demo.close()
    return out


def _side(python: str, root: Path, args, env: dict) -> dict:
    command = [python, str(Path(__file__).resolve()), "--side", "--root", str(root), "--backend", args.backend,
               "--requests", str(args.requests), "--overpass-delay", str(args.overpass_delay),
               "--long-chars", str(args.long_chars), "--longs", ",".join(map(str, args.longs)),
               "--repeats", str(args.repeats)]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, env={**os.environ, **env})
    if done.returncode != 0:
        raise SystemExit(f"{root}: the measurement failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _merge(runs: list[dict]) -> dict:
    """The median over rounds of every figure."""
    merged: dict = {}
    for key in runs[0]:
        if isinstance(runs[0][key], dict):
            merged[key] = {k: statistics.median(r[key][k] for r in runs) for k in runs[0][key]}
        else:
            merged[key] = statistics.median(r[key] for r in runs)
    return merged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20, help="simultaneous compile+run requests")
    parser.add_argument("--backend", default="lookup", help="lookup (gold answers) or a registered backend name")
    parser.add_argument("--overpass-delay", type=float, default=0.5, help="seconds each Overpass answer takes")
    parser.add_argument("--long-chars", type=int, default=480,
                        help="characters of a long request (the demo takes up to 500; real ones reach 380)")
    parser.add_argument("--longs", default="1,4", help="long requests sent ahead of the short one, e.g. 1,4")
    parser.add_argument("--repeats", type=int, default=5, help="short requests timed per setting")
    parser.add_argument("--before", help="another checkout (with its own .venv) measured in the same run")
    parser.add_argument("--rounds", type=int, default=2, help="with --before: before/after pairs, alternated")
    parser.add_argument("--before-env", action="append", default=[], metavar="KEY=VALUE",
                        help="with --before: an environment variable for the before side only (repeatable), e.g. "
                             "GEOQL_CPU_MODEL_DIR=DIR when the saved formats of the two sides differ")
    parser.add_argument("--side", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--root", default=str(ROOT), help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.longs = [int(n) for n in str(args.longs).split(",") if n]
    if args.side:
        print(json.dumps(measure(args)))
        return
    before_env = dict(item.split("=", 1) for item in args.before_env)
    sides = {"after": (sys.executable, ROOT, {})}
    if args.before:
        before = Path(args.before).resolve()
        sides = {"before": (str(before / ".venv" / "bin" / "python"), before, before_env), **sides}
    runs: dict[str, list] = {name: [] for name in sides}
    for _ in range(args.rounds if args.before else 1):
        for name, (python, root, env) in sides.items():
            runs[name].append(_side(python, root, args, env))
    results = {name: _merge(found) for name, found in runs.items()}
    print(f"backend {args.backend}; {args.requests} simultaneous compile+run, Overpass delay {args.overpass_delay} s; "
          f"long requests of {args.long_chars} characters; medians of {len(runs['after'])} round(s), "
          f"{time.strftime('%Y-%m-%d %H:%M')}")
    rows = [("parallel: answered", lambda r: r["parallel"]["answered"], "{:.0f}"),
            ("parallel: wall s", lambda r: r["parallel"]["wall_s"], "{:.2f}"),
            ("parallel: median s", lambda r: r["parallel"]["median_s"], "{:.2f}"),
            ("parallel: p95 s", lambda r: r["parallel"]["p95_s"], "{:.2f}"),
            ("parallel: max s", lambda r: r["parallel"]["max_s"], "{:.2f}"),
            ("short alone s", lambda r: r["short_alone_s"], "{:.3f}")]
    for n in args.longs:
        rows += [(f"short behind {n} long s", lambda r, n=n: r[f"short_behind_{n}_long_s"], "{:.3f}"),
                 (f"  its delay s", lambda r, n=n: r[f"short_behind_{n}_long_s"] - r["short_alone_s"], "{:.3f}"),
                 (f"  a long one s", lambda r, n=n: r[f"long_{n}_s"], "{:.3f}")]
    names = list(results)
    for name in names:  # each round's two headline figures, so that the spread is seen
        print(f"{name} by round: parallel p95 " + ", ".join(f"{r['parallel']['p95_s']:.2f}" for r in runs[name])
              + " s; short alone " + ", ".join(f"{r['short_alone_s']:.3f}" for r in runs[name]) + " s")
    print(f"{'':26}" + "".join(f"{name:>12}" for name in names) + ("     after/before" if "before" in results else ""))
    for label, get, form in rows:
        values = [get(results[name]) for name in names]
        line = f"{label:26}" + "".join(f"{form.format(v):>12}" for v in values)
        if "before" in results and values[0]:
            line += f"     × {values[-1] / values[0]:.2f}"
        print(line)


if __name__ == "__main__":
    main()
