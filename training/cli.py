"""``geoql train data|sft|grpo|check-rewards`` (argument parsing, then a call into training/).

The training modules load yaml, tqdm and the trainers' libraries, so each handler
imports what it runs and ``geoql --help`` stays fast.
"""

from __future__ import annotations

import argparse
import random
import sys

from geoql.core.errors import UserError
from geoql.eval.dataset import load_split


def register(subparsers) -> None:
    train = subparsers.add_parser("train", help="build training data, fine-tune (SFT), GRPO, check rewards")
    sub = train.add_subparsers(dest="train_command", metavar="STEP")
    train.set_defaults(handler=lambda args: (train.print_help(), 2)[1])

    data = sub.add_parser("data", help="write the SFT and GRPO datasets with statistics")
    data.add_argument("--out", required=True, help="output directory (replaced atomically when complete)")
    data.add_argument("--config", help="take the data section of this SFT/GRPO recipe")
    data.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                      help="override a data setting, e.g. --set limit=500 --set comments=true")
    data.add_argument("--data-dir", help="OverpassNL directory (default: $GEOQL_DATA_DIR)")
    data.add_argument("--index-dir", help="retrieval index directory")
    data.set_defaults(handler=cmd_data)

    for kind, helptext in (("sft", "supervised fine-tuning (TRL SFTTrainer)"), ("grpo", "GRPO (TRL GRPOTrainer)")):
        p = sub.add_parser(kind, help=helptext)
        p.add_argument("--config", help="YAML recipe, e.g. training/configs/qwen3-4b-%s.yaml" % ("sft-lora-r64" if kind == "sft" else "grpo"))
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="override a recipe setting, e.g. --set train.max_steps=10")
        p.add_argument("--resume", action="store_true", help="continue the run in train.output_dir from its last checkpoint")
        p.add_argument("--overwrite", action="store_true", help="replace a previous run in train.output_dir")
        p.add_argument("--check", action="store_true", help="validate the recipe and exit without training")
        p.add_argument("--explain", action="store_true", help="print every setting with its help text and exit")
        p.set_defaults(handler=cmd_sft if kind == "sft" else cmd_grpo, recipe_kind=kind)

    check = sub.add_parser("check-rewards", help="correlate each reward with the official metric on perturbed pairs")
    check.add_argument("--split", default="dev", choices=("train", "dev", "test"))
    check.add_argument("-n", "--num", type=int, default=200, help="gold queries to perturb (default 200)")
    check.add_argument("--seed", type=int, default=0)
    check.add_argument("--overpass-url", help="also check the execution reward against this endpoint")
    check.add_argument("--overpass-cache-dir", help="cache directory for the execution reward")
    check.add_argument("--data-dir", help="OverpassNL directory (default: $GEOQL_DATA_DIR)")
    check.set_defaults(handler=cmd_check_rewards)


def cmd_data(args) -> int:
    import yaml

    from geoql.training.config import DataConfig, from_dict, load_recipe
    from geoql.training.data import build_rows, write_dataset

    base = load_recipe("sft", args.config).data if args.config else DataConfig()
    values = {k: getattr(base, k) for k in base.__dataclass_fields__}
    for assignment in args.set:
        key, _, raw = assignment.partition("=")
        values[key.strip().removeprefix("data.")] = yaml.safe_load(raw) if raw.strip() else None
    if args.data_dir:
        values["data_dir"] = args.data_dir
    if args.index_dir:
        values["index_dir"] = args.index_dir
    values["dataset_dir"] = None
    cfg = from_dict(DataConfig, values, "data")
    sft, grpo, stats = build_rows(cfg)
    out = write_dataset(args.out, sft, grpo, stats, cfg)
    print(f"wrote {out}: {len(sft)} SFT rows {stats.rows}, {len(grpo)} GRPO prompts; "
          f"gold tag recall of the retrieved tags {stats.gold_tag_recall:.3f}")
    return 0


def _train(args, run, lines) -> int:
    from geoql.training.config import RECIPES, describe, load_recipe

    if args.explain:
        print(describe(RECIPES[args.recipe_kind]))
        return 0
    recipe = load_recipe(args.recipe_kind, args.config, args.set)
    if args.check:
        print(f"{args.config or 'defaults'}: valid {args.recipe_kind} recipe")
        return 0
    result = run(recipe, resume=args.resume, overwrite=args.overwrite)
    print(lines(result))
    return 0


def cmd_sft(args) -> int:
    from geoql.training.sft import result_lines, run_sft

    return _train(args, run_sft, result_lines)


def cmd_grpo(args) -> int:
    from geoql.training.grpo import result_lines, run_grpo

    return _train(args, run_grpo, result_lines)


def cmd_check_rewards(args) -> int:
    from geoql.training.check_rewards import check_rewards
    from geoql.training.rewards import REWARDS, make_execution_reward, overpass_element_ids

    if args.num < 2:
        raise UserError("-n must be >= 2 to compute a correlation")
    examples = load_split(args.split, args.data_dir)
    picked = sorted(random.Random(args.seed).sample(range(len(examples)), min(args.num, len(examples))))
    rewards = dict(REWARDS)
    if args.overpass_url:
        rewards["execution"] = make_execution_reward(overpass_element_ids(args.overpass_url, args.overpass_cache_dir))
    else:
        rewards.pop("execution")
    report = check_rewards([examples[i].query for i in picked], rewards, seed=args.seed,
                           bboxes=[examples[i].bbox for i in picked])
    print(report.table())
    print()
    print(report.kinds_table())
    if not report.ok:
        print("a reward does not reproduce its official metric: fix training/rewards.py before training", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(prog="geoql")
    register(parser.add_subparsers(dest="command"))
    ns = parser.parse_args()
    sys.exit(ns.handler(ns))
