"""The facts a right answer to a user request carries, checked on the answer's AST.

A row of the user-request benchmark (:mod:`geoql.eval.userbench`) says what its request asks
for: the features it wants (each a conjunction of any-of groups of OSM tags), where (in a named
area, around a named point, around other features, the map view, a box, coordinates, anywhere),
when and by whom (changed since, edited by), which ids, and how the answer is printed (count,
centre, geometry, CSV, metadata). :func:`check` says whether a query carries every fact and
nothing foreign, and if not, which fact failed and why.

**How.** Tag semantics are not guessed from the query's spelling: :func:`check` builds a small
*world* of probe elements from the facts and runs the query on it. For each wanted feature the
world holds its *positives* (elements tagged in each way the facts accept, in the right place,
of the right type, edited at the right time by the right user) and its *near misses* (the same
element with one fact broken: another value of a key, the key missing, another place, no place,
another type, edited before the date, by someone else, another id). The query's statements run
on this world with Overpass' semantics for tag filters (``=``, ``!=``, ``~``, ``!~``, ``,i``, key
regexes, ``if:`` with ``t[]``, ``number()``, ``is_number()``, ``is_tag()`` and comparisons),
named sets, unions, differences and recursions; places are symbolic (an element is *in* Bonn,
*near* the Eiffel Tower, *within 50 m of* a probe playground), so ``{{geocodeArea:Bonn}}->.a;
nwr(area.a)``, ``area["name"="Bonn"]->.a``, ``rel[name=Bonn];map_to_area`` and an area name
regex all name the same place. The printed elements are then judged by the rules below.

**The rules** (each justified in its function's docstring):

1. :func:`rule_valid` — the query parses and passes ``overpassql.check``.
2. :func:`rule_complete` — every wanted feature is printed, in at least one accepted tagging.
3. :func:`rule_sound` — nothing else is printed: no near miss, no anchor feature.
4. :func:`rule_outputs` — the outputs asked for are there; a count, CSV, ids-only or a limit
   nobody asked for is not (``out meta``, ``center``, ``geom``, ``skel`` are harmless).
5. :func:`rule_foreign` — every tag filter, place, around shape, box, map view, time, user and
   id filter of the query (used or not) is licensed by a fact; no ``[date:]``/``[diff:]``.

**Decided here** (a careful mapper's reading; each rule's docstring says more):

- Any of the accepted taggings is enough (``internet_access=wlan`` or ``=yes``; ``brand=X`` or
  ``name=X`` or ``brand:wikidata=Q..``); a ``may`` feature (``atm=yes`` for ATMs, ``building=church``
  for churches) may be printed but need not be; distinct features ("bars and pubs", "towns and
  cities") are separate wanted features, all required.
- Element types count only when the request says them ("ways", "node 123"); otherwise node, way,
  relation or nwr each pass, one type alone too.
- ``[out:json|xml]``, ``[timeout:]``, ``[maxsize:]`` and set names are no facts: they change
  neither which elements are printed nor where. ``out meta``, ``center``, ``geom``, ``bb``, ``skel``
  unasked are harmless; a count, CSV, ids or tags without geometry, or a limit, are not.
- A named point is ``{{geocodeCoords:..}}``; coordinates typed in for it, an area by id and
  ``{{geocodeBbox:..}}`` (the box also holds the neighbours) cannot be checked and fail. A relative
  time ("last 7 days") is ``{{date:..}}``: a date computed from today cannot be checked either.
- "Not brand X" is met by excluding any one of ``brand``, ``name``, ``brand:wikidata`` (a branded
  element carries all three), written as the brand is spelt where the request is (星巴克 in Shanghai).
- Regexes run as Python's ``re`` (Overpass uses POSIX ERE: the same on the patterns that occur).

>>> facts = Facts.from_row({"want": [{"tags": [["amenity=cafe"]], "in": "bonn"}]},
...                        Places({"bonn": {"names": ["Bonn"]}}))
>>> check(facts, '{{geocodeArea:Bonn}}->.a;nwr["amenity"="cafe"](area.a);out center;').ok
True
>>> [str(m) for m in check(facts, 'area[name="Köln"]->.a;nwr[amenity=cafe](area.a);out;').misses]
["place: amenity=cafe: in area 'Köln', asked in Bonn", "foreign: area 'Köln': no place of the request"]
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import lru_cache

import overpassql
from overpassql import ast as A
from overpassql.ql import Dumper

from geoql.core.errors import GeoqlError
from geoql.nl.text import fold


class FactsError(GeoqlError, ValueError):
    """A benchmark row whose facts are not well-formed (the message names the row's field)."""


# -- atoms: one accepted tag condition ----------------------------------------------------

ABSENT = None  # a probe key that is not set
_OPS = ("!=", ">=", "<=", "=", "~", ">", "<")
NUMERIC = (">", ">=", "<", "<=")
# A value no fact and no query uses: "some other value of this key".
OTHER = "x-other"


@dataclass(frozen=True)
class Atom:
    """One accepted tag condition, written ``k=v``, ``k=*`` (any value), ``!k`` (absent),
    ``k!=v`` (absent or another value), ``k>n`` / ``k>=n`` / ``k<n`` / ``k<=n`` (the value is a
    number) or ``k~regex`` (Python regex search; ``(?i)`` for any case).

    >>> a = Atom.parse("building:levels>3")
    >>> a.key, a.op, a.value, a.holds({"building:levels": "4"}), a.holds({"building:levels": "3"})
    ('building:levels', '>', '3', True, False)
    >>> Atom.parse("!name").holds({}), Atom.parse("cuisine!=italian").holds({}), Atom.parse("shop=*").holds({"shop": "x"})
    (True, True, True)
    """

    key: str
    op: str  # "=", "*", "!", "!=", ">", ">=", "<", "<=", "~"
    value: str = ""

    @staticmethod
    def parse(text: str) -> "Atom":
        if not isinstance(text, str) or not text.strip():
            raise FactsError(f"a tag condition must be a text such as 'amenity=cafe', got {text!r}")
        if text.startswith("!") and not any(op in text[1:] for op in _OPS):
            return Atom(text[1:].strip(), "!")
        cut = min(((text.find(op), -len(op), op) for op in _OPS if op in text), default=None)
        if cut is None or cut[0] <= 0:
            raise FactsError(f"{text!r} is no tag condition: write k=v, k=*, !k, k!=v, k>n, k>=n, k<n, k<=n or k~regex")
        pos, _, op = cut
        key, value = text[:pos].strip(), text[pos + len(op):]
        if op == "=" and value == "*":
            return Atom(key, "*")
        if op in NUMERIC and _number(value) is None:
            raise FactsError(f"{text!r}: {op} compares with a number, got {value!r}")
        if op == "~":
            try:
                re.compile(value)
            except re.error as exc:
                raise FactsError(f"{text!r}: the regex does not compile ({exc})") from None
        return Atom(key, op, value)

    def __str__(self) -> str:
        if self.op == "*":
            return f"{self.key}=*"
        if self.op == "!":
            return f"!{self.key}"
        return f"{self.key}{self.op}{self.value}"

    def holds(self, tags: dict) -> bool:
        have = tags.get(self.key)
        if self.op == "=":
            return have == self.value
        if self.op == "*":
            return have is not None
        if self.op == "!":
            return have is None
        if self.op == "!=":
            return have != self.value
        if self.op == "~":
            return have is not None and re.search(self.value, have) is not None
        number = _number(have) if have is not None else None
        if number is None:
            return False
        limit = float(self.value)
        return {">": number > limit, ">=": number >= limit, "<": number < limit, "<=": number <= limit}[self.op]

    def default_samples(self) -> tuple[list, list]:
        """Values (``ABSENT`` for no key) the atom must accept, and values it must not.

        Numbers straddle the limit; a regex has none (a row gives its samples).

        >>> Atom.parse("maxspeed>50").default_samples()
        (['51', '55', '110'], ['50', '49', '0', None])
        >>> Atom.parse("shop=*").default_samples()
        (['yes', 'x-other'], [None])
        >>> Atom.parse("stars>=4").default_samples()
        (['4', '5', '18'], ['3', '0', None])
        """
        if self.op == "=":
            return [self.value], [ABSENT, OTHER]
        if self.op == "*":
            return ["yes", OTHER], [ABSENT]  # any value: a query for one value is not enough
        if self.op == "!":
            return [ABSENT], ["yes"]
        if self.op == "!=":
            return [ABSENT, OTHER], [self.value]
        if self.op == "~":
            return [], [ABSENT]
        n = float(self.value)
        ladder = {">": ([n + 1, n + 5, 2 * n + 10], [n, n - 1, 0]), ">=": ([n, n + 1, 2 * n + 10], [n - 1, 0]),
                  "<": ([n - 1, 0], [n, n + 1, 2 * n + 10]), "<=": ([n, n - 1, 0], [n + 1, 2 * n + 10])}[self.op]
        match, miss = ([_format_number(x) for x in dict.fromkeys(xs) if x >= 0] for xs in ladder)
        return match, miss + [ABSENT]


def _number(text) -> float | None:
    try:
        value = float(str(text).strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _format_number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


# -- places ---------------------------------------------------------------------------------

ELSEWHERE = "·elsewhere"  # a place no request names: where the near misses of "in X" are
# The spelling a query would need to name it: invented, so only a regex that matches anything does.
ELSEWHERE_NAME = "Elsewhereville"
# Keys an area query may filter on to pick its area: names, codes and the kind of boundary.
NAME_KEYS = re.compile(r"^(name|name:[a-z_-]+|official_name|alt_name|short_name)$")
AREA_KEYS_NAMES = re.compile(r"^(name|name:[a-z_-]+|int_name|official_name|alt_name|short_name|loc_name)$")
AREA_KEYS_CODES = re.compile(r"^(ISO3166-1|ISO3166-1:alpha2|ISO3166-2|ref|wikidata)$")
AREA_KEYS_KIND = re.compile(r"^(admin_level|boundary|type|place|border_type|landuse|political_division)$")


def fold_place(text: str) -> str:
    """A place name folded for comparison: case, accents, quotes, dots and blanks do not count.

    >>> fold_place("  Kraków ") == fold_place("KRAKOW"), fold_place("St. Petersburg"), fold_place("Krakowie")
    (True, 'st petersburg', 'krakowie')
    """
    text = fold(text.strip().strip("\"'“”„«»「」『』"))
    text = re.sub(r"[.'’`]", "", text)
    return " ".join(text.replace(",", " , ").split()).replace(" ,", ",")


@dataclass
class Place:
    id: str
    names: list[str]
    within: list[str] = field(default_factory=list)
    codes: list[str] = field(default_factory=list)


class Places:
    """The places a row may name: id → accepted spellings (any language Nominatim finds),
    the places it lies within, and its ISO or Wikidata codes.

    A spelling matches after :func:`fold_place`; a geocoder text with a qualifier after a comma
    ("Cork, Ireland") matches by its first part. An inflected form ("Krakowie") is no spelling.

    >>> p = Places({"krakow": {"names": ["Kraków", "Cracow"], "within": ["poland"]}, "poland": ["Poland", "Polska"]})
    >>> p.resolve("krakow"), p.resolve("Kraków, Polska"), p.resolve("Krakowie"), sorted(p.closure("krakow"))
    ('krakow', 'krakow', None, ['krakow', 'poland'])
    """

    def __init__(self, table: dict):
        self.places: dict[str, Place] = {}
        for pid, spec in table.items():
            if isinstance(spec, list):
                spec = {"names": spec}
            if not isinstance(spec, dict) or not spec.get("names"):
                raise FactsError(f"place {pid!r} needs a non-empty list of names")
            self.places[pid] = Place(pid, list(spec["names"]), list(spec.get("within", [])), list(spec.get("codes", [])))
        self._index: dict[str, str] = {}
        for place in self.places.values():
            for name in place.names:
                other = self._index.setdefault(fold_place(name), place.id)
                if other != place.id:
                    raise FactsError(f"places {other!r} and {place.id!r} both spell {name!r}: a name must say one place")
        for place in self.places.values():
            for parent in place.within:
                if parent not in self.places:
                    raise FactsError(f"place {place.id!r} lies within {parent!r}, which is not in the gazetteer")

    def merged(self, extra: dict | None) -> "Places":
        if not extra:
            return self
        table = {p.id: {"names": p.names, "within": p.within, "codes": p.codes} for p in self.places.values()}
        table.update(extra)
        return Places(table)

    def __contains__(self, pid: str) -> bool:
        return pid in self.places

    def name(self, pid: str) -> str:
        if pid == ELSEWHERE:
            return "elsewhere"
        place = self.places.get(pid)
        return place.names[0] if place else pid.lstrip("?")

    def resolve(self, text: str) -> str | None:
        key = fold_place(text)
        if key in self._index:
            return self._index[key]
        head = key.split(",")[0].strip()
        return self._index.get(head)

    def closure(self, pid: str) -> set[str]:
        """The place and every place it lies within."""
        out, todo = set(), [pid]
        while todo:
            cur = todo.pop()
            if cur not in out:
                out.add(cur)
                place = self.places.get(cur)
                todo.extend(place.within if place else ())
        return out

    def matching(self, pattern: str, case_insensitive: bool, among: set[str]) -> set[str]:
        """The places (of ``among``, and elsewhere) with a spelling that an Overpass regex matches."""
        rx = _regex(pattern, case_insensitive)
        if rx is None:
            return set()
        out = {pid for pid in among if pid in self.places and any(rx.search(n) for n in self.places[pid].names)}
        if rx.search(ELSEWHERE_NAME):
            out.add(ELSEWHERE)
        return out

    def by_code(self, value: str) -> set[str]:
        return {p.id for p in self.places.values() if value in p.codes}


# -- targets: what one wanted feature must be ---------------------------------------------

TYPES = ("node", "way", "relation")
QUERY_TYPES = {"node": ("node",), "way": ("way",), "relation": ("relation",), "rel": ("relation",),
               "nwr": TYPES, "nw": ("node", "way"), "nr": ("node", "relation"), "wr": ("way", "relation")}
# Radii may differ this much from the request's (unit conversion: 1 mile = 1609.344 m, written 1600 or 1610).
RADIUS_TOLERANCE = 0.025
# Coordinates and box corners may differ this much (degrees, about 20 m): the request's own digits, rounded.
COORD_TOLERANCE = 0.0002
SCOPES = ("in", "around", "view", "bbox")


@dataclass
class Scope:
    """Where a feature is wanted: ``global``, ``in`` (a place id), ``point`` (around a named
    place), ``of`` (around other features: ``anchor``), ``at`` (around coordinates), ``view``
    (the map view) or ``bbox``."""

    kind: str = "global"
    place: str | None = None
    radius: float | None = None
    anchor: "Target | None" = None
    coords: tuple | None = None
    bbox: tuple | None = None

    def describe(self, places: Places) -> str:
        if self.kind == "in":
            return f"in {places.name(self.place)}"
        if self.kind == "point":
            return f"within {_format_number(self.radius)} m of {places.name(self.place)}"
        if self.kind == "of":
            return f"within {_format_number(self.radius)} m of {self.anchor.describe(places)}"
        if self.kind == "at":
            return f"within {_format_number(self.radius)} m of {self.coords[0]},{self.coords[1]}"
        if self.kind == "view":
            return "in the map view"
        if self.kind == "bbox":
            return "in the box " + ",".join(_format_number(x) for x in self.bbox)
        return "anywhere"


@dataclass
class Target:
    """One wanted feature: tag groups (all must hold; each any-of), optional tags (implied by
    the feature, e.g. ``amenity=cafe`` for Starbucks: a query may filter on them), element types
    (only when the request says them), where, since/until (``YYYY-MM-DD`` or ``"7 days"``), a
    user (name or uid), ids, and samples for regex and numeric atoms. ``may``: a tagging a
    right answer may print besides the wanted features but need not (``atm=yes`` on banks for
    "ATMs", ``building=church`` for "churches")."""

    groups: list[list[Atom]]
    optional: list[Atom] = field(default_factory=list)
    types: tuple = ()
    scope: Scope = field(default_factory=Scope)
    since: tuple | None = None
    until: tuple | None = None
    user: str | None = None
    uid: str | None = None
    ids: tuple = ()
    samples: dict = field(default_factory=dict)
    may: bool = False

    @staticmethod
    def from_dict(spec: dict, places: Places, where: str = "want") -> "Target":
        if not isinstance(spec, dict):
            raise FactsError(f"{where}: a wanted feature is an object, got {spec!r}")
        known = {"tags", "optional", "types", "in", "around", "view", "bbox", "since", "until", "user", "uid",
                 "ids", "samples", "may"}
        unknown = set(spec) - known
        if unknown:
            raise FactsError(f"{where}: unknown field(s) {sorted(unknown)}; a feature has {sorted(known)}")
        groups = []
        for group in spec.get("tags", []):
            if not isinstance(group, list) or not group:
                raise FactsError(f"{where}.tags: each requirement is a non-empty list of accepted tags, got {group!r}")
            groups.append([Atom.parse(t) for t in group])
            _check_falsifiable(groups[-1], where)
        optional = [Atom.parse(t) for t in spec.get("optional", [])]
        for atom in optional:
            if atom.op not in ("=", "!", "!="):
                raise FactsError(f"{where}.optional: {atom} must be k=v, !k or k!=v")
        types = tuple(spec.get("types", ()))
        if any(t not in TYPES for t in types):
            raise FactsError(f"{where}.types: choose from {TYPES}, got {list(types)}")
        scope = _scope_from(spec, places, where)
        since = _when(spec["since"], f"{where}.since") if "since" in spec else None
        until = _when(spec["until"], f"{where}.until") if "until" in spec else None
        if until is not None and (since is None or since[0] != "abs" or until[0] != "abs"):
            raise FactsError(f"{where}.until needs a since, both dates (YYYY-MM-DD)")
        ids = tuple(int(i) for i in spec.get("ids", ()))
        if ids and len(types) != 1:
            raise FactsError(f"{where}.ids: say the one element type the ids belong to (types)")
        target = Target(groups, optional, types, scope, since, until, spec.get("user"),
                        str(spec["uid"]) if "uid" in spec else None, ids, {}, spec.get("may", False) is True)
        target.samples = target._samples(spec.get("samples", {}), where)
        if not (groups or ids or target.user or target.uid or since or scope.kind != "global"):
            raise FactsError(f"{where}: a feature needs tags, ids, a user, a time or a place")
        return target

    def atoms(self) -> list[Atom]:
        out = [a for g in self.groups for a in g] + list(self.optional)
        if self.scope.anchor is not None:
            out += self.scope.anchor.atoms()
        return out

    def _samples(self, given: dict, where: str) -> dict:
        out = {}
        for atom in (a for g in self.groups for a in g):
            spec = given.get(str(atom))
            match, miss = atom.default_samples()
            if spec is not None:
                match = [v if v is not None else ABSENT for v in spec.get("match", match)]
                miss = [v if v is not None else ABSENT for v in spec.get("miss", miss)]
            if not match:
                raise FactsError(f"{where}: {atom} needs samples: {{\"{atom}\": {{\"match\": [...], \"miss\": [...]}}}}")
            for v in match:
                if not atom.holds({} if v is ABSENT else {atom.key: v}):
                    raise FactsError(f"{where}.samples: {atom} does not accept its sample {v!r}")
            for v in miss:
                if atom.holds({} if v is ABSENT else {atom.key: v}):
                    raise FactsError(f"{where}.samples: {atom} accepts {v!r}, listed as a miss")
            out[str(atom)] = (match, miss)
        for name in given:
            if name not in out:
                raise FactsError(f"{where}.samples: {name!r} is no tag condition of this feature")
        return out

    def tags_hold(self, tags: dict) -> bool:
        return all(any(a.holds(tags) for a in g) for g in self.groups)

    def describe(self, places: Places | None = None) -> str:
        def either(group: list[Atom]) -> str:
            shown = "|".join(str(a) for a in group[:3])
            return shown + ("|…" if len(group) > 3 else "")
        parts = [" and ".join(either(g) for g in self.groups)] if self.groups else []
        if self.types:
            parts.append("/".join(self.types))
        if self.ids:
            parts.append("id " + ",".join(str(i) for i in self.ids))
        if self.user or self.uid:
            parts.append(f"by {self.user or 'uid ' + self.uid}")
        if self.since:
            parts.append(f"since {_when_text(self.since)}" + (f" until {_when_text(self.until)}" if self.until else ""))
        text = " ".join(parts) or "elements"
        if places is not None and self.scope.kind != "global":
            text += " " + self.scope.describe(places)
        return text


def _check_falsifiable(group: list[Atom], where: str) -> None:
    """A requirement that every element meets (``k!=a`` or ``k!=b``; ``k=*`` or ``!k``) asks
    nothing: say the conditions as separate requirements instead."""
    for key in {a.key for a in group}:
        atoms = [a for a in group if a.key == key]
        values = [ABSENT, OTHER] + [a.value for a in atoms if a.value]
        if all(any(a.holds({} if v is ABSENT else {key: v}) for a in atoms) for v in values):
            raise FactsError(f"{where}.tags: {' | '.join(map(str, group))} holds for every value of {key}: "
                             "write each condition as a requirement of its own")


def _scope_from(spec: dict, places: Places, where: str) -> Scope:
    given = [k for k in SCOPES if k in spec]
    if len(given) > 1:
        raise FactsError(f"{where}: one of {SCOPES} per feature, got {given}")
    if not given:
        return Scope()
    kind = given[0]
    if kind == "in":
        if spec["in"] not in places:
            raise FactsError(f"{where}.in: unknown place {spec['in']!r}; add it to the gazetteer or the row's places")
        return Scope("in", place=spec["in"])
    if kind == "view":
        if spec["view"] is not True:
            raise FactsError(f"{where}.view must be true")
        return Scope("view")
    if kind == "bbox":
        box = spec["bbox"]
        if not (isinstance(box, list) and len(box) == 4 and all(isinstance(x, (int, float)) for x in box)
                and box[0] < box[2] and box[1] < box[3]):
            raise FactsError(f"{where}.bbox: [south, west, north, east] in degrees, got {box!r}")
        return Scope("bbox", bbox=tuple(float(x) for x in box))
    around = spec["around"]
    if not isinstance(around, dict) or not isinstance(around.get("m"), (int, float)) or around["m"] <= 0:
        raise FactsError(f"{where}.around: {{\"m\": metres, and one of point / of / at}}, got {around!r}")
    radius = float(around["m"])
    ways = [k for k in ("point", "of", "at") if k in around]
    if len(ways) != 1:
        raise FactsError(f"{where}.around: exactly one of point (a place id), of (a feature), at ([lat, lon])")
    if "point" in around:
        if around["point"] not in places:
            raise FactsError(f"{where}.around.point: unknown place {around['point']!r}")
        return Scope("point", place=around["point"], radius=radius)
    if "at" in around:
        at = around["at"]
        if not (isinstance(at, list) and len(at) == 2 and all(isinstance(x, (int, float)) for x in at)):
            raise FactsError(f"{where}.around.at: [lat, lon], got {at!r}")
        return Scope("at", coords=tuple(float(x) for x in at), radius=radius)
    anchor = Target.from_dict(around["of"], places, f"{where}.around.of")
    if anchor.scope.kind == "of":
        raise FactsError(f"{where}.around.of: a feature around features around features is not supported")
    return Scope("of", radius=radius, anchor=anchor)


_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")
_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 7 * 86400, "month": 30 * 86400,
          "year": 365 * 86400}


def _when(text, where: str) -> tuple:
    """``("abs", date)`` for ``YYYY-MM-DD``, ``("rel", seconds)`` for ``"7 days"``."""
    parsed = parse_when(str(text))
    if parsed is None:
        raise FactsError(f"{where}: a date YYYY-MM-DD or a span such as '7 days', got {text!r}")
    return parsed


def parse_when(text: str) -> tuple | None:
    """A date of a fact or a query: ISO dates, and overpass-turbo's ``{{date:N unit}}``.

    >>> parse_when("2024-03-01T00:00:00Z"), parse_when("{{date:1 week}}") == parse_when("7 days")
    (('abs', datetime.date(2024, 3, 1), '00:00:00'), True)
    """
    text = text.strip()
    m = re.fullmatch(r"\{\{date(?::\s*(.*?))?\}\}", text)
    if m:
        text = m.group(1) or "1 day"  # overpass-turbo's {{date}} is 24 hours ago
        return _span(text)
    m = _DATE.match(text)
    if m:
        try:
            day = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            return None
        clock = re.search(r"T(\d{2}:\d{2}:\d{2})", text)
        return ("abs", day, clock.group(1) if clock else "00:00:00")
    return _span(text)


def _span(text: str) -> tuple | None:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)?\s*([a-z]+?)s?\s*", text.lower())
    if not m or m.group(2) not in _UNITS:
        return None
    return ("rel", float(m.group(1) or 1) * _UNITS[m.group(2)])


