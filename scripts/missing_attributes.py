"""How often an answer says an attribute is missing where the request's gold query does: the
``attr_no`` class of the user-request benchmark, measured on other people's wording.

    python scripts/missing_attributes.py --data-dir DIR/overpassnl --osmnl-dir DIR/osmnl [-o KEY=VALUE] [--show N]

The rows are those of OverpassNL dev (``dataset.dev.{nl,query}``) and of each OsmNL dev language
(``dev.<lang>.{nl,query}``) whose gold query says an attribute of the hand-kept table
(``geoql.nl.attributes``: name, wheelchair, surface, ref, maxspeed ...) is missing (``[!"key"]``,
``["key"!~".*"]``) or ``no`` (``["key"="no"]``, ``["key"!="yes"]``). A row counts when the CPU
default's answer (``compile()``) carries one of those keys the same way, or its composition
(``geoql.app.compose``) does: the answer may be a copy-edit that composition would have bettered.
Gold queries also carry such filters that their requests never say ("caravan sites in Bayern" with
``[!"name"]``): the share is a floor, to compare code against code, not a recall.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import overpassql
from overpassql import ast as A
from tqdm import tqdm

from geoql.app.compile import Compiler
from geoql.app.compose import compose
from geoql.eval.license import any_value
from geoql.nl.attributes import attributes

OSMNL_LANGUAGES = ("en", "de", "fr", "ru", "zh", "yue", "ja", "ko")


def missing_keys(query: str, keys: frozenset[str]) -> frozenset[str]:
    """The keys of ``keys`` that ``query`` asks missing or ``no``.

    >>> sorted(missing_keys('nwr[amenity=cafe][!"name"]["wheelchair"="no"]["lit"!~".*"];out;', frozenset({"name", "wheelchair", "lit", "fee"})))
    ['lit', 'name', 'wheelchair']
    >>> sorted(missing_keys('nwr["name"]["fee"="yes"];out;', frozenset({"name", "fee"})))
    []
    """
    try:
        script = overpassql.parse(query)
    except overpassql.OverpassQLError:
        return frozenset()
    found = set()
    for node in A.walk(script):
        if not isinstance(node, A.Tag) or node.key not in keys:
            continue
        # ([!"key"] or ["key"!~".*"]: the key with no value at all)
        if any_value(node) and node.op in ("not_exists", "!~") or (node.op, node.value) in (("=", "no"), ("!=", "yes")):
            found.add(node.key)
    return frozenset(found)


def _pairs(args) -> list[tuple[str, Path, Path]]:
    pairs = []
    if args.data_dir:
        d = Path(args.data_dir)
        pairs.append(("overpassnl", d / "dataset.dev.nl", d / "dataset.dev.query"))
    if args.osmnl_dir:
        d = Path(args.osmnl_dir)
        pairs += [(f"osmnl-{lang}", d / f"dev.{lang}.nl", d / f"dev.{lang}.query") for lang in OSMNL_LANGUAGES]
    return pairs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", help="the OverpassNL folder (dataset.dev.nl, dataset.dev.query)")
    ap.add_argument("--osmnl-dir", help="the OsmNL folder (dev.<lang>.nl, dev.<lang>.query)")
    ap.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                    help="a compile option, as geoql compile takes it (model_dir=DIR, index_dir=DIR)")
    ap.add_argument("--show", type=int, default=0, metavar="N", help="list the first N misses of each file")
    args = ap.parse_args(argv)
    pairs = _pairs(args)
    if not pairs:
        ap.error("give --data-dir, --osmnl-dir or both")
    for _, nl_path, query_path in pairs:
        if not nl_path.is_file() or not query_path.is_file():
            print(f"missing_attributes: no {nl_path} or {query_path}", file=sys.stderr)
            return 2
    keys = frozenset(a.key for a in attributes().values() if a.key)
    compiler = Compiler(**dict(o.split("=", 1) for o in args.option if "=" in o))
    total = hit = 0
    for name, nl_path, query_path in pairs:
        nls = nl_path.read_text(encoding="utf-8").splitlines()
        golds = query_path.read_text(encoding="utf-8").splitlines()
        rows = [(i, nl, missing_keys(q, keys)) for i, (nl, q) in enumerate(zip(nls, golds))]
        rows = [r for r in rows if r[2]]
        misses = []
        for i, nl, want in tqdm(rows, desc=name, leave=False, disable=not sys.stderr.isatty()):
            comp = compiler.compile(nl)
            said = missing_keys(comp.query or "", keys) | missing_keys(compose(comp.request) or "", keys)
            if want & said:
                hit += 1
            else:
                misses.append(f"  {name}:{i + 1} wants {', '.join(sorted(want))} missing | {nl[:120]}")
        total += len(rows)
        print(f"{name}: {len(rows) - len(misses)}/{len(rows)} {100 * (len(rows) - len(misses)) / max(len(rows), 1):.1f} %")
        for line in misses[:args.show]:
            print(line)
    print(f"all: {hit}/{total} {100 * hit / max(total, 1):.1f} %")
    compiler.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
