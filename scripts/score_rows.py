"""Score request rows written in the user-request benchmark's format with a backend: the share of
answers that carry every fact and nothing foreign, per file, with the misses.

    python scripts/score_rows.py docs/notes/2026-12-probes/probes1.jsonl [...] [--backend cpu] [-o KEY=VALUE] [--show N]

The rows are those of ``eval/data/user_requests.jsonl`` (``geoql.eval.userbench``: facts, places from
``eval/data/user_places.json``); the split field is read, not used. For probe sets written while
working on the reading (``docs/notes/2026-12-probes/``), which ``geoql eval-requests`` does not hold:
its two halves stay the benchmark.
"""

from __future__ import annotations

import argparse
import sys

from geoql.app.compile import compile as compile_request
from geoql.core.errors import GeoqlError
from geoql.eval.userbench import format_report, load_rows, score


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", help="JSONL files of rows in the benchmark's format")
    ap.add_argument("--backend", default=None, help="the backend to answer with (default: the CPU default)")
    ap.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                    help="a compile option, as geoql compile takes it (model_dir=DIR, index_dir=DIR)")
    ap.add_argument("--show", type=int, default=0, metavar="N", help="list the first N misses of each file")
    args = ap.parse_args(argv)
    options = dict(o.split("=", 1) for o in args.option if "=" in o)
    total = ok = 0
    for path in args.files:
        try:
            rows = load_rows("all", requests_file=path)
        except GeoqlError as exc:
            print(f"{path}: {exc}", file=sys.stderr)
            return 2
        answers = [compile_request(r.request, backend=args.backend, **options).query or "" for r in rows]
        report = score(rows, answers)
        total, ok = total + report.n, ok + report.ok
        print(f"{path}: {report.ok}/{report.n} {report.share():.1f} %")
        if args.show:
            print(format_report(report, title=path, misses=args.show))
    if len(args.files) > 1:
        print(f"all: {ok}/{total} {100 * ok / max(total, 1):.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
