"""Time of the one reading of a request (``geoql.nl.read_request``) and of its cue tables' part alone
(``geoql.nl.frame.read_frame``), per request, on a split's requests and OsmNL dev files.

    GEOQL_DATA_DIR=../shared/overpassnl .venv/bin/python benchmarks/bench_read_request.py --limit 300 \
        --osmnl-dir ../shared/osmnl

Each request is read once before the timing (the cue tables load on first use); both readers run on
the same requests, alternating, in one process.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=("train", "dev"))
    parser.add_argument("--limit", type=int, default=300, help="first N requests of each file")
    parser.add_argument("--osmnl-dir", help="also the OsmNL dev files (dev.<lang>.nl) of this folder")
    args = parser.parse_args(argv)

    from geoql.eval.dataset import load_split
    from geoql.nl import read_request
    from geoql.nl.frame import read_frame

    files = {args.split: [e.nl for e in load_split(args.split)][: args.limit]}
    if args.osmnl_dir:
        for path in sorted(Path(args.osmnl_dir).glob("dev.*.nl")):
            files[path.name.split(".")[1]] = path.read_text(encoding="utf-8").splitlines()[: args.limit]
    print(f"{'requests':10s} {'n':>5s} {'read_request p50':>17s} {'p90':>7s} {'read_frame p50':>15s} {'p90':>7s}  (ms)")
    for name, nls in files.items():
        for nl in nls:
            read_request(nl)
        times: dict = {read_request: [], read_frame: []}
        for i, nl in enumerate(nls):
            for reader in (read_request, read_frame) if i % 2 == 0 else (read_frame, read_request):
                start = time.perf_counter()
                reader(nl)
                times[reader].append((time.perf_counter() - start) * 1000)

        def pct(xs: list[float], p: float) -> float:
            xs = sorted(xs)
            return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]

        r, f = times[read_request], times[read_frame]
        print(f"{name:10s} {len(nls):5d} {statistics.median(r):17.3f} {pct(r, 90):7.3f} {statistics.median(f):15.3f} {pct(f, 90):7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
