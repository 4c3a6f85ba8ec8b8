"""``geoql cpu ...``: train and measure the CPU default (the ``cpu`` backend)."""

from __future__ import annotations

import argparse

from geoql.app.eval_cli import LANGUAGES
from geoql.core.cli import positive_int
from geoql.core.errors import UserError


def register(subparsers) -> None:
    parser = subparsers.add_parser("cpu", help="train and measure the CPU default compiler (no LLM)")
    sub = parser.add_subparsers(dest="cpu_command", metavar="ACTION")

    train = sub.add_parser("train", help="fit the CPU model on the training split (about 8 minutes on 2 cores)")
    train.add_argument("--out", help="model directory (default: $GEOQL_CPU_MODEL_DIR or the user data dir)")
    train.add_argument("--data-dir", help="OverpassNL directory (default: $GEOQL_DATA_DIR)")
    train.add_argument("--k", type=int, default=None, help="neighbours per request (default: CpuTrainConfig.k)")
    train.add_argument("--edits", default=None, help="edit groups: all, none or e.g. area,tags (default: CpuTrainConfig.edits)")
    train.add_argument("--limit", type=int, default=None,
                       help="train the selector on the first N training requests (default: all)")
    train.add_argument("--tag-hints", choices=("auto", "on", "off"), default=None,
                       help="use the tag index's retriever: auto (when `geoql index build` has run), on, off (default: auto)")
    train.add_argument("--index-dir", help="tag index directory (default: $GEOQL_INDEX_DIR or the user data dir)")
    train.add_argument("--augment", default=None,
                       help="languages of code-switched copies of training requests, comma-separated, '' for none "
                            "(default: CpuTrainConfig.augment)")
    train.add_argument("--augment-share", type=float, default=None,
                       help="share of the training requests that get a copy (default: CpuTrainConfig.augment_share)")
    train.add_argument("--workers", type=positive_int, default=None,
                       help="processes that score the training requests (default: every usable core; same model)")
    train.set_defaults(handler=_train)

    ship = sub.add_parser("ship", help="(maintainers) put a trained model's selector, its index's ranker and its texts' "
                                       "vectors into the package: a fresh install with the same index takes them instead "
                                       "of training and embedding")
    ship.add_argument("--model-dir", help="trained model directory (default: as for train)")
    ship.add_argument("--index-dir", help="the tag index it was trained with (default: $GEOQL_INDEX_DIR or the user data dir)")
    ship.add_argument("--out", help="write the files into this folder instead (default: the package's "
                                    "app/cpu/shipped/ and index/shipped/)")
    ship.set_defaults(handler=_ship)

    ablation = sub.add_parser("ablation", help="dev OQS of copy top-1 -> + selection -> + each edit group")
    ablation.add_argument("--split", default="dev", choices=("dev", "test"))
    ablation.add_argument("--model-dir", help="trained model directory (default: as for train)")
    ablation.add_argument("--data-dir", help="OverpassNL directory (default: $GEOQL_DATA_DIR)")
    ablation.add_argument("--limit", type=positive_int, help="only the first N requests of the split")
    ablation.set_defaults(handler=_ablation)

    ceiling = sub.add_parser("ceiling", help="per language: OQS of the answers and of the best candidate of their pools "
                                             "(a perfect selector), against the OverpassNL dev gold")
    ceiling.add_argument("--osmnl-dir", required=True, help="directory with dev.<lang>.nl, line i deriving from OverpassNL dev line i")
    ceiling.add_argument("--languages", default=",".join(LANGUAGES), help="comma-separated (default: all eight of OsmNL)")
    ceiling.add_argument("--original", action="store_true", help="add a first row for the OverpassNL dev requests themselves")
    ceiling.add_argument("--model-dir", help="trained model directory (default: as for train)")
    ceiling.add_argument("--data-dir", help="OverpassNL directory (default: $GEOQL_DATA_DIR)")
    ceiling.add_argument("--limit", type=positive_int, help="only the first N requests of each language")
    ceiling.set_defaults(handler=_ceiling)
    parser.set_defaults(handler=lambda args: parser.print_help() or 2)


