"""``geoql ql``: convert one OverpassQL query the way osm3s_query does.

    geoql ql xml 'node["amenity"="cafe"];out;'      # --dump-xml --concise
    geoql ql compact QUERY | pretty QUERY          # --dump-compact-ql / --dump-pretty-ql
    geoql ql turbo QUERY                           # the metric's {{...}} replacement
    geoql ql check QUERY                           # errors as osm3s prints them; exit 1 if any

QUERY "-" (or nothing) reads standard input. ``geoql ql --turbo ACTION QUERY`` applies
the placeholder step first (what the official metric does with raw dataset queries).
"""

from __future__ import annotations

import sys

from .api import to_ql, to_xml_with_errors
from .turbo import replace_turbo_vars

ACTIONS = ("xml", "compact", "pretty", "turbo", "check")


def register(subparsers) -> None:
    p = subparsers.add_parser("ql", help="convert an OverpassQL query (XML, compact/pretty QL, "
                                         "turbo placeholders, errors)")
    p.add_argument("action", choices=ACTIONS, help="what to print")
    p.add_argument("query", nargs="?", default="-", help="the query, or - for standard input")
    p.add_argument("--turbo", action="store_true",
                   help="replace {{...}} placeholders first, as the official metric does")
    p.set_defaults(handler=run)


def run(args) -> int:
    text = sys.stdin.read() if args.query == "-" else args.query
    if args.turbo or args.action == "turbo":
        text = replace_turbo_vars(text)
    if args.action == "turbo":
        print(text)
        return 0
    xml, errors = to_xml_with_errors(text)
    for diagnostic in errors:
        print(diagnostic, file=sys.stderr)
    if args.action == "xml":
        print(xml)
    elif args.action in ("compact", "pretty"):
        print(to_ql(text, pretty=args.action == "pretty"))
    return 1 if errors and args.action == "check" else 0
