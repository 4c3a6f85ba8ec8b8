"""Constants of a query that its request does not support.

A query answers a request faithfully only with constants the request gave: the place,
the names, ids, users, dates, numbers and the output format. :func:`unsupported_constants`
reads every such constant from the query's syntax tree and lists those the request
never mentions::

    >>> [c.value for c in unsupported_constants("cafes in the current view",
    ...     '{{geocodeArea:"Bas-Rhin"}}->.a;nwr[amenity=cafe](area.a);out;')]
    ['Bas-Rhin']

How a constant counts as supported (all text compared case- and accent-folded, NFKC):

* a place, name, user: its words appear in that order in the request (or, in a script
  written without spaces, its characters anywhere; ``A1`` and ``A 1`` alike); a value
  of several parts (``Beykoz;Gümüşsuyu``, ``Hoya de Huesca / Plana de Uesca``) needs
  one of them; a place also through a spelling of ``aliases`` (see
  :func:`learn_place_aliases`) or with one letter off (the request's typo),
  and ``"Paris, France"`` needs only ``Paris``, the rest only narrows it down;
* an id or number: the same digits in the request (``1,000`` or ``1 000`` is 1000,
  ``1 km`` is also 1000 m, ``49.79821`` also supports a rounded ``49.798``); an area
  id ``3600062422`` is also supported by the relation id 62422;
* a date: the request names it in words or digits (``November 1, 2018``,
  ``1.11.2018``; ``since 2018`` supports any date of 2018, ``July 15, 2019`` that day only,
  ``November 2018`` any day of that month), and a turbo period
  ``{{date:1 week}}`` a period of about that length ("last week", "7 days");
* an output format (``[out:csv]``, ``out count``, ``out meta``, ``out geom``,
  ``out center``): a cue word of its kind in the request.

The cue words (output words, month names, time and distance units) are those of
``geoql.nl``'s cue tables, every language at once (``geoql.nl.cues``); folding is
``geoql.nl.text.fold``.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Mapping

import overpassql
from geoql.core.errors import GeoqlError
from geoql.core.files import write_atomic
from geoql.core.paths import user_dir
from geoql.eval.dataset import load_split, resolve_data_dir
from geoql.nl import cues as nl_cues
from geoql.nl.text import fold, script_of, spaceless
from overpassql import ast as A

KINDS = ("place", "name", "id", "user", "date", "number", "output")
# What the request itself must have named: a query that brings one of these from
# elsewhere answers a different question.
CORE_KINDS = ("place", "name", "id", "user", "date")

_PLACEHOLDER = re.compile(r"{{\s*([A-Za-z]+)\s*(?::(.*?))?\s*}}", re.S)
_PLACE_PLACEHOLDERS = {"geocodeArea", "geocodeId", "geocodeCoords", "geocodeBbox", "nominatimArea"}
# Tag keys whose values are names written by people, not controlled vocabulary.
_NAME_KEY = re.compile(r"^(?:(?:\w+_)?name(?::.*)?|brand(?::.*)?|operator(?::.*)?|network(?::.*)?|"
                       r"(?:[\w:]*:)?ref(?::.*)?|addr:.*|is_in(?::.*)?|wikidata|wikipedia(?::.*)?|"
                       r"postal_code|de:amtlicher_gemeindeschluessel|de:regionalschluessel)$", re.I)
_PLACE_KEY = re.compile(r"^(?:ISO3166-[12](?::.*)?|is_in(?::.*)?)$", re.I)
_ISO_DATE = re.compile(r"(\d{4})-(\d{1,2})(?:-(\d{1,2}))?")
_OUT_OPTIONS = {"count": "count", "meta": "meta", "geom": "geom", "center": "center"}
# Relation and way ids inside area ids: area(3600062422) is relation 62422.
_AREA_OFFSETS = (3600000000, 2400000000)


@dataclass(frozen=True)
class Constant:
    """One constant of a query: ``kind`` (one of :data:`KINDS`), ``value`` as written in
    the query (quotes removed), ``where`` the syntax it came from (``geocodeArea``,
    ``way id``, ``around radius``, ``tag name``, ``out:csv`` ...)."""

    kind: str
    value: str
    where: str


# ------------------------------------------------------------------ request words

def _words(folded: str) -> list[str]:
    return re.findall(r"\w+", folded)


@dataclass(frozen=True)
class _Request:
    """A request read once: folded words, their joins, numbers, dates, periods."""

    words: tuple[str, ...]
    joined: str  # the words without any separator, for scripts without spaces
    grams: frozenset[str]  # 2 to 4 consecutive words glued ("a1" for "A 1", "basrhin")
    numbers: tuple[tuple[Decimal, int, bool], ...]  # value, decimals, converted unit (approximate)
    digits: frozenset[str]
    dates: tuple[tuple[int, int | None, int | None], ...]
    periods: tuple[tuple[float | None, str], ...]  # (days or None, unit)
    # output kind -> whether a cue asks for it: the CPU default checks ~30 candidates per request
    _asks: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def asks_output(self, kind: str) -> bool:
        """Whether a cue of any language asks for this output ("count", "meta", "csv", ...)."""
        hit = self._asks.get(kind)
        if hit is None:
            hit = self._asks[kind] = any(_has_cue(self, cue) for cue in _cues()["output"].get(kind, ()))
        return hit

    def has_words(self, folded_value: str) -> bool:
        seq = _words(folded_value)
        if not seq:
            return False
        if any(spaceless(ch) for ch in folded_value):
            return "".join(seq) in self.joined
        n = len(seq)
        words = self.words
        if any(tuple(words[i:i + n]) == tuple(seq) for i in range(len(words) - n + 1)):
            return True
        return "".join(seq) in self.grams

    def has_words_nearly(self, folded_value: str) -> bool:
        """The words with one letter wrong, missing, extra or swapped (values of 5+ letters)."""
        seq = _words(folded_value)
        target = "".join(seq)
        if len(target) < 5 or any(spaceless(ch) for ch in target):
            return False
        n, words = len(seq), self.words
        for i in range(len(words) - n + 1):
            cand = "".join(words[i:i + n])
            if abs(len(cand) - len(target)) <= 1 and _within_one_edit(cand, target):
                return True
        return False


def _within_one_edit(a: str, b: str) -> bool:
    """Damerau-Levenshtein distance (adjacent swaps count one) of at most 1."""
    if a == b:
        return True
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        return a[i + 1:] == b[i + 1:] or (i + 1 < len(a) and a[i] == b[i + 1] and a[i + 1] == b[i]
                                          and a[i + 2:] == b[i + 2:])
    return a[i:] == b[i + 1:]


@lru_cache(maxsize=1)
def _cues() -> dict:
    """The cue words of every language's table in geoql.nl, in this module's shapes."""
    output = {kind: [_cue(c) for c in words] for kind, words in nl_cues.output_words().items()}
    units = nl_cues.time_unit_words()
    one = {tuple(_words(fold(w))) for w in nl_cues.one_words()}
    # units of scripts without spaces are found inside the joined words ("3天", "2週間")
    glued = sorted((w for w in units if any(spaceless(ch) for ch in w)), key=len, reverse=True)
    glued_rx = re.compile(r"(\d+)?\s*(" + "|".join(map(re.escape, glued)) + ")") if glued else None
    return {"output": output, "months": nl_cues.month_names(), "units": units, "one": one, "glued": glued_rx}


def _cue(text: str) -> tuple[tuple[str, ...], bool]:
    """A cue as folded words and whether its last word is a prefix (``tabelle*``)."""
    prefix = text.endswith("*")
    return tuple(_words(fold(text.rstrip("*")))), prefix


def _has_cue(req: _Request, cue: tuple[tuple[str, ...], bool]) -> bool:
    seq, prefix = cue
    if not seq:
        return False
    if any(spaceless(ch) for ch in seq[0]):
        return "".join(seq) in req.joined
    n, words = len(seq), req.words
    for i in range(len(words) - n + 1):
        if words[i:i + n - 1] == seq[:-1] and (
                words[i + n - 1].startswith(seq[-1]) if prefix else words[i + n - 1] == seq[-1]):
            return True
    return False


# ------------------------------------------------------------------ numbers and dates

# A unit right after the number, or after a second one ("between 100 and 300 km").
_RANGE = r"\s*(?:(?:and|to|or|und|bis|oder|et|à|ou|y|e|и|-|–|~|至|到)\s*\d+(?:[.,]\d+)?\s*)?"
_FACTORS = {"km": Decimal(1000), "mi": Decimal("1609.344"), "ft": Decimal("0.3048")}


@lru_cache(maxsize=1)
def _unit_factors() -> tuple:
    """(pattern of a unit after a number, metres per unit), from geoql.nl's unit words."""
    out = []
    for unit, factor in _FACTORS.items():
        words = sorted(nl_cues.distance_unit_words().get(unit, ()), key=len, reverse=True)
        spaced = [re.escape(w) for w in words if not any(spaceless(ch) for ch in w)]
        glued = [re.escape(w) for w in words if any(spaceless(ch) for ch in w)]
        alts = ([r"(?:" + "|".join(spaced) + r")(?!\w)"] if spaced else []) + glued
        out.append((re.compile(_RANGE + "(?:" + "|".join(alts) + ")", re.I), factor))
    return tuple(out)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_GROUPED = re.compile(r"(?<![\d.,])\d{1,3}(?:([,.\u00a0\u202f' ])\d{3})(?:\1\d{3})*(?![\d])")


