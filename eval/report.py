"""Batch evaluation of a prediction file, and the failure analysis behind it.

``evaluate(EvalConfig(...))`` is what ``geoql eval`` runs: it reads the
predictions, scores them with :mod:`geoql.eval.metrics` against an OverpassNL split or
any gold file (``--gold``), aggregates over all examples and the hard subset, and
analyses where the score is lost (parse failures, KVS buckets, counterfactual ceilings,
optionally the constants the requests do not support and, against a second system,
the churn).
"""

from __future__ import annotations

import gc
import json
import os
from collections import Counter
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Sequence

import overpassql

from geoql.core.errors import UserError
from geoql.core.files import check_writable_dir, write_atomic
from geoql.eval.dataset import DatasetError, Example, hard_subset, load_examples, load_split
from geoql.eval.execution import evaluate_execution
from geoql.eval.faithfulness import train_place_aliases
from geoql.eval.license import CORE_KINDS, KINDS, measure
from geoql.nl.request import read_request
from geoql.eval.metrics import Scorer, Scores, aggregate, get_scorer
from geoql.osm.overpass import OverpassError

CATASTROPHIC_OQS = 0.10
METRIC_COLUMNS = (("em", "EM"), ("chrf", "chrF"), ("kvs", "KVS"), ("tree", "TreeS"), ("oqs", "OQS"))


class EvalInputError(UserError, ValueError):
    """A prediction file or an option is unusable (one-line message naming the fix)."""


@dataclass
class EvalConfig:
    pred: str = field(metadata={"help": "predictions: one query per line (official format) or JSONL with a 'query' field"})
    split: str = field(default="dev", metadata={"help": "the split the predictions are for (dev or test)"})
    data_dir: str | None = field(default=None, metadata={"help": "OverpassNL directory (default: $GEOQL_DATA_DIR, else a downloaded copy)"})
    gold: str | None = field(default=None, metadata={
        "help": "score against this gold file (one query per line, e.g. an OsmNL dev.de.query) instead of a split"})
    requests: str | None = field(default=None, metadata={
        "help": "with --gold: the requests, line i for gold line i (e.g. dev.de.nl); needed by --unlicensed"})
    bbox: str | None = field(default=None, metadata={
        "help": "with --gold: the boxes (south,west,north,east a line, e.g. dev.de.bbox); needed by --execution"})
    unlicensed: bool = field(default=False, metadata={
        "help": "also count the predictions (and gold queries) with a part their request does not license: a tag, "
                "area, around, set name, setting, output, name, id, user, date (geoql.eval.license)"})
    json_out: str | None = field(default=None, metadata={"help": "write the corpus figures (percent) to this JSON file"})
    per_example_out: str | None = field(default=None, metadata={"help": "write per-example scores to this JSONL file"})
    compare: str | None = field(default=None, metadata={"help": "a second prediction file (the 'before' system) to compute the churn against"})
    execution: bool = field(default=False, metadata={"help": "also run the execution metrics (EX, EX-soft) against an Overpass server"})
    overpass_url: str | None = field(default=None, metadata={"help": "Overpass API interpreter URL for --execution"})
    cache_dir: str | None = field(default=None, metadata={"help": "cache directory for --execution results"})
    progress: bool = field(default=True, metadata={"help": "show a progress bar while scoring"})

    def __post_init__(self):
        if self.split not in ("dev", "test"):
            raise EvalInputError(f"split must be dev or test, got {self.split!r}; pass --split dev or --split test")
        if self.gold is None:
            for option, value in (("--requests", self.requests), ("--bbox", self.bbox)):
                if value:
                    raise EvalInputError(f"{option} goes with --gold FILE (a split has its own); add --gold or drop {option}")
        elif self.unlicensed and not self.requests:
            raise EvalInputError("--unlicensed compares each query with its request: add --requests FILE")
        elif self.execution and not self.bbox:
            raise EvalInputError("--execution with --gold runs each query in its box: add --bbox FILE")
        for option, value in (("--pred", self.pred), ("--compare", self.compare)):
            if value and not Path(value).is_file():
                raise EvalInputError(f"prediction file {value} does not exist; pass an existing file to {option}")
        if self.overpass_url and not self.execution:
            raise EvalInputError("--overpass-url only matters with --execution; add --execution or drop --overpass-url")
        for name in ("json_out", "per_example_out"):
            value = getattr(self, name)
            option = f"--{name.replace('_out', '').replace('_', '-')}"
            if value and Path(value).is_dir():
                raise EvalInputError(f"{value} is a directory; give a file name for {option}")
            if value:
                try:  # now, not after the scoring (minutes with --execution)
                    check_writable_dir(Path(value).parent)
                except OSError as exc:
                    raise EvalInputError(f"{option}: {exc}") from None


