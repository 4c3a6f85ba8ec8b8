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

The request's side (its folded words, numbers, dates, periods and output cues) is read once,
with the request, into ``Request.support`` (``geoql.nl.support``): the cue words (output words,
month names, time and distance units) of ``geoql.nl``'s cue tables, every language at once;
folding is ``geoql.nl.text.fold``. This module reads the query's side.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Mapping

import overpassql
from geoql.core.errors import GeoqlError
from geoql.core.files import write_atomic
from geoql.core.paths import user_dir
from geoql.eval.dataset import load_split, resolve_data_dir
from geoql.nl.request import Request
from geoql.nl.support import PERIOD_DAYS, Support, decimals, place_candidates, read_support
from geoql.nl.text import fold
from overpassql import ast as A

KINDS = ("place", "name", "id", "user", "date", "number", "output")
# What the request itself must have named: a query that brings one of these from
# elsewhere answers a different question.
CORE_KINDS = ("place", "name", "id", "user", "date")

_PLACEHOLDER = re.compile(r"{{\s*([A-Za-z]+)\s*(?::(.*?))?\s*}}", re.S)
_PLACE_PLACEHOLDERS = {"geocodeArea", "geocodeId", "geocodeCoords", "geocodeBbox", "nominatimArea"}
# Tag keys whose values are names written by people, not controlled vocabulary.
NAME_KEY = re.compile(r"^(?:(?:\w+_)?name(?::.*)?|brand(?::.*)?|operator(?::.*)?|network(?::.*)?|"
                       r"(?:[\w:]*:)?ref(?::.*)?|addr:.*|is_in(?::.*)?|wikidata|wikipedia(?::.*)?|"
                       r"postal_code|de:amtlicher_gemeindeschluessel|de:regionalschluessel)$", re.I)
PLACE_KEY = re.compile(r"^(?:ISO3166-[12](?::.*)?|is_in(?::.*)?)$", re.I)
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


# ------------------------------------------------------------------ support (the request's side: geoql.nl.support)

def _number_supported(value: str, req: Support) -> bool:
    try:
        q = abs(Decimal(value.strip()))
    except InvalidOperation:
        return True  # not a number (a placeholder, a set name): nothing to check
    dq = decimals(value.strip())
    for v, dv, approx in req.numbers:
        if approx:
            if abs(v - q) <= max(Decimal("0.5"), q * Decimal("0.02")):
                return True
        elif v == q:
            return True
        elif min(dq, dv) >= 2 and abs(v - q) <= Decimal(10) ** -min(dq, dv):
            return True  # the same coordinate, rounded
    return False


def _id_supported(value: str, req: Support, area: bool) -> bool:
    value = value.strip()
    if value in req.digits:
        return True
    if not value.isdigit():
        return False
    if area:
        return any(str(int(value) - off) in req.digits for off in _AREA_OFFSETS if int(value) > off)
    return any(str(int(value) + off) in req.digits for off in _AREA_OFFSETS)


def _period_supported(text: str, req: Support) -> bool:
    """``{{date:3 days}}``-style period against the request's periods."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)?\s*([A-Za-z]+?)s?\s*", text or "")
    if not m:
        return False
    unit = {"min": "minute", "minute": "minute", "hour": "hour", "h": "hour", "day": "day", "d": "day",
            "week": "week", "w": "week", "month": "month", "year": "year", "y": "year"}.get(m.group(2).lower())
    if unit is None:
        return False
    days = float(m.group(1) or 1) * PERIOD_DAYS[unit]
    for count_days, req_unit in req.periods:
        if count_days is None:
            if req_unit == unit:
                return True
        elif abs(count_days - days) <= 0.1 * days:
            return True
    return False


def _date_supported(value: str, req: Support) -> bool:
    m = _ISO_DATE.search(value)
    if not m:
        return False
    y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0) or None
    for ry, rm, rd in req.dates:
        if ry == y and (rm is None or rm == mo) and (rd is None or d is None or rd == d):
            return True
    return False



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


def regex_words(value: str) -> list[str]:
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
                elif opt.isdigit():  # a limit prints fewer elements: "out 2" needs a 2 in the request
                    out.append(Constant("number", opt, f"out {opt}"))
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
        if PLACE_KEY.match(f.key):
            kind = "place"
        elif NAME_KEY.match(f.key):
            kind = "place" if typ == "area" else "name"
        else:
            return
        values = regex_words(f.value) if f.op in ("~", "!~") else [f.value]
        if f.key.startswith("wikipedia"):  # "fr:Saint-Étienne": the article's language first
            values = [re.sub(r"^[a-z-]{2,12}:", "", v) for v in values]
        for v in values:
            yield Constant(kind, v, f"tag {f.key}")


# ------------------------------------------------------------------ aliases

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


def _place_supported(value: str, req: Support, aliases: dict[str, set[str]]) -> bool:
    forms = dict.fromkeys(f for part in _parts(value) for f in (part, part.split(",")[0]))
    for form in forms:
        folded = fold(form)
        if req.has_words(folded) or folded in req.place_forms:
            return True
        if any(req.has_words(s) for s in aliases.get(folded, ())):
            return True
    # A misspelt place that the query spells right ("Predrola" for Pedrola) is still named.
    return any(req.has_words_nearly(fold(form)) for form in forms)


def _supported(c: Constant, req: Support, aliases: dict[str, set[str]]) -> bool:
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


def unsupported_constants(request: Request | str, query: str, *,
                          aliases: Mapping[str, Iterable[str]] | None = None) -> list[Constant]:
    """The constants of ``query`` that the request does not support, in source order (see the
    module's docstring for what counts as support). ``request`` is the :class:`geoql.nl.Request`
    ``compile()`` read (its ``support``); a plain text (scripts measuring a file) is read here.
    Never raises: a query that does not parse gives the constants of its parsed part, a request
    that is not text supports nothing.

    ``aliases`` maps a place to other spellings of it (``{"Vienna": {"Wien"}}``; either
    side may be the one in the query), e.g. from :func:`learn_place_aliases`.

    >>> [(c.kind, c.value) for c in unsupported_constants("ways with the ids 1, 2",
    ...     "way(id:1,3);out meta;")]
    [('id', '3'), ('output', 'meta')]
    """
    constants = query_constants(query)
    if not constants:
        return []
    req = request.support if isinstance(request, Request) else read_support(request if isinstance(request, str) else "")
    folded = _folded_aliases(aliases)
    return [c for c in constants if not _supported(c, req, folded)]


# ------------------------------------------------------------------ learning spellings
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
        req = read_support(nl)
        lost = [p for p in dict.fromkeys(places) if not _place_supported(p, req, {})]
        if not lost:
            continue
        cands = place_candidates(nl)
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
