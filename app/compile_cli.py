"""``geoql compile``: one request, or a whole split (or file of requests) to a prediction file.

    geoql compile "drinking water taps in Vienna"
    geoql compile --split dev --backend cpu --out runs/dev.pred --jsonl runs/dev.jsonl
    geoql compile --requests my_requests.nl --out runs/mine.pred

``--requests`` takes any file of one request a line (UTF-8), such as OsmNL's ``dev.de.nl``;
``geoql eval --gold FILE --requests FILE --pred runs/mine.pred`` then scores it.

A split or file run (``geoql.app.batch``) uses every core (``--workers N``) or a Ray cluster
(``--cluster ADDRESS``). It logs each answer to ``FILE.pred.tmp`` and writes ``FILE.pred`` only
when every request has its answer, with ``FILE.pred.run.json`` naming the requests and settings
it answers. Running the same command again resumes; a request whose compile failed (the
backend, not the request) is tried again, never kept as an empty line; another run's files
are refused, never mixed in or overwritten.

A single request prints its query alone on stdout; when the answer is in doubt (the
request is not about places, or its confidence is under the threshold chosen on dev:
``geoql.app.confidence``), one line ``geoql compile: warning: ...`` goes to stderr.
``--json`` prints everything, with ``confidence``, ``uncovered``, ``nearest``, ``far``,
``off_topic``, ``doubts`` and ``status``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from geoql.app.batch import Batch, local_workers, run_batch
from geoql.app.batch_ray import ray_workers
from geoql.app.compile import Compiler
from geoql.app.config import CompileConfig, load_config
from geoql.core.cli import positive_int
from geoql.core.errors import UserError
from geoql.core.files import check_writable_dir
from geoql.eval.dataset import Example, load_split, read_example_lines


def register(subparsers) -> None:
    p = subparsers.add_parser("compile", help="natural language -> OverpassQL",
                              description="Compile a request (or a dataset split, or a file of requests) into OverpassQL.")
    p.add_argument("request", nargs="?", help="the request, e.g. 'cafes in Bonn'")
    p.add_argument("--backend", help="cpu (the default, on CPU; formerly retrieval), transformers, openai or vllm")
    p.add_argument("--config", help="YAML file with compile options (see docs/compile.md)")
    p.add_argument("--option", "-o", action="append", default=[], metavar="KEY=VALUE",
                   help="backend option, e.g. model=./runs/sft, adapter=DIR, base_url=URL (repeatable)")
    p.add_argument("--n", type=int, help="candidates to sample (>1: choose by minimum Bayes risk)")
    p.add_argument("--temperature", type=float, help="sampling temperature")
    p.add_argument("--max-new-tokens", type=int, help="token budget per candidate")
    p.add_argument("--no-grammar", action="store_true", help="do not constrain decoding with the grammar")
    p.add_argument("--split", choices=("train", "dev", "test"), help="compile a whole split")
    p.add_argument("--requests", metavar="FILE", help="compile every line of this file (one request a line, UTF-8)")
    p.add_argument("--data-dir", help="OverpassNL directory (default: $GEOQL_DATA_DIR)")
    p.add_argument("--out", help="prediction file for --split or --requests (one query per line)")
    p.add_argument("--jsonl", help="also write one JSON object per example (candidates, errors, timings)")
    p.add_argument("--limit", type=positive_int, help="only the first N examples of the split or file")
    p.add_argument("--batch-size", type=positive_int, default=16, help="requests per backend call (and per chunk of work)")
    p.add_argument("--workers", type=positive_int, metavar="N",
                   help="worker processes for --split/--requests (default: one per core for the CPU default, "
                        "as many as free memory holds at 1 GB each; 1 for the other backends; with --cluster: "
                        "the cluster's CPUs)")
    p.add_argument("--cluster", metavar="ADDRESS",
                   help="run --split/--requests on a Ray cluster, e.g. 10.0.0.5:6379 or auto (pip install 'geoql[ray]')")
    p.add_argument("--json", action="store_true",
                   help="print the full result as JSON (single request; with confidence, uncovered, nearest, far, off_topic)")
    p.set_defaults(handler=run)


def _config(args):
    # CompileConfig raises ConfigError (a GeoqlError) for a bad value: the dispatcher says it in one line.
    config = load_config(args.config) if args.config else CompileConfig()
    changes: dict = {}
    if args.backend:
        changes["backend"] = args.backend
        if args.config is None or args.backend != config.backend:
            changes["backend_options"] = {}
    options = dict(changes.get("backend_options", config.backend_options))
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"--option wants KEY=VALUE, got {item!r}")
        options[key.strip()] = value
    if args.option:
        changes["backend_options"] = options
    for name in ("n", "temperature", "max_new_tokens"):
        value = getattr(args, name)
        if value is not None:
            changes[name] = value
    if args.no_grammar:
        changes["grammar"] = False
    return config.replace(**changes) if changes else config


def run(args) -> int:
    config = _config(args)
    if args.split and args.requests:
        raise UserError("give --split or --requests, not both")
    if (args.workers or args.cluster) and not (args.split or args.requests):
        raise UserError("--workers and --cluster are for --split or --requests")
    if args.split or args.requests:
        if not args.out:
            raise UserError(f"{'--split' if args.split else '--requests'} needs --out FILE.pred")
        if args.request is not None:
            raise UserError("give a request or a file of them, not both")
        return run_many(args, config)
    if args.request is None:
        raise UserError("give a request, e.g. geoql compile \"cafes in Bonn\", or --split dev --out FILE.pred, "
                        "or --requests FILE --out FILE.pred")
    comp = Compiler(config=config).compile(args.request)
    if args.json:
        print(json.dumps(comp.as_dict(), ensure_ascii=False, default=str))
        return 0 if comp.query else 1
    if not comp.query:
        raise UserError("; ".join(comp.errors) or "no query")
    print(comp.query)
    for message in comp.errors:
        print(f"geoql compile: warning: {message}", file=sys.stderr)
    doubt = doubt_line(comp)
    if doubt:
        print(f"geoql compile: warning: {doubt}", file=sys.stderr)
    return 0


def doubt_line(comp) -> str:
    """One line for stderr when the answer is in doubt (off topic, a confidence under the
    threshold chosen on dev, or no output statement), with the uncovered words and the
    distance; "" otherwise."""
    if not (comp.off_topic or comp.low_confidence or comp.no_output):
        return ""
    return "; ".join(comp.doubts)


def run_many(args, config) -> int:
    """Compile a split (``--split``) or a file of requests (``--requests``) to ``--out``: ``geoql.app.batch``."""
    if args.requests:
        examples = [Example("requests", i, nl, "", "") for i, nl in enumerate(read_example_lines(args.requests, "--requests"))]
        source = args.requests
    else:
        examples = load_split(args.split, args.data_dir)
        source = f"OverpassNL {args.split}"
    if args.limit is not None:
        examples = examples[: max(0, args.limit)]
    out = Path(args.out)
    jsonl = Path(args.jsonl) if args.jsonl else None
    if jsonl is not None and jsonl.resolve() == out.resolve():
        raise UserError("--jsonl and --out name the same file: give each its own")
    for path in filter(None, (out, jsonl)):  # before any compiling: a run of minutes must not fail at its first write
        check_writable_dir(path.parent)
        path.parent.mkdir(parents=True, exist_ok=True)
    batch = Batch(requests=[ex.nl for ex in examples], indices=[ex.index for ex in examples], source=source,
                  out=out, jsonl=jsonl, config=config, batch_size=args.batch_size,
                  label=args.split or Path(args.requests).name)
    return run_batch(batch, ray_workers(args.cluster, args.workers) if args.cluster else local_workers(args.workers))
