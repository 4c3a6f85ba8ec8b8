"""The share of answers with a part their request does not license, per set and per kind: one table.

    python scripts/unlicensed_rate.py --overpassnl ../shared/overpassnl [--pred-dir DIR] [--compile-into NEW] \\
        [--osmnl ../shared/osmnl [--langs en,de,...]] [--userbench ANSWERS.jsonl ...] [--limit N] [--evidence cpu|none]
    python scripts/unlicensed_rate.py REQUESTS QUERIES [--evidence cpu|none] [--examples N]

Each answer is judged by ``geoql.eval.license.unlicensed_parts`` against its request as ``compile()``
reads it, with the tag evidence the CPU default answers from (``--evidence cpu``, the default: its tag
hits at ``MIN_HIT`` or more and the words its lexicon ties to tags; the model and index of
``$GEOQL_CPU_MODEL_DIR`` / ``$GEOQL_INDEX_DIR`` or the user data dir) or none (``--evidence none``:
the request's own words, as ``geoql eval --unlicensed`` judges a file). The gold queries of a request
are judged with the same evidence as the answer, so the two rates compare.

Rows: the OverpassNL dev gold and ``DIR/dev.orig.pred``; per OsmNL language (``--osmnl``), the
OverpassNL dev gold against that language's requests, the language's own gold and
``DIR/dev.<lang>.pred`` (the files ``geoql eval-languages --original --out-dir DIR`` writes: a "before");
with ``--compile-into NEW``, the CPU default's answers now, compiled in the same pass that reads its
evidence (``CpuModel.compile``, as its backend answers) and written to ``NEW/dev.<lang>.pred``; the
user-request benchmark's dev answers (``--userbench``, repeatable: the JSONL of ``geoql eval-requests
--split dev --answers FILE``). Place spellings learned from the OverpassNL train split license a place.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from geoql.core.files import write_atomic
from geoql.eval.faithfulness import train_place_aliases
from geoql.eval.license import CORE_KINDS, KINDS, TagEvidence, measure
from geoql.nl.request import read_request

SHORT = {"setting": "settng", "output": "output", "number": "numbr"}


def _lines(path) -> list[str]:
    text = Path(path).read_text(encoding="utf-8")
    return text[:-1].split("\n") if text.endswith("\n") else text.split("\n")


class Reader:
    """Requests as ``compile()`` reads them for the CPU default, with its tag evidence (or none)."""

    def __init__(self, evidence: str):
        self.model = None
        if evidence == "cpu":
            from geoql.app.cpu.model import CpuModel

            self.model = CpuModel.load()

    def read(self, nls: list[str], label: str, answers: list | None = None) -> tuple[list, list | None]:
        """The requests and their evidence; ``answers``: filled with the CPU default's answer to each."""
        t0 = time.perf_counter()
        if self.model is None:
            return [read_request(nl) for nl in nls], None
        requests, evidence = [], []
        for nl in nls:
            request = self.model.read(nl)
            found = self.model.retrieve(request)
            requests.append(request)
            evidence.append(TagEvidence.of(request, hits=found.hits or (), word_tags=self.model.lexicon.word_tag))
            if answers is not None:
                answers.append(self.model.compile(request, retrieved=found)[0])
        print(f"  read {label}: {len(nls)} requests with the CPU default's evidence in {time.perf_counter() - t0:.0f} s",
              file=sys.stderr)
        return requests, evidence


def header() -> str:
    kinds = " ".join(f"{SHORT.get(k, k):>6}" for k in KINDS)
    return f"{'set':<10} {'answers':<16} {'n':>5} {'any':>6} {'core':>6}  {kinds}"