def _when_text(when: tuple) -> str:
    if when[0] == "abs":
        return when[1].isoformat()
    for unit in ("year", "month", "week", "day", "hour", "minute", "second"):
        n = when[1] / _UNITS[unit]
        if n >= 1 and float(n).is_integer():
            return f"{int(n)} {unit}{'s' if n != 1 else ''} ago"
    return f"{when[1]} seconds ago"


def same_start(query: tuple | None, fact: tuple) -> bool:
    """A query's start date says the fact's: the same day (any time), or the same span (±1 %)."""
    if query is None or query[0] != fact[0]:
        return False
    if fact[0] == "abs":
        return query[1] == fact[1]
    return abs(query[1] - fact[1]) <= 0.01 * fact[1]


def same_end(query: tuple | None, fact: tuple) -> bool:
    """An end date says the fact's day: that day at any time, or 00:00 of the next day."""
    if query is None or query[0] != "abs":
        return False
    return query[1] == fact[1] or (query[1] == fact[1] + timedelta(days=1) and query[2] == "00:00:00")


# -- the facts of one row ------------------------------------------------------------------

OUTPUTS = ("count", "center", "geom", "csv", "meta")


@dataclass
class Facts:
    """Everything a right answer to one request carries: the wanted features, the outputs
    asked for (``count``, ``center``, ``geom``, ``csv``, ``meta``; none: a plain listing), the
    CSV columns asked for, and the places the row may name."""

    want: list[Target]
    output: tuple = ()
    csv: tuple = ()
    places: Places = field(default_factory=lambda: Places({}))

    @staticmethod
    def from_row(row: dict, gazetteer: Places) -> "Facts":
        places = gazetteer.merged(row.get("places"))
        want = row.get("want")
        if not isinstance(want, list) or not want:
            raise FactsError("want: a non-empty list of wanted features")
        targets = [Target.from_dict(spec, places, f"want[{i}]") for i, spec in enumerate(want)]
        if all(t.may for t in targets):
            raise FactsError("want: at least one feature the answer must print (not only 'may')")
        if any(t.scope.anchor is not None and t.scope.anchor.may for t in targets):
            raise FactsError("want: the feature measured from ('around.of') cannot be a 'may'")
        output = tuple(row.get("output", ()))
        if any(o not in OUTPUTS for o in output):
            raise FactsError(f"output: choose from {OUTPUTS}, got {list(output)}")
        csv = tuple(row.get("csv", ()))
        if csv and "csv" not in output:
            raise FactsError("csv columns without 'csv' in output")
        return Facts(targets, output, csv, places)

    def all_targets(self) -> list[Target]:
        out = []
        for t in self.want:
            out.append(t)
            if t.scope.anchor is not None:
                out.append(t.scope.anchor)
        return out


