"""The user-request benchmark: requests as people type them into a map tool, with the facts a
right answer carries, scored per class and per language.

The rows live in ``eval/data/user_requests.jsonl`` (shipped with the package; nothing here
reads ``../shared``), the places they name in ``eval/data/user_places.json``. Each row::

    {"id": "de-004", "lang": "de", "class": "plural", "also": ["attr_yes"], "split": "dev",
     "request": "tankstellen in stuttgart",
     "want": [{"tags": [["amenity=fuel"]], "in": "stuttgart"}],
     "output": [], "note": "why a fact is what it is, where it is not obvious"}

Brand facts follow the Name Suggestion Index as npm ``name-suggestion-index`` 8.0.20260918 ships
it (``brand:wikidata``, and the ``brand``, ``name``, ``brand:en``, ``name:en`` values it lists for
that QID). ``want`` lists the wanted features (:class:`geoql.eval.facts.Target`: tag groups, optional tags,
types, where, since/until, user, ids, samples), ``output`` the outputs asked for, ``csv`` the
CSV columns asked for, ``places`` extra places for this row only. The facts and their checker
are :mod:`geoql.eval.facts`; this module loads and validates the rows, keeps the fixed dev/test
split (stratified by class and language: tune on dev, score test once at the end), scores a
list of answers and prints the table.

>>> rows = load_rows("dev")
>>> len(rows) > 200, {r.split for r in rows}
(True, {'dev'})
>>> report = score(rows[:1], [""])
>>> report.n, report.ok, report.results[0].verdict.facts
(1, 0, ['valid'])
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from geoql.core.errors import UserError
from geoql.eval.facts import FACT_KINDS, Facts, FactsError, Places, Verdict, check
from geoql.eval.report import read_predictions

DATA_DIR = Path(__file__).resolve().parent / "data"
REQUESTS_FILE = DATA_DIR / "user_requests.jsonl"
PLACES_FILE = DATA_DIR / "user_places.json"
SPLITS = ("dev", "test", "all")

# The classes of request issue 41 names; every row has one primary class (and optional secondary ones).
CLASSES = {
    "plain": "a plain feature in a place",
    "plural": "plurals and inflected forms",
    "attr_yes": "attribute: has / yes",
    "attr_no": "attribute: no / absent",
    "attr_num": "attribute: numeric comparison",
    "attr_name": "attribute: name pattern",
    "negation": "negation: X but not Y",
    "brand": "brands (Name Suggestion Index)",
    "union": "two features: a union",
    "two_places": "two places: one block each",
    "around_place": "around a named place",
    "around_features": "around other features",
    "output": "outputs asked for: count, centre, geometry, CSV, metadata",
    "view": "map view, box, coordinates",
    "time": "time and users: changed since, edited by",
    "ids": "element ids",
    "quoted": "quoted names",
}
ROW_FIELDS = {"id", "lang", "class", "also", "split", "request", "want", "output", "csv", "places", "note"}


@dataclass
class Row:
    id: str
    lang: str
    cls: str
    split: str
    request: str
    facts: Facts
    also: tuple = ()
    note: str = ""
    raw: dict = field(default_factory=dict, repr=False)


def read_row(raw: dict, gazetteer: Places) -> Row:
    """One row, checked: known fields, a known class, a split, a request and well-formed facts."""
    rid = raw.get("id", "?") if isinstance(raw, dict) else "?"
    try:
        if not isinstance(raw, dict):
            raise FactsError("a row is a JSON object")
        unknown = set(raw) - ROW_FIELDS
        if unknown:
            raise FactsError(f"unknown field(s) {sorted(unknown)}")
        for name in ("id", "lang", "class", "split", "request"):
            if not isinstance(raw.get(name), str) or not raw[name].strip():
                raise FactsError(f"{name}: a non-empty text")
        if raw["class"] not in CLASSES or any(c not in CLASSES for c in raw.get("also", ())):
            raise FactsError(f"class: one of {', '.join(CLASSES)}")
        if raw["split"] not in ("dev", "test"):
            raise FactsError("split: dev or test")
        facts = Facts.from_row(raw, gazetteer)
    except FactsError as exc:
        raise FactsError(f"row {rid}: {exc}") from None
    return Row(raw["id"], raw["lang"], raw["class"], raw["split"], raw["request"], facts,
               tuple(raw.get("also", ())), raw.get("note", ""), raw)


@lru_cache(maxsize=4)
def _load(requests_file: str, places_file: str) -> tuple[Row, ...]:
    gazetteer = Places(json.loads(Path(places_file).read_text(encoding="utf-8")))
    rows, seen = [], set()
    for number, line in enumerate(Path(requests_file).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except ValueError as exc:
            raise FactsError(f"{requests_file}:{number}: not JSON ({exc})") from None
        row = read_row(raw, gazetteer)
        if row.id in seen:
            raise FactsError(f"{requests_file}:{number}: id {row.id} twice")
        seen.add(row.id)
        rows.append(row)
    return tuple(rows)


def load_rows(split: str = "all", requests_file: str | os.PathLike | None = None,
              places_file: str | os.PathLike | None = None) -> list[Row]:
    """The rows of ``split`` (``dev``, ``test`` or ``all``), in file order."""
    if split not in SPLITS:
        raise UserError(f"--split: one of {', '.join(SPLITS)}, got {split!r}")
    rows = _load(str(requests_file or REQUESTS_FILE), str(places_file or PLACES_FILE))
    return [r for r in rows if split == "all" or r.split == split]


# -- predictions ------------------------------------------------------------------------------

def read_answers(path: str | os.PathLike, rows: list[Row]) -> list[str]:
    """The answers for ``rows`` from a file: JSONL with ``id`` and ``query`` (any order, other
    rows allowed), or one query per line in the order of the rows."""
    p = Path(path)
    if p.is_file():
        try:
            first = next((line for line in p.read_text(encoding="utf-8").splitlines() if line.strip()), "")
        except UnicodeDecodeError:
            first = ""
        try:
            head = json.loads(first) if first.lstrip().startswith("{") else None
        except ValueError:
            head = None
        if isinstance(head, dict) and "id" in head:
            by_id = {}
            for number, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    item = json.loads(line)
                except ValueError:
                    raise UserError(f"{p}:{number} is not JSON; write one object with 'id' and 'query' a line") from None
                if not isinstance(item, dict) or not isinstance(item.get("query", ""), (str, type(None))):
                    raise UserError(f"{p}:{number} needs an 'id' and a string 'query'")
                by_id[str(item.get("id"))] = (item.get("query") or "").strip()
            missing = [r.id for r in rows if r.id not in by_id]
            if missing:
                raise UserError(f"{p} has no answer for {len(missing)} row(s) ({', '.join(missing[:5])}); "
                                "answer every row of the split")
            return [by_id[r.id] for r in rows]
    return read_predictions(path, expected=len(rows), against="the benchmark split")


# -- scoring -----------------------------------------------------------------------------------

@dataclass
class Result:
    row: Row
    query: str
    verdict: Verdict


@dataclass
class Report:
    results: list[Result]

    @property
    def n(self) -> int:
        return len(self.results)

    @property
    def ok(self) -> int:
        return sum(r.verdict.ok for r in self.results)

    def share(self) -> float:
        return 100.0 * self.ok / self.n if self.n else 0.0

    def by(self, key) -> dict[str, dict]:
        """``{group: {"n", "ok", "share"}}`` for ``key(row)`` (a class, a language)."""
        groups: dict[str, list[Result]] = {}
        for r in self.results:
            groups.setdefault(key(r.row), []).append(r)
        return {g: _figures(rs) for g, rs in groups.items()}

    def by_class(self) -> dict[str, dict]:
        found = self.by(lambda row: row.cls)
        return {c: found[c] for c in CLASSES if c in found}

    def by_lang(self) -> dict[str, dict]:
        found = self.by(lambda row: row.lang)
        order = sorted(found, key=lambda lang: (lang != "en", lang))
        return {lang: found[lang] for lang in order}

    def by_fact(self) -> dict[str, int]:
        """How many answers miss each kind of fact (an answer may miss several)."""
        counts = Counter(k for r in self.results for k in r.verdict.facts)
        return {k: counts[k] for k in FACT_KINDS if counts[k]}

    def misses(self) -> list[Result]:
        return [r for r in self.results if not r.verdict.ok]


def _figures(results: list[Result]) -> dict:
    ok = sum(r.verdict.ok for r in results)
    return {"n": len(results), "ok": ok, "share": 100.0 * ok / len(results) if results else 0.0}


def score(rows: list[Row], answers: list[str]) -> Report:
    """Check every answer against its row's facts."""
    if len(rows) != len(answers):
        raise UserError(f"{len(answers)} answers for {len(rows)} rows")
    return Report([Result(row, query, check(row.facts, query)) for row, query in zip(rows, answers)])