def _decimals(text: str) -> int:
    return len(text.split(".", 1)[1]) if "." in text else 0


def _read_numbers(text: str) -> tuple[tuple, frozenset]:
    numbers: list[tuple[Decimal, int, bool]] = []
    digits: set[str] = set()
    for run in re.findall(r"\d+", text):  # "51,-1,52,1": every run of digits is a number too
        numbers.append((Decimal(run), 0, False))
    for m in _NUMBER.finditer(text):
        raw = m.group()
        digits.update(re.findall(r"\d+", raw))
        for form in {raw.replace(",", "."), raw.replace(",", "")}:
            try:
                value = Decimal(form)
            except InvalidOperation:
                continue
            numbers.append((value, _decimals(form), False))
            for unit, factor in _unit_factors():
                if unit.match(text, m.end()):
                    numbers.append((value * factor, 0, True))
    for m in _GROUPED.finditer(text):
        whole = re.sub(r"\D", "", m.group())
        digits.add(whole)
        value = Decimal(whole)
        numbers.append((value, 0, False))
        for unit, factor in _unit_factors():
            if unit.match(text, m.end()):
                numbers.append((value * factor, 0, True))
    return tuple(numbers), frozenset(digits)


def _number_supported(value: str, req: _Request) -> bool:
    try:
        q = abs(Decimal(value.strip()))
    except InvalidOperation:
        return True  # not a number (a placeholder, a set name): nothing to check
    dq = _decimals(value.strip())
    for v, dv, approx in req.numbers:
        if approx:
            if abs(v - q) <= max(Decimal("0.5"), q * Decimal("0.02")):
                return True
        elif v == q:
            return True
        elif min(dq, dv) >= 2 and abs(v - q) <= Decimal(10) ** -min(dq, dv):
            return True  # the same coordinate, rounded
    return False


