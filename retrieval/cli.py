"""``geoql retrieval-eval``: recall@k of gold tags, coverage and latency on a split, on any request/query
file pair, or per language on the OsmNL files.

With ``--requests``/``--queries`` the gold is the ``--queries`` file (its *own* gold); ``--reference-queries``
scores the same requests against a second gold too (the OverpassNL dev gold for OsmNL's files: line i of
OsmNL is line i of OverpassNL dev). ``--osmnl-dir DIR --languages en,de,...`` does that for each
``DIR/dev.<lang>.{nl,query}`` and prints one table, each language against both golds.
"""

from __future__ import annotations

import json

from geoql.core.cli import positive_int
from geoql.core.errors import ConfigError, UserError
from geoql.core.files import write_atomic
from geoql.eval.dataset import load_examples, load_split

from .tags import TagRetriever


def register(subparsers) -> None:
    parser = subparsers.add_parser("retrieval-eval", help="measure tag retrieval (recall@k, coverage, latency)")
    parser.add_argument("--split", choices=("dev", "test"), default="dev", help="evaluation split (tune on dev only)")
    parser.add_argument("--k", type=str, default="5,10,20", help="comma-separated cut-offs, e.g. 5,10,20")
    parser.add_argument("--json", type=str, default=None, metavar="OUT", help="also write the figures to this JSON file")
    parser.add_argument("--index-dir", type=str, default=None, help="index directory (default: the built default index)")
    parser.add_argument("--data-dir", type=str, default=None, help="OverpassNL directory (default: $GEOQL_DATA_DIR)")
    parser.add_argument("--misses", type=str, default=None, metavar="OUT",
                        help="write every missed gold pair (request, pair, why, the tags listed instead) to this JSONL file")
    parser.add_argument("--limit", type=positive_int, default=None, help="evaluate only the first N examples")
    parser.add_argument("--half", choices=("even", "odd"), default=None,
                        help="evaluate only every second example (even = the tuning half of dev, odd = the held-out half)")
    parser.add_argument("--requests", type=str, default=None, metavar="NL",
                        help="requests file, one a line (instead of --split; needs --queries)")
    parser.add_argument("--queries", type=str, default=None, metavar="QUERY",
                        help="gold query file of --requests, line i with line i (its own gold)")
    parser.add_argument("--reference-queries", type=str, default=None, metavar="QUERY",
                        help="also score --requests against this gold (e.g. OverpassNL's dataset.dev.query for OsmNL's dev files)")
    parser.add_argument("--osmnl-dir", type=str, default=None, metavar="DIR",
                        help="OsmNL folder with dev.<lang>.{nl,query}: one table over --languages, each against its own "
                             "gold and the OverpassNL dev gold (from --data-dir)")
    parser.add_argument("--languages", type=str, default="en,de,fr,ru,zh,yue,ja,ko",
                        help="comma-separated OsmNL language codes for --osmnl-dir (default: all eight)")
    parser.set_defaults(handler=_retrieval_eval)


def parse_ks(text: str) -> list[int]:
    """``"5,10,20"`` → [5, 10, 20]; raises ConfigError (a ValueError) naming the fix.

    >>> parse_ks("20, 5,10")
    [5, 10, 20]
    """
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise ConfigError(f"--k must be comma-separated positive integers such as 5,10,20, got {text!r}") from None
    if not ks or ks[0] < 1:
        raise ConfigError(f"--k must be comma-separated positive integers such as 5,10,20, got {text!r}")
    return ks


def _subset(examples: list, args) -> list:
    if args.limit is not None:
        examples = examples[: max(0, args.limit)]
    if args.half is not None:
        examples = examples[(0 if args.half == "even" else 1)::2]
    return examples


def _with_gold(examples: list, gold: list) -> list:
    """The same requests with another gold query, line i with line i."""
    from dataclasses import replace

    return [replace(ex, query=g.query) for ex, g in zip(examples, gold)]


def _languages(args) -> list[str]:
    langs = [lang.strip() for lang in args.languages.split(",") if lang.strip()]
    if not langs:
        raise ConfigError(f"--languages must list OsmNL language codes such as en,de,fr, got {args.languages!r}")
    return langs


