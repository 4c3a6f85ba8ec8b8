"""``geoql retrieval-eval``: recall@k of gold tags, coverage and latency on a split."""

from __future__ import annotations

import json

from geoql.core.cli import positive_int
from geoql.core.errors import ConfigError, UserError
from geoql.core.files import write_atomic
from geoql.eval.dataset import load_split

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


def _retrieval_eval(args) -> int:
    from .evaluate import evaluate, miss_summary  # not needed for `geoql --help`

    ks = parse_ks(args.k)
    examples = load_split(args.split, args.data_dir)
    retriever = TagRetriever.load(args.index_dir)
    if args.limit is not None:
        examples = examples[: max(0, args.limit)]
    if args.half is not None:
        examples = examples[(0 if args.half == "even" else 1)::2]
    report = evaluate(retriever, examples, ks)
    figures = report.as_json()
    for name, value in figures.items():
        if not isinstance(value, dict):
            print(f"{name:>16}: {value}")
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