def _train(args: argparse.Namespace) -> int:
    from geoql.app.cpu.train import CpuTrainConfig, train_and_save  # numpy and the model: not for `geoql --help`

    # Unset options keep CpuTrainConfig's defaults, so the defaults live in one place.
    given = {"k": args.k, "edits": args.edits, "limit": args.limit, "tag_hints": args.tag_hints,
             "index_dir": args.index_dir, "augment": args.augment, "augment_share": args.augment_share,
             "workers": args.workers}
    config = CpuTrainConfig(**{name: value for name, value in given.items() if value is not None})
    model = train_and_save(args.out, args.data_dir, config)
    stats = model.stats
    print(
        f"trained on {stats['train_requests']} requests + {stats.get('train_copies', 0)} code-switched copies / "
        f"{stats['train_candidates']} candidates "
        f"in {stats['train_seconds']} s; leave-one-out OQS {stats['train_fit_oqs']}; "
        f"tag hints: {'index ' + model.index_fingerprint if model.index_fingerprint else 'none'}"
    )
    return 0


def _ship(args: argparse.Namespace) -> int:
    from pathlib import Path

    from geoql.app.cpu.model import CpuModel  # numpy and the model: not for `geoql --help`
    from geoql.app.cpu.prebuilt import ship

    model = CpuModel.load(args.model_dir, args.index_dir)
    where = {"folder": Path(args.out), "ranker_file": Path(args.out) / "ranker.json",
             "vectors_folder": Path(args.out)} if args.out else {}
    for path in ship(model, args.index_dir, **where):
        print(f"wrote {path}")
    return 0


def _ceiling(args: argparse.Namespace) -> int:
    from pathlib import Path

    from geoql.app.cpu.ablation import pool_ceiling  # numpy and the model: not for `geoql --help`
    from geoql.app.cpu.model import CpuModel
    from geoql.eval.dataset import load_split, read_example_lines

    dev = load_split("dev", args.data_dir)[: args.limit]
    golds = [e.query for e in dev]
    rows = [("orig", [e.nl for e in dev])] if args.original else []
    for lang in (part.strip() for part in args.languages.split(",") if part.strip()):
        requests = read_example_lines(Path(args.osmnl_dir).expanduser() / f"dev.{lang}.nl", "--osmnl-dir")[: args.limit]
        if len(requests) != len(golds):
            raise UserError(f"dev.{lang}.nl has {len(requests)} lines where OverpassNL dev has {len(golds)}: "
                            "pass the OsmNL folder whose lines follow OverpassNL dev")
        rows.append((lang, requests))
    model = CpuModel.load(args.model_dir)
    print(f"{'requests':<9} {'answer OQS':>10} {'pool ceiling':>12} {'candidates':>10}")
    for name, requests in rows:
        figures = pool_ceiling(model, requests, golds, desc=name)
        print(f"{name:<9} {figures['selected']:10.2f} {figures['ceiling']:12.2f} {figures['pool']:10.1f}", flush=True)
    return 0


def _ablation(args: argparse.Namespace) -> int:
    from geoql.app.cpu.ablation import run_ablation  # numpy and the model: not for `geoql --help`

    rows = run_ablation(args.split, model_dir=args.model_dir, data_dir=args.data_dir, limit=args.limit)
    print(f"{'step':<22} {'OQS':>6} {'KVS':>6} {'TreeS':>6} {'chrF':>6} {'EM':>5}")
    for name, m in rows:
        print(f"{name:<22} {m['oqs']:6.2f} {m['kvs']:6.2f} {m['tree']:6.2f} {m['chrf']:6.2f} {m['em']:5.1f}")
    return 0