def _retrieval_eval(args) -> int:
    from .evaluate import evaluate, miss_summary  # not needed for `geoql --help`

    ks = parse_ks(args.k)
    if args.osmnl_dir is not None:
        return _by_language(args, ks)
    if (args.requests is None) != (args.queries is None):
        raise UserError("--requests and --queries go together: pass both (requests and their gold queries, line i with line i)")
    reference = None
    if args.requests is not None:
        examples = load_examples(args.queries, args.requests, options=("--queries", "--requests", "--bbox"))
        if args.reference_queries is not None:
            gold = load_examples(args.reference_queries, None, options=("--reference-queries", "--requests", "--bbox"))
            if len(gold) != len(examples):
                raise UserError(f"--reference-queries has {len(gold)} lines but --queries has {len(examples)}; "
                                "they must be golds of the same requests, line i with line i")
            reference = _subset(_with_gold(examples, gold), args)
        examples = _subset(examples, args)
    else:
        if args.reference_queries is not None:
            raise UserError("--reference-queries needs --requests and --queries")
        examples = _subset(load_split(args.split, args.data_dir), args)
    retriever = TagRetriever.load(args.index_dir)
    cache: dict = {}
    report = evaluate(retriever, examples, ks, cache=cache)
    figures = report.as_json()
    if reference is not None:
        figures["gold"] = f"own ({args.queries})"
        other = evaluate(retriever, reference, ks, progress=False, cache=cache).as_json()
        figures["reference_gold"] = {"gold": args.reference_queries,
                                     **{name: value for name, value in other.items() if not isinstance(value, dict)}}
    for name, value in figures.items():
        if not isinstance(value, dict):
            print(f"{name:>16}: {value}")
    if reference is not None:
        print(f"against {args.reference_queries}: " + ", ".join(
            f"recall@{k} {figures['reference_gold'][f'recall@{k}']:.4f}" for k in ks))
    if report.by_neighbour:
        print(f"recall by cosine of the nearest training request ({', '.join(f'recall@{k}' for k in ks)}):")
        for band, row in report.by_neighbour.items():
            recalls = " ".join(f"{row[f'recall@{k}']:.3f}" for k in ks)
            print(f"{band:>16}: {row['requests']:>5} requests {row['pairs']:>5} pairs  {recalls}")
    summary = miss_summary(report.misses)
    print(f"missed at {ks[-1]}: {len(report.misses)} pairs; " + ", ".join(f"{why}: {n}" for why, n in summary["by_reason"].items()))
    print("most missed keys: " + ", ".join(f"{key} {n}" for key, n in summary["by_key"].items()))
    outputs = [(args.json, lambda: json.dumps(figures, indent=2) + "\n"),
               (args.misses, lambda: "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in report.misses))]
    for path, text in outputs:
        if path:
            try:
                write_atomic(path, text())
            except OSError as exc:
                raise UserError(f"cannot write {path}: {exc.strerror or exc}; pass a writable file path") from None
    return 0


def _by_language(args, ks: list[int]) -> int:
    """One row per OsmNL language: recall@k against the OverpassNL dev gold and against the file's own gold."""
    from pathlib import Path

    from .evaluate import evaluate

    if args.requests is not None or args.queries is not None:
        raise UserError("--osmnl-dir reads dev.<lang>.nl/.query itself; pass either it or --requests/--queries")
    folder = Path(args.osmnl_dir).expanduser()
    reference = load_split("dev", args.data_dir)
    retriever = TagRetriever.load(args.index_dir)
    rows: dict[str, dict] = {}
    for lang in _languages(args):
        own = load_examples(folder / f"dev.{lang}.query", folder / f"dev.{lang}.nl", name=f"osmnl-dev-{lang}",
                            options=(f"--osmnl-dir (dev.{lang}.query)", f"--osmnl-dir (dev.{lang}.nl)", "--bbox"))
        if len(own) != len(reference):
            raise UserError(f"{folder}/dev.{lang}.nl has {len(own)} lines, OverpassNL dev {len(reference)}; "
                            "--osmnl-dir must hold OsmNL's dev files (line i derives from OverpassNL dev line i)")
        cache: dict = {}
        mine = _subset(own, args)
        theirs = _subset(_with_gold(own, reference), args)
        # one search per request (no second search of the whole candidate list: eight languages take long enough)
        rows[lang] = {"overpassnl_gold": evaluate(retriever, theirs, ks, cache=cache, candidates=False).as_json(),
                      "own_gold": evaluate(retriever, mine, ks, progress=False, cache=cache, candidates=False).as_json()}
    head = " ".join(f"{f'@{k}':>6}" for k in ks)
    print(f"{'language':<9} {'OverpassNL dev gold':^{7 * len(ks)}} {'own (OsmNL) gold':^{7 * len(ks)}} {'p50 ms':>7}")
    print(f"{'':<9} {head} {head}")
    for lang, row in rows.items():
        cells = [f"{row[g][f'recall@{k}']:>6.3f}" for g in ("overpassnl_gold", "own_gold") for k in ks]
        print(f"{lang:<9} {' '.join(cells[:len(ks)])} {' '.join(cells[len(ks):])} {row['overpassnl_gold']['p50_ms']:>7.1f}")
    print("recall@k: gold controlled key=value pairs found in the first k tags (micro-average); OverpassNL dev gold = "
          "line i of dataset.dev.query, own gold = dev.<lang>.query")
    if args.json:
        try:
            write_atomic(args.json, json.dumps(rows, indent=2) + "\n")
        except OSError as exc:
            raise UserError(f"cannot write {args.json}: {exc.strerror or exc}; pass a writable file path") from None
    return 0