def row(name: str, what: str, report) -> str:
    d = report.as_dict()
    kinds = " ".join(f"{d[k]:6.1f}" for k in KINDS)
    return f"{name:<10} {what:<16} {d['n']:5d} {d['any']:6.1f} {d['core']:6.1f}  {kinds}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("requests", nargs="?", help="one request a line")
    p.add_argument("queries", nargs="?", help="one query a line, line i for request i")
    p.add_argument("--overpassnl", metavar="DIR", help="OverpassNL: its dev requests and gold, its train split's place spellings")
    p.add_argument("--pred-dir", metavar="DIR", help="dev.orig.pred and dev.<lang>.pred (geoql eval-languages --out-dir)")
    p.add_argument("--osmnl", metavar="DIR", help="OsmNL dev.<lang>.{nl,query}")
    p.add_argument("--langs", default="en,de,fr,ru,zh,yue,ja,ko", help="languages of --osmnl")
    p.add_argument("--compile-into", metavar="NEW", help="also compile each request with the CPU default (--evidence cpu) "
                   "and write NEW/dev.<set>.pred: a row 'answers now'")
    p.add_argument("--userbench", metavar="ANSWERS", action="append", default=[],
                   help="the user-request benchmark's dev answers (JSONL: id, query); repeatable")
    p.add_argument("--limit", type=int, help="the first N requests of each set")
    p.add_argument("--evidence", choices=("cpu", "none"), default="cpu", help="the tag evidence (default: the CPU default's)")
    p.add_argument("--examples", type=int, default=3, help="examples per kind for REQUESTS QUERIES")
    args = p.parse_args(argv)
    aliases = train_place_aliases(args.overpassnl)
    reader = Reader(args.evidence)
    n = args.limit

    if args.requests or args.queries:
        if not (args.requests and args.queries):
            p.error("give REQUESTS and QUERIES together")
        nls, queries = _lines(args.requests)[:n], _lines(args.queries)[:n]
        if len(nls) != len(queries):
            p.error(f"{args.requests} has {len(nls)} lines, {args.queries} {len(queries)}: give files of one split")
        requests, evidence = reader.read(nls, Path(args.requests).name)
        print(measure(requests, queries, aliases=aliases, evidence=evidence).format(args.examples))
        return 0
    if not args.overpassnl:
        p.error("give REQUESTS QUERIES, or --overpassnl DIR (with --pred-dir, --osmnl, --userbench)")

    print(f"unlicensed parts, % of answers (any: at least one part; core: of a kind that changes the elements, "
          f"{'/'.join(CORE_KINDS)}); tag evidence: {args.evidence}")
    print(header())
    base = Path(args.overpassnl)
    gold = _lines(base / "dataset.dev.query")[:n]
    preds = Path(args.pred_dir) if args.pred_dir else None
    sets = [("orig", base / "dataset.dev.nl", None)]
    if args.osmnl:
        sets += [(lang, Path(args.osmnl) / f"dev.{lang}.nl", Path(args.osmnl) / f"dev.{lang}.query")
                 for lang in args.langs.split(",")]
    new = Path(args.compile_into) if args.compile_into else None
    if new is not None:
        if reader.model is None:
            p.error("--compile-into compiles with the CPU default: drop --evidence none")
        new.mkdir(parents=True, exist_ok=True)
    for name, nl_file, own_file in sets:
        now: list | None = [] if new is not None else None
        requests, evidence = reader.read(_lines(nl_file)[:n], name, now)
        print(row(name, "OverpassNL gold", measure(requests, gold, aliases=aliases, evidence=evidence)))
        if own_file is not None:
            print(row(name, "own gold", measure(requests, _lines(own_file)[:n], aliases=aliases, evidence=evidence)))
        pred_file = preds / f"dev.{name}.pred" if preds else None
        if pred_file is not None and pred_file.is_file():
            answers = _lines(pred_file)[: len(requests)]
            print(row(name, "answers", measure(requests, answers, aliases=aliases, evidence=evidence)), flush=True)
        if now is not None:
            write_atomic(new / f"dev.{name}.pred", "".join(q.replace("\n", " ") + "\n" for q in now))
            print(row(name, "answers now", measure(requests, now, aliases=aliases, evidence=evidence)), flush=True)
    if args.userbench:
        from geoql.eval.userbench import load_rows, read_answers

        rows = load_rows("dev")[:n]
        requests, evidence = reader.read([r.request for r in rows], "userbench dev")
        for path in args.userbench:
            answers = read_answers(path, rows)
            print(row("userbench", Path(path).stem[:16], measure(requests, answers, aliases=aliases, evidence=evidence)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