# -- the world: probe elements ------------------------------------------------------------

@dataclass
class Element:
    """A probe element. ``loc_in``: the places it lies in; ``near``: (element index, radius) of
    the probe features it is near; ``near_point``: (place id, radius); ``near_at``: (lat, lon,
    radius); ``edited``: ``"in"`` (in the asked time window), ``"after"`` (after its end) or
    ``None`` (long ago); ``miss``: for a near miss, the fact it breaks and how."""

    index: int
    type: str
    tags: dict
    osm_id: int
    loc_in: frozenset = frozenset()
    near: frozenset = frozenset()
    near_point: frozenset = frozenset()
    near_at: frozenset = frozenset()
    view: bool = False
    bbox: tuple | None = None
    edited: str | None = None
    user: str = "x-some-mapper"
    uid: str = "1"
    owner: int = -1  # index of the target in World.targets
    miss: tuple | None = None  # (fact kind, text)

    def describe(self) -> str:
        tags = ",".join(f"{k}={v}" for k, v in sorted(self.tags.items())) or "no tags"
        return f"{self.type}[{tags}]"


@dataclass
class TargetWorld:
    target: Target
    output: bool
    anchor: int | None = None  # the index of the feature it is measured from
    variants: list[list[int]] = field(default_factory=list)  # any variant, all its elements


