"""Training data: the inference prompt, leave-one-out, plus optional auxiliary sets.

Every training row is prompted with ``retrieval.build_prompt`` — the prompt the
model sees at inference — built from the tag index and the example index, with
the request's own training example excluded from the retrieved examples (at
inference a request is never in the training set, so training must not teach the
model to copy a retrieved answer that is the gold).

Auxiliary sets, each switched in :class:`training.config.DataConfig`:

* ``tags``: tag grounding. "Which OSM tags does this request need?" with the
  retrieved candidate tags, answered by the gold query's own tag filters — the
  tag choice was the bottleneck of the published Qwen3-4B run.
* ``comments``: the code comments mined from real Overpass queries (the
  auxiliary data OverpassT5 was trained with), comment -> query. Rows whose
  query is a dev or test gold query are dropped (they would leak evaluation data).

Rows are plain dicts so they go straight into ``datasets.Dataset.from_list``.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable

import overpassql

from geoql import retrieval
from geoql.core.files import atomic_dir
from geoql.eval.dataset import load_comments, load_split
from geoql.eval.metrics import same_query_key
from geoql.nl.request import read_request
from geoql.retrieval.prompt import format_tags
from geoql.training.config import DataConfig

SFT_FILE = "sft.jsonl"
GRPO_FILE = "grpo.jsonl"
STATS_FILE = "stats.json"

TAG_SYSTEM = "You map requests about OpenStreetMap data to the OSM tags they need."
TAG_INSTRUCTION = (
    "Which OpenStreetMap tags does this request need? Answer with one tag per line "
    "(key=value, or key=* when any value matches)."
)


@dataclass
class Retrievers:
    """The retrievers a prompt is built from (loaded once, reused for every row)."""

    tags: retrieval.TagRetriever

    @property
    def examples(self) -> retrieval.ExampleRetriever:
        return self.tags.examples  # the tag retriever's loaded copy: one in memory

    @classmethod
    def load(cls, index_dir: str | os.PathLike | None = None) -> "Retrievers":
        return cls(retrieval.TagRetriever.load(index_dir))


@dataclass
class DataStats:
    seed: int
    k_tags: int
    k_examples: int
    rows: dict = field(default_factory=dict)  # kind -> count, for sft.jsonl
    grpo_rows: int = 0
    gold_chars_max: int = 0
    gold_chars_mean: float = 0.0
    prompt_chars_max: int = 0
    prompt_chars_mean: float = 0.0
    gold_tag_recall: float = 0.0  # share of the gold's key=value / key=* tags among the retrieved tags
    self_retrieved: int = 0  # rows whose retrieved examples held their own gold (must be 0)
    comments_dropped_eval_leak: int = 0
    files: dict = field(default_factory=dict)  # name -> sha256


def prompt_for(nl: str, retrievers: Retrievers, cfg: DataConfig, exclude: Iterable[int] = ()):
    """(messages, tags, examples) for one request, exactly as inference builds it: read once, as
    ``compile()`` reads it for a prompted backend (with the index's tag names, ``TagRetriever.read``),
    then ``retrieval.prompt_context`` and ``retrieval.build_prompt``, leaving ``exclude`` out."""
    retriever = retrievers.tags if retrievers is not None else None  # None: k_tags = k_examples = 0
    request = retriever.read(nl) if retriever is not None else read_request(nl)
    tags, examples = retrieval.prompt_context(request, retriever, k_tags=cfg.k_tags, k_examples=cfg.k_examples,
                                              exclude=exclude)
    return retrieval.build_prompt(request.nl, tags, examples), tags, examples


def queries_by_form(train) -> dict[str, list[int]]:
    """Training indices grouped by their gold query (``eval.metrics.same_query_key``)."""
    groups: dict[str, list[int]] = {}
    for ex in train:
        groups.setdefault(same_query_key(ex.query), []).append(ex.index)
    return groups


def leave_out(ex, same_query: dict[str, list[int]]) -> tuple[int, ...]:
    """Training indices a request must not retrieve: itself and its twins.

    Identical queries occur more than once in the training split; excluding the
    index alone would still let a row retrieve its own answer through a twin.
    """
    return tuple(sorted(set(same_query.get(same_query_key(ex.query), ())) | {ex.index}))


def _tag_lines(query: str) -> list[str]:
    """The gold query's positive tag filters as ``key=value`` / ``key=*`` lines (deduplicated).

    ``key=*`` is how the tag index names a key whose values are free text.
    """
    try:
        filters = overpassql.tag_filters(query)
    except Exception:  # an unparsable gold has no reliable tag list
        return []
    lines: list[str] = []
    for f in filters:
        if f.key_regex:
            continue
        if f.op == "=" and f.value:
            line = f"{f.key}={f.value}"
        elif f.op == "exists":
            line = f"{f.key}=*"
        else:
            continue
        if line not in lines:
            lines.append(line)
    return lines


def tag_grounding_messages(nl: str, tags) -> list[dict]:
    candidates = format_tags(tags)  # the main prompt's tag lines, so both tasks read alike
    user = f"{TAG_INSTRUCTION}\n\nRequest: {nl}"
    if candidates:
        user += f"\n\nCandidate tags:\n{candidates}"
    return [{"role": "system", "content": TAG_SYSTEM}, {"role": "user", "content": user}]


def _tag_recall(query: str, tags) -> float | None:
    gold = set(_tag_lines(query))
    if not gold:
        return None
    got = {getattr(t, "tag", "") for t in tags}
    return len(gold & got) / len(gold)


def _comment_nl(row: dict, min_ratio: float) -> str:
    comments = row.get("comments") or []
    ratios = row.get("comment_content_ratio") or [1.0] * len(comments)
    kept = [c.strip() for c, r in zip(comments, ratios) if r >= min_ratio and len(c.strip()) >= 8]
    return " ".join(kept)[:300].strip()


def build_rows(
    cfg: DataConfig,
    retrievers: Retrievers | None = None,
    *,
    progress: bool = True,
) -> tuple[list[dict], list[dict], DataStats]:
    """SFT rows, GRPO rows and statistics for ``cfg`` (deterministic given ``cfg.seed``)."""
    from tqdm import tqdm

    train = load_split("train", cfg.data_dir)
    if retrievers is None and (cfg.k_tags or cfg.k_examples):
        # k_tags = k_examples = 0 (prompts without retrieval) needs no index at all.
        retrievers = Retrievers.load(cfg.index_dir)
    rng = random.Random(cfg.seed)
    order = list(range(len(train)))
    rng.shuffle(order)
    if cfg.limit is not None:
        order = order[: cfg.limit]

    stats = DataStats(seed=cfg.seed, k_tags=cfg.k_tags, k_examples=cfg.k_examples)
    sft: list[dict] = []
    grpo: list[dict] = []
    recalls: list[float] = []
    tag_pick = set(rng.sample(order, k=int(round(len(order) * cfg.tag_grounding_fraction)))) if cfg.tag_grounding else set()
    same_query = queries_by_form(train)

    for i in tqdm(order, desc="training prompts", disable=not progress):
        ex = train[i]
        exclude = leave_out(ex, same_query)
        messages, tags, examples = prompt_for(ex.nl, retrievers, cfg, exclude=exclude)
        if any(getattr(e, "index", None) in exclude for e in examples):
            stats.self_retrieved += 1
        recall = _tag_recall(ex.query, tags)
        if recall is not None:
            recalls.append(recall)
        base = {"index": ex.index, "nl": ex.nl, "gold": ex.query, "bbox": ex.bbox}
        sft.append({**base, "kind": "main", "prompt": messages,
                    "completion": [{"role": "assistant", "content": ex.query}]})
        grpo.append({**base, "prompt": messages})
        if i in tag_pick:
            lines = _tag_lines(ex.query)
            if lines:
                sft.append({**base, "kind": "tags", "prompt": tag_grounding_messages(ex.nl, tags),
                            "completion": [{"role": "assistant", "content": "\n".join(lines)}]})

    if cfg.comments:
        eval_golds = {same_query_key(e.query) for split in ("dev", "test") for e in load_split(split, cfg.data_dir)}
        max_chars = max(len(e.query) for e in train)
        candidates = []
        for row in load_comments(cfg.data_dir):
            query = (row.get("query") or "").strip()
            nl = _comment_nl(row, cfg.comments_min_ratio)
            if not query or not nl or len(query) > max_chars:
                continue
            if same_query_key(query) in eval_golds:
                stats.comments_dropped_eval_leak += 1
                continue
            candidates.append((str(row.get("idx", "")), nl, query))
        rng.shuffle(candidates)
        if cfg.comments_max is not None:
            candidates = candidates[: cfg.comments_max]
        for idx, nl, query in tqdm(candidates, desc="comment prompts", disable=not progress):
            exclude = same_query.get(same_query_key(query), [])
            messages, _, _ = prompt_for(nl, retrievers, cfg, exclude=exclude)
            sft.append({"index": -1, "nl": nl, "gold": query, "bbox": "none", "kind": "comments",
                        "source_idx": idx, "prompt": messages,
                        "completion": [{"role": "assistant", "content": query}]})

    rng.shuffle(sft)
    for row in sft:
        stats.rows[row["kind"]] = stats.rows.get(row["kind"], 0) + 1
    stats.grpo_rows = len(grpo)
    golds = [r["gold"] for r in grpo]
    prompts = [sum(len(m["content"]) for m in r["prompt"]) for r in sft]
    stats.gold_chars_max = max((len(g) for g in golds), default=0)
    stats.gold_chars_mean = round(sum(map(len, golds)) / max(len(golds), 1), 1)
    stats.prompt_chars_max = max(prompts, default=0)
    stats.prompt_chars_mean = round(sum(prompts) / max(len(prompts), 1), 1)
    stats.gold_tag_recall = round(sum(recalls) / len(recalls), 4) if recalls else 0.0
    return sft, grpo, stats


def _write_jsonl(path: Path, rows: list[dict]) -> str:
    digest = hashlib.sha256()
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            line = json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n"
            f.write(line)
            digest.update(line.encode("utf-8"))
    return digest.hexdigest()


def write_dataset(out_dir: str | os.PathLike, sft: list[dict], grpo: list[dict], stats: DataStats, cfg: DataConfig) -> Path:
    """Write ``sft.jsonl``, ``grpo.jsonl``, ``stats.json`` into ``out_dir`` atomically.

    The files are written into a sibling staging directory that replaces
    ``out_dir`` only when complete, so an interrupted run leaves the previous
    dataset intact.
    """
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()) and not (out / STATS_FILE).is_file():
        raise FileExistsError(f"{out} is not empty and holds no training dataset; choose an empty or new directory")
    def write(staging: Path) -> None:
        stats.files = {SFT_FILE: _write_jsonl(staging / SFT_FILE, sft), GRPO_FILE: _write_jsonl(staging / GRPO_FILE, grpo)}
        payload = {"stats": asdict(stats), "config": asdict(cfg)}
        (staging / STATS_FILE).write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n", encoding="utf-8")

    return atomic_dir(out, write)


def read_dataset(dataset_dir: str | os.PathLike) -> tuple[list[dict], list[dict], dict]:
    """(sft rows, grpo rows, stats) from a directory written by :func:`write_dataset`."""
    base = Path(dataset_dir)
    if not (base / STATS_FILE).is_file():
        raise FileNotFoundError(f"{base} holds no training dataset; run `geoql train data --out {base}`")
    rows = []
    for name in (SFT_FILE, GRPO_FILE):
        with open(base / name, encoding="utf-8") as f:
            rows.append([json.loads(line) for line in f if line.strip()])
    stats = json.loads((base / STATS_FILE).read_text(encoding="utf-8"))
    return rows[0], rows[1], stats


def load_or_build(cfg: DataConfig, retrievers: Retrievers | None = None, progress: bool = True):
    """The recipe's data: read ``cfg.dataset_dir`` when set, else build it in memory."""
    if cfg.dataset_dir:
        sft, grpo, payload = read_dataset(cfg.dataset_dir)
        return sft, grpo, payload.get("stats", {})
    sft, grpo, stats = build_rows(cfg, retrievers, progress=progress)
    return sft, grpo, asdict(stats)
