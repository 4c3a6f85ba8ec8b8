"""The ablation of the CPU default (each step adds one thing to the previous one), and the
ceiling of its candidate pools (what a perfect selector would reach on the same pools)."""

from __future__ import annotations

import numpy as np

from geoql.app.cpu.model import CpuConfig, CpuModel
from geoql.eval.dataset import load_split
from geoql.eval.metrics import corpus, get_scorer

STEPS = (
    ("copy top-1", CpuConfig(edits="none", select=False)),
    ("+ selection", CpuConfig(edits="none", select=True)),
    ("+ area edits", CpuConfig(edits="area", select=True)),
    ("+ tag edits", CpuConfig(edits="area,tags", select=True)),
    ("+ other edits", CpuConfig(edits="all", select=True)),
)


def run_ablation(split: str = "dev", *, model_dir=None, data_dir=None, limit: int | None = None,
                 progress: bool = True) -> list[tuple[str, dict]]:
    """``[(step name, corpus metrics in percent)]`` on ``split`` with one trained model."""
    from tqdm import tqdm

    model = CpuModel.load(model_dir)
    examples = load_split(split, data_dir)[:limit]
    golds = [e.query for e in examples]
    rows = []
    for name, step in STEPS:
        trained = model.config  # everything but the step's switches as the model was trained
        config = CpuConfig(k=trained.k, edits=step.edits, select=step.select, partial=trained.partial,
                           fix_place=trained.fix_place, add_tags=trained.add_tags,
                           drop_tags=trained.drop_tags, tag_hints=trained.tag_hints)
        preds = [model.compile(e.nl, config=config)[0] for e in tqdm(examples, desc=name, disable=not progress)]
        rows.append((name, corpus(preds, golds)))
    return rows


def pool_ceiling(model: CpuModel, requests: list[str], golds: list[str], *, desc: str = "pools",
                 progress: bool = True) -> dict:
    """Mean per-request OQS (percent) of the answer and of the best query its pool offers.

    The pool is every candidate the CPU default may answer (the faithfulness check passed), so
    ``ceiling`` is what a perfect selector would reach with these pools; below it, a better selector
    helps; above it, only other candidates (another reading of the request) do.

    >>> from geoql.app.cpu.model import CpuModel
    >>> toy = CpuModel.fit_retrieval(["cafes in Bonn", "pubs in Dublin"],
    ...     ['nwr["amenity"="cafe"]({{bbox}});out;', 'nwr["amenity"="pub"]({{bbox}});out;'])
    >>> figures = pool_ceiling(toy, ["cafes"], ['nwr["amenity"="cafe"]({{bbox}});out;'], progress=False)
    >>> figures["ceiling"] >= figures["selected"], figures["n"]
    (True, 1)
    """
    from tqdm import tqdm

    scorer = get_scorer()
    selected, best, sizes = [], [], []
    for nl, gold in tqdm(list(zip(requests, golds, strict=True)), desc=desc, disable=not progress, unit="req"):
        scores = [scorer.oqs(query, gold) for query in model.compile(nl, n=10_000)]
        selected.append(scores[0])
        best.append(max(scores))
        sizes.append(len(scores))
    return {"selected": 100 * float(np.mean(selected)), "ceiling": 100 * float(np.mean(best)),
            "pool": float(np.mean(sizes)), "n": len(selected)}
