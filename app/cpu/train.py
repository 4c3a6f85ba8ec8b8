"""Training the selection model on the training split, leave-one-query-out.

For every training request, its nearest training requests with *another* gold
query give a candidate pool exactly as at inference time (the queries as they are and
edited), and every candidate is scored with the official OQS against the
request's gold query. A gradient-boosted regressor learns to predict that OQS
from the candidate's features; at inference the best predicted candidate wins.

The tag lexicon and place aliases used while building a request's pool are
fitted on the other folds, so a request never sees statistics of its own gold
query (otherwise the model would learn to trust the lexicon too much).
"""

from __future__ import annotations

import pickle
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np

from geoql.app.cpu.faithful import place_aliases
from geoql.app.cpu.hints import TagHints
from geoql.app.cpu.lexicon import TagLexicon
from geoql.app.cpu.lite import TreeEnsemble
from geoql.app.cpu.model import CpuConfig, CpuModel, check_model_dir, default_model_dir, learn_aliases
from geoql.app.cpu.request import known_places
from geoql.core.errors import ConfigError
from geoql.eval import dataset as eval_dataset
from geoql.eval.metrics import get_scorer
from geoql.nl.request import read_request
from geoql.index.build import build_index
from geoql.index.config import IndexConfig
from geoql.retrieval import IndexMissingError
from geoql.retrieval.artifacts import load_manifest
from geoql.retrieval.codeswitch import LANGUAGES as AUGMENT_LANGUAGES
from geoql.retrieval.codeswitch import CodeSwitcher, code_switched_copies
from geoql.retrieval.parallel import chunked_map, planned_workers
from geoql.retrieval.ranker import same_query_positions