def help_of(name: str) -> str:
    """The help text of an :class:`EvalConfig` field (the CLI reuses it)."""
    return next(f.metadata["help"] for f in fields(EvalConfig) if f.name == name)


# -- predictions ---------------------------------------------------------------

def read_predictions(path: str | os.PathLike, expected: int | None = None, *, against: str = "the split") -> list[str]:
    """Read a prediction file: one query per line, or JSONL rows with a ``query`` field.

    Lines are stripped like the official evaluation does.  JSONL is recognised
    by the ``.jsonl`` suffix or by a first line that is a JSON object with a
    ``query`` field; rows that all carry an ``index`` are put in index order.
    ``against`` names what ``expected`` counts, for the error message.
    """
    p = Path(path)
    if not p.is_file():
        raise EvalInputError(f"prediction file {p} does not exist; pass an existing file to --pred")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise EvalInputError(f"{p} is not UTF-8 text (byte {exc.start}); write predictions as UTF-8") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline does not start another prediction
    # Windows line endings and stray blank lines at the end are not predictions.
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if expected is not None and len(lines) > expected and not any(line.strip() for line in lines[expected:]):
        lines = lines[:expected]
    if _is_jsonl(p, lines):
        queries = _parse_jsonl(p, lines)
    else:
        queries = [line.strip() for line in lines]
    if expected is not None and len(queries) != expected:
        raise EvalInputError(
            f"{p} has {len(queries)} predictions but {against} has {expected} examples; "
            "write exactly one query per line (empty line for no answer), in dataset order"
        )
    return queries


def _is_jsonl(path: Path, lines: list[str]) -> bool:
    if path.suffix == ".jsonl":
        return True
    first = next((line for line in lines if line.strip()), "")
    if not first.lstrip().startswith("{\""):
        return False
    try:
        row = json.loads(first)
    except ValueError:
        return False
    return isinstance(row, dict) and "query" in row


def _parse_jsonl(path: Path, lines: list[str]) -> list[str]:
    rows = []
    for number, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
        except ValueError:
            raise EvalInputError(f"{path}:{number} is not valid JSON; write one JSON object per line") from None
        if not isinstance(row, dict) or not isinstance(row.get("query", 0), (str, type(None))):
            raise EvalInputError(f"{path}:{number} needs a string 'query' field")
        rows.append(row)
    if rows and all(isinstance(r.get("index"), int) and not isinstance(r.get("index"), bool) for r in rows):
        order = sorted(r["index"] for r in rows)
        if order != list(range(len(rows))):
            raise EvalInputError(f"{path}: the 'index' fields must be 0..{len(rows) - 1}, each once")
        rows.sort(key=lambda r: r["index"])
    return [(r["query"] or "").strip() for r in rows]


# -- analysis -------------------------------------------------------------------

def subset(scores: Sequence[Scores], indices: Sequence[int]) -> dict:
    """Corpus figures (percent) over the examples at ``indices``."""
    return aggregate([scores[i] for i in indices])


