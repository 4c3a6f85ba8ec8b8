"""``geoql index build``: fetch the sources and write the artifact directory; ``geoql index fit-ranker``."""

from __future__ import annotations

import argparse


def register(subparsers) -> None:
    parser = subparsers.add_parser("index", help="build the tag knowledge index")
    sub = parser.add_subparsers(dest="index_command", metavar="ACTION")
    build = sub.add_parser("build", help="fetch sources, embed and write the index directory")
    build.add_argument("--out", type=str, default=None, help="output directory (default: user data dir, or $GEOQL_INDEX_DIR)")
    build.add_argument("--data-dir", type=str, default=None, help="OverpassNL directory (default: $GEOQL_DATA_DIR)")
    build.add_argument("--cache-dir", type=str, default=None, help="cache for downloaded sources")
    build.add_argument("--registry", type=str, default=None, help="npm registry URL")
    build.add_argument("--model", type=str, default=None, help="sentence-transformers model name or path")
    build.add_argument("--no-taginfo", action="store_true", help="do not try the taginfo API")
    build.add_argument("--train-limit", type=int, default=None, help=argparse.SUPPRESS)
    build.set_defaults(handler=_build)
    fit = sub.add_parser("fit-ranker", help="fit the learned tag ranker (ranker.json) on the index's training requests")
    fit.add_argument("--index-dir", type=str, default=None, help="index directory (default: the default index)")
    fit.add_argument("--every", type=int, default=3, help="use every N-th training request (leave-one-out); 1 = all")
    fit.add_argument("--c", type=float, default=1.0, help="inverse L2 regularisation of the logistic regression")
    fit.set_defaults(handler=_fit_ranker)
    parser.set_defaults(handler=lambda args: parser.print_help() or 2)


def _build(args) -> int:
    from app.cli import UserError
    from eval.dataset import DatasetError

    from .build import build_index
    from .config import IndexConfig
    from .schema import SchemaError

    options = {"out_dir": args.out, "data_dir": args.data_dir, "cache_dir": args.cache_dir, "taginfo": not args.no_taginfo,
               "train_limit": args.train_limit}
    if args.registry:
        options["registry"] = args.registry
    if args.model:
        options["embedding_model"] = args.model
    try:
        config = IndexConfig(**options)
        out = build_index(config)
    except (ValueError, SchemaError, DatasetError, OSError) as exc:
        raise UserError(str(exc)) from None
    import json

    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    counts = manifest["counts"]
    print(f"index written to {out}: {counts['tags']} tags, {counts['tag_surfaces']} names/synonyms, "
          f"{counts['examples']} examples in {manifest['build_seconds']} s")
    return 0


def _fit_ranker(args) -> int:
    from app.cli import UserError
    from retrieval import IndexMissingError, TagRetriever
    from retrieval.ranker import fit_ranker, write_ranker

    try:
        retriever = TagRetriever.load(args.index_dir)
        ranker = fit_ranker(retriever, every=args.every, c=args.c, progress=True)
    except (ValueError, IndexMissingError) as exc:
        raise UserError(str(exc)) from None
    out = write_ranker(ranker, retriever.index_dir)
    info = ranker.meta["trained_on"]
    print(f"ranker written to {out}: {info['requests']} training requests (leave-one-out), "
          f"{info['candidates']} candidates, {info['positives']} gold")
    return 0
