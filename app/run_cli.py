"""``geoql run``: compile a request (or take a query) and run it on Overpass.

    geoql run "benches in Zurich"                  # writes geoql-benches-in-zurich.geojson
    geoql run --query 'node["amenity"="bench"]({{bbox}});out;' --bbox 47.36,8.53,47.38,8.56
    geoql run "how many pharmacies in Berlin" --out -   # the count as CSV on stdout

The messages are the demo's (``geoql.app.run``): the retry countdown and what happened
go to stderr, the result to the file (GeoJSON, or CSV for a count).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import overpassql

from geoql.app.compile import Compiler
from geoql.app.run import ENDPOINTS, export, make_client, mark_problems, run_query, slug
from geoql.core.errors import ConfigError, UserError
from geoql.core.files import write_atomic


def register(subparsers) -> None:
    p = subparsers.add_parser("run", help="compile a request (or take a query) and run it on Overpass",
                              description="Compile a request into OverpassQL and run it, or run a query you give.")
    p.add_argument("request", nargs="?", help="the request, e.g. 'benches in Zurich'")
    p.add_argument("--query", "-q", help="run this OverpassQL query instead of compiling a request")
    p.add_argument("--bbox", help="map area for {{bbox}}: south,west,north,east, e.g. 47.36,8.53,47.38,8.56")
    p.add_argument("--endpoint", help="Overpass server: " + ", ".join(n for n, _ in ENDPOINTS)
                   + " (default: the first), or any interpreter URL")
    p.add_argument("--out", "-o", help="where to write the result (default: geoql-<request>.geojson, or .csv "
                   "for a count, in the current directory; '-' for stdout)")
    p.add_argument("--backend", help="compiler backend (default: the CPU default)")
    p.add_argument("--nominatim-url", help="Nominatim /search endpoint for {{geocodeArea:...}}")
    p.add_argument("--cache-dir", help="result and geocoder caches (default: the user cache)")
    p.add_argument("--no-cache", action="store_true", help="send the query even when the answer is cached")
    p.set_defaults(handler=_run)


def _say(message: str) -> None:
    print(f"geoql run: {message}", file=sys.stderr, flush=True)


def _run(args: argparse.Namespace) -> int:
    if bool(args.request) == bool(args.query):
        raise UserError('give a request (geoql run "benches in Zurich") or --query QL, not both')
    options = {"cache_dir": args.cache_dir}
    if args.nominatim_url:
        options["nominatim_url"] = args.nominatim_url
    try:
        client = make_client(args.endpoint, **options)
    except (ConfigError, ValueError) as exc:
        raise UserError(str(exc)) from None
    query, name = args.query, args.request or ""
    if args.request:
        compilation = Compiler(args.backend).compile(args.request)
        if not compilation.query:
            raise UserError("; ".join(compilation.errors) or "no query")
        query = compilation.query
        print(query)
        for doubt in getattr(compilation, "doubts", None) or []:
            _say(f"warning: {doubt}")
    last = [""]

    def countdown(message: str) -> None:
        # On a terminal the countdown ticks in place; in a log each retry is one line.
        if sys.stderr.isatty():
            print(f"\rgeoql run: {message}   ", end="", file=sys.stderr, flush=True)
        elif message.split(";")[0] + message.rsplit("(", 1)[-1] != last[0]:
            _say(message)
        last[0] = message.split(";")[0] + message.rsplit("(", 1)[-1]

    result = run_query(query, bbox=args.bbox, client=client, on_wait=countdown, use_cache=not args.no_cache)
    if last[0] and sys.stderr.isatty():
        print(file=sys.stderr)
    if not result.ok:
        if result.problems:
            print(mark_problems(query, result.problems), file=sys.stderr)
        _say(result.message)
        if result.kind == "expansion" and args.bbox is None and "{{bbox}}" in result.message:
            _say("give the map box with --bbox south,west,north,east, e.g. --bbox 47.36,8.53,47.38,8.56")
        return 1
    _say(result.message)
    _say(result.summary())
    # The export is made in a folder of its own that goes with it, whatever happens next.
    with tempfile.TemporaryDirectory(prefix="geoql-run-") as scratch:
        if args.out == "-":
            path = export(result, Path(scratch), name or "result")
            sys.stdout.write(path.read_text(encoding="utf-8"))
            return 0
        path = export(result, Path(scratch), name or _name_of(query))
        target = Path(args.out) if args.out else Path.cwd() / path.name
        if target.is_dir():
            target = target / path.name
        write_atomic(target, path.read_bytes())
    _say(f"wrote {target}")
    return 0


def _name_of(query: str) -> str:
    """A file name for a bare query: its first tag's value, e.g. ``bench``."""
    try:
        tags = [t for t in overpassql.tag_filters(query) if t.op == "=" and not t.key_regex]
    except Exception:  # a name is a nicety
        tags = []
    return slug(tags[0].value) if tags else "result"