def kvs_buckets(scores: Sequence[Scores]) -> dict[str, int]:
    """How many examples have KVS 0, in (0, 0.5), in [0.5, 1) and exactly 1.

    >>> kvs_buckets([Scores(0, 0.0, 0, 0, 0), Scores(0, 0.25, 0, 0, 0), Scores(0, 0.5, 0, 0, 0), Scores(0, 1.0, 0, 0, 0)])
    {'0': 1, '(0,0.5)': 1, '[0.5,1)': 1, '1': 1}
    """
    buckets = {"0": 0, "(0,0.5)": 0, "[0.5,1)": 0, "1": 0}
    for s in scores:
        if s.kvs <= 0.0:
            buckets["0"] += 1
        elif s.kvs < 0.5:
            buckets["(0,0.5)"] += 1
        elif s.kvs < 1.0:
            buckets["[0.5,1)"] += 1
        else:
            buckets["1"] += 1
    return buckets


def ceilings(scores: Sequence[Scores]) -> dict[str, float]:
    """Corpus OQS (percent) if one component were perfect on every example.

    >>> ceilings([Scores(0.5, 0.0, 0.75, 0.75, 0)])["oqs_if_kvs_perfect"]
    83.33333333333334
    """
    n = len(scores) or 1

    def mean_oqs(kvs_one=False, tree_one=False, chrf_one=False) -> float:
        total = 0.0
        for s in scores:
            total += ((1.0 if kvs_one else s.kvs) + (1.0 if tree_one else s.tree) + (1.0 if chrf_one else s.chrf)) / 3
        return total / n * 100

    return {
        "oqs": mean_oqs(),
        "oqs_if_kvs_perfect": mean_oqs(kvs_one=True),
        "oqs_if_tree_perfect": mean_oqs(tree_one=True),
        "oqs_if_chrf_perfect": mean_oqs(chrf_one=True),
    }


def parse_failures(preds: Sequence[str], scorer: Scorer | None = None, top: int = 5) -> dict:
    """Predictions the converter cannot handle.

    ``converter_errors``: the converter reported errors (Overpass would print
    them on stderr and the metric scores its partial output); ``not_xml``: the
    converter output is not XML, so the official metric scores an empty
    script; ``empty``: blank predictions; ``no_output``: valid queries without an
    output statement, which run and return nothing; ``messages``: the most common
    first error messages.
    """
    scorer = scorer or get_scorer()
    messages: Counter = Counter()
    result = {"empty": 0, "not_xml": 0, "converter_errors": 0, "no_output": 0}
    for p in preds:
        features = scorer.features(p)
        result["empty"] += not p.strip()
        result["not_xml"] += not features.xml_ok
        if features.errors:
            result["converter_errors"] += 1
            messages[_short_message(features.errors[0])] += 1
        elif p.strip() and not overpassql.has_output(p):
            result["no_output"] += 1
    result["messages"] = messages.most_common(top)
    return result


def _short_message(message: str) -> str:
    # "line 1: parse error: ';' expected - ']' found." -> the part after the location
    text = str(message).split("\n")[0]
    if text.startswith("line ") and ": " in text:
        text = text.split(": ", 1)[1]
    return text[:80]


@dataclass
class Churn:
    """How a second system ('after') differs from a first ('before'), example by example."""

    n: int
    improved: int
    regressed: int
    unchanged: int
    oqs_gained: float  # percent points of corpus OQS won on the improved examples
    oqs_lost: float  # percent points lost on the regressed examples
    em_gained: int
    em_lost: int
    catastrophic_before: int  # OQS below CATASTROPHIC_OQS
    catastrophic_after: int

    def as_dict(self) -> dict:
        return asdict(self)


