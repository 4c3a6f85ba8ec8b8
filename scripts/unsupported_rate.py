"""The share of queries whose constants their requests do not support.

    python scripts/unsupported_rate.py REQUESTS QUERIES [--aliases-from DIR] [--examples N]
    python scripts/unsupported_rate.py --osmnl DIR [--langs en,de,...] [--aliases-from DIR]

REQUESTS and QUERIES hold one request / one query per line (the OverpassNL format);
line i of one goes with line i of the other. ``--aliases-from`` learns other spellings
of places from ``DIR/dataset.train.{nl,query}`` first (see
``geoql.eval.faithfulness.learn_place_aliases``). ``--osmnl DIR`` measures every
``DIR/dev.<lang>.{nl,query}`` pair and prints one line per language.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from geoql.eval.faithfulness import CORE_KINDS, learn_place_aliases, measure


def _lines(path: str) -> list[str]:
    text = Path(path).read_text(encoding="utf-8")
    return text[:-1].split("\n") if text.endswith("\n") else text.split("\n")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("requests", nargs="?")
    p.add_argument("queries", nargs="?")
    p.add_argument("--osmnl", metavar="DIR", help="folder of dev.<lang>.{nl,query}: a table over its languages")
    p.add_argument("--langs", default="en,de,fr,ru,zh,yue,ja,ko", help="languages for --osmnl")
    p.add_argument("--aliases-from", metavar="DIR", help="OverpassNL directory whose train split teaches place spellings")
    p.add_argument("--examples", type=int, default=3, help="examples shown per kind (default 3)")
    args = p.parse_args(argv)
    aliases = None
    if args.aliases_from:
        t0 = time.perf_counter()
        d = Path(args.aliases_from)
        aliases = learn_place_aliases(zip(_lines(d / "dataset.train.nl"), _lines(d / "dataset.train.query")))
        print(f"learned spellings of {len(aliases)} places in {time.perf_counter() - t0:.2f} s")
    if args.osmnl:
        print(f"{'lang':5s} {'queries':>7s} {'core':>7s} {'any':>7s}  (core: unsupported {'/'.join(CORE_KINDS)})")
        for lang in args.langs.split(","):
            d = Path(args.osmnl)
            report = measure(_lines(d / f"dev.{lang}.nl"), _lines(d / f"dev.{lang}.query"), aliases=aliases)
            print(f"{lang:5s} {report.total:7d} {report.share(report.any_core):7.1%} {report.share(report.any_kind):7.1%}")
        return
    if not (args.requests and args.queries):
        p.error("give REQUESTS and QUERIES, or --osmnl DIR")
    requests, queries = _lines(args.requests), _lines(args.queries)
    if len(requests) != len(queries):
        p.error(f"{args.requests} has {len(requests)} lines, {args.queries} {len(queries)}: give files of one split")
    t0 = time.perf_counter()
    report = measure(requests, queries, aliases=aliases, n_examples=args.examples)
    elapsed = time.perf_counter() - t0
    print(report.format(args.examples))
    print(f"{elapsed / max(report.total, 1) * 1000:.2f} ms a query")


if __name__ == "__main__":
    main()
