"""How often the feature lexicon's tags are the gold query's: precision and recall per language.

    python scripts/lexicon_accuracy.py [--overpassnl DIR] [--osmnl DIR] [--langs en,de,...] [--split train]
                                       [--min-score S] [--worst N] [--limit N]

Each request is read by ``geoql.nl.frame.read_frame`` (for its language and the places and names
to leave out, as the reader does) and then by ``geoql.nl.lexicon.lookup``. Its gold tags are the
query's ``overpassql.tag_filters``: ``key=value`` for ``=`` (and for each word of a plain regex
alternation ``"a|b"``), ``key=*`` for an existence filter. A brand's ``brand=X`` counts as
right when the gold names X in ``brand``, ``name`` or ``operator`` (any case) or in a regex.

* top P: of the requests with a match, the share whose best match's tags are all gold tags;
* top R: of the requests whose gold has a tag, the share whose best match's tags are all gold;
* all P: of every match (a request may name several features), the share whose tags are all gold;
* hit: the share of requests with a match.

``--worst N`` lists the surfaces most often wrong. ``--write-removals`` writes every surface wrong
at least ``REMOVE_MIN_WRONG`` times and more often wrong than right into the ``remove`` section of
``scripts/nl_lexicon/edits.json`` (then rebuild with ``scripts/build_nl_lexicon.py``); tune it on
OverpassNL train and the first half of OsmNL dev (``--limit 500``), and report the second half
(``--skip 500``) and OverpassNL dev, which it never saw.
``orig`` is OverpassNL (``dataset.<split>.nl``); the OsmNL languages are its dev requests in
other people's wording (``dev.<lang>.nl``, against ``dev.<lang>.query``).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter, defaultdict
from pathlib import Path

import overpassql

from geoql.eval.dataset import read_example_lines
from geoql.nl.frame import read_frame
from geoql.nl.lexicon import MIN_SCORE, Lexicon
from geoql.nl.text import fold
from geoql.retrieval.gold import query_tags

NAME_KEYS = ("brand", "name", "operator")


def gold_tags(query: str) -> tuple[set[str], set[str]]:
    """(tags as ``key=value`` / ``key=*``, folded values the query gives name-like keys or regexes)."""
    tags = set()
    for t in query_tags(query):
        tags.update({t.tag, f"{t.key}=*"})
    names = set()
    try:
        filters = overpassql.tag_filters(query)
    except overpassql.OverpassQLError:
        filters = []
    for f in filters:
        if f.op in ("=", "~") and (f.op == "~" or f.key.split(":")[0] in NAME_KEYS):
            names.add(fold(f.value))
    return tags, names


def right(tags: tuple[str, ...], gold: set[str], names: set[str]) -> bool:
    for tag in tags:
        key, _, value = tag.partition("=")
        if key == "brand":
            if not any(fold(value) == n or fold(value) in n for n in names):
                return False
        elif tag not in gold:
            return False
    return True


def unread_spans(text: str, frame) -> list[tuple[int, int]]:
    """Everything but the frame's ``what`` phrases: the reader looks up the phrases that name things,
    not its cue words ("in current view"), places, names or numbers."""
    keep, at = [], 0
    for phrase in frame.what:
        start = text.find(phrase, at)
        if start < 0:
            continue
        keep.append((start, start + len(phrase)))
        at = start + len(phrase)
    gaps, prev = [], 0
    for start, end in keep:
        if start > prev:
            gaps.append((prev, start))
        prev = end
    gaps.append((prev, len(text) + 1))
    return gaps


def score_requests(nls, queries, lexicon, min_score, *, lang=None):
    stats = Counter()
    wrong, good = Counter(), Counter()
    examples = defaultdict(list)
    for nl, query in zip(nls, queries):
        frame = read_frame(nl)
        read_as = lang or frame.language
        matches = [m for m in lexicon.lookup(nl, read_as, skip=unread_spans(nl, frame)) if m.score >= min_score]
        gold, names = gold_tags(query)
        has_gold = any(not t.endswith("=*") or t.split("=")[0] not in NAME_KEYS for t in gold)
        stats["n"] += 1
        stats["gold"] += has_gold
        if not matches:
            continue
        stats["hit"] += 1
        top = max(matches, key=lambda m: m.score)
        ok = right(top.tags, gold, names)
        stats["top_ok"] += ok
        stats["top_ok_gold"] += ok and has_gold
        for m in matches:
            good_m = right(m.tags, gold, names)
            stats["all"] += 1
            stats["all_ok"] += good_m
            key = (m.lang or "brand", fold(m.surface), m.tags)
            (good if good_m else wrong)[key] += 1
            if not good_m and len(examples[key]) < 2:
                examples[key].append(nl)
    return stats, wrong, good, examples


REMOVE_MIN_WRONG = 3
EDITS = Path(__file__).resolve().parent / "nl_lexicon" / "edits.json"


def write_removals(wrong: Counter, good: Counter) -> None:
    """Surfaces wrong at least REMOVE_MIN_WRONG times and more often than right, by language."""
    by_surface_wrong, by_surface_good = Counter(), Counter()
    for (lang, surface, _tags), n in wrong.items():
        by_surface_wrong[(lang, surface)] += n
    for (lang, surface, _tags), n in good.items():
        by_surface_good[(lang, surface)] += n
    edits = json.loads(EDITS.read_text(encoding="utf-8"))
    removals = {lang: set(rows) for lang, rows in edits.get("remove", {}).items()}
    for (lang, surface), n in by_surface_wrong.items():
        if lang != "brand" and n >= REMOVE_MIN_WRONG and n > by_surface_good[(lang, surface)]:
            removals.setdefault(lang, set()).add(surface)
    edits["remove"] = {lang: sorted(rows) for lang, rows in sorted(removals.items())}
    EDITS.write_text(json.dumps(edits, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(f"{EDITS}: {sum(len(v) for v in edits['remove'].values())} surfaces to remove")


def _row(name: str, s: Counter) -> str:
    p = s["top_ok"] / s["hit"] if s["hit"] else 0.0
    r = s["top_ok_gold"] / s["gold"] if s["gold"] else 0.0
    allp = s["all_ok"] / s["all"] if s["all"] else 0.0
    return f"| {name} | {s['n']} | {s['hit'] / s['n']:.3f} | {p:.3f} | {r:.3f} | {allp:.3f} |"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--overpassnl", type=Path, default=None, help="OverpassNL folder (dataset.<split>.nl/.query): row 'orig'")
    ap.add_argument("--split", default="train", choices=("train", "dev"), help="OverpassNL split (never test)")
    ap.add_argument("--osmnl", type=Path, default=None, help="OsmNL folder (dev.<lang>.nl/.query): one row per language")
    ap.add_argument("--langs", default="en,de,fr,ru,zh,yue,ja,ko")
    ap.add_argument("--min-score", type=float, default=MIN_SCORE)
    ap.add_argument("--limit", type=int, default=None, help="first N requests of each file")
    ap.add_argument("--skip", type=int, default=0, help="leave out the first N requests of each file (held-out rows)")
    ap.add_argument("--worst", type=int, default=0, help="list the N surfaces most often wrong")
    ap.add_argument("--write-removals", action="store_true",
                    help="write the surfaces wrong more often than right into scripts/nl_lexicon/edits.json")
    args = ap.parse_args(argv)
    lexicon = Lexicon.default()
    sets = []
    if args.overpassnl:
        sets.append(("orig", args.overpassnl / f"dataset.{args.split}.nl", args.overpassnl / f"dataset.{args.split}.query", "en"))
    if args.osmnl:
        for lang in args.langs.split(","):
            sets.append((lang, args.osmnl / f"dev.{lang}.nl", args.osmnl / f"dev.{lang}.query", None))
    print("| set | requests | hit | top P | top R | all P |")
    print("|---|---|---|---|---|---|")
    wrong_all, good_all, examples_all = Counter(), Counter(), {}
    t0 = time.time()
    for name, nl_path, q_path, lang in sets:
        end = None if args.limit is None else args.skip + args.limit
        nls = read_example_lines(nl_path, "--overpassnl/--osmnl")[args.skip:end]
        queries = read_example_lines(q_path, "--overpassnl/--osmnl")[args.skip:end]
        stats, wrong, good, examples = score_requests(nls, queries, lexicon, args.min_score, lang=lang)
        print(_row(name, stats), flush=True)
        wrong_all.update(wrong)
        good_all.update(good)
        for k, v in examples.items():
            examples_all.setdefault(k, v)
    if args.worst:
        print(f"\nsurfaces most often wrong (wrong / right), min score {args.min_score}:")
        for key, n in sorted(wrong_all.items(), key=lambda kv: -(kv[1] - good_all[kv[0]]))[:args.worst]:
            print(f"  {n:4d} / {good_all[key]:4d}  {key[0]} {key[1]!r} -> {', '.join(key[2])}   e.g. {examples_all[key][0][:90]!r}")
    if args.write_removals:
        write_removals(wrong_all, good_all)
    print(f"\n({time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
