"""Where the tag ranker's recall on translated requests is lost: the ranker or the evidence it reads.

    python scripts/ranker_headroom.py --osmnl-dir ../shared/osmnl [--languages ko,ru] [--index-dir DIR]

Recall@k of the gold controlled pairs (the OverpassNL dev gold, as ``geoql retrieval-eval
--osmnl-dir`` scores them) of OsmNL's dev requests, per language, read four ways:

- ``shipped``: the index's ranker, exactly as ``TagRetriever.search`` reads a request;
- ``refit, copies``: the glossed cascade fitted again on the code-switched copies of the training
  requests, as ``geoql index fit-ranker`` fits it (the control for the next row);
- ``refit, copies + real``: the same, plus the translated dev requests of the other half (two folds by
  line, so that no item's translation in any language trains the cascade that ranks it): what a ranker
  learns from real translations instead of word-level code-switching;
- ``English twin's e5``: the shipped ranker, with the request's multilingual neighbours found from its
  English rephrasing (``dev.en.nl``, same line): what a multilingual encoder that placed a translation
  where its English lies would give the ranker.

The requests that are not English take the glossed cascade; English ones (``--languages en``) the
English cascade, which the refit rows leave as shipped. Seven languages took 29 minutes on the 2-core
machine beside another job; the figures are in docs/notes/2026-12-ranker-headroom.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from geoql.core.errors import GeoqlError
from geoql.eval.dataset import load_split, read_example_lines
from geoql.retrieval.embedding import run_single_threaded
from geoql.retrieval.examples import clean_request, has_content
from geoql.retrieval.gold import controlled_pairs
from geoql.retrieval.ranker import C1, C2, NEIGHBOURS, RERANK, CascadeRanker, _fit_cascade, glossed_copies, training_groups
from geoql.retrieval.tags import TagRetriever
from geoql.retrieval.text import without_database_name

LANGUAGES = "de,fr,ru,zh,yue,ja,ko"


def _cascade(groups) -> CascadeRanker:
    # the fit's own defaults (geoql index fit-ranker)
    stages, _ = _fit_cascade(groups, C1, C2, RERANK)
    return CascadeRanker(*stages, RERANK)


def _with_glossed(shipped: CascadeRanker, glossed: CascadeRanker) -> CascadeRanker:
    return CascadeRanker(shipped.stage1, shipped.stage2, shipped.mean, shipped.scale, shipped.rerank,
                         meta=shipped.meta, glossed=glossed)


class Headroom:
    """One language's requests, their gold pairs and twins, and recall@k under a ranker."""

    def __init__(self, retriever: TagRetriever, requests: list[str], twins: list[str], golds: list[list[str]], k: int,
                 *, name: str = "", progress: bool = False):
        self.retriever, self.k, self.name, self.progress = retriever, k, name, progress
        self.texts = [without_database_name(clean_request(nl)) for nl in requests]
        self.twins = [without_database_name(clean_request(nl)) for nl in twins]
        self.golds = [set(g) for g in golds]

    def hits(self, ranker=None, *, twin: bool = False, rows=None) -> dict[int, int]:
        """Per request at ``rows`` (default: all), its gold pairs among the top ``k``, searched with ``ranker``
        in place of the index's; ``twin``: its multilingual neighbours found from its English twin."""
        r = self.retriever
        shipped = r.ranker
        r.ranker = ranker or shipped
        try:
            out = {}
            todo = range(len(self.texts)) if rows is None else rows
            reading = "twin" if twin else "refit" if ranker is not None else "shipped"
            for i in tqdm(todo, desc=f"{self.name} {reading}", leave=False, disable=not self.progress):
                text, gold = self.texts[i], self.golds[i]
                if not gold or not has_content(text):
                    out[i] = 0
                elif twin:
                    e5 = r.multilingual.vector(self.twins[i]) if has_content(self.twins[i]) else None
                    evidence = r._request_evidence(text, None, (), neighbours=NEIGHBOURS, e5_vector=e5)
                    out[i] = len(gold & {h.tag for h in r._learned_hits(evidence, (), self.k)})
                else:
                    out[i] = len(gold & {h.tag for h in r.search(text, self.k)})
            return out
        finally:
            r.ranker = shipped

    def groups(self, rows) -> list:
        """Fitting groups (feature rows, labels) of the requests at ``rows`` that are read through a gloss."""
        r = self.retriever
        out = []
        for i in tqdm(rows, desc=f"{self.name} fitting rows", leave=False, disable=not self.progress):
            text, gold = self.texts[i], self.golds[i]
            if not gold or not has_content(text) or r.is_english(text):
                continue
            candidates, feats = r._features(text, None, ())
            if candidates:
                out.append((np.asarray(feats, dtype=np.float64), np.asarray([r.docs[d]["tag"] in gold for d in candidates])))
        return out