def churn(before: Sequence[Scores], after: Sequence[Scores], tolerance: float = 1e-9) -> Churn:
    """Compare two systems on the same examples.

    >>> c = churn([Scores(0.5, 0, 0, 0, 0), Scores(0.05, 0, 0, 0, 0)], [Scores(0.25, 0, 0, 0, 0), Scores(1.0, 0, 0, 0, 1)])
    >>> (c.improved, c.regressed, c.oqs_gained, c.oqs_lost, c.em_gained, c.catastrophic_before, c.catastrophic_after)
    (1, 1, 47.5, 12.5, 1, 1, 0)
    """
    if len(before) != len(after):
        raise EvalInputError(f"cannot compare {len(before)} with {len(after)} examples; score the same split twice")
    n = len(before)
    improved = regressed = em_gained = em_lost = 0
    gained = lost = 0.0
    for b, a in zip(before, after):
        delta = a.oqs - b.oqs
        if delta > tolerance:
            improved += 1
            gained += delta
        elif delta < -tolerance:
            regressed += 1
            lost -= delta
        em_gained += int(a.em > b.em)
        em_lost += int(a.em < b.em)
    scale = 100 / n if n else 0.0
    return Churn(
        n=n,
        improved=improved,
        regressed=regressed,
        unchanged=n - improved - regressed,
        oqs_gained=gained * scale,
        oqs_lost=lost * scale,
        em_gained=em_gained,
        em_lost=em_lost,
        catastrophic_before=sum(1 for s in before if s.oqs < CATASTROPHIC_OQS),
        catastrophic_after=sum(1 for s in after if s.oqs < CATASTROPHIC_OQS),
    )


# -- formatting ------------------------------------------------------------------

def format_table(rows: dict[str, dict]) -> str:
    """A fixed-width table of corpus figures (percent, two decimals).

    >>> print(format_table({"all": {"em": 0.1, "chrf": 60.17669, "kvs": 41.6644, "tree": 61.0197, "oqs": 54.28693, "n": 1000}}))
    subset         n      EM    chrF     KVS   TreeS     OQS
    all         1000    0.10   60.18   41.66   61.02   54.29
    """
    header = f"{'subset':<10} {'n':>5} " + " ".join(f"{label:>7}" for _, label in METRIC_COLUMNS)
    lines = [header]
    for name, figures in rows.items():
        values = " ".join(f"{figures[key]:>7.2f}" for key, _ in METRIC_COLUMNS)
        lines.append(f"{name:<10} {figures['n']:>5} {values}")
    return "\n".join(lines)


def format_analysis(scores: Sequence[Scores], failures: dict) -> str:
    n = len(scores) or 1
    lines = ["failure analysis"]
    lines.append(
        f"  parse failures: {failures['converter_errors']} with converter errors, "
        f"{failures['not_xml']} scored as an empty script, {failures['empty']} empty"
    )
    lines.append(f"  valid but without an output statement (they return nothing): {failures['no_output']}")
    for message, count in failures.get("messages", []):
        lines.append(f"    {count:>4} × {message}")
    buckets = kvs_buckets(scores)
    lines.append("  KVS buckets: " + ", ".join(f"{k}: {v} ({v / n * 100:.1f}%)" for k, v in buckets.items()))
    c = ceilings(scores)
    lines.append(
        f"  OQS {c['oqs']:.2f}; if KVS were perfect {c['oqs_if_kvs_perfect']:.2f}, "
        f"if TreeS were perfect {c['oqs_if_tree_perfect']:.2f}, if chrF were perfect {c['oqs_if_chrf_perfect']:.2f}"
    )
    worst = sorted(range(len(scores)), key=lambda i: (scores[i].oqs, i))[:5]
    lines.append("  lowest OQS: " + ", ".join(f"#{i} {scores[i].oqs:.2f}" for i in worst))
    return "\n".join(lines)