class World:
    """The probe elements of a row: for each wanted feature (and each feature it is measured
    from) its accepted variants and its near misses (see the module docstring)."""

    def __init__(self, facts: Facts, vocab: dict[str, set]):
        self.facts = facts
        self.places = facts.places
        self.elements: list[Element] = []
        self.targets: list[TargetWorld] = []
        self.vocab = vocab
        self._seen: set = set()
        self._next_id = 9_000_001
        row_places = set()
        for t in facts.all_targets():
            if t.scope.place:
                row_places |= self.places.closure(t.scope.place)
        self.row_places = row_places
        for target in facts.want:
            anchor = None
            if target.scope.anchor is not None:
                anchor = self._build(target.scope.anchor, output=False)
            self._build(target, output=True, anchor=anchor)

    # the accepted tag sets of a target
    def _tag_variants(self, target: Target) -> list[list[dict]]:
        """Each choice of one atom per group (and one value per optional key): the tag dicts that
        must all be selected (a regex or numeric atom gives several values)."""
        optional_keys: dict[str, list] = {}
        for atom in target.optional:
            if atom.op == "=":
                optional_keys.setdefault(atom.key, []).append(atom.value)
        option_choices = list(itertools.product(*[[(k, v) for v in vs] for k, vs in optional_keys.items()]))
        out, seen = [], set()
        for choice in itertools.product(*target.groups) if target.groups else [()]:
            for option in option_choices:
                tagsets = []
                for values in itertools.product(*[target.samples[str(a)][0] for a in choice]):
                    tags = dict(option)
                    for atom, value in zip(choice, values):
                        if value is ABSENT:
                            tags.pop(atom.key, None)
                        else:
                            tags[atom.key] = value
                    if target.tags_hold(tags) and all(a.holds(tags) for a in target.optional if a.op != "=") \
                            and tags not in tagsets:
                        tagsets.append(tags)
                key = tuple(sorted(tuple(sorted(t.items())) for t in tagsets))
                if tagsets and key not in seen:
                    seen.add(key)
                    out.append(tagsets)
        return out

    def _candidates(self, key: str, target: Target) -> list:
        atoms = [a for g in target.groups for a in g if a.key == key]
        # A numeric key holds numbers: "yes" or "x-other" there are mapping errors, not near misses,
        # and Overpass compares them as text (so t["k"] > 3 would hold for them).
        values = [ABSENT] if atoms and all(a.op in NUMERIC for a in atoms) else [ABSENT, OTHER, "yes", "no"]
        for atom in self.facts_atoms:
            if atom.key == key and atom.op in ("=", "!="):
                values.append(atom.value)
        for atom in (a for g in target.groups for a in g):
            if atom.key == key and str(atom) in target.samples:
                match, miss = target.samples[str(atom)]
                values += match + miss
        values += sorted(self.vocab.get(key, ()))
        return list(dict.fromkeys(values))

    @property
    def facts_atoms(self) -> list[Atom]:
        return [a for t in self.facts.all_targets() for a in t.atoms()]

    def _breakers(self, target: Target, group: list[Atom], base: dict) -> list[tuple[dict, str]]:
        """Tag dicts like ``base`` on which ``group`` fails: each key of the group in turn takes
        each value that fails the group's atoms on that key, the others a failing value too."""
        keys = list(dict.fromkeys(a.key for a in group))
        # A name the request gives alone (a quoted name) is that name, not every name containing it.
        longer = [f"{a.value} 2" for a in group if len(group) == 1 and a.op == "=" and NAME_KEYS.match(a.key)]
        failing: dict[str, list] = {}
        for key in keys:
            atoms = [a for a in group if a.key == key]
            failing[key] = [v for v in self._candidates(key, target) + longer
                            if not any(a.holds({} if v is ABSENT else {key: v}) for a in atoms)]
            if not failing[key]:
                return []  # this key alone makes the group hold: nothing breaks it
        out = []
        for key in keys:
            for value in failing[key]:
                tags = dict(base)
                for other in keys:
                    chosen = value if other == key else failing[other][0]
                    if chosen is ABSENT:
                        tags.pop(other, None)
                    else:
                        tags[other] = chosen
                if any(a.holds(tags) for a in group):
                    continue
                what = ", ".join(f"{k}={tags[k]}" if k in tags else f"no {k}" for k in keys)
                out.append((tags, what))
        return out

    def _add(self, proto: Element, owner: int, miss: tuple | None = None, **changes) -> int:
        attrs = {**proto.__dict__, **changes, "owner": owner, "miss": miss}
        attrs["tags"] = dict(attrs["tags"])
        key = (attrs["type"], tuple(sorted(attrs["tags"].items())), attrs["osm_id"] if "osm_id" in changes else 0,
               attrs["loc_in"], attrs["near"], attrs["near_point"], attrs["near_at"], attrs["view"], attrs["bbox"],
               attrs["edited"], attrs["user"], attrs["uid"])
        if miss is not None and key in self._seen:
            return -1
        self._seen.add(key)
        attrs["index"] = len(self.elements)
        if "osm_id" not in changes:
            attrs["osm_id"] = self._next_id
            self._next_id += 1
        self.elements.append(Element(**attrs))
        return attrs["index"]

    def _placed(self, target: Target) -> dict:
        """Where and when a positive of ``target`` is (anchors apart)."""
        scope, attrs = target.scope, {}
        if scope.kind == "in":
            attrs["loc_in"] = frozenset(self.places.closure(scope.place))
        elif scope.kind == "point":
            attrs["near_point"] = frozenset({(scope.place, scope.radius)})
        elif scope.kind == "at":
            attrs["near_at"] = frozenset({(scope.coords[0], scope.coords[1], scope.radius)})
        elif scope.kind == "view":
            attrs["view"] = True
        elif scope.kind == "bbox":
            attrs["bbox"] = scope.bbox
        if target.since:
            attrs["edited"] = "in"
        if target.user:
            attrs["user"] = target.user
        if target.uid:
            attrs["uid"] = target.uid
        return attrs

    def _build(self, target: Target, output: bool, anchor: TargetWorld | None = None) -> TargetWorld:
        tw = TargetWorld(target, output, self.targets.index(anchor) if anchor is not None else None)
        owner = len(self.targets)
        self.targets.append(tw)
        placed = self._placed(target)
        types_all = target.types or TYPES
        type_choices = [target.types] if target.types else [(t,) for t in TYPES]
        anchor_variants = anchor.variants if anchor is not None else [[None]]
        tag_variants = self._tag_variants(target)
        ids = target.ids or (None,)
        for tagsets in tag_variants:
            for types in type_choices:
                for a_variant in anchor_variants:
                    members = []
                    for tags, typ, osm_id, aid in itertools.product(tagsets, types, ids, a_variant):
                        proto = Element(0, typ, tags, 0, **placed)
                        changes = {}
                        if osm_id is not None:
                            changes["osm_id"] = osm_id
                        if aid is not None:
                            changes["near"] = frozenset({(aid, target.scope.radius)})
                            changes["loc_in"] = self.elements[aid].loc_in
                        members.append(self._add(proto, owner, None, **changes))
                    tw.variants.append(members)
        # near misses, from the first element of each variant
        bases = list(dict.fromkeys(v[0] for v in tw.variants))
        for b in bases:
            base = self.elements[b]
            same = {"osm_id": base.osm_id} if target.ids else {}
            for group in target.groups:
                for tags, what in self._breakers(target, group, base.tags):
                    self._add(base, owner, ("tags", what), tags=tags, **same)
            for typ in TYPES:
                if target.types and typ not in types_all:
                    self._add(base, owner, ("types", f"a {typ}"), type=typ, **same)
        # where, when, by whom and which id: one base of each element type is enough
        per_type: dict[str, int] = {}
        for b in bases:
            per_type.setdefault(self.elements[b].type, b)
        for b in per_type.values():
            base = self.elements[b]
            same = {"osm_id": base.osm_id} if target.ids else {}
            for where, what in self._misplaced(target, base, anchor):
                self._add(base, owner, what, **where, **same)
            if target.since:
                self._add(base, owner, ("time", f"edited before {_when_text(target.since)}"), edited=None, **same)
                if target.until:
                    self._add(base, owner, ("time", f"edited after {_when_text(target.until)}"), edited="after", **same)
            if target.user:
                self._add(base, owner, ("user", "edited by another user"), user="x-other-mapper", **same)
            if target.uid:
                self._add(base, owner, ("user", "edited by another uid"), uid="999999999", **same)
            if target.ids:
                self._add(base, owner, ("ids", "another id"), osm_id=base.osm_id + 1_000_003)
        return tw

    def _misplaced(self, target: Target, base: Element, anchor: TargetWorld | None) -> list[tuple[dict, tuple]]:
        """The base element where the request does not want it."""
        scope, out = target.scope, []
        nowhere = {"loc_in": frozenset(), "near": frozenset(), "near_point": frozenset(), "near_at": frozenset(),
                   "view": False, "bbox": None}
        if scope.kind == "in":
            wanted = scope.place
            for pid in sorted((self.row_places | {ELSEWHERE}) - self.places.closure(wanted)):
                if wanted in self.places.closure(pid):
                    continue  # a place inside the wanted one is still in it
                out.append(({**nowhere, "loc_in": frozenset(self.places.closure(pid))},
                            ("place", f"outside {self.places.name(wanted)} (in {self.places.name(pid)})")))
            for parent in sorted(self.places.closure(wanted) - {wanted}):
                out.append(({**nowhere, "loc_in": frozenset(self.places.closure(parent))},
                            ("place", f"in {self.places.name(parent)} but outside {self.places.name(wanted)}")))
        elif scope.kind == "of":
            aplace = anchor.target.scope
            where = frozenset(self.places.closure(aplace.place)) if aplace.kind == "in" else frozenset()
            out.append(({**nowhere, "loc_in": where}, ("relation", f"not near {anchor.target.describe()}")))
            for e in self.elements:
                if e.owner == self.targets.index(anchor) and e.miss is not None:
                    out.append(({**nowhere, "loc_in": e.loc_in, "near": frozenset({(e.index, scope.radius)})},
                                ("relation", f"near {e.describe()} ({e.miss[1]})")))
        elif scope.kind != "global":
            out.append((nowhere, ("relation", f"not {scope.describe(self.places)}")))
        return out

    def accepts(self, owner: int, e: Element) -> bool:
        """Whether the feature ``owner`` wants element ``e`` (the facts' own reading)."""
        t = self.targets[owner].target
        if not t.tags_hold(e.tags) or (t.types and e.type not in t.types) or (t.ids and e.osm_id not in t.ids):
            return False
        if (t.since and e.edited != "in") or (t.user and e.user != t.user) or (t.uid and e.uid != t.uid):
            return False
        s = t.scope
        if s.kind == "in":
            return s.place in e.loc_in
        if s.kind == "point":
            return (s.place, s.radius) in e.near_point
        if s.kind == "at":
            return (s.coords[0], s.coords[1], s.radius) in e.near_at
        if s.kind == "view":
            return e.view
        if s.kind == "bbox":
            return e.bbox == s.bbox
        if s.kind == "of":
            anchor = self.targets[owner].anchor
            return any(r == s.radius and self.accepts(anchor, self.elements[aid]) for aid, r in e.near)
        return True

    def wanted(self, e: Element) -> bool:
        return any(self.accepts(i, e) for i, tw in enumerate(self.targets) if tw.output)