@dataclass
class CpuTrainConfig:
    """Options of ``geoql cpu train`` (the CPU default's trainer; ``training.config`` holds the LLM recipes)."""

    # 5-fold cross-validation over the training requests: k=13 68.21, k=10 68.11 (dev 63.87 / 63.65),
    # within the noise; `geoql cpu train --k` defaults to 10 as well.
    k: int = field(default=10, metadata={"help": "neighbours per request"})
    edits: str = field(default="all", metadata={"help": "edit groups used in the pools: all, none, or e.g. 'area,tags'"})
    partial: bool = field(default=False, metadata={"help": "also offer each neighbour with only the place edited"})
    fix_place: bool = field(default=True, metadata={"help": "offer a neighbour with another place only with the request's place"})
    faithful: str = field(default="all", metadata={
        "help": "candidates carry no constant the request does not support: all, formats (all but out meta), "
                "core (no output format) or off"})
    frame: bool = field(default=True, metadata={"help": "read the request's intent frame too (geoql.nl.frame)"})
    frame_k: int = field(default=3, metadata={"help": "more neighbours picked by the request's tag hints and shape"})
    example_k: int = field(default=5, metadata={
        "help": "more neighbours from the tag index's fused search of the training requests (embedding, BM25, n-grams)"})
    e5_k: int = field(default=5, metadata={
        "help": "more neighbours from the multilingual embedding of the request as written (needs an index built with it)"})
    compose: bool = field(default=True, metadata={"help": "also offer the query composed from the request alone"})
    gloss_words: bool = field(default=True, metadata={
        "help": "a request read through a glossary gives the lexicon, the tag edits and the word features its English words"})
    # Measured together and apart (train CV / dev OQS, k=10): both 68.11 / 63.65, add only
    # 68.06 / 63.65, neither 68.18 / 63.61: neutral overall, +0.5 KVS on the dev hard subset.
    add_tags: bool = field(default=True, metadata={"help": "also offer each edited query with the tags the request calls for added"})
    drop_tags: bool = field(default=True, metadata={"help": "also offer each edited query without tags only the example explains"})
    folds: int = field(default=5, metadata={"help": "folds for the lexicon/aliases seen by the pools"})
    # All 6,352 requests (with the copies ~180,000 scored candidates, ~7.5 minutes on 2 cores): in 5-fold cross-validation
    # over the training requests, a selector fitted on all other folds chooses better
    # (67.46 OQS) than one fitted on the first 2,500 requests only (67.00), in every fold.
    # The selector learns from English requests only; translated requests would otherwise put
    # every text feature where English training requests rarely go (docs/notes/2026-12-cpu-augment.md).
    augment: str = field(default="de,fr,ru,zh,yue,ja,ko", metadata={
        "help": "languages of the code-switched copies of training requests the selector also learns from "
                "(geoql.retrieval.codeswitch; needs the tag index), comma-separated; '' for none"})
    # OsmNL dev OQS, same code, 0.5 -> 1.0: +0.2 to +0.7 in every translated language, en +0.3,
    # orig -0.1; twice the copies (5,628), ~1.7x the training time (docs/notes/2026-12-glossaries.md).
    augment_share: float = field(default=1.0, metadata={"help": "share of the training requests that get a code-switched copy"})
    limit: int | None = field(default=None, metadata={"help": "train the selector on the first N training requests (None: all)"})
    workers: int | None = field(default=None, metadata={
        "help": "processes that score the training requests (None: every usable core); the model is the same"})
    # 5-fold cross-validation over the training requests (held-out selected OQS): 67.45 on raw
    # OQS labels, 67.80 on labels minus their pool's mean (with the pool-relative features).
    center: bool = field(default=True, metadata={"help": "learn each candidate's OQS relative to its pool's mean"})
    max_iter: int = field(default=300, metadata={"help": "boosting rounds of the selector"})
    # Bigger trees: in 5-fold cross-validation over the training requests (held-out selected
    # OQS) 31 leaves / 40 per leaf 68.11, 63 / 20 68.30, 127 / 20 68.54, 255 / 20 68.52, 127 / 10 68.58.
    leaves: int = field(default=127, metadata={"help": "most leaves per tree of the selector"})
    min_leaf: int = field(default=20, metadata={"help": "fewest candidates per leaf of the selector"})
    seed: int = field(default=0, metadata={"help": "random seed of the booster (output is deterministic)"})
    tag_hints: str = field(default="auto", metadata={
        "help": "use the tag index's retriever: auto (when an index loads), on (required) or off"})
    index_dir: str | None = field(default=None, metadata={"help": "tag index directory (default: $GEOQL_INDEX_DIR or the user data dir)"})

    def __post_init__(self) -> None:
        if self.tag_hints not in ("auto", "on", "off"):
            raise ConfigError(f"tag_hints must be auto, on or off (got {self.tag_hints!r}): use auto")
        CpuConfig(k=self.k, edits=self.edits, faithful=self.faithful, frame_k=self.frame_k, example_k=self.example_k,
                  e5_k=self.e5_k)  # same checks as at inference
        if self.folds < 2:
            raise ConfigError(f"folds must be >= 2 (got {self.folds}): use 5")
        if self.limit is not None and self.limit < 20:
            raise ConfigError(f"limit must be at least 20 requests (got {self.limit}): or leave it unset for all")
        if self.leaves < 2 or self.min_leaf < 1:
            raise ConfigError(f"leaves must be >= 2 and min_leaf >= 1 (got {self.leaves}, {self.min_leaf}): use 127 and 20")
        unknown = [lang for lang in self.augment_languages if lang not in AUGMENT_LANGUAGES]
        if unknown:
            raise ConfigError(f"augment: no code-switching for {', '.join(unknown)}: use some of "
                              f"{','.join(AUGMENT_LANGUAGES)} or ''")
        if not 0.0 <= self.augment_share <= 1.0:
            raise ConfigError(f"augment_share must be between 0 and 1 (got {self.augment_share}): use 1.0")
        if self.workers is not None and self.workers < 1:
            raise ConfigError(f"workers must be >= 1 (got {self.workers}): or leave it unset for every core")
        if self.max_iter < 1:
            raise ConfigError(f"max_iter must be >= 1 (got {self.max_iter}): use 300")

    @property
    def augment_languages(self) -> tuple[str, ...]:
        return tuple(lang.strip() for lang in self.augment.split(",") if lang.strip())

    def requests_of(self, total: int) -> int:
        """How many of ``total`` training requests the selector learns from (``limit``); their copies come after them.

        >>> CpuTrainConfig(limit=1000).requests_of(6352), CpuTrainConfig().requests_of(6352)
        (1000, 6352)
        """
        return total if self.limit is None else min(self.limit, total)


