"""``geoql eval``: score a prediction file with the official OverpassNL metrics.

    geoql eval --pred runs/dev.pred --split dev
    geoql eval --pred runs/de.pred --gold ../shared/osmnl/dev.de.query --requests ../shared/osmnl/dev.de.nl
"""

from __future__ import annotations

import argparse

from geoql.eval.report import EvalConfig, EvalInputError, evaluate, help_of


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "eval",
        help="score predictions (EM, chrF, KVS, TreeS, OQS; optionally EX)",
        description="Score a prediction file against an OverpassNL split (or any gold file in its format, "
        "--gold) with the official metrics, for all examples and the hard subset, with a failure analysis.",
    )
    parser.add_argument("--pred", required=True, metavar="FILE", help=help_of("pred"))
    parser.add_argument("--split", choices=("dev", "test"), help=help_of("split") + " (default: dev)")
    parser.add_argument("--data-dir", metavar="DIR", help=help_of("data_dir"))
    parser.add_argument("--gold", metavar="FILE", help=help_of("gold"))
    parser.add_argument("--requests", metavar="FILE", help=help_of("requests"))
    parser.add_argument("--bbox", metavar="FILE", help=help_of("bbox"))
    # --unsupported: its name before every part of an answer was checked (one release)
    parser.add_argument("--unlicensed", "--unsupported", dest="unlicensed", action="store_true", help=help_of("unlicensed"))
    parser.add_argument("--json", dest="json_out", metavar="OUT", help=help_of("json_out"))
    parser.add_argument("--per-example", dest="per_example_out", metavar="OUT.jsonl", help=help_of("per_example_out"))
    parser.add_argument("--compare", metavar="OTHER_PRED", help=help_of("compare"))
    parser.add_argument("--execution", action="store_true", help=help_of("execution"))
    parser.add_argument("--overpass-url", metavar="URL", help=help_of("overpass_url"))
    parser.add_argument("--cache-dir", metavar="DIR", help=help_of("cache_dir"))
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.gold and args.split:
        raise EvalInputError("--split and --gold both name the gold queries: give one of them")
    config = EvalConfig(
        pred=args.pred,
        split=args.split or "dev",
        data_dir=args.data_dir,
        gold=args.gold,
        requests=args.requests,
        bbox=args.bbox,
        unlicensed=args.unlicensed,
        json_out=args.json_out,
        per_example_out=args.per_example_out,
        compare=args.compare,
        execution=args.execution,
        overpass_url=args.overpass_url,
        cache_dir=args.cache_dir,
        progress=args.progress,
    )
    result = evaluate(config)
    print(result.text)
    return 0