# -- running a query on the world ---------------------------------------------------------

@dataclass(frozen=True)
class Value:
    """What a set holds: probe elements, areas (place ids; ``?name`` for a place not in the
    gazetteer), and the elements whose members (geometry) it also holds."""

    elements: frozenset = frozenset()
    areas: frozenset = frozenset()
    down: frozenset = frozenset()
    area_names: tuple = ()

    def __or__(self, other: "Value") -> "Value":
        return Value(self.elements | other.elements, self.areas | other.areas, self.down | other.down,
                     tuple(dict.fromkeys(self.area_names + other.area_names)))


@dataclass
class Printed:
    value: Value
    options: tuple
    node: object


_DUMP = Dumper()


def show(node) -> str:
    """An AST node as compact QL (for the reasons a check gives)."""
    try:
        return _DUMP.dump(node)
    except Exception:  # a node the dumper does not print alone: its class is enough
        return type(node).__name__


@lru_cache(maxsize=4096)
def _regex(pattern: str, case_insensitive: bool):
    try:
        return re.compile(pattern, re.IGNORECASE if case_insensitive else 0)
    except re.error:
        return None


def tag_test(f: A.Tag, tags: dict) -> bool:
    """Overpass' reading of one tag filter on one element's tags.

    >>> t = overpassql.parse('node[name!~"."][cuisine!=pizza][~"^addr:"~"."];').statements[0].filters
    >>> [tag_test(f, {"cuisine": "thai", "addr:city": "Bonn"}) for f in t]
    [True, True, True]
    """
    if f.key_regex:
        krx, vrx = _regex(f.key, False), _regex(f.value, f.case_insensitive)
        if krx is None or vrx is None:
            return False
        hit = any(krx.search(k) and vrx.search(v) for k, v in tags.items())
        return hit if f.op == "~" else not hit
    have = tags.get(f.key)
    if f.op == "exists":
        return have is not None
    if f.op == "not_exists":
        return have is None
    if f.op == "=":
        return have == f.value
    if f.op == "!=":
        return have != f.value
    rx = _regex(f.value, f.case_insensitive)
    if rx is None:
        return False
    hit = have is not None and rx.search(have) is not None
    return hit if f.op == "~" else not hit


class _Unsupported(Exception):
    """An ``if:`` expression with a function the checker does not evaluate."""


def _unquote(token: str) -> str:
    if len(token) >= 2 and token[0] in "\"'" and token[-1] == token[0]:
        return re.sub(r"\\(.)", r"\1", token[1:-1])
    return token


def _truth(value: str) -> bool:
    n = _number(value)
    return n != 0 if n is not None else value != ""


def _args(e: A.Expr | None) -> list:
    if e is None:
        return []
    if e.token == ",":
        return _args(e.lhs) + _args(e.rhs)
    return [e]