def format_report(report: Report, *, title: str, misses: int = 20) -> str:
    """The table: all, per class, per language, the failed facts, then the first misses.

    >>> rows = load_rows("all")[:2]
    >>> print("\\n".join(format_report(score(rows, ["", ""]), title="demo", misses=0).splitlines()[:4]))
    demo
    answers that carry every fact of their request and nothing foreign
    <BLANKLINE>
                           n     ok   share
    """
    def line(name: str, fig: dict) -> str:
        return f"{name:<18}{fig['n']:>6}  {fig['ok']:>5}  {fig['share']:>5.1f} %"

    head = f"{'':<18}{'n':>6}  {'ok':>5}   share"
    out = [title, "answers that carry every fact of their request and nothing foreign", "",
           head, line("all", _figures(report.results)), "", head.replace(" " * 5, "class", 1)]
    out += [line(c, fig) for c, fig in report.by_class().items()]
    out += ["", head.replace(" " * 8, "language", 1)]
    out += [line(lang, fig) for lang, fig in report.by_lang().items()]
    facts = report.by_fact()
    if facts:
        out += ["", "answers missing a fact of each kind: " + ", ".join(f"{k} {n}" for k, n in facts.items())]
    shown = report.misses()[:misses]
    if shown:
        out += ["", f"misses (the first {len(shown)} of {len(report.misses())}):"]
        for r in shown:
            out += _miss_lines(r)
    return "\n".join(out)


def _miss_lines(r: Result) -> list[str]:
    lines = [f"{r.row.id} [{r.row.cls}] {r.row.request}", f"    query: {r.query or '(none)'}"]
    lines += [f"    {m}" for m in r.verdict.misses]
    return lines


def report_json(report: Report, **extra) -> dict:
    """The figures at full precision, and every miss with its facts."""
    return {**extra, **_figures(report.results), "by_class": report.by_class(), "by_lang": report.by_lang(),
            "by_fact": report.by_fact(),
            "misses": [miss_json(r) for r in report.misses()]}


def miss_json(r: Result) -> dict:
    return {"id": r.row.id, "lang": r.row.lang, "class": r.row.cls, "request": r.row.request, "query": r.query,
            "facts": r.verdict.facts, "misses": [{"fact": m.fact, "detail": m.detail} for m in r.verdict.misses]}