def format_churn(c: Churn) -> str:
    return "\n".join(
        [
            "churn (--compare is 'before', --pred is 'after')",
            f"  improved {c.improved}, regressed {c.regressed}, unchanged {c.unchanged} (of {c.n})",
            f"  OQS gained +{c.oqs_gained:.2f}, lost -{c.oqs_lost:.2f}, net {c.oqs_gained - c.oqs_lost:+.2f}",
            f"  EM gained {c.em_gained}, lost {c.em_lost}",
            f"  catastrophic (OQS < {CATASTROPHIC_OQS:.2f}): {c.catastrophic_before} before, {c.catastrophic_after} after",
        ]
    )


# -- the command -------------------------------------------------------------------

@dataclass
class EvalResult:
    figures: dict  # {"oqs", "kvs", "tree", "chrf", "em", "n", "hard": {...}} in percent
    scores: list  # per-example Scores
    text: str  # what the command prints


def load_gold(config: EvalConfig) -> tuple[list[Example], str]:
    """The examples ``config`` scores against, and how to name them: a split or ``--gold`` files."""
    if config.gold:
        return load_examples(config.gold, config.requests, config.bbox), f"the gold file {config.gold}"
    return load_split(config.split, config.data_dir), f"the {config.split} split"


def unlicensed_rates(requests: Sequence[str], preds: Sequence[str], golds: Sequence[str] | None = None, *,
                     data_dir: str | None = None, aliases=None) -> dict:
    """Shares (percent) of queries with a part their request does not license (``geoql.eval.license``):
    ``pred`` and, given ``golds``, ``gold``; each with ``any``, ``core`` and one share per kind.

    A file brings no backend's tag evidence: tags are licensed by the request's own words here (a
    backend's ``Compilation.unlicensed`` also counts the tags it answered from). Other spellings of
    places learned from the OverpassNL train split (``data_dir``, else ``$GEOQL_DATA_DIR``) license
    a place, as in ``Compilation.unlicensed``.
    """
    if aliases is None:
        aliases = train_place_aliases(data_dir)
    read = [read_request(nl) for nl in requests]  # once, for both files
    reports = {"pred": measure(read, preds, aliases=aliases)}
    if golds is not None:
        reports["gold"] = measure(read, golds, aliases=aliases)
    result: dict = {name: r.as_dict() for name, r in reports.items()}
    result["aliases"] = len(aliases)
    result["examples"] = [
        {"line": line, "request": nl, "parts": texts}
        for kind in KINDS for line, nl, texts in reports["pred"].examples.get(kind, [])[:1]
    ]
    return result


def format_unlicensed(rates: dict) -> str:
    """The ``--unlicensed`` lines of the report."""
    pred = rates["pred"]
    line = f"  unlicensed parts: {pred['any']:.1f}% of the predictions"
    if "gold" in rates:
        line += f", {rates['gold']['any']:.1f}% of the gold queries"
    line += f" (of the kinds that change the elements, {'/'.join(CORE_KINDS)}: {pred['core']:.1f}%"
    line += f", gold {rates['gold']['core']:.1f}%)" if "gold" in rates else ")"
    lines = [line, "    by kind: " + ", ".join(f"{k} {pred[k]:.1f}%" for k in KINDS),
             "    (tags licensed by the request's own words: a file brings no backend's tag evidence)"]
    for row in rates["examples"][:6]:
        lines.append(f"    line {row['line']}: {', '.join(row['parts'])[:60]} <- {row['request'][:70]}")
    return "\n".join(lines)