def _pool_config(config: CpuTrainConfig, tag_hints: bool = False) -> CpuConfig:
    return CpuConfig(k=config.k, edits=config.edits, partial=config.partial, fix_place=config.fix_place,
                     add_tags=config.add_tags, drop_tags=config.drop_tags, tag_hints=tag_hints, faithful=config.faithful,
                     frame=config.frame, frame_k=config.frame_k, example_k=config.example_k, e5_k=config.e5_k, compose=config.compose,
                     gloss_words=config.gloss_words)


def load_hints(config: CpuTrainConfig, *, quiet: bool = False):
    """The :class:`~app.cpu.hints.TagHints` to train with, or ``None`` (``tag_hints`` auto without an index, or off)."""
    if config.tag_hints == "off":
        return None
    try:
        return TagHints.load(config.index_dir)
    except (IndexMissingError, ImportError) as exc:
        if config.tag_hints == "on":
            raise ConfigError(f"tag_hints is on but the tag index is not usable: {exc}") from None
        if not quiet:
            print(f"geoql: training without tag hints ({str(exc).splitlines()[0]}); "
                  f"`geoql index build` first gives better tags", file=sys.stderr)
        return None


@dataclass
class _Scoring:
    """What scoring one training request needs, the same in this process and in every worker."""

    model: CpuModel  # pickled without its tag hints (FAISS inside), which a worker loads again
    queries: list[str]
    group_of: dict
    fold_of: np.ndarray
    fold_models: dict
    pool_config: CpuConfig
    index_dir: str | None = None  # the hints' index, for a worker to load
    hints_k: int = 10
    scorer: object | None = None  # None: the official metric (eval.metrics.get_scorer), made where it runs


def _load_scoring(path: str) -> _Scoring:
    """A worker's :class:`_Scoring`, from the file the trainer wrote (``retrieval.parallel`` setup)."""
    with open(path, "rb") as f:
        ctx = pickle.load(f)
    if ctx.index_dir is not None:
        ctx.model.hints = TagHints.load(ctx.index_dir, ctx.hints_k)
    return ctx


def _score_request(ctx: _Scoring, item) -> tuple[np.ndarray, list[float]] | None:
    """One request's pool, leave-one-query-out: its features and the OQS of each candidate (``None``: no pool)."""
    i, request, found = item
    model, queries = ctx.model, ctx.queries
    if ctx.scorer is None:
        ctx.scorer = get_scorer()
    lex, aliases, _, spellings = ctx.fold_models[int(ctx.fold_of[i])]
    hints = model.hints.for_training(queries[i], request) if model.hints is not None else None
    hint_exclude = model.hints.exclusions(queries[i]) if model.hints is not None else ()
    _, cands, f = model.pool(request, config=ctx.pool_config, lexicon=lex, aliases=aliases, neighbours=found,
                             hints=hints, faith_aliases=spellings, exclude=set(ctx.group_of[i]),
                             hint_exclude=hint_exclude)
    if not cands:
        return None
    return f, [ctx.scorer.oqs(c.query, queries[i]) for c in cands]


