"""Answers of two checkouts, request by request: does a refactor change what ``compile()`` says?

``dump`` compiles the OverpassNL dev requests and the first requests of each OsmNL dev language with
the default backend (the CPU default, its model and index in the user data dir unless
``GEOQL_CPU_MODEL_DIR`` / ``GEOQL_INDEX_DIR`` say otherwise) and writes one JSON line per request:
the query, the unlicensed parts, the confidence and the other judgements of the answer, and
the tags and training requests it used. It reads only ``Compiler`` and ``Compilation.as_dict``,
so the same script runs in an older checkout. ``diff`` lists what differs between two dumps::

    GEOQL_DATA_DIR=../shared/overpassnl .venv/bin/python scripts/compare_answers.py dump --out after.jsonl
    (cd ../before && GEOQL_DATA_DIR=../shared/overpassnl .venv/bin/python ../hreader/scripts/compare_answers.py \
        dump --out before.jsonl)
    .venv/bin/python scripts/compare_answers.py diff before.jsonl after.jsonl

``reading`` writes, for every training, dev and OsmNL dev request, the fields of its
``geoql.nl.Request`` that ``compile()``'s steps read (retrieval, the CPU default, the checks, the
confidence), read without and with the CPU model's knowledge: a change that only adds to the
reading (a new field) must leave them as they are, which ``diff`` of two such files shows in
seconds, without compiling anything.

``diff`` exits with 1 when a query or a reading differs (or a request is missing), so it can
gate a commit.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

# What each line keeps of a Compilation: the answer first, then how it is judged and what it used.
ANSWER = "query"
JUDGED = ("valid", "errors", "unlicensed", "confidence", "uncovered", "nearest", "far", "off_topic",
          "low_confidence", "no_output", "doubts")
USED = ("tags", "examples")


def _requests(args) -> list[tuple[str, int, str]]:
    """(set, line, request) of OverpassNL dev and the first ``--osmnl-limit`` of each OsmNL dev file."""
    out = []
    if args.overpassnl_dir:
        lines = Path(args.overpassnl_dir, "dataset.dev.nl").read_text(encoding="utf-8").splitlines()
        out += [("orig", i + 1, nl) for i, nl in enumerate(lines[: args.limit])]
    if args.osmnl_dir:
        for path in sorted(Path(args.osmnl_dir).glob("dev.*.nl")):
            lang = path.name.split(".")[1]
            lines = path.read_text(encoding="utf-8").splitlines()
            out += [(lang, i + 1, nl) for i, nl in enumerate(lines[: args.osmnl_limit])]
    return out


def _row(where: tuple[str, int, str], comp: dict) -> dict:
    def tag(t):
        return [t.get("tag"), t.get("score")] if isinstance(t, dict) else t

    def example(e):
        return [e.get("index"), e.get("score")] if isinstance(e, dict) else e

    row = {"set": where[0], "line": where[1], "nl": where[2], ANSWER: comp.get(ANSWER, "")}
    for name in JUDGED:
        value = comp.get(name)
        if name == "unlicensed":
            value = [[p.get("kind"), p.get("text")] for p in value or ()]
        row[name] = value
    row["tags"] = [tag(t) for t in comp.get("tags") or ()]
    row["examples"] = [example(e) for e in comp.get("examples") or ()]
    return row


def dump(args) -> int:
    from tqdm import tqdm

    from geoql.app.compile import Compiler

    requests = _requests(args)
    compiler = Compiler(args.backend)
    out = Path(args.out)
    with out.open("w", encoding="utf-8") as f:
        for start in tqdm(range(0, len(requests), 16), desc="compiling", unit="batch"):
            chunk = requests[start:start + 16]
            for where, comp in zip(chunk, compiler.compile_batch([nl for _, _, nl in chunk])):
                f.write(json.dumps(_row(where, comp.as_dict()), ensure_ascii=False) + "\n")
    print(f"{len(requests)} answers -> {out}")
    return 0


def _canon(value):
    """A reading's part as plain, ordered data (frozensets sorted: their order changes with the hash seed)."""
    if dataclasses.is_dataclass(value):
        return {f.name: _canon(getattr(value, f.name)) for f in dataclasses.fields(value) if not f.name.startswith("_")}
    if isinstance(value, dict):
        return {k: _canon(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(map(str, value))
    if isinstance(value, (list, tuple)):
        return [_canon(v) for v in value]
    return value if isinstance(value, (str, int, float, bool, type(None))) else str(value)


def consumed(request) -> str | None:
    """The fields of a Request that compile()'s steps read, as one line of JSON."""
    if request is None:
        return None
    around = request.around
    support = request.support
    return json.dumps(_canon({
        "language": request.language, "script": request.script, "what": request.what, "negated": request.negated,
        "place_names": request.place_names, "place": request.place, "opening_place": request.opening_place,
        "in_view": request.in_view, "bbox": request.bbox, "coords": request.coords, "area_ids": request.area_ids,
        "ids": request.ids, "uids": request.uids, "users": request.users, "names": request.names, "quoted": request.quoted,
        "types": request.types, "output": request.output, "dates": request.dates, "periods": request.periods,
        "since": request.since, "words": request.words, "stems": request.stems, "topic_words": request.topic_words,
        "about_places": request.about_places, "english": request.english, "english_with_frame": request.english_with_frame,
        "around": None if around is None else [around.radius_m, around.of, consumed(around.of_request)],
        "support": [support.words, support.joined, support.grams, sorted(map(str, support.numbers)), support.digits,
                    support.dates, sorted(map(str, support.periods))],
    }), ensure_ascii=False, sort_keys=True)


def reading(args) -> int:
    from tqdm import tqdm

    from geoql.app.backends import get_backend
    from geoql.eval.dataset import load_split
    from geoql.nl import read_request

    knowledge = get_backend("cpu", train_if_missing=False).knowledge()  # the CPU model's places and tag names
    requests = [("train", i + 1, e.nl) for i, e in enumerate(load_split("train", args.overpassnl_dir or None))]
    requests += _requests(args)
    with Path(args.out).open("w", encoding="utf-8") as f:
        for where, line, nl in tqdm(requests, desc="reading", unit="req"):
            nl = nl.strip()
            row = {"set": where, "line": line, "nl": nl, "reading": consumed(read_request(nl)),
                   "reading_known": consumed(read_request(nl, knowledge))}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(requests)} readings -> {args.out}")
    return 0


def _read(path: str) -> dict:
    rows = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        rows[(row["set"], row["line"])] = row
    return rows


def diff(args) -> int:
    before, after = _read(args.before), _read(args.after)
    missing = sorted(set(before) ^ set(after))
    first = next(iter(before.values()), {})
    names = (ANSWER, *JUDGED, *USED) if ANSWER in first else tuple(k for k in first if k not in ("set", "line", "nl"))
    counts = {name: 0 for name in names}
    shown: dict[str, int] = {}
    for key in sorted(set(before) & set(after)):
        a, b = before[key], after[key]
        for name in counts:
            if a.get(name) != b.get(name):
                counts[name] += 1
                if shown.get(name, 0) < args.show:
                    shown[name] = shown.get(name, 0) + 1
                    print(f"{name} differs, {key[0]} line {key[1]}: {a['nl'][:90]}\n  before: {a.get(name)}\n  after:  {b.get(name)}")
    total = len(set(before) & set(after))
    by_set: dict[str, int] = {}
    for key in before:
        by_set[key[0]] = by_set.get(key[0], 0) + 1
    print(f"requests compared: {total} ({', '.join(f'{s} {n}' for s, n in sorted(by_set.items()))})")
    for name, n in counts.items():
        print(f"  {name:15s} {'identical' if n == 0 else f'{n} differ'}")
    if missing:
        print(f"  in one file only: {len(missing)} (e.g. {missing[:3]})")
    gates = [n for n in counts if n == ANSWER or n.startswith("reading")]
    return 1 if any(counts[n] for n in gates) or missing else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump", help="compile the requests and write one JSON line per answer")
    d.add_argument("--out", required=True)
    d.add_argument("--overpassnl-dir", default="../shared/overpassnl", help="OverpassNL dataset ('' to skip)")
    d.add_argument("--osmnl-dir", default="../shared/osmnl", help="OsmNL dev files ('' to skip)")
    d.add_argument("--limit", type=int, help="only the first N OverpassNL dev requests")
    d.add_argument("--osmnl-limit", type=int, default=200, help="requests per OsmNL dev language")
    d.add_argument("--backend", default="cpu")
    d.set_defaults(run=dump)
    r = sub.add_parser("reading", help="write the Request fields compile() reads, for every request")
    r.add_argument("--out", required=True)
    r.add_argument("--overpassnl-dir", default="../shared/overpassnl", help="OverpassNL dataset")
    r.add_argument("--osmnl-dir", default="../shared/osmnl", help="OsmNL dev files ('' to skip)")
    r.add_argument("--limit", type=int, help="only the first N OverpassNL dev requests")
    r.add_argument("--osmnl-limit", type=int, help="requests per OsmNL dev language (default: all)")
    r.set_defaults(run=reading)
    c = sub.add_parser("diff", help="compare two dumps (answers or readings); exit 1 when a query or reading differs")
    c.add_argument("before")
    c.add_argument("after")
    c.add_argument("--show", type=int, default=3, help="examples printed per differing field")
    c.set_defaults(run=diff)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
