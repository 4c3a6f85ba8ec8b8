"""Predictions of the CPU default for any request file, scored against any gold file.

    python -m geoql.app.cpu.predict REQUESTS OUT [--gold GOLD ...] [--model-dir DIR] [--index-dir DIR]

REQUESTS holds one request a line (the OverpassNL format, e.g. ``dataset.dev.nl`` or an
OsmNL ``dev.de.nl``); OUT gets one query a line. Each ``--gold`` file (one query a line,
line ``i`` for request ``i``) is scored with the official metrics (``geoql.eval.metrics``)
and the line printed as JSON. The p50/p90 latency of ``compile()`` per request is printed
as well (the model and index are loaded before the clock starts).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

from geoql.app.cpu.faithful import LEVELS
from geoql.app.cpu.model import CpuConfig, CpuModel
from geoql.core.errors import UserError
from geoql.core.files import write_atomic
from geoql.eval.metrics import corpus


def read_lines(path) -> list[str]:
    """The lines of a one-item-a-line file (a final newline ends the last line, it starts none)."""
    text = Path(path).read_text(encoding="utf-8")
    return text[:-1].split("\n") if text.endswith("\n") else text.split("\n")


def predict(model: CpuModel, requests: list[str], *, config: CpuConfig | None = None,
            progress: bool = True) -> tuple[list[str], list[float]]:
    """The model's query for every request and the seconds each took."""
    from tqdm import tqdm

    out, times = [], []
    for nl in tqdm(requests, desc="compiling", unit="req", disable=not progress):
        start = time.perf_counter()
        out.append(model.compile(nl if nl.strip() else "nodes", config=config)[0])
        times.append(time.perf_counter() - start)
    return out, times


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("requests")
    p.add_argument("out")
    p.add_argument("--gold", action="append", default=[], help="gold query file to score against (repeatable)")
    p.add_argument("--model-dir", help="the trained CPU model (default: $GEOQL_CPU_MODEL_DIR or the user data dir)")
    p.add_argument("--index-dir", help="the tag index (default: $GEOQL_INDEX_DIR or the user data dir)")
    p.add_argument("--faithful", choices=tuple(LEVELS), help="override the model's faithfulness level (CpuConfig.faithful)")
    args = p.parse_args(argv)
    requests = read_lines(args.requests)
    golds = {g: read_lines(g) for g in args.gold}
    for g, lines in golds.items():
        if len(lines) != len(requests):
            raise UserError(f"{g} has {len(lines)} lines, {args.requests} {len(requests)}: give files of one split")
    model = CpuModel.load(args.model_dir, args.index_dir)
    config = dataclasses.replace(model.config, faithful=args.faithful) if args.faithful else model.config
    model.compile("cafes in Bonn", config=config)  # first call: lazy imports and caches
    preds, times = predict(model, requests, config=config)
    write_atomic(Path(args.out), ("\n".join(preds) + "\n").encode("utf-8"))
    ordered = sorted(times)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000  # noqa: E731
    print(json.dumps({"requests": args.requests, "n": len(preds), "p50_ms": round(pick(0.5), 1),
                      "p90_ms": round(pick(0.9), 1)}))
    for g, lines in golds.items():
        scores = corpus(preds, lines)
        print(json.dumps({"gold": g, **{k: round(v, 2) if isinstance(v, float) else v for k, v in scores.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