def training_rows(model: CpuModel, config: CpuTrainConfig, *, scorer=None, progress: bool = True):
    """Features, OQS labels and request ids of every leave-one-query-out candidate.

    The requests are scored on ``config.workers`` processes (``retrieval.parallel``): the same
    rows, in the same order, as one process makes. A given ``scorer`` must then be picklable.
    """
    from tqdm import tqdm

    nls, queries = model.train_nls, model.train_queries
    n = config.requests_of(len(nls))
    # Leave-one-query-out, as dev and test requests are: the dataset splits by query, while 16 % of
    # training requests share their gold query with another (eval.metrics.same_query_key). Requests with the same query share a
    # fold, and none is another's neighbour or hint source.
    group_of = same_query_positions(queries)
    fold_of = np.array([min(group_of[i]) for i in range(len(nls))]) % config.folds
    fold_models = {}
    for f in range(config.folds):
        keep = [i for i in range(len(nls)) if fold_of[i] != f]
        places = known_places([queries[i] for i in keep])
        keep_nls, keep_queries = [nls[i] for i in keep], [queries[i] for i in keep]
        aliases = learn_aliases(keep_nls, keep_queries, places=places)
        fold_models[f] = (TagLexicon.fit(keep_nls, keep_queries), aliases, places,
                          place_aliases(keep_nls, keep_queries, aliases))
    requests = [(i, nls[i]) for i in range(n)]
    copies = augmented_requests(model, config, n)
    excludes = [set(group_of[i]) for i, _ in requests + copies]
    # Each read once, with the place names of the other folds' queries (as a dev request is with all of them).
    reads = [read_request(nl, model.knowledge(fold_models[int(fold_of[i])][2])) for i, nl in requests + copies]
    neighbours = model.neighbours.search_many([model.neighbour_text(r) for r in reads], config.k, excludes)
    items = [(i, r, found) for (i, _), r, found in zip(requests + copies, reads, neighbours)]
    ctx = _Scoring(model, queries, group_of, fold_of, fold_models, _pool_config(config, model.hints is not None),
                   scorer=scorer)
    if model.hints is not None:
        ctx.index_dir, ctx.hints_k = str(model.hints.retriever.index_dir), model.hints.k
    desc = "scoring leave-one-query-out candidates" + (f" ({len(copies)} code-switched copies)" if copies else "")
    if n < len(nls):  # a quick model's bar beside the full one's (app.backends.cpu quick_start)
        desc += f" (first {n} requests)"
    workers = planned_workers(len(items), config.workers)
    with tqdm(total=len(items), desc=desc, disable=not progress, unit="req") as bar, \
            tempfile.TemporaryDirectory(prefix="geoql-train-") as tmp:
        path = Path(tmp) / "scoring.pkl"
        if workers > 1:
            with open(path, "wb") as f:  # read once by each worker (spawned: nothing is inherited)
                pickle.dump(ctx, f, protocol=pickle.HIGHEST_PROTOCOL)
        scored = chunked_map(_score_request, items, partial(_load_scoring, str(path)), workers=workers,
                             context=ctx, progress=bar.update)
    feats, labels, groups = [], [], []
    for row, result in enumerate(scored):
        if result is None:
            continue
        feats.append(result[0])
        labels.append(result[1])
        groups.append(np.full(len(result[1]), row))  # a copy is a pool of its own
    return np.vstack(feats), np.concatenate(labels).astype(np.float32), np.concatenate(groups)


def augmented_requests(model: CpuModel, config: CpuTrainConfig, n: int) -> list[tuple[int, str]]:
    """``(training position, code-switched request)`` for a seeded share of the first ``n`` requests,
    the languages in turn; none without tag hints (the translations live in the tag index)."""
    languages = config.augment_languages
    if not languages or config.augment_share <= 0 or model.hints is None:
        return []
    switcher = CodeSwitcher.from_index(model.hints.retriever.index_dir, {lang: AUGMENT_LANGUAGES[lang] for lang in languages})
    chosen = np.flatnonzero(np.random.default_rng(config.seed).random(n) < config.augment_share)
    return code_switched_copies(switcher, model.train_nls, chosen)


