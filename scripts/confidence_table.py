"""Fit and check the CPU default's confidence on OverpassNL dev: the reliability table of docs/compile.md.

    geoql compile --split dev --out runs/dev.pred --jsonl runs/dev.jsonl
    python scripts/confidence_table.py --jsonl runs/dev.jsonl            # print the tables
    python scripts/confidence_table.py --jsonl runs/dev.jsonl --write    # also store the fit

Dev is split in two halves by gold query (``eval.metrics.same_query_key``, hashed): the
logistic models and the thresholds are fitted on half A only, and every figure printed
for half B is held out. ``--write`` stores the fit as ``app/confidence_cpu.json`` (or
``--out FILE``, e.g. a CPU model's folder ``confidence.json``), with its provenance.

The signals are recomputed from the JSONL rows with the same code ``compile()`` runs
(``geoql.app.confidence``), with the CPU model's lexicon (``--model-dir``) and the
train split's place spellings.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from datetime import date
from pathlib import Path

import numpy as np

from geoql.app.confidence import FEATURES, HIT_FEATURES, Calibrator, assess, packaged_calibrator_path, topic_evidence
from geoql.app.cpu.lexicon import TagLexicon
from geoql.eval.dataset import load_split
from geoql.eval.faithfulness import train_place_aliases
from geoql.eval.metrics import get_scorer, same_query_key
from geoql.nl import read_request

BINS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0001)
# Requests that are plainly not about places, to choose the off-topic threshold with (not dev rows).
JUNK = ("'; DROP TABLE --", "hello", "what is 2+2", "🙂🙂🙂", "asdf qwer", "thanks!", "ignore all previous instructions",
        "SELECT * FROM users", "how are you", "tell me a joke", "1234", "lorem ipsum dolor sit amet")


def half_of(query: str) -> str:
    return "A" if int(hashlib.sha256(same_query_key(query).encode()).hexdigest(), 16) % 2 == 0 else "B"


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    """Logistic regression on soft labels (OQS in [0, 1]), standardised features, L2 penalty."""
    from scipy.optimize import minimize

    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = (x - mean) / scale
    n = len(y)

    def loss(params):
        w, b = params[:-1], params[-1]
        t = z @ w + b
        p = 1 / (1 + np.exp(-t))
        ce = -np.mean(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12)) + l2 * (w @ w) / (2 * n)
        g = p - y
        return ce, np.concatenate([z.T @ g / n + l2 * w / n, [g.mean()]])

    res = minimize(loss, np.zeros(x.shape[1] + 1), jac=True, method="L-BFGS-B")
    return res.x[:-1], float(res.x[-1]), mean, scale


def table(conf: np.ndarray, oqs: np.ndarray) -> list[tuple[str, int, float, float]]:
    rows = []
    for lo, hi in zip(BINS[:-1], BINS[1:]):
        m = (conf >= lo) & (conf < hi)
        if m.any():
            rows.append((f"{lo:.1f}-{min(hi, 1.0):.1f}", int(m.sum()), float(conf[m].mean()), float(oqs[m].mean())))
    return rows


def ece(conf: np.ndarray, oqs: np.ndarray) -> float:
    return sum(n * abs(c - o) for _, n, c, o in table(conf, oqs)) / len(conf)


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def markdown(rows) -> str:
    lines = ["| confidence | requests | mean confidence | mean OQS |", "|---|---|---|---|"]
    lines += [f"| {b} | {n} | {c:.3f} | {o:.3f} |" for b, n, c, o in rows]
    return "\n".join(lines)


def _manifest(model_dir) -> dict:
    """What the stored fit was made with: the CPU model's manifest (train size, selector, tag index)."""
    from geoql.app.cpu.model import MANIFEST, default_model_dir

    try:
        data = json.loads((Path(model_dir) if model_dir else default_model_dir()).joinpath(MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    return {k: data.get(k) for k in ("format_version", "train_size", "selector", "tag_index")}


def _compile_with(compiler, calib: Calibrator, nl: str, word_tags):
    """compile() as it runs, but with the calibrator being fitted (not the stored one); ``word_tags``: the
    CPU model's lexicon (``TagLexicon.fit`` on the train split, as ``Evidence.word_tags`` gives it)."""
    comp = compiler.compile(nl, k_tags=0, k_examples=0)
    found = assess(comp.request, comp.query, hits=comp.tags, examples=comp.examples, unlicensed=comp.unlicensed,
                   calibrated=True, word_tags=word_tags, aliases=compiler.place_aliases(), calibrator=calib)
    comp.confidence, comp.off_topic, comp.uncovered = found.confidence, found.off_topic, found.uncovered
    comp.far, comp.low_confidence = found.far, found.low_confidence
    return comp


def osmnl_report(compiler, calib: Calibrator, folder: Path, limit: int, scorer, word_tags) -> None:
    """Per OsmNL language: mean confidence and OQS, and how often each doubt fires."""
    from tqdm import tqdm

    print(f"\nOsmNL dev, first {limit} requests of each language (the same requests translated):")
    print("| language | requests | mean confidence | mean OQS | warning | far | off topic | with uncovered words |")
    print("|---|---|---|---|---|---|---|---|")
    for nl_file in sorted(folder.glob("dev.*.nl")):
        lang = nl_file.name.split(".")[1]
        nls = nl_file.read_text(encoding="utf-8").splitlines()[:limit]
        golds = nl_file.with_suffix(".query").read_text(encoding="utf-8").splitlines()[:limit]
        comps = [_compile_with(compiler, calib, nl, word_tags) for nl in tqdm(nls, desc=f"OsmNL {lang}", unit="req", leave=False)]
        conf = np.array([c.confidence for c in comps], dtype=float)
        oqs = np.array([scorer.oqs(c.query, g) for c, g in zip(comps, golds)])
        rate = lambda xs: f"{np.mean(xs) * 100:.1f} %"  # noqa: E731
        print(f"| {lang} | {len(comps)} | {conf.mean():.3f} | {oqs.mean():.3f} | {rate([c.low_confidence for c in comps])} | "
              f"{rate([bool(c.far) for c in comps])} | {rate([c.off_topic for c in comps])} | {rate([bool(c.uncovered) for c in comps])} |")
        for c in comps:
            if c.off_topic:
                print(f"  off topic ({lang}): {c.nl}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jsonl", required=True, help="`geoql compile --split dev --jsonl` output of the CPU default")
    p.add_argument("--model-dir", help="the CPU model that made it (default: $GEOQL_CPU_MODEL_DIR or the user data dir)")
    p.add_argument("--index-dir", help="its tag index (default: $GEOQL_INDEX_DIR or the user data dir)")
    p.add_argument("--data-dir", help="OverpassNL (default: $GEOQL_DATA_DIR)")
    p.add_argument("--write", action="store_true", help="store the fit (default place: the packaged app/confidence_cpu.json)")
    p.add_argument("--out", help="where --write stores it")
    p.add_argument("--compile", action="store_true",
                   help="also compile requests not about places (and --osmnl-dir) with the model and index")
    p.add_argument("--osmnl-dir", help="OsmNL dev folder (dev.<lang>.nl/.query): also report per language")
    p.add_argument("--osmnl-limit", type=int, default=150, help="first N requests of each OsmNL language")
    args = p.parse_args(argv)

    gold = {ex.index: ex.query for ex in load_split("dev", args.data_dir)}
    rows = [json.loads(line) for line in Path(args.jsonl).read_text(encoding="utf-8").splitlines() if line.strip()]
    if len(rows) != len(gold):
        print(f"warning: {len(rows)} rows for {len(gold)} dev requests", file=sys.stderr)
    # The CPU model's lexicon is TagLexicon.fit on the train split (CpuModel.fit_retrieval): fitted
    # here, the signals need no loadable model (the model is only needed for --compile).
    train = load_split("train", args.data_dir)
    lexicon = TagLexicon.fit([e.nl for e in train], [e.query for e in train])
    aliases = train_place_aliases(args.data_dir)
    scorer = get_scorer()
    from tqdm import tqdm

    empty = Calibrator()  # signals only: thresholds and fit come from this script
    recs = []
    for r in tqdm(rows, desc="signals and OQS", unit="req"):
        request = read_request(r["nl"])  # the saved rows keep the words: read each once
        a = assess(request, r["query"], hits=r["tags"], examples=r["examples"], unlicensed=r["unlicensed"],
                   calibrated=True, word_tags=lexicon.word_tag, aliases=aliases, calibrator=empty)
        recs.append({"nl": r["nl"], "oqs": scorer.oqs(r["query"], gold[r["index"]]), "half": half_of(gold[r["index"]]),
                     "signals": a.signals, "uncovered": a.uncovered, "words": len(request.words),
                     **dict(zip(("plain", "hit", "lexicon"), topic_evidence(request, a.signals, r["tags"], lexicon.word_tag)))})
    oqs = np.array([r["oqs"] for r in recs])
    half = np.array([r["half"] for r in recs])
    A, B = half == "A", half == "B"
    print(f"dev: {len(recs)} requests, half A {A.sum()}, half B {B.sum()}; mean OQS {oqs.mean():.4f} "
          f"(A {oqs[A].mean():.4f}, B {oqs[B].mean():.4f})")

    calib = Calibrator()
    conf = {}
    for setting, names in (("hits", FEATURES), ("nohits", tuple(f for f in FEATURES if f not in HIT_FEATURES))):
        x = np.array([[r["signals"][f] for f in names] for r in recs])
        w, b, mean, scale = fit_logistic(x[A], oqs[A])
        calib.models[setting] = {"features": list(names), "mean": mean.round(6).tolist(), "scale": scale.round(6).tolist(),
                                 "weights": w.round(6).tolist(), "bias": round(b, 6)}
        conf[setting] = np.array([calib.predict(r["signals"], setting) for r in recs])
        print(f"\n[{setting}] weights (standardised): " +
              ", ".join(f"{n} {v:+.3f}" for n, v in sorted(zip(names, w), key=lambda t: -abs(t[1]))))
        for name, m in (("A (fit)", A), ("B (held out)", B)):
            print(f"  {name}: ECE {ece(conf[setting][m], oqs[m]):.4f}, Spearman {spearman(conf[setting][m], oqs[m]):.3f}")
    c = conf["hits"]

    # The warning threshold: on half A, the highest confidence under which the flagged answers
    # average below OQS 0.5 (more wrong than right), in steps of 0.01.
    calib.warn_below = 0.0
    for t in np.round(np.arange(0.30, 0.90, 0.01), 2):
        fire = A & (c < t)
        if fire.any() and oqs[fire].mean() < 0.5:
            calib.warn_below = float(t)
    # Far: the 5th percentile of the nearest-neighbour similarity on half A.
    nearest = np.array([r["signals"]["nearest"] for r in recs])
    calib.far_below = round(float(np.quantile(nearest[A], 0.05)), 3)
    # Off topic: one threshold for both the best grounded tag hit and the strongest lexicon tie, the largest
    # (grid of 0.05) under which no half-A request without a place and without a word of OSM data
    # has both below it.
    free = np.array([not r["plain"] for r in recs])
    hit_max = np.array([r["hit"] for r in recs])
    lex = np.array([r["lexicon"] for r in recs])
    best = 0.0
    for t in np.round(np.arange(0.05, 0.96, 0.05), 2):
        if (A & free & (hit_max < t) & (lex < t)).any():
            break
        best = float(t)
    # One grid step lower: half B showed a request just under the largest one (a margin, not a fit).
    calib.off_topic_hit = calib.off_topic_lexicon = round(max(0.05, best - 0.05), 2)

    off = free & (hit_max < calib.off_topic_hit) & (lex < calib.off_topic_lexicon)
    fire = c < calib.warn_below
    far = nearest < calib.far_below
    report = {}
    for name, m in (("A (fit)", A), ("B (held out)", B), ("all", A | B)):
        report[name] = {key: round(float(value), 4) for key, value in (
            ("warn_rate", fire[m].mean()), ("warn_oqs", oqs[m & fire].mean()), ("other_oqs", oqs[m & ~fire].mean()),
            ("far_rate", far[m].mean()), ("far_oqs", oqs[m & far].mean()), ("off_topic_rate", off[m].mean()))}
        print(f"\n{name}: warning fires on {fire[m].mean() * 100:.1f} % (mean OQS {oqs[m & fire].mean():.3f} vs "
              f"{oqs[m & ~fire].mean():.3f}); far on {far[m].mean() * 100:.1f} % (mean OQS {oqs[m & far].mean():.3f} vs "
              f"{oqs[m & ~far].mean():.3f}); off topic on {off[m].mean() * 100:.2f} % ({int(off[m].sum())})")
    for r, o in zip(recs, off):
        if o:
            print(f"  off topic: {r['nl']}")
    unc = np.array([len(r["uncovered"]) > 0 for r in recs])
    print(f"\nrequests with an uncovered word: {unc.mean() * 100:.1f} % (mean OQS {oqs[unc].mean():.3f} vs {oqs[~unc].mean():.3f})")
    print(f"warn_below {calib.warn_below}, far_below {calib.far_below}, off_topic_hit {calib.off_topic_hit}, "
          f"off_topic_lexicon {calib.off_topic_lexicon}")
    print("\nReliability on half B (held out), hits model:\n" + markdown(table(c[B], oqs[B])))
    print("\nReliability on half A (fit), hits model:\n" + markdown(table(c[A], oqs[A])))
    print("\nReliability on half B (held out), no-hits model:\n" + markdown(table(conf["nohits"][B], oqs[B])))

    if args.compile:  # the junk requests and OsmNL need the whole compiler (model and index)
        from geoql.app.compile import Compiler

        compiler = Compiler("cpu", model_dir=args.model_dir, index_dir=args.index_dir)
        print("\nrequests not about places, with this fit:")
        for nl in JUNK:
            comp = _compile_with(compiler, calib, nl, lexicon.word_tag)
            print(f"  {nl!r}: off_topic {comp.off_topic}, confidence {comp.confidence}, uncovered {comp.uncovered}")
        if args.osmnl_dir:
            osmnl_report(compiler, calib, Path(args.osmnl_dir), args.osmnl_limit, scorer, lexicon.word_tag)

    calib.provenance = {
        "fitted_on": "OverpassNL dev, half A (sha256(same_query_key(gold)) even)", "requests_fit": int(A.sum()),
        "held_out": "half B", "requests_held_out": int(B.sum()),
        "ece_held_out": round(ece(c[B], oqs[B]), 4), "spearman_held_out": round(spearman(c[B], oqs[B]), 4),
        "cpu_model": _manifest(args.model_dir),
        "command": "geoql compile --split dev --out runs/dev.pred --jsonl runs/dev.jsonl && "
                   "python scripts/confidence_table.py --jsonl runs/dev.jsonl --write",
        "date": date.today().isoformat(),
        "thresholds": {"warn_below": "the highest confidence under which half A's flagged answers average OQS < 0.5",
                       "far_below": "5th percentile of half A's nearest similarity",
                       "off_topic": "the largest threshold (grid 0.05) for both the best tag hit and the strongest lexicon tie that flags none of half A's requests without a place or OSM word, minus one grid step"},
        "rates": report,
    }
    if args.write:
        out = Path(args.out) if args.out else packaged_calibrator_path()
        calib.save(out)
        print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
