"""Speed and exactness of the OverpassQL converter on the reference rows.

    GEOQL_DATA_DIR=../shared/overpassnl .venv/bin/python benchmarks/bench_overpassql.py

Prints: seconds to parse + serialise all gold queries to XML (cold cache), the time of
``has_output`` against a parse, of a repeated ``parse`` (a clone of the kept tree) against a fresh one, the exact-match rates of XML / compact QL / pretty QL / stderr against the reference,
and the round-trip rate ``dump(parse(query)) == query`` on the raw gold queries.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _rows(data_dir: Path, name: str) -> list[dict]:
    with open(data_dir / "reference" / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=os.environ.get("GEOQL_DATA_DIR", "../shared/overpassnl"),
                    help="OverpassNL directory with reference/*.jsonl")
    ap.add_argument("--repeat", type=int, default=3, help="timing runs (best is reported)")
    args = ap.parse_args()
    data_dir = Path(args.data_dir)
    if not (data_dir / "reference" / "gold_reference.jsonl").is_file():
        print(f"reference files not found under {data_dir}: pass --data-dir", file=sys.stderr)
        return 2

    from tqdm import tqdm

    import overpassql
    from overpassql.api import _convert_uncached
    from overpassql.xml import element_to_xml

    gold = _rows(data_dir, "gold_reference.jsonl")
    conformance = _rows(data_dir, "conformance.jsonl")
    inputs = [r["converter_input"] for r in gold]

    best = float("inf")
    for _ in range(args.repeat):
        start = time.perf_counter()
        for text in inputs:
            element_to_xml(_convert_uncached(text)[1])
        best = min(best, time.perf_counter() - start)
    print(f"parse+XML, {len(inputs)} gold queries, no cache: {best:.2f} s "
          f"({best / len(inputs) * 1e3:.3f} ms/query)")

    for label in ("to_xml, first call (fills the cache)", "to_xml, repeated (cache hits)"):
        start = time.perf_counter()
        for text in inputs:
            overpassql.to_xml(text)
        print(f"{label}: {time.perf_counter() - start:.3f} s")

    # has_output is asked for every candidate of a CPU pool: textual, against the parsed tree.
    queries = [r["query"] for r in gold]
    start = time.perf_counter()
    textual = [overpassql.has_output(q) for q in queries]
    text_s = time.perf_counter() - start
    start = time.perf_counter()
    parsed = [any(isinstance(n, overpassql.ast.Out) for n in overpassql.walk(overpassql.parse(q, collect_errors=True)))
              for q in queries]
    tree_s = time.perf_counter() - start
    print(f"has_output, {len(queries)} gold queries: {text_s * 1e6 / len(queries):.1f} us/query; parse + walk "
          f"{tree_s * 1e6 / len(queries):.1f} us/query (ratio {tree_s / text_s:.1f}); "
          f"same answer for {sum(a == b for a, b in zip(textual, parsed))}")

    # overpassql.parse keeps recent trees (1,024) and hands out clones: a repeated text costs a clone.
    from overpassql.parser import Parser

    kept = queries[:1000]
    trees = [overpassql.parse(q, collect_errors=True) for q in kept]  # fills the cache

    def best_of(fn) -> float:
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return min(times) / len(kept)

    fresh = best_of(lambda: [Parser(q).parse() for q in kept])
    again = best_of(lambda: [overpassql.parse(q, collect_errors=True) for q in kept])
    walked = best_of(lambda: [sum(1 for _ in overpassql.walk(t)) for t in trees])
    print(f"parse, {len(kept)} gold queries: afresh {fresh * 1e6:.1f} us/query; again (a clone of the kept tree) "
          f"{again * 1e6:.1f} us/query (ratio {fresh / again:.1f}); walk {walked * 1e6:.1f} us/query")

    def rate(rows, field, fn) -> str:
        ok = sum(fn(r) == r[field] for r in tqdm(rows, desc=field, leave=False, disable=None))
        return f"{ok}/{len(rows)} ({100 * ok / len(rows):.2f} %)"

    def stderr(r) -> str:
        return "\n".join(str(d) for d in overpassql.to_xml_with_errors(r["converter_input"])[1])

    print("gold xml        ", rate(gold, "xml", lambda r: overpassql.to_xml(r["converter_input"])))
    print("gold compact_ql ", rate(gold, "compact_ql", lambda r: overpassql.to_ql(r["converter_input"])))
    print("gold pretty_ql  ", rate(gold, "pretty_ql",
                                   lambda r: overpassql.to_ql(r["converter_input"], pretty=True)))
    print("gold stderr     ", rate(gold, "stderr", stderr))
    print("conformance xml ", rate(conformance, "xml",
                                   lambda r: overpassql.to_xml(r["converter_input"])))
    print("conformance stderr", rate(conformance, "stderr", stderr))
    print("turbo step (all rows)", rate(gold + conformance, "converter_input",
                                        lambda r: overpassql.replace_turbo_vars(r["query"])))

    def roundtrip(r) -> str:
        try:
            return overpassql.dump(overpassql.parse(r["query"], collect_errors=True))
        except overpassql.OverpassQLError:
            return ""
    print("dump(parse(query)) == query", rate(gold, "query", roundtrip))
    canonical = [r for r in gold if r["compact_ql"] == r["converter_input"]]
    print("  on queries already in canonical compact form", rate(canonical, "query", roundtrip))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