def pool_centred(labels: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Each label minus the mean label of its pool: only the order within a pool matters.

    >>> pool_centred(np.array([1.0, 0.0, 0.5, 0.5]), np.array([3, 3, 7, 7])).tolist()
    [0.5, -0.5, 0.0, 0.0]
    """
    _, inverse = np.unique(groups, return_inverse=True)
    means = np.bincount(inverse, weights=labels) / np.bincount(inverse)
    return (labels - means[inverse]).astype(np.float32)


def fit_selector(features: np.ndarray, labels: np.ndarray, config: CpuTrainConfig, groups: np.ndarray | None = None):
    from sklearn.ensemble import HistGradientBoostingRegressor

    if config.center and groups is not None:
        labels = pool_centred(labels, groups)
    model = HistGradientBoostingRegressor(
        max_iter=config.max_iter,
        learning_rate=0.05,
        max_leaf_nodes=config.leaves,
        min_samples_leaf=config.min_leaf,
        early_stopping=False,
        random_state=config.seed,
    )
    return model.fit(features, labels)


def selection_quality(selector, features, labels, groups) -> dict:
    """Mean OQS (percent) of the top candidate: first neighbour, the selector's choice, the best possible."""
    chosen, first, best = [], [], []
    pred = selector.predict(features) if selector is not None else None
    for g in np.unique(groups):
        m = groups == g
        y = labels[m]
        first.append(y[np.argmin(features[m, 1] * 2 - (features[m, -1] > 0))])
        best.append(y.max())
        if pred is not None:
            chosen.append(y[np.argmax(pred[m])])
    out = {"nearest": float(np.mean(first) * 100), "oracle": float(np.mean(best) * 100)}
    if chosen:
        out["selected"] = float(np.mean(chosen) * 100)
    return out


def train(nls: list[str], queries: list[str], config: CpuTrainConfig | None = None, *,
          scorer=None, progress: bool = True) -> CpuModel:
    """A complete :class:`CpuModel` from training pairs (minutes on a laptop CPU)."""
    config = config or CpuTrainConfig()
    start = time.time()
    hints = load_hints(config, quiet=not progress)
    model = CpuModel.fit_retrieval(nls, queries, _pool_config(config, hints is not None))
    if hints is not None:
        model.hints, model.index_fingerprint = hints, hints.fingerprint
    feats, labels, groups = training_rows(model, config, scorer=scorer, progress=progress)
    fitted = fit_selector(feats, labels, config, groups)
    # Saved and predicted as numpy trees (the same numbers): no scikit-learn at inference.
    model.selector = TreeEnsemble.from_sklearn(fitted)
    pools = np.unique(groups)
    first_copy = config.requests_of(len(nls))  # copies' pools come after the requests'
    model.stats = {
        "train_requests": int(np.sum(pools < first_copy)),
        "train_copies": int(np.sum(pools >= first_copy)),
        "train_candidates": int(len(labels)),
        "train_seconds": round(time.time() - start, 1),
        "train_fit_oqs": selection_quality(fitted, feats, labels, groups),
    }
    return model


def ensure_index(index_dir=None, data_dir=None) -> bool:
    """Build the tag index when there is none (first use of the CPU default); False when that fails.

    The CPU default works without it, only with weaker tags, so a failed build
    (no registry access, missing extra) is reported and training goes on without hints.
    """
    try:
        load_manifest(index_dir)
        return True
    except IndexMissingError as exc:  # none yet, or damaged: say which before the minute of building
        print(f"geoql: {exc}", file=sys.stderr)
    print("geoql: building the tag index now (one time; the same as `geoql index build`)", file=sys.stderr)
    try:
        build_index(IndexConfig(out_dir=index_dir, data_dir=data_dir))
        return True
    except Exception as exc:  # noqa: BLE001 (any failure: the CPU default still trains without hints)
        print(f"geoql: could not build the tag index ({type(exc).__name__}: {exc}); training without tag hints",
              file=sys.stderr)
        return False


def train_and_save(out_dir: Path | None = None, data_dir=None, config: CpuTrainConfig | None = None,
                   progress: bool = True) -> CpuModel:
    """Train from the dataset's training split and write the model (atomically)."""
    target = Path(out_dir) if out_dir else default_model_dir()
    check_model_dir(target)  # before minutes of training, not at the save
    examples = eval_dataset.load_split("train", data_dir)
    model = train([e.nl for e in examples], [e.query for e in examples], config, progress=progress)
    model.save(target)
    return model