def eval_expr(e: A.Expr | None, el: Element) -> str:
    """An ``if:`` expression on one element, as Overpass' evaluators compute it (strings;
    comparisons numeric when both sides are numbers). Raises :class:`_Unsupported` otherwise.

    >>> f = overpassql.parse('node(if: number(t["building:levels"]) > 3 && !is_tag("name"));').statements[0].filters[0]
    >>> eval_expr(f.expr, Element(0, "way", {"building:levels": "4"}, 1)), eval_expr(f.expr, Element(0, "way", {"building:levels": "3"}, 1))
    ('1', '0')
    """
    if e is None:
        raise _Unsupported("empty expression")
    tok = e.token
    if e.lhs is None and e.rhs is None:
        if tok[:1] in "\"'":
            return _unquote(tok)
        if _number(tok) is not None:
            return tok
        raise _Unsupported(tok)
    if tok == "[":
        if e.lhs is not None and e.lhs.token == "t" and e.rhs is not None:
            return el.tags.get(_unquote(e.rhs.token), "")
        raise _Unsupported("[")
    if tok == "(":
        name = e.lhs.token if e.lhs is not None else ""
        args = [eval_expr(a, el) for a in _args(e.rhs)]
        if name == "" and len(args) == 1:
            return args[0]
        if name == "number" and len(args) == 1:
            n = _number(args[0])
            return _format_number(n) if n is not None else "NaN"
        if name == "is_number" and len(args) == 1:
            return "1" if _number(args[0]) is not None else "0"
        if name == "is_tag" and len(args) == 1:
            return "1" if args[0] in el.tags else "0"
        if name == "t" and len(args) == 1:
            return el.tags.get(args[0], "")
        if name == "id" and not args:
            return str(el.osm_id)
        if name == "type" and not args:
            return el.type
        if name == "count_tags" and not args:
            return str(len(el.tags))
        raise _Unsupported(f"{name}()")
    if tok == "!" and e.lhs is None:
        return "0" if _truth(eval_expr(e.rhs, el)) else "1"
    if tok == "-" and e.lhs is None:
        n = _number(eval_expr(e.rhs, el))
        return _format_number(-n) if n is not None else "NaN"
    if tok in ("&&", "||"):
        left = _truth(eval_expr(e.lhs, el))
        if tok == "&&":
            return "1" if left and _truth(eval_expr(e.rhs, el)) else "0"
        return "1" if left or _truth(eval_expr(e.rhs, el)) else "0"
    if tok == "?":
        raise _Unsupported("?:")
    a, b = eval_expr(e.lhs, el), eval_expr(e.rhs, el)
    na, nb = _number(a), _number(b)
    if tok in ("==", "!=", "<", "<=", ">", ">=") and "NaN" in (a, b):
        return "1" if tok == "!=" else "0"  # number() of a non-number: no comparison holds
    if tok in ("==", "!=", "<", "<=", ">", ">="):
        x, y = (na, nb) if na is not None and nb is not None else (a, b)
        result = {"==": x == y, "!=": x != y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[tok]
        return "1" if result else "0"
    if tok in ("+", "-", "*", "/") and na is not None and nb is not None:
        if tok == "/" and nb == 0:
            return "NaN"
        return _format_number({"+": na + nb, "-": na - nb, "*": na * nb, "/": na / nb if nb else 0}[tok])
    if tok == "+":
        return a + b
    raise _Unsupported(tok)


def _placeholder(text: str) -> tuple[str, str]:
    """``{{geocodeArea:"Bonn"}}`` → ``("geocodeArea", "Bonn")``."""
    inner = text.strip()[2:-2]
    name, _, arg = inner.partition(":")
    return name.strip(), arg.strip().strip("\"'")


@dataclass
class Failure:
    kind: str  # the fact: tags, types, place, relation, radius, time, user, ids
    text: str


class Run:
    """One query run on a world: the sets, what each ``out`` printed, and the notes on
    statements the checker only approximates."""

    def __init__(self, script: A.Script, world: World):
        self.world = world
        self.places = world.places
        self.sets: dict[str, Value] = {}
        self.printed: list[Printed] = []
        self.notes: list[str] = []
        self.place_queries: set[int] = set()  # id() of queries that pick an area, not features
        self.origin: dict[str, A.Query] = {}
        self.global_filters: list = []
        self.csv: str | None = None
        for s in script.settings:
            if s.key == "bbox":
                self.global_filters.append(_global_bbox(s.value))
            elif s.key == "out" and s.value == "csv":
                self.csv = s.config or ""
        self.queries: list[A.Query] = []
        self._body(script.statements)

    # statements
    def _body(self, statements: list) -> None:
        for st in statements:
            self._statement(st)

    def _get(self, name: str | None) -> Value:
        return self.sets.get(name or "_", Value())

    def _put(self, into: str, value: Value, origin: A.Query | None = None) -> None:
        self.sets[into or "_"] = value
        if origin is not None:
            self.origin[into or "_"] = origin
        else:
            self.origin.pop(into or "_", None)

    def _statement(self, st) -> Value:
        if isinstance(st, A.Query):
            value = self._query(st)
            self._put(st.into, value, st)
            return value
        if isinstance(st, A.Placeholder):
            value = Value()
            if not st.definition:
                name, arg = _placeholder(st.text)
                if name in ("geocodeArea", "nominatimArea"):
                    value = Value(areas=frozenset({self._place_id(arg)}), area_names=(arg,))
                else:
                    self.notes.append(f"{st.text}: not an area the checker reads")
            self._put(st.into, value)
            return value
        if isinstance(st, A.Item):
            value = self._get(st.set)
            self._put(st.into, value, self.origin.get(st.set or "_"))
            return value
        if isinstance(st, A.Union_):
            value = Value()
            for member in st.body:
                value = value | self._statement(member)
            self._put(st.into, value)
            return value
        if isinstance(st, A.Difference):
            parts = [self._statement(member) for member in st.body]
            value = parts[0] if parts else Value()
            for other in parts[1:]:
                value = Value(value.elements - other.elements, value.areas - other.areas, value.down, value.area_names)
            self._put(st.into, value)
            return value
        if isinstance(st, A.Recurse):
            source = self._get(st.set)
            down = source.elements | source.down if st.kind in (">", ">>") else frozenset()
            value = Value(down=down)
            self._put(st.into, value)
            return value
        if isinstance(st, A.Out):
            value = self._get(st.set)
            self.printed.append(Printed(value, tuple(o.lower() for o in st.options), st))
            return value
        if isinstance(st, A.MapToArea):
            origin = self.origin.get(st.set or "_")
            if origin is None:
                value = Value(areas=frozenset({"?map_to_area"}))
            else:
                self.place_queries.add(id(origin))
                value = self._area_query(origin)
            self._put(st.into, value)
            return value
        if isinstance(st, A.IsIn):
            value = Value(areas=frozenset({"?is_in"}))
            self._put(st.into, value)
            return value
        if isinstance(st, A.Make):
            self.notes.append(f"{st.keyword}: derived elements are not checked")
            self._put(st.into, Value())
            return Value()
        if isinstance(st, A.Block):
            if st.keyword == "foreach":
                self._put(st.into, self._get(st.set))
            elif st.keyword not in ("local", "complete", "if", "for"):
                self.notes.append(f"{st.keyword}: run once, as a plain block")
            self._body(st.body)
            if st.else_body:
                self._body(st.else_body)
            value = self._get(st.into)
            return value
        self.notes.append(f"{type(st).__name__}: not run")
        return Value()

    def _place_id(self, text: str) -> str:
        found = self.places.resolve(text)
        return found if found is not None else "?" + text

    def _area_query(self, q: A.Query) -> Value:
        """The areas an area query names: name filters (equal or regex) and ISO/Wikidata codes."""
        among = set(self.places.places)
        chosen: set | None = None
        names = []
        for f in q.filters:
            if not isinstance(f, A.Tag) or f.key_regex:
                continue
            found = None
            if AREA_KEYS_NAMES.match(f.key):
                if f.op == "=":
                    pid = self._place_id(f.value)
                    found, names = {pid}, names + [f.value]
                elif f.op == "~":
                    found = self.places.matching(f.value, f.case_insensitive, among) or {"?" + f.value}
                    names.append(f.value)
            elif AREA_KEYS_CODES.match(f.key) and f.op == "=":
                found = self.places.by_code(f.value) or {"?" + f.value}
                names.append(f.value)
            if found is not None:
                chosen = found if chosen is None else chosen & found
        if chosen is None:
            chosen = {"?" + (show(q) if q.filters else "area")}
        return Value(areas=frozenset(chosen), area_names=tuple(names) or (show(q),))

    def _query(self, q: A.Query) -> Value:
        self.queries.append(q)
        if q.type == "area":
            self.place_queries.add(id(q))
            return self._area_query(q)
        types = QUERY_TYPES.get(q.type)
        if types is None:
            self.notes.append(f"{q.type}: an element type the checker does not read")
            return Value()
        filters = list(q.filters) + self.global_filters
        chosen = frozenset(e.index for e in self.world.elements
                           if e.type in types and all(self.test(f, e) for f in filters))
        return Value(elements=chosen)

    # filters
    def test(self, f, e: Element) -> bool:
        return self.why_not(f, e) is None

    def why_not(self, f, e: Element) -> Failure | None:
        """``None`` if element ``e`` passes filter ``f``, else the fact it fails and why."""
        if isinstance(f, A.Tag):
            return None if tag_test(f, e.tags) else Failure("tags", show(f))
        if isinstance(f, A.IfFilter):
            try:
                return None if _truth(eval_expr(f.expr, e)) else Failure("tags", show(f))
            except _Unsupported as exc:
                return Failure("tags", f"{show(f)}: the checker does not evaluate {exc}")
        if isinstance(f, A.SetFilter):
            return None if e.index in self._get(f.name).elements else Failure("relation", f"not in set .{f.name}")
        if isinstance(f, A.AreaFilter):
            return self._in_area(f, e)
        if isinstance(f, A.Around):
            return self._around(f, e)
        if isinstance(f, A.BBox):
            return self._in_box(f, (f.south, f.west, f.north, f.east), e)
        if isinstance(f, A.PlaceholderFilter):
            name, arg = _placeholder(f.text)
            if name == "bbox":
                return None if e.view else Failure("relation", "in the map view ({{bbox}})")
            return Failure("relation", f"{f.text}: only an area ({{{{geocodeArea:…}}}}) or {{{{bbox}}}} names a place")
        if isinstance(f, A.Ids):
            ids = {_number(i) for i in f.ids}
            return None if e.osm_id in ids else Failure("ids", show(f))
        if isinstance(f, A.User):
            names = {fold(n) for n in f.names}
            return None if fold(e.user) in names else Failure("user", show(f))
        if isinstance(f, A.Uid):
            return None if e.uid in {u.strip() for u in f.uids} else Failure("user", show(f))
        if isinstance(f, (A.Newer, A.Changed)):
            return self._edited(f, e)
        return Failure("relation", f"{show(f)}: a filter the checker does not read")

    def _in_area(self, f: A.AreaFilter, e: Element) -> Failure | None:
        if f.ref is not None:
            return Failure("place", f"area id {f.ref}: name the place instead")
        value = self._get(f.set)
        if value.areas & e.loc_in:
            return None
        names = ", ".join(repr(n) for n in value.area_names) or f"set .{f.set or '_'}"
        if not e.loc_in:
            return Failure("relation", f"inside area {names}")
        known = sorted(self.places.name(a) for a in value.areas if not a.startswith("?"))
        return Failure("place", f"in area {names}" + (f" ({', '.join(known)})" if known else ""))

    def _radius_ok(self, text: str, wanted: float) -> bool:
        r = _number(text)
        return r is not None and abs(r - wanted) <= max(1.0, RADIUS_TOLERANCE * wanted)

    def _around(self, f: A.Around, e: Element) -> Failure | None:
        if f.coords and len(f.coords) == 1:
            name, arg = _placeholder(f.coords[0]) if f.coords[0].startswith("{{") else ("", "")
            if name != "geocodeCoords":
                return Failure("relation", f"{show(f)}: a point is {{{{geocodeCoords:…}}}} or lat,lon")
            pid = self._place_id(arg)
            near = [r for p, r in e.near_point if p == pid]
            if not near:
                return Failure("relation" if not e.near_point else "place", f"around {arg!r}")
            return None if any(self._radius_ok(f.radius, r) for r in near) else Failure("radius", f"{f.radius} m")
        if f.coords:
            if len(f.coords) != 2:
                return Failure("relation", f"{show(f)}: around a line")
            lat, lon = _number(f.coords[0]), _number(f.coords[1])
            near = [r for la, lo, r in e.near_at if lat is not None and lon is not None
                    and abs(la - lat) <= COORD_TOLERANCE and abs(lo - lon) <= COORD_TOLERANCE]
            if not near:
                return Failure("relation" if not e.near_at else "place", f"around {f.coords[0]},{f.coords[1]}")
            return None if any(self._radius_ok(f.radius, r) for r in near) else Failure("radius", f"{f.radius} m")
        value = self._get(f.set)
        if value.areas and not value.elements:
            return Failure("relation", f"around the area {', '.join(map(repr, value.area_names))}")
        near = [r for aid, r in e.near if aid in value.elements]
        if not near:
            return Failure("relation", f"around set .{f.set or '_'}")
        return None if any(self._radius_ok(f.radius, r) for r in near) else Failure("radius", f"{f.radius} m")

    def _in_box(self, f, box, e: Element) -> Failure | None:
        values = [_number(x) for x in box]
        if e.bbox is not None and None not in values and all(abs(a - b) <= COORD_TOLERANCE for a, b in zip(values, e.bbox)):
            return None
        return Failure("relation" if e.bbox is None else "place", f"in the box {','.join(map(str, box))}")

    def _edited(self, f, e: Element) -> Failure | None:
        owner = self.world.targets[e.owner].target
        since_text = f.date if isinstance(f, A.Newer) else f.since
        until_text = None if isinstance(f, A.Newer) else f.until
        if owner.since is None:
            return Failure("time", f"{show(f)}: the request asks no time")
        if not same_start(parse_when(since_text or ""), owner.since):
            return Failure("time", show(f))
        if owner.until is not None:
            if until_text is None or not same_end(parse_when(until_text), owner.until):
                return Failure("time", f"{show(f)} (up to {until_text or 'now'})")
            return None if e.edited == "in" else Failure("time", show(f))
        if until_text is not None:
            return Failure("time", f"{show(f)}: up to {until_text}, the request asks up to now")
        return None if e.edited in ("in", "after") else Failure("time", show(f))


def _global_bbox(value: str):
    if value.strip() == "{{bbox}}":
        return A.PlaceholderFilter("{{bbox}}")
    parts = [p.strip() for p in value.split(",")]
    return A.BBox(*parts) if len(parts) == 4 else A.PlaceholderFilter(value)


# -- the verdict ---------------------------------------------------------------------------

FACT_KINDS = ("valid", "output", "tags", "types", "place", "relation", "radius", "time", "user", "ids", "foreign")


@dataclass
class Miss:
    fact: str  # one of FACT_KINDS
    detail: str

    def __str__(self) -> str:
        return f"{self.fact}: {self.detail}"


@dataclass
class Verdict:
    misses: list[Miss] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.misses

    @property
    def facts(self) -> list[str]:
        """The kinds of fact that failed, each once, in :data:`FACT_KINDS` order."""
        kinds = {m.fact for m in self.misses}
        return [k for k in FACT_KINDS if k in kinds]


def query_vocab(script: A.Script) -> dict[str, set]:
    """The values a query writes for each key (``=``, ``!=`` and the words of a regex such as
    ``^(bar|pub)$``): the near misses try them, so a value nobody asked for shows up."""
    vocab: dict[str, set] = {}
    for node in A.walk(script):
        if isinstance(node, A.Tag) and not node.key_regex and node.op in ("=", "!=", "~", "!~"):
            if node.op in ("=", "!="):
                words = [node.value]
            else:
                # the plain words of a regex (alternatives); a word with a regex operator is no value
                words = [w for w in re.split(r"[|()^$]+", node.value) if w and re.fullmatch(r"[\w :;'&-]+", w)]
            vocab.setdefault(node.key, set()).update(words)
    return vocab


def check(facts: Facts, query: str) -> Verdict:
    """The verdict on ``query`` as an answer with these facts: every miss, by fact."""
    verdict = Verdict()
    script = rule_valid(query, verdict)
    if script is None:
        return verdict
    world = World(facts, query_vocab(script))
    run = Run(script, world)
    verdict.notes = list(dict.fromkeys(run.notes))
    answer = frozenset().union(*(p.value.elements for p in run.printed)) if run.printed else frozenset()
    if not run.printed:
        verdict.misses.append(Miss("output", "prints nothing (no out statement)"))
    rule_complete(world, run, answer, verdict)
    rule_sound(world, run, answer, verdict)
    rule_outputs(facts, world, run, verdict)
    rule_foreign(facts, script, run, verdict)
    return verdict


def rule_valid(query: str, verdict: Verdict) -> A.Script | None:
    """The query parses and passes ``overpassql.check`` (after the placeholder step).

    Why: Overpass refuses a query with a parse or static error, so it answers nothing, whatever
    it says. An empty answer has no facts either.
    """
    if not isinstance(query, str) or not query.strip():
        verdict.misses.append(Miss("valid", "no query"))
        return None
    problems = overpassql.check(query)
    if problems:
        verdict.misses.append(Miss("valid", str(problems[0])))
        return None
    try:
        return overpassql.parse(query)
    except overpassql.OverpassQLError as exc:
        verdict.misses.append(Miss("valid", str(exc)))
        return None


def _complete(tw: TargetWorld, chosen: frozenset) -> bool:
    return any(all(i in chosen for i in variant) for variant in tw.variants)


def rule_complete(world: World, run: Run, answer: frozenset, verdict: Verdict) -> None:
    """Every wanted feature is printed in at least one of its accepted taggings, with all of
    that tagging's probe values (every number above the limit, every name with the pattern).

    Why: the any-of groups list equivalent real-world tagging (``internet_access=wlan`` or
    ``=yes``; ``brand=Starbucks`` or ``name=Starbucks`` or ``brand:wikidata=Q37158``); a mapper
    who picks one of them answers the request. When nothing prints a feature, the statement that
    comes closest tells which fact it misses: a tag filter nobody asked for ("tags"), another
    element type ("types"), another place ("place"), the wrong kind of where — an area named
    Eiffel Tower instead of around it, no map view ("relation") — another radius, time, user or id.
    """
    for i, tw in enumerate(world.targets):
        if not tw.output or tw.target.may or _complete(tw, answer):
            continue
        what = tw.target.describe()
        failure = _closest(world, run, tw, answer)
        verdict.misses.append(Miss(failure.kind, f"{what}: {failure.text}"))


def _closest(world: World, run: Run, tw: TargetWorld, answer: frozenset) -> Failure:
    """Why the best variant of a feature is not printed: the failures of the closest statement."""
    best = None
    # the variant that comes closest (most of its elements printed; then one of a type some
    # statement asks for) tells what is missing
    asked_types = {t for q in run.queries if id(q) not in run.place_queries for t in QUERY_TYPES.get(q.type, ())}
    closest = max(tw.variants, key=lambda v: (sum(i in answer for i in v) / len(v),
                                              all(world.elements[i].type in asked_types for i in v)))
    for variant in [closest]:
        for idx in variant:
            if idx in answer:
                continue
            e = world.elements[idx]
            for q in run.queries:
                if id(q) in run.place_queries:
                    continue
                types = QUERY_TYPES.get(q.type, ())
                fails = [] if e.type in types else [Failure("types", f"{q.type} only")]
                fails += [x for x in (run.why_not(f, e) for f in list(q.filters) + run.global_filters) if x]
                # The statement for this feature is the one whose tag filters it passes.
                score = (any(x.kind == "tags" for x in fails), len(fails), any(x.kind == "types" for x in fails))
                if best is None or score < best[0]:
                    best = (score, fails, q)
    if best is None:
        return Failure("tags", "no statement selects it")
    _, fails, q = best
    if not fails:
        return Failure("output", f"selected by {show(q)} but never printed")
    order = ["tags", "types", "ids", "place", "relation", "radius", "time", "user"]
    fails.sort(key=lambda f: order.index(f.kind) if f.kind in order else len(order))
    first = fails[0]
    if first.kind == "tags":
        needs = ", ".join(f.text for f in fails if f.kind == "tags")
        return Failure("tags", f"no statement selects it (closest: {show(q)}, which needs {needs})")
    return Failure(first.kind, f"{first.text}, asked {_asked(first.kind, tw.target, world.places)}")


def _asked(kind: str, t: Target, places: Places) -> str:
    if kind == "types":
        return "/".join(t.types) or "any type"
    if kind in ("place", "relation", "radius"):
        return t.scope.describe(places)
    if kind == "time":
        if not t.since:
            return "no time"
        return f"since {_when_text(t.since)}" + (f" until {_when_text(t.until)}" if t.until else "")
    if kind == "user":
        return t.user or t.uid or "no user"
    if kind == "ids":
        return ",".join(map(str, t.ids)) or "no ids"
    return ""


def rule_sound(world: World, run: Run, answer: frozenset, verdict: Verdict) -> None:
    """Nothing is printed that no wanted feature accepts.

    Why: a query that also prints restaurants for "cafes", prints cafes outside Bonn, prints
    nodes when the request says ways, or prints the playgrounds it measured benches from, gives
    the user things they did not ask for; the near misses of the world are exactly such things
    (another value of a wanted key, the key missing, another place, the parent place alone, no
    place, another type, before the date, another user, another id). Up to three examples per
    fact kind are named.
    """
    bad: dict[str, list[str]] = {}
    for idx in sorted(answer):
        e = world.elements[idx]
        if world.wanted(e):
            continue
        tw = world.targets[e.owner]
        if not tw.output:
            kind, text = "output", f"also prints {tw.target.describe()}, which the request only measures from"
        elif e.miss is None:
            continue
        else:
            kind, text = e.miss
            text = f"{tw.target.describe()}: also selects {text}"
        bad.setdefault(kind, [])
        if text not in bad[kind]:
            bad[kind].append(text)
    for kind, texts in bad.items():
        more = f" (and {len(texts) - 3} more)" if len(texts) > 3 else ""
        verdict.misses.append(Miss(kind, "; ".join(texts[:3]) + more))


_VERBOSITY = ("ids", "skel", "body", "tags", "meta")
_GEOMETRY = ("geom", "bb", "center")


def rule_outputs(facts: Facts, world: World, run: Run, verdict: Verdict) -> None:
    """The outputs asked for are printed; those that change the answer are not, unless asked.

    Why: "how many" wants ``out count``; "as points" / "centre" wants ``out center``; "with
    geometry" wants ``out geom`` (or the node recursion ``out; >; out skel qt;``, which also
    delivers every node); "as CSV" wants ``[out:csv(...)]`` with the asked columns; "with
    metadata" / "who edited" wants ``out meta``. Unasked, a count replaces the elements by a
    number, CSV loses the geometry a map needs, ``out ids`` / ``out tags`` without a geometry
    and a numeric limit drop what the user asked to see: each is a miss. ``out meta``, ``center``,
    ``geom``, ``bb``, ``skel``, ``qt`` unasked are harmless: the same elements, on a map, with
    more or other detail (decided here; an ``out meta`` only costs a little more server time).
    """
    asked = set(facts.output)
    for kind in ("count", "center", "geom", "meta"):
        if kind not in asked:
            continue
        for tw in world.targets:
            if not tw.output or tw.target.may:
                continue
            ok = False
            for p in run.printed:
                has = kind in p.options
                if _complete(tw, p.value.elements) and has:
                    ok = True
                if kind == "geom" and _complete(tw, p.value.down):
                    ok = True
            if not ok:
                verdict.misses.append(Miss("output", f"{tw.target.describe()}: no out {kind} prints it"))
    if "csv" in asked:
        if run.csv is None:
            verdict.misses.append(Miss("output", "asked for CSV: no [out:csv(...)]"))
        else:
            columns = {c.strip().strip("\"'") for c in run.csv.strip("()").split(";")[0].split(",")}
            lacking = [c for c in facts.csv if c not in columns]
            if lacking:
                verdict.misses.append(Miss("output", f"CSV without the asked column(s) {', '.join(lacking)}"))
    elif run.csv is not None and "count" not in asked:
        # A count in a CSV table is still the number asked for; elsewhere CSV loses the map.
        verdict.misses.append(Miss("output", "a CSV nobody asked for"))
    for p in run.printed:
        opts = set(p.options)
        if "count" in opts and "count" not in asked:
            verdict.misses.append(Miss("output", f"{show(p.node)}: a count nobody asked for"))
        if p.value.elements and opts & {"ids", "tags"} and not opts & set(_GEOMETRY):
            if not any(p.value.elements <= other.value.down for other in run.printed):
                verdict.misses.append(Miss("output", f"{show(p.node)}: no geometry, so nothing to show on a map"))
        if any(o.isdigit() for o in opts):
            verdict.misses.append(Miss("output", f"{show(p.node)}: a limit nobody asked for"))


def rule_foreign(facts: Facts, script: A.Script, run: Run, verdict: Verdict) -> None:
    """Every part of the query, used or not, is licensed by a fact of the request.

    Why: a neighbour's leftovers are wrong even where they happen not to change the result
    (``["maxspeed"]``, ``[admin_level]`` on hospitals, an unused ``{{geocodeArea:Paris}}``): they
    show the answer was copied, not read, and they break as soon as the data changes. Licensed:

    - a tag filter on a key of a wanted feature (or of its optional tags, or of the features it
      is measured from); an ``=`` filter only with a value some condition on that key accepts
      (or excludes: the subtracted part of a difference); a key regex only if it matches such a key;
    - in an area query (and in the query a ``map_to_area`` turns into an area), filters on the
      place's names, codes and kind of boundary (``admin_level``, ``boundary``, ``place`` ...);
    - an area or point naming a place of the request, or a place one lies within;
    - an ``around`` radius the request gives (±2.5 %), coordinates and boxes it gives;
    - ``{{bbox}}`` when it asks for the map view; ``newer`` / ``changed`` when it asks a time;
      ``user`` / ``uid`` when it names a user; ids when it gives ids;
    - no ``[date:]``, ``[diff:]``, ``[adiff:]``: they query the past, which no request asks.
    """
    targets = facts.all_targets()
    atoms = [a for t in targets for a in t.atoms()]
    keys = {a.key for a in atoms}
    asked_places = set()
    for t in targets:
        if t.scope.place:
            asked_places |= facts.places.closure(t.scope.place)
    radii = [t.scope.radius for t in targets if t.scope.radius]
    scopes = {t.scope.kind for t in targets}
    seen = set()

    def foreign(text: str) -> None:
        if text not in seen:
            seen.add(text)
            verdict.misses.append(Miss("foreign", text))

    for s in script.settings:
        if s.key in ("date", "diff", "adiff"):
            foreign(f"[{s.key}:{s.value}]: the request does not ask about the past")
        if s.key == "bbox" and s.value.strip() == "{{bbox}}" and "view" not in scopes:
            foreign("[bbox:{{bbox}}]: the request asks no map view")
    for node in A.walk(script):
        if isinstance(node, A.Query):
            place_query = id(node) in run.place_queries
            for f in node.filters:
                if isinstance(f, A.Tag):
                    if place_query:
                        if f.key_regex or not (AREA_KEYS_NAMES.match(f.key) or AREA_KEYS_CODES.match(f.key)
                                               or AREA_KEYS_KIND.match(f.key)):
                            foreign(f"{show(f)} on an area: not a name, code or kind of boundary")
                    elif not _licensed(f, keys, atoms):
                        foreign(f"tag filter {show(f)}: no fact asks for it")
                else:
                    _foreign_filter(f, facts, radii, scopes, foreign)
        elif isinstance(node, A.Placeholder) and not node.definition:
            name, arg = _placeholder(node.text)
            if name in ("geocodeArea", "nominatimArea"):
                pid = facts.places.resolve(arg)
                if pid is None or pid not in asked_places:
                    foreign(f"area {arg!r}: no place of the request")
    for q in run.queries:
        if id(q) in run.place_queries:
            for pid in run._area_query(q).areas:
                if pid not in asked_places:
                    foreign(f"area {run.places.name(pid) if not pid.startswith('?') else pid[1:]!r}: no place of the request")
    for f in run.global_filters:
        _foreign_filter(f, facts, radii, scopes, foreign)


def _licensed(f: A.Tag, keys: set, atoms: list[Atom]) -> bool:
    if f.key_regex:
        rx = _regex(f.key, False)
        return rx is not None and any(rx.search(k) for k in keys)
    if f.key not in keys:
        return False
    if f.op == "=":
        # a value a condition accepts, or the one it excludes (to subtract: "(... ; - nwr[k=v];)")
        return any(a.key == f.key and (a.holds({f.key: f.value}) or a.value == f.value) for a in atoms)
    return True


def _foreign_filter(f, facts: Facts, radii: list, scopes: set, foreign) -> None:
    targets = facts.all_targets()
    if isinstance(f, A.Around):
        r = _number(f.radius)
        if r is None or not any(abs(r - x) <= max(1.0, RADIUS_TOLERANCE * x) for x in radii):
            foreign(f"{show(f)}: the request asks no around {f.radius} m")
        if len(f.coords) == 1 and f.coords[0].startswith("{{"):
            name, arg = _placeholder(f.coords[0])
            pid = facts.places.resolve(arg)
            if pid is None or not any(t.scope.kind == "point" and t.scope.place == pid for t in targets):
                foreign(f"point {arg!r}: no point of the request")
        elif len(f.coords) >= 2:
            lat, lon = _number(f.coords[0]), _number(f.coords[1])
            if not any(t.scope.kind == "at" and lat is not None and lon is not None
                       and abs(t.scope.coords[0] - lat) <= COORD_TOLERANCE
                       and abs(t.scope.coords[1] - lon) <= COORD_TOLERANCE for t in targets):
                foreign(f"{show(f)}: the request gives no such coordinates")
    elif isinstance(f, A.BBox):
        values = [_number(x) for x in (f.south, f.west, f.north, f.east)]
        if not any(t.scope.kind == "bbox" and None not in values
                   and all(abs(a - b) <= COORD_TOLERANCE for a, b in zip(values, t.scope.bbox)) for t in targets):
            foreign(f"{show(f)}: the request gives no such box")
    elif isinstance(f, A.PlaceholderFilter):
        name, _ = _placeholder(f.text)
        if name == "bbox" and "view" not in scopes:
            foreign("{{bbox}}: the request asks no map view")
    elif isinstance(f, (A.Newer, A.Changed)):
        if not any(t.since for t in targets):
            foreign(f"{show(f)}: the request asks no time")
    elif isinstance(f, (A.User, A.Uid)):
        if not any(t.user or t.uid for t in targets):
            foreign(f"{show(f)}: the request names no user")
    elif isinstance(f, A.Ids):
        if not any(t.ids for t in targets):
            foreign(f"{show(f)}: the request gives no ids")