def _id_supported(value: str, req: _Request, area: bool) -> bool:
    value = value.strip()
    if value in req.digits:
        return True
    if not value.isdigit():
        return False
    if area:
        return any(str(int(value) - off) in req.digits for off in _AREA_OFFSETS if int(value) > off)
    return any(str(int(value) + off) in req.digits for off in _AREA_OFFSETS)


def _read_dates(text: str, words: tuple[str, ...]) -> tuple:
    months = _cues()["months"]
    dates: set[tuple[int, int | None, int | None]] = set()

    def add(y, m=None, d=None):
        y, m, d = int(y), (int(m) if m else None), (int(d) if d else None)
        if 1800 <= y <= 2100 and (m is None or 1 <= m <= 12) and (d is None or 1 <= d <= 31):
            dates.add((y, m, d))

    for m in re.finditer(r"(\d{4})[-/.](\d{1,2})(?:[-/.](\d{1,2}))?", text):
        add(*m.groups())
    for m in re.finditer(r"(\d{1,2})[./-](\d{1,2})[./-](\d{4})", text):
        a, b, y = m.groups()
        add(y, b, a)
        add(y, a, b)
    for m in re.finditer(r"(\d{4})\s*[年년]\s*(?:(\d{1,2})\s*[月월]\s*(?:(\d{1,2})\s*[日일])?)?", text):
        add(*m.groups())
    for m in re.finditer(r"(?<!\d)(1[89]\d\d|20\d\d)(?!\d)", text):
        add(m.group(1))
    # Month names: "November 1, 2018", "1 November 2018", "1. November 2018", "November 2018".
    for i, w in enumerate(words):
        month = months.get(w)
        if month is None or (w == "may" and not _near_year(words, i)):
            continue
        near = words[max(0, i - 3):i + 4]
        years = [x for x in near if re.fullmatch(r"1[89]\d\d|20\d\d", x)]
        days = [x for x in (words[i - 1] if i else "", words[i + 1] if i + 1 < len(words) else "")
                if re.fullmatch(r"\d{1,2}", x) or re.fullmatch(r"\d{1,2}(?:st|nd|rd|th|er)", x)]
        for y in years:
            if not days:  # "November 2018": any day of it; "November 1, 2018": that day only
                add(y, month)
            for d in days:
                add(y, month, re.match(r"\d+", d).group())
    # "on July 15, 2019" supports that day, not any day of 2019: a year alone counts where it
    # appears more often than the dates around it ("since 2019 ... on July 15, 2019").
    for y in {y for y, mo, _ in dates if mo is None}:
        within = {date for date in dates if date[0] == y and date[1] is not None}
        if within and len(re.findall(rf"(?<!\d){y}(?!\d)", text)) <= len(within):
            dates.discard((y, None, None))
    return tuple(sorted(dates, key=lambda t: (t[0], t[1] or 0, t[2] or 0)))


def _near_year(words, i) -> bool:
    return any(re.fullmatch(r"1[89]\d\d|20\d\d", x) for x in words[max(0, i - 3):i + 4])


_DAYS = {"minute": 1 / 1440, "hour": 1 / 24, "day": 1, "week": 7, "month": 30.4, "year": 365.25}