def measure(retriever: TagRetriever, sets: dict[str, Headroom], copies: list) -> dict[str, dict[str, float]]:
    """Recall@k per reading (the four rows of the module doc) and language; ``copies``: the fitting groups of
    the code-switched copies (``training_groups(retriever, copies=glossed_copies(retriever))``)."""
    n = min(len(h.texts) for h in sets.values())
    folds = [range(0, n, 2), range(1, n, 2)]
    control = _with_glossed(retriever.ranker, _cascade(copies))
    real = [_with_glossed(retriever.ranker, _cascade(
        copies + [g for h in sets.values() for g in run_single_threaded(h.groups, folds[1 - f])])) for f in range(2)]
    rows: dict[str, dict[str, float]] = {"shipped": {}, "refit, copies": {}, "refit, copies + real": {}, "English twin's e5": {}}
    for lang, h in sets.items():
        real_hits = {}
        for f in range(2):
            real_hits.update(run_single_threaded(h.hits, real[f], rows=folds[f]))
        total = max(sum(len(g) for g in h.golds), 1)
        for name, hits in (("shipped", run_single_threaded(h.hits)), ("refit, copies", run_single_threaded(h.hits, control)),
                           ("refit, copies + real", real_hits), ("English twin's e5", run_single_threaded(h.hits, twin=True))):
            rows[name][lang] = sum(hits.values()) / total
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--osmnl-dir", required=True, metavar="DIR", help="OsmNL folder with dev.<lang>.nl and dev.en.nl")
    p.add_argument("--languages", default=LANGUAGES, help=f"comma-separated OsmNL languages (default {LANGUAGES})")
    p.add_argument("--index-dir", help="tag index (default: the built default index)")
    p.add_argument("--data-dir", help="OverpassNL directory (default: $GEOQL_DATA_DIR)")
    p.add_argument("--k", type=int, default=10, help="cut-off (default 10)")
    p.add_argument("--limit", type=int, help="only the first N requests of each language (two folds by line still)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = p.parse_args(argv)
    if args.k < 1 or (args.limit is not None and args.limit < 2):
        p.error("--k must be at least 1 and --limit at least 2")
    folder = Path(args.osmnl_dir).expanduser()
    languages = [lang.strip() for lang in args.languages.split(",") if lang.strip()]
    try:
        golds = [controlled_pairs(ex.query) for ex in load_split("dev", args.data_dir)]
        twins = read_example_lines(folder / "dev.en.nl", "--osmnl-dir")
        requests = {lang: read_example_lines(folder / f"dev.{lang}.nl", "--osmnl-dir") for lang in languages}
        retriever = TagRetriever.load(args.index_dir)
    except GeoqlError as exc:
        p.error(str(exc))
    if retriever.ranker is None or retriever.multilingual is None:
        p.error("the index has no learned ranker or no multilingual vectors: build it with `geoql index build`")
    sets = {}
    for lang in languages:
        if len(requests[lang]) != len(golds) or len(twins) != len(golds):
            p.error(f"dev.{lang}.nl and dev.en.nl need one line per OverpassNL dev request ({len(golds)})")
        sets[lang] = Headroom(retriever, requests[lang][: args.limit], twins[: args.limit], golds[: args.limit], args.k,
                              name=lang, progress=not args.no_progress)
    started = time.perf_counter()
    copies, _ = run_single_threaded(training_groups, retriever, copies=glossed_copies(retriever), progress=not args.no_progress)
    rows = measure(retriever, sets, copies)
    print(f"recall@{args.k} against the OverpassNL dev gold ({len(copies)} code-switched copies; "
          f"{time.perf_counter() - started:.0f} s)")
    print(f"{'':24s}" + "".join(f"{lang:>8s}" for lang in languages))
    for name, figures in rows.items():
        print(f"{name:24s}" + "".join(f"{figures[lang]:8.4f}" for lang in languages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