def evaluate(config: EvalConfig, scorer: Scorer | None = None) -> EvalResult:
    """Score ``config.pred`` on ``config.split`` (or ``config.gold``), write the requested files, return the report."""
    scorer = scorer or get_scorer()
    examples, against = load_gold(config)
    golds = [e.query.strip() for e in examples]
    preds = read_predictions(config.pred, expected=len(examples), against=against)
    # read the second file now: a bad --compare file should fail before any scoring
    other = read_predictions(config.compare, expected=len(examples), against=against) if config.compare else None
    with _collector_paused():
        scores = scorer.score_many(preds, golds, progress=config.progress)
        before = scorer.score_many(other, golds, progress=config.progress) if other is not None else None
    try:
        hard = None if config.gold else hard_subset(examples)
    except DatasetError:
        hard = None  # no difficulty file in this copy: report all examples only

    figures = aggregate(scores)
    rows = {"all": figures}
    if hard is not None:
        figures["hard"] = subset(scores, hard)
        rows["hard"] = figures["hard"]
    title = f"{config.gold} (gold)" if config.gold else config.split
    sections = [f"{title}: {len(preds)} predictions from {config.pred}", format_table(rows)]

    if before is not None:
        other_rows = {"all": aggregate(before)}
        if hard is not None:
            other_rows["hard"] = subset(before, hard)
        sections.append(f"--compare {config.compare}\n" + format_table(other_rows))

    failures = parse_failures(preds, scorer)
    analysis = format_analysis(scores, failures)
    figures["analysis"] = {
        "kvs_buckets": kvs_buckets(scores),
        "ceilings": ceilings(scores),
        "parse_failures": {k: v for k, v in failures.items() if k != "messages"},
    }
    if config.unlicensed:
        rates = unlicensed_rates([e.nl for e in examples], preds, golds, data_dir=config.data_dir)
        analysis += "\n" + format_unlicensed(rates)
        figures["analysis"]["unlicensed"] = rates
    sections.append(analysis)
    if before is not None:
        c = churn(before, scores)
        sections.append(format_churn(c))
        figures["churn"] = c.as_dict()

    execution = None
    if config.execution:
        execution = _run_execution(preds, examples, config)
        figures["execution"] = {k: execution[k] for k in ("ex", "ex_soft", "n") if k in execution}
        sections.append(f"execution: EX {execution['ex']:.2f}  EX-soft {execution['ex_soft']:.2f}  (n={execution['n']})")

    if config.per_example_out:
        hard_set = set(hard or ())
        per_ex = (execution or {}).get("per_example") or []
        rows_out = []
        for i, (pred, gold, s) in enumerate(zip(preds, golds, scores)):
            features = scorer.features(pred)
            row = {"index": i, "nl": examples[i].nl, "pred": pred, "gold": gold, **s.as_dict(), "hard": i in hard_set,
                   "xml_ok": features.xml_ok, "converter_errors": list(features.errors[:3])}
            row["em"] = int(row["em"])
            if i < len(per_ex) and isinstance(per_ex[i], dict):
                row["execution"] = per_ex[i]
            rows_out.append(json.dumps(row, ensure_ascii=False))
        write_atomic(config.per_example_out, "\n".join(rows_out) + "\n")
    if config.json_out:
        write_atomic(config.json_out, json.dumps(figures, indent=2) + "\n")
    return EvalResult(figures=figures, scores=scores, text="\n\n".join(sections))


@contextmanager
def _collector_paused():
    """Pause Python's cyclic garbage collector while scoring.

    Scoring creates no reference cycles worth collecting, and the
    collector's passes over the growing caches were a third of the eval
    command's CPU time.  The survivors are frozen afterwards so that the
    next collection does not scan them all.  (Execution, which can run for
    hours through an HTTP stack, stays outside.)
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def _run_execution(preds: list[str], examples: list, config: EvalConfig) -> dict:
    try:
        result = evaluate_execution(
            preds, examples, overpass_url=config.overpass_url, cache_dir=config.cache_dir, progress=config.progress
        )
    except OverpassError as exc:
        # finished examples stay in the execution cache; a rerun continues from there
        raise EvalInputError(f"execution stopped: {exc}") from None
    if not isinstance(result, dict) or "ex" not in result or "ex_soft" not in result:
        raise EvalInputError("geoql.eval.execution returned no EX/EX-soft figures; check the Overpass server")
    result.setdefault("n", len(preds))
    return result
