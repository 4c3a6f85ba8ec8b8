"""The ablation of the CPU default: each step adds one thing to the previous one."""

from __future__ import annotations

from geoql.app.cpu.model import CpuConfig, CpuModel
from geoql.eval.dataset import load_split
from geoql.eval.metrics import corpus

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
        trained = model.config  # everything but the step's switches as the model was trained (getattr: older models)
        config = CpuConfig(k=trained.k, edits=step.edits, select=step.select, partial=trained.partial,
                           fix_place=getattr(trained, "fix_place", False), add_tags=getattr(trained, "add_tags", False),
                           drop_tags=getattr(trained, "drop_tags", False), tag_hints=getattr(trained, "tag_hints", False))
        preds = [model.compile(e.nl, config=config)[0] for e in tqdm(examples, desc=name, disable=not progress)]
        rows.append((name, corpus(preds, golds)))
    return rows
