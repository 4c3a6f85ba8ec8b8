"""Optional build step: fine-tune the embedding model on the OverpassNL training split.

Why: tag recall depends on how close a request is to some training request (the split is
by query, and half of dev's gold pairs come from requests whose nearest training request
is below cosine 0.7). An encoder that has learnt which requests use which tags brings the
right neighbours and tag names closer: held out by query, the 20 nearest requests' votes
alone find 0.730 of the gold pairs at 10 instead of 0.689 (docs/retrieval.md).

What it learns from, training split only:

* (request, tag text) for every controlled gold pair of the request (``tag_text``);
* (request, request) for two requests whose gold queries differ but use the same
  controlled tags: another way of asking for the same thing.

The loss is in-batch negatives (each request against every positive of its batch, softmax at
``scale``); a batch never holds the same positive twice, so no positive is its own negative.

The ranker must not learn from features an encoder has seen: ``index.build`` tunes two more
encoders, one per half of the gold queries (``query_half``), and computes each half's ranker
features with the other half's encoder.
"""

from __future__ import annotations

import hashlib
import random
import time
from dataclasses import dataclass
from pathlib import Path

from retrieval.gold import controlled_pairs
from retrieval.ranker import query_key
from retrieval.text import split_value

from .documents import ExampleDocument, TagDocument


@dataclass(frozen=True)
class Pair:
    anchor: str  # a training request
    positive: str  # a tag text or another request
    label: str  # what the positive stands for: two pairs with one label never share a batch


def tag_text(doc: TagDocument) -> str:
    """One text per tag for the encoder to match requests against.

    >>> tag_text(TagDocument("amenity=post_box", "amenity", "post_box", names=["Mailbox"], terms=["letter box", "post box"]))
    'amenity post box: Mailbox; letter box; post box'
    """
    words = f"{split_value(doc.key)} {split_value(doc.value) if doc.value != '*' else ''}".strip()
    return f"{words}: " + "; ".join(list(doc.names)[:2] + list(doc.terms)[:6]) if doc.names or doc.terms else words


def query_half(query: str) -> int:
    """0 or 1, fixed per gold query (whitespace ignored): the folds of the out-of-fold ranker features.

    >>> query_half("node[amenity=cafe];out;") == query_half("node[amenity=cafe];  out;")
    True
    """
    return int(hashlib.sha256(query_key(query).encode()).hexdigest(), 16) % 2


def training_pairs(examples: list[ExampleDocument], docs: list[TagDocument], *, seed: int = 0) -> list[Pair]:
    """The pairs the encoder is tuned on, in a fixed order (``seed`` picks each request's partner request)."""
    text_of = {d.tag: tag_text(d) for d in docs}
    rng = random.Random(seed)
    pairs: list[Pair] = []
    by_tags: dict[tuple, list[ExampleDocument]] = {}
    for ex in examples:
        gold = controlled_pairs(ex.query)
        for tag in gold:
            key, _, value = tag.partition("=")
            pairs.append(Pair(ex.nl, text_of.get(tag) or f"{split_value(key)} {split_value(value)}", tag))
        if gold:
            by_tags.setdefault(tuple(sorted(gold)), []).append(ex)
    for tags, group in by_tags.items():
        for ex in group:
            others = [o for o in group if query_key(o.query) != query_key(ex.query)]
            if others:
                pairs.append(Pair(ex.nl, rng.choice(others).nl, "same tags: " + " ".join(tags)))
    return pairs


@dataclass(frozen=True)
class TuneSettings:
    epochs: int = 1
    batch_size: int = 64
    learning_rate: float = 3e-5
    scale: float = 20.0
    seed: int = 0


def tune_encoder(base_model: str, pairs: list[Pair], out_dir: Path, settings: TuneSettings = TuneSettings(), *,
                 progress: bool = True, desc: str = "tuning encoder") -> dict:
    """Fine-tune ``base_model`` on ``pairs`` and save it (sentence-transformers format) to ``out_dir``.

    Returns what the manifest records: settings, pairs, steps, first and last batch loss, seconds.
    Runs on a GPU when torch sees one (about a minute), else on the CPU (~8 min for the full
    training split on two cores).
    """
    import torch
    from sentence_transformers import SentenceTransformer
    from tqdm import tqdm

    from retrieval.embedding import resolve_model

    if not pairs:
        raise ValueError("no training pairs to tune the encoder on; the training split has no controlled tags")
    started = time.time()
    torch.manual_seed(settings.seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = SentenceTransformer(resolve_model(base_model), device=device)  # a fresh copy: the cached encoder stays stock
    model.train()
    optimiser = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate)
    rng = random.Random(settings.seed)
    order = list(pairs)
    steps, losses = 0, []
    batches_per_epoch = max(1, -(-len(order) // settings.batch_size))
    bar = tqdm(total=settings.epochs * batches_per_epoch, desc=desc, unit="batch", disable=not progress)
    for _ in range(settings.epochs):
        rng.shuffle(order)
        for start in range(0, len(order), settings.batch_size):
            batch, labels = [], set()
            for pair in order[start:start + settings.batch_size]:
                if pair.label not in labels:
                    labels.add(pair.label)
                    batch.append(pair)
            bar.update()
            if len(batch) < 2:  # one pair has no negatives to learn from
                continue
            anchors = _embed(model, [p.anchor for p in batch], device)
            positives = _embed(model, [p.positive for p in batch], device)
            logits = settings.scale * anchors @ positives.T
            loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(batch), device=device))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            steps += 1
            losses.append(float(loss.item()))
            bar.set_postfix(loss=f"{losses[-1]:.3f}")
    bar.close()
    model.eval()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    model.save(str(out_dir))
    return {"base_model": base_model, "pairs": len(pairs), "steps": steps, "epochs": settings.epochs,
            "batch_size": settings.batch_size, "learning_rate": settings.learning_rate, "scale": settings.scale,
            "seed": settings.seed, "device": device, "first_loss": round(losses[0], 4) if losses else None,
            "last_loss": round(losses[-1], 4) if losses else None, "seconds": round(time.time() - started, 1)}


def _embed(model, texts: list[str], device: str):
    import torch

    features = model.preprocess(texts)
    features = {k: v.to(device) if hasattr(v, "to") else v for k, v in features.items()}
    return torch.nn.functional.normalize(model(features)["sentence_embedding"], dim=-1)
