"""A real small LLM through the compile path: OQS, validity and seconds per request on dev.

The first ``--limit`` dev requests (the first lines of ``dataset.dev.nl``) are compiled by
``geoql.Compiler`` with the ``transformers`` backend (or ``openai`` against a server):
THE prompt (``geoql.retrieval.prompt_context`` + ``build_prompt`` with ``--k-tags`` /
``--k-examples`` from the tag index), grammar-constrained decoding or not, extraction,
validation and the MBR choice; then the exact metric scores the queries. One JSON line
per setting goes to ``--out``, the per-request queries to ``<out>.<label>.jsonl``.

    GEOQL_DATA_DIR=../shared/overpassnl GEOQL_INDEX_DIR=IDX OMP_NUM_THREADS=1 \\
      python benchmarks/bench_real_model.py --limit 200 --grammar both --out runs/fewshot.json
    # the SFT adapter, with the prompt it was trained on:
    python benchmarks/bench_real_model.py --limit 200 --adapter runs/smollm2-135m-sft-lora/adapter \\
      --k-tags 3 --k-examples 1 --grammar on --out runs/sft.json

On a shared CPU, set ``OMP_NUM_THREADS=1``: more torch threads than free cores makes
generation many times slower.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from tqdm import tqdm

from geoql.app.compile import Compiler
from geoql.eval.dataset import load_split
from geoql.eval.metrics import corpus
from geoql.retrieval.config import K_EXAMPLES, K_TAGS


def _agreement(comp, n: int) -> dict:
    """MBR agreement of one request's samples: the winner's expected OQS against the other
    samples (0..1), the share of samples that wrote the winner, and how many distinct queries."""
    if n <= 1:
        return {}
    winner = next((c for c in comp.candidates if c.query == comp.query), None)
    return {"agreement": float(winner.score) if winner and winner.score is not None else 0.0,
            "winner_share": winner.count / n if winner else 0.0, "distinct": len(comp.candidates)}


def run(args, grammar: bool) -> dict:
    examples = load_split("dev")[args.offset:args.offset + args.limit]
    options = {"model": args.model, "device": "cpu", "dtype": "float32", "batch_size": args.batch_size}
    if args.backend == "openai":
        options = {"base_url": args.base_url, "model": args.served_name}
    elif args.adapter:
        options["adapter"] = args.adapter
    compiler = Compiler(args.backend, k_tags=args.k_tags, k_examples=args.k_examples, index_dir=args.index_dir,
                        n=args.n, temperature=args.temperature, max_new_tokens=args.max_new_tokens,
                        grammar=grammar, seed=0, **options)
    label = f"{'grammar' if grammar else 'free'}-n{args.n}"
    comps = []
    rows = Path(f"{args.out}.{label}.jsonl") if args.out else None
    if rows:
        rows.parent.mkdir(parents=True, exist_ok=True)
        rows.write_text("", encoding="utf-8")
    start = time.perf_counter()
    for first in tqdm(range(0, len(examples), args.batch_size), desc=label, unit="batch"):
        batch = examples[first:first + args.batch_size]
        done = compiler.compile_batch([ex.nl for ex in batch], batch_size=args.batch_size)
        comps += done
        if rows:  # written as they come: a long run shows its outputs early
            with rows.open("a", encoding="utf-8") as f:
                for ex, c in zip(batch, done):
                    f.write(json.dumps({"nl": ex.nl, "gold": ex.query, "pred": c.query, "valid": c.valid,
                                        "raw": c.candidates[0].raw if c.candidates else "",
                                        "errors": c.errors, **_agreement(c, args.n)}, ensure_ascii=False) + "\n")
    seconds = time.perf_counter() - start
    scores = corpus([c.query for c in comps], [ex.query for ex in examples])
    agree = [_agreement(c, args.n) for c in comps]
    errors = [c.errors[0] for c in comps if c.errors and not c.query]
    result = {
        "label": label, "model": args.model, "adapter": args.adapter, "backend": args.backend,
        "requests": f"dev lines {args.offset + 1}-{args.offset + len(examples)}", "n": args.n,
        "temperature": args.temperature if args.n > 1 else 0.0, "k_tags": args.k_tags, "k_examples": args.k_examples,
        "max_new_tokens": args.max_new_tokens, "grammar": grammar,
        **{k: round(v, 2) for k, v in scores.items() if k != "n"},
        "valid": sum(c.valid for c in comps), "of": len(comps),
        "s_per_request": round(seconds / max(len(comps), 1), 2), "failed": len(errors),
        **({"agreement": round(100 * sum(a["agreement"] for a in agree) / max(len(agree), 1), 2),
            "winner_share": round(100 * sum(a["winner_share"] for a in agree) / max(len(agree), 1), 2),
            "distinct": round(sum(a["distinct"] for a in agree) / max(len(agree), 1), 2)} if args.n > 1 else {}),
        "first_error": errors[0] if errors else None,
    }
    compiler.close()
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m", help="model name, directory or .gguf file")
    parser.add_argument("--adapter", default=None, help="PEFT adapter directory")
    parser.add_argument("--backend", default="transformers", choices=["transformers", "openai"])
    parser.add_argument("--base-url", default=None, help="openai backend: http://HOST:PORT/v1")
    parser.add_argument("--served-name", default=None, help="openai backend: the served model name")
    parser.add_argument("--limit", type=int, default=200, help="dev requests (the first lines of dev)")
    parser.add_argument("--offset", type=int, default=0)
    parser.add_argument("--grammar", choices=["on", "off", "both"], default="both")
    parser.add_argument("--n", type=int, default=1, help="samples per request (>1: MBR)")
    parser.add_argument("--temperature", type=float, default=0.7, help="sampling temperature when n > 1")
    parser.add_argument("--k-tags", type=int, default=K_TAGS)
    parser.add_argument("--k-examples", type=int, default=K_EXAMPLES)
    parser.add_argument("--index-dir", default=os.environ.get("GEOQL_INDEX_DIR"))
    parser.add_argument("--max-new-tokens", type=int, default=384)
    parser.add_argument("--batch-size", type=int, default=10)
    parser.add_argument("--out", default=None, help="JSON lines file for the summary rows")
    args = parser.parse_args(argv)
    for grammar in {"on": [True], "off": [False], "both": [True, False]}[args.grammar]:
        result = run(args, grammar)
        print(json.dumps(result, ensure_ascii=False), flush=True)
        if args.out:
            with open(args.out, "a", encoding="utf-8") as f:
                f.write(json.dumps(result, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