def _read_periods(words: tuple[str, ...], joined: str) -> tuple:
    cues = _cues()
    units, one = cues["units"], cues["one"]
    periods: set[tuple[float | None, str]] = set()
    for i, w in enumerate(words):
        unit = units.get(w)
        if unit is None:
            continue
        before = words[max(0, i - 2):i]
        count = None
        if before and re.fullmatch(r"\d+(?:[.,]\d+)?", before[-1]):
            count = float(before[-1].replace(",", "."))
        elif any(tuple(before[j:]) in one for j in range(len(before))):
            count = 1.0
        periods.add((count * _DAYS[unit] if count is not None else None, unit))
    for m in (cues["glued"].finditer(joined) if cues["glued"] else ()):
        unit = units.get(m.group(2))
        if unit:
            periods.add((float(m.group(1)) * _DAYS[unit] if m.group(1) else None, unit))
    return tuple(periods)


def _period_supported(text: str, req: _Request) -> bool:
    """``{{date:3 days}}``-style period against the request's periods."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)?\s*([A-Za-z]+?)s?\s*", text or "")
    if not m:
        return False
    unit = {"min": "minute", "minute": "minute", "hour": "hour", "h": "hour", "day": "day", "d": "day",
            "week": "week", "w": "week", "month": "month", "year": "year", "y": "year"}.get(m.group(2).lower())
    if unit is None:
        return False
    days = float(m.group(1) or 1) * _DAYS[unit]
    for count_days, req_unit in req.periods:
        if count_days is None:
            if req_unit == unit:
                return True
        elif abs(count_days - days) <= 0.1 * days:
            return True
    return False


def _date_supported(value: str, req: _Request) -> bool:
    m = _ISO_DATE.search(value)
    if not m:
        return False
    y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0) or None
    for ry, rm, rd in req.dates:
        if ry == y and (rm is None or rm == mo) and (rd is None or d is None or rd == d):
            return True
    return False


@lru_cache(maxsize=4096)
def _read_request(nl: str) -> _Request:
    text = unicodedata.normalize("NFKC", nl)
    folded = fold(text)
    words = tuple(_words(folded))
    grams = {"".join(words[i:i + n]) for n in range(2, 5) for i in range(len(words) - n + 1)}
    numbers, digits = _read_numbers(text)
    joined = "".join(words)
    return _Request(words=words, joined=joined, grams=frozenset(grams), numbers=numbers, digits=digits,
                    dates=_read_dates(text, words), periods=_read_periods(words, joined))


# The same request is checked against every candidate of its pool: read it once.
_request_of = lru_cache(maxsize=256)(_read_request)


# ------------------------------------------------------------------ the query's constants

def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1]
    return text.replace('\\"', '"').replace("\\'", "'").strip()


def _placeholders(text: str, where_default: str) -> Iterable[Constant]:
    for m in _PLACEHOLDER.finditer(text or ""):
        name, arg = m.group(1), m.group(2)
        if name in _PLACE_PLACEHOLDERS and arg:
            yield Constant("place", _unquote(arg), name)
        elif name == "date":
            yield Constant("date", "{{date:" + (arg or "").strip() + "}}", where_default)


def _regex_words(value: str) -> list[str]:
    """The literal alternatives of a tag regex: ``^(Aldi|Lidl)$`` -> Aldi, Lidl; an inner
    group or class gives its first choice (``combust(i|í)vel`` -> combustivel); what
    has fewer than two letters left is a pattern, not a name."""
    value = re.sub(r"\\(.)", r"\1", value)
    value = re.sub(r"\[\^[^\]]*\]|\[[^\]]*\][+*]|\[[^\]]*\]\{[\d,]*\}", " ", value)  # [^A-Z], [a-z]+: patterns
    value = re.sub(r"\[([^\]])[^\]]*\]", r"\1", value)  # [Ss]parkasse -> Sparkasse
    if value.count("(") > 1 or re.search(r"\([^()]*\|[^()]*\)(?!\s*$)", value.strip("^$")):
        while True:  # innermost groups with a choice inside a longer pattern -> first choice
            new = re.sub(r"(?<=\w)\(([^()|]*)(?:\|[^()]*)?\)|\(([^()|]*)(?:\|[^()]*)?\)(?=\w)",
                         lambda m: m.group(1) if m.group(1) is not None else m.group(2), value)
            if new == value:
                break
            value = new
    parts = []
    for alt in value.split("|"):
        alt = re.sub(r"\.\*|\.\+|[\^$()?+*{}.]", " ", alt)
        alt = re.sub(r"\s+", " ", alt).strip()
        if sum(ch.isalnum() for ch in alt) >= 2:
            parts.append(alt)
    return parts


def query_constants(query: str) -> list[Constant]:
    """Every constant of ``query`` (see :class:`Constant`), in source order, once per kind
    and value; a query that does not parse gives what its parsed part holds."""
    if not isinstance(query, str) or not query.strip():
        return []
    return list(_query_constants(query))


# The CPU default checks each candidate before and after its repairs and once more as the
# answer: the same query strings, parsed once each (the constants are frozen).
@lru_cache(maxsize=8192)
def _query_constants(query: str) -> tuple[Constant, ...]:
    try:
        script = overpassql.parse(query, collect_errors=True)
    except Exception:  # a parser failure must not sink the check: read the placeholders only
        return tuple(_first_of_each(list(_placeholders(query, "placeholder"))))
    out: list[Constant] = []
    for node in A.walk(script):
        if isinstance(node, A.Setting):
            if node.key == "out" and node.value == "csv":
                columns = [c.strip() for c in (node.config or "").strip("()").split(";")[0].split(",") if c.strip()]
                # [out:csv(::count)] is how a count is printed, not a table the user asked for
                if not columns or not all(c.startswith("::count") for c in columns):
                    out.append(Constant("output", "csv", "out:csv"))
                if any(c.startswith("::count") for c in columns):
                    out.append(Constant("output", "count", "out:csv"))
            elif node.key in ("date", "diff", "adiff"):
                for v in (node.value, node.extra):
                    if v:
                        out.extend(_placeholders(v, node.key) if "{{" in v else [Constant("date", _unquote(v), node.key)])
            elif node.key == "bbox":
                if "{{" in node.value:
                    out.extend(_placeholders(node.value, "bbox"))
                else:
                    out.extend(Constant("number", n, "bbox setting") for n in node.value.split(",") if n.strip())
        elif isinstance(node, A.Placeholder) and not node.definition:
            out.extend(_placeholders(node.text, "placeholder"))
        elif isinstance(node, A.PlaceholderFilter):
            out.extend(_placeholders(node.text, "placeholder"))
        elif isinstance(node, A.Query):
            for f in node.filters:
                out.extend(_filter_constants(node, f))
        elif isinstance(node, A.Out):
            for opt in node.options:
                if opt in _OUT_OPTIONS:
                    out.append(Constant("output", _OUT_OPTIONS[opt], f"out {opt}"))
        elif isinstance(node, A.IsIn):
            out.extend(Constant("number", v, "is_in") for v in (node.lat, node.lon) if v)
    return tuple(_first_of_each(out))


def _first_of_each(constants: list[Constant]) -> list[Constant]:
    """One constant per kind and value (a place used twice is one place)."""
    seen: dict[tuple[str, str], Constant] = {}
    for c in constants:
        seen.setdefault((c.kind, c.value), c)
    return list(seen.values())


def _is_zero(text: str) -> bool:
    try:
        return Decimal(text.strip()) == 0
    except InvalidOperation:
        return False


def _filter_constants(query: A.Query, f) -> Iterable[Constant]:
    typ = query.type
    if isinstance(f, A.Ids):
        for i in f.ids:
            yield Constant("id", i, f"{typ} id")
    elif isinstance(f, A.AreaFilter) and f.ref:
        yield Constant("id", f.ref, "area id")
    elif isinstance(f, A.User):
        for n in f.names:
            yield Constant("user", _unquote(n), "user")
    elif isinstance(f, A.Uid):
        for u in f.uids:
            yield Constant("user", u, "uid")
    elif isinstance(f, A.Newer):
        yield from (_placeholders(f.date, "newer") if "{{" in f.date else [Constant("date", _unquote(f.date), "newer")])
    elif isinstance(f, A.Changed):
        for v in (f.since, f.until):
            if v:
                yield from (_placeholders(v, "changed") if "{{" in v else [Constant("date", _unquote(v), "changed")])
    elif isinstance(f, A.Around):
        for i, v in enumerate((f.radius, *f.coords)):
            if "{{" in v:
                yield from _placeholders(v, "around")
            elif not (i == 0 and _is_zero(v)):  # around:0 means "touching", not a distance
                yield Constant("number", v, "around coords" if i else "around radius")
    elif isinstance(f, A.BBox):
        for v in (f.south, f.west, f.north, f.east):
            if "{{" in v:
                yield from _placeholders(v, "bbox")
            else:
                yield Constant("number", v, "bbox")
    elif isinstance(f, A.Poly):
        yield from (Constant("number", v, "poly") for v in _unquote(f.bounds).split())
    elif isinstance(f, A.Tag) and not f.key_regex and f.op in ("=", "!=", "~", "!~") and f.value:
        if "{{" in f.value:
            yield from _placeholders(f.value, f"tag {f.key}")
            return
        if _PLACE_KEY.match(f.key):
            kind = "place"
        elif _NAME_KEY.match(f.key):
            kind = "place" if typ == "area" else "name"
        else:
            return
        values = _regex_words(f.value) if f.op in ("~", "!~") else [f.value]
        if f.key.startswith("wikipedia"):  # "fr:Saint-Étienne": the article's language first
            values = [re.sub(r"^[a-z-]{2,12}:", "", v) for v in values]
        for v in values:
            yield Constant(kind, v, f"tag {f.key}")


# ------------------------------------------------------------------ support

def _folded_aliases(aliases: Mapping[str, Iterable[str]] | None) -> dict[str, set[str]]:
    """Folded spelling -> folded other spellings, both ways; the last mapping's index is
    kept, since a caller passes the same aliases with every request."""
    if not aliases:
        return {}
    last = _ALIAS_INDEX[0] if _ALIAS_INDEX else None
    if last is not None and last[0] is aliases and last[1] == len(aliases):
        return last[2]
    index: dict[str, set[str]] = defaultdict(set)
    for place, spellings in aliases.items():
        fp = fold(str(place))
        for spelling in spellings:
            fs = fold(str(spelling))
            index[fp].add(fs)
            index[fs].add(fp)
    _ALIAS_INDEX[:] = [(aliases, len(aliases), dict(index))]
    return _ALIAS_INDEX[0][2]


_ALIAS_INDEX: list[tuple] = []


_PARTS = re.compile(r"\s*;\s*|\s+/\s+|\s+-\s+")


def _parts(value: str) -> list[str]:
    """``Hoya de Huesca / Plana de Uesca``, ``Beykoz;Gümüşsuyu``: one name in two languages,
    or two names; either part counts."""
    return [value, *(p for p in _PARTS.split(value) if p)] if _PARTS.search(value) else [value]


def _place_supported(value: str, req: _Request, aliases: dict[str, set[str]]) -> bool:
    forms = dict.fromkeys(f for part in _parts(value) for f in (part, part.split(",")[0]))
    for form in forms:
        folded = fold(form)
        if req.has_words(folded):
            return True
        if any(req.has_words(s) for s in aliases.get(folded, ())):
            return True
    # A misspelt place that the query spells right ("Predrola" for Pedrola) is still named.
    return any(req.has_words_nearly(fold(form)) for form in forms)


def _supported(c: Constant, req: _Request, aliases: dict[str, set[str]]) -> bool:
    if c.kind == "place":
        return _place_supported(c.value, req, aliases)
    if c.kind == "name":
        return any(req.has_words(fold(p)) or (p.strip().isdigit() and p.strip() in req.digits)
                   for p in _parts(c.value))
    if c.kind == "user":
        return req.has_words(fold(c.value)) or c.value.strip() in req.digits
    if c.kind == "id":
        return _id_supported(c.value, req, area=c.where.startswith("area"))
    if c.kind == "number":
        return _number_supported(c.value, req)
    if c.kind == "date":
        if c.value.startswith("{{date:"):
            return _period_supported(c.value[len("{{date:"):-2], req)
        return _date_supported(c.value, req)
    if c.kind == "output":
        return req.asks_output(c.value)
    return True


def unsupported_constants(nl: str, query: str, *, aliases: Mapping[str, Iterable[str]] | None = None) -> list[Constant]:
    """The constants of ``query`` that the request ``nl`` does not support, in source
    order (see the module's docstring for what counts as support). Never raises: a
    query that does not parse gives the constants of its parsed part, a request that
    is not text supports nothing.

    ``aliases`` maps a place to other spellings of it (``{"Vienna": {"Wien"}}``; either
    side may be the one in the query), e.g. from :func:`learn_place_aliases`.

    >>> [(c.kind, c.value) for c in unsupported_constants("ways with the ids 1, 2",
    ...     "way(id:1,3);out meta;")]
    [('id', '3'), ('output', 'meta')]
    """
    constants = query_constants(query)
    if not constants:
        return []
    req = _request_of(nl if isinstance(nl, str) else "")
    folded = _folded_aliases(aliases)
    return [c for c in constants if not _supported(c, req, folded)]


# ------------------------------------------------------------------ learning spellings

_QUOTED = re.compile(r"[\"“”„«»「『]([^\"“”„«»」』]{2,60})[\"“”„«»」』]")
_WORD = re.compile(r"(?<![\w'’])(\w+(?:[-'’.]\w+)*)")
# Lowercase words inside a place name ("Frankfurt am Main", "Saint-Pierre de la Réunion").
_PARTICLES = {"de", "del", "della", "di", "da", "do", "du", "des", "la", "le", "les", "am", "sur", "upon",
              "y", "van", "von", "der", "den", "het", "el", "al"}
# Words after which a request names its place, and words that end the name.
_LOCATIVE = {"in", "near", "around", "at", "of", "from", "within", "inside", "across", "throughout", "im",
             "bei", "um", "en", "au", "aux", "dans", "nahe"}
_STOP = {"with", "that", "which", "where", "and", "or", "but", "having", "tagged", "without", "who", "whose",
         "is", "are", "not", "for", "to", "by", "on", "in", "near", "the", "a", "an", "of", "from", "as",
         "mit", "und", "oder", "ohne", "die", "der", "das", "et", "ou", "avec", "sans", "qui", "le", "la", "les",
         "were", "was", "has", "have", "than", "within", "along", "inside", "around", "at", "all", "only",
         "current", "selected", "specified", "this", "my", "view", "area", "map", "window", "name", "names",
         "housenumber", "street"}


def _latin(token: str) -> bool:
    return all(not ch.isalpha() or script_of(ch) == "Latin" for ch in token)


def name_spans(nl: str, *, quoted: bool = True) -> list[str]:
    """Name-like spans of a request: quoted text, runs of capitalised words (with
    particles such as "de" or "am" inside, not the request's first word alone), and
    runs of letters outside the Latin script (Cyrillic, Greek, CJK...)."""
    if not isinstance(nl, str):
        return []
    text = unicodedata.normalize("NFKC", nl)
    spans = [m.group(1).strip() for m in _QUOTED.finditer(text)] if quoted else []
    run: list[str] = []
    first = True

    def flush():
        while run and run[-1].lower() in _PARTICLES:
            run.pop()
        if run and not (len(run) == 1 and run[0] == first_word):
            spans.append(" ".join(run))
        run.clear()

    first_word = ""
    for m in _WORD.finditer(text):
        tok = m.group(1)
        if first:
            first_word, first = tok, False
        if tok[:1].isupper() and _latin(tok):
            run.append(tok)
        elif run and tok.lower() in _PARTICLES:
            run.append(tok)
        else:
            flush()
    flush()
    spans.extend(m.group() for m in re.finditer(r"[^\W\d_](?:[^\W\d_]|[\s'’-](?=[^\W\d_]))*", text)
                 if not _latin(m.group()))
    return list(dict.fromkeys(s for s in spans if s))


def _place_candidates(nl: str) -> set[str]:
    """Folded spans that may name the request's place: the name-like spans, and the
    first one to four words after "in", "near", "around"... up to a word such as
    "with" or "and" (requests are often written in lower case)."""
    # Quoted text in these requests is mostly a tag ("name", "primary"), not a place.
    found = {fold(s) for s in name_spans(nl, quoted=False)}
    words = _words(fold(unicodedata.normalize("NFKC", nl)))
    for i, w in enumerate(words):
        if w not in _LOCATIVE:
            continue
        j = i + 1
        if j < len(words) and words[j] == "the":
            j += 1
        for k in range(j, min(j + 4, len(words))):
            if words[k] in _STOP or words[k].isdigit():
                break
            found.add(" ".join(words[j:k + 1]))
    return found


_NEEDS_PARSE = re.compile(r"\barea\s*\[|ISO3166|is_in", re.I)


def _place_values(query: str) -> list[str]:
    """The places of ``query``, as :func:`query_constants` finds them; the placeholders
    alone are read without parsing (learning reads thousands of queries)."""
    if _NEEDS_PARSE.search(query):
        return [c.value for c in query_constants(query) if c.kind == "place"]
    return [c.value for c in _placeholders(query, "placeholder") if c.kind == "place"]


def learn_place_aliases(pairs: Iterable[tuple[str, str]], *, min_count: int = 2,
                        min_share: float = 0.3) -> dict[str, set[str]]:
    """Other spellings of places, learned from (request, gold query) pairs.

    Where a gold query names a place its request does not contain, the spans of the
    request that may name a place (name-like spans, the words after "in") are
    candidate spellings of it. A candidate is kept when it came with that place in
    ``min_count`` requests or more and in at least ``min_share`` of the requests
    where that place was missing ("Germany" for "Deutschland"); a place missing
    from a single request keeps its candidate only if it was the only one. Keys are
    the places as the gold writes them.
    """
    seen: dict[str, Counter] = defaultdict(Counter)
    missing: Counter = Counter()
    single: dict[str, set[str]] = {}
    written: dict[str, str] = {}
    for nl, query in pairs:
        if not isinstance(nl, str) or not isinstance(query, str):
            continue
        places = _place_values(query)
        if not places:
            continue
        req = _read_request(nl)
        lost = [p for p in dict.fromkeys(places) if not _place_supported(p, req, {})]
        if not lost:
            continue
        cands = _place_candidates(nl)
        for p in lost:
            fp = fold(p)
            written.setdefault(fp, p)
            missing[fp] += 1
            own = cands - {fp}
            seen[fp].update(own)
            single[fp] = own
    aliases: dict[str, set[str]] = {}
    for fp, counts in seen.items():
        if missing[fp] == 1:
            keep = single[fp] if len(single[fp]) == 1 else set()
        else:
            keep = {c for c, n in counts.items() if n >= min_count and n >= min_share * missing[fp]}
        keep = _drop_nested(keep, counts)
        if keep:
            aliases[written[fp]] = keep
    return aliases


def _drop_nested(keep: set[str], counts: Counter) -> set[str]:
    """Of "new", "new south", "new south wales" (seen as often) keep the whole name; of
    "ukraine" and the rarer "ukraine selling" keep "ukraine"."""
    out = set(keep)
    for a in keep:
        for b in keep:
            if a != b and b.startswith(a + " "):  # b extends a
                out.discard(a if counts[b] >= counts[a] else b)
    return out


# ------------------------------------------------------------------ measuring a file

@dataclass
class RateReport:
    """How many queries of a file carry unsupported constants."""

    total: int
    any_core: int  # queries with an unsupported place, name, id, user or date
    any_kind: int  # ... with an unsupported constant of any kind
    by_kind: Counter  # queries with at least one unsupported constant of that kind
    by_output: Counter  # queries with that unsupported output format (csv, count, meta...)
    examples: dict  # kind -> [(line, request, [values])], the first few

    def share(self, count: int) -> float:
        return count / self.total if self.total else 0.0

    def format(self, n_examples: int = 3) -> str:
        lines = [f"queries: {self.total}",
                 f"with an unsupported {'/'.join(CORE_KINDS)}: {self.any_core} ({self.share(self.any_core):.1%})",
                 f"with an unsupported constant of any kind: {self.any_kind} ({self.share(self.any_kind):.1%})",
                 "by kind (queries with at least one):"]
        for kind in KINDS:
            lines.append(f"  {kind:7s} {self.by_kind[kind]:5d} ({self.share(self.by_kind[kind]):.1%})")
        for value, n in sorted(self.by_output.items()):
            lines.append(f"    output {value:6s} {n:5d} ({self.share(n):.1%})")
        for kind in KINDS:
            for line, nl, values in self.examples.get(kind, [])[:n_examples]:
                lines.append(f"  e.g. {kind} line {line}: {', '.join(values)[:80]!s} <- {nl[:100]}")
        return "\n".join(lines)


def measure(requests: Iterable[str], queries: Iterable[str], *,
            aliases: Mapping[str, Iterable[str]] | None = None, n_examples: int = 5) -> RateReport:
    """Count the queries with unsupported constants, request ``i`` against query ``i``."""
    total = any_core = any_kind = 0
    by_kind: Counter = Counter()
    by_output: Counter = Counter()
    examples: dict[str, list] = defaultdict(list)
    for line, (nl, query) in enumerate(zip(requests, queries), 1):
        total += 1
        found = unsupported_constants(nl, query, aliases=aliases)
        kinds = {c.kind for c in found}
        any_core += bool(kinds & set(CORE_KINDS))
        any_kind += bool(kinds)
        by_kind.update(kinds)
        by_output.update({c.value for c in found if c.kind == "output"})
        for kind in kinds:
            if len(examples[kind]) < n_examples:
                examples[kind].append((line, nl, [c.value for c in found if c.kind == kind]))
    return RateReport(total, any_core, any_kind, by_kind, by_output, dict(examples))


# Bump when learn_place_aliases changes what it learns: cached files of another version are ignored.
# 2: folding is geoql.nl.text.fold (kana keep their marks).
ALIASES_VERSION = 2


@lru_cache(maxsize=4)
def _learned_from(path: str) -> dict[str, set[str]]:
    # Learning takes most of a second; a single `geoql compile` must not pay that each time.
    # The result is cached per train split (by content) in the user cache directory.
    digest = hashlib.sha256()
    for name in ("dataset.train.nl", "dataset.train.query"):
        digest.update((Path(path) / name).read_bytes())
    cached = user_dir("cache", "place-aliases", f"v{ALIASES_VERSION}-{digest.hexdigest()[:16]}.json")
    try:
        return {place: set(spellings) for place, spellings in json.loads(cached.read_text(encoding="utf-8")).items()}
    except (OSError, ValueError, AttributeError):
        pass  # not cached yet, or unreadable: learn again
    aliases = learn_place_aliases((ex.nl, ex.query) for ex in load_split("train", path))
    try:
        write_atomic(cached, json.dumps({k: sorted(v) for k, v in sorted(aliases.items())}, ensure_ascii=False))
    except OSError:
        pass  # a read-only cache only costs the time again
    return aliases


def train_place_aliases(data_dir=None) -> dict[str, set[str]]:
    """Place spellings learned from the OverpassNL train split on this machine (``data_dir``,
    else ``$GEOQL_DATA_DIR`` or the downloaded copy), once per process; ``{}`` without
    the dataset. Never downloads."""
    try:
        path = resolve_data_dir(data_dir, download=False).resolve()
        return _learned_from(str(path))
    except (GeoqlError, OSError):
        return {}
