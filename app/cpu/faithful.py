"""Never invent: every candidate carries only constants its request gives.

A neighbour's query brings its own details: a place, names, ids, users, dates, an output
format. :func:`repair` finds those the request does not support
(``geoql.eval.faithfulness.unsupported_constants``, with the place spellings learned from
the training pairs) and edits them out through the AST: another place becomes the
request's place (or the map view ``{{bbox}}`` when the request names none), unasked ids,
users, dates and names are dropped (ids the request lists take the place of others), an
unasked output format goes back to the dataset's default (``[out:json]``, a plain ``out``).
What cannot be repaired is not offered at all; :func:`guard_pool` does this for a pool and
:func:`supported` is the last check before an answer leaves ``compile()``.

The final pick also weighs every other part of a candidate (``geoql.eval.license``): :func:`unlicense`
takes out the parts that can go without changing the question (a neighbour's extra tag filter, a set
named after another place, an odd timeout, ``out ids``).

>>> from geoql.nl import read_request
>>> aliases = {}
>>> repair(read_request("cafes in the specified area"), '{{geocodeArea:"Bas-Rhin"}}->.a;nwr[amenity=cafe](area.a);out;',
...        place=None, aliases=aliases)
('nwr["amenity"="cafe"]({{bbox}});out;', ('place',))
>>> repair(read_request("cafes in Bonn"), '[out:csv(::id,name)];{{geocodeArea:"Paris"}}->.a;nwr[amenity=cafe](area.a);out meta;',
...        place="Bonn", aliases=aliases)[0]
'[out:json];{{geocodeArea:"Bonn"}}->.a;nwr["amenity"="cafe"](area.a);out;'
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Iterable, Mapping

import overpassql
from geoql.app.cpu.edits import parses, statement_lists
from geoql.eval.faithfulness import CORE_KINDS, Constant, learn_place_aliases, unsupported_constants
from geoql.eval.license import SET_ATTRIBUTES, Part, part_text
from geoql.nl.request import Request
from overpassql import ast as A

# The kinds a returned query must never carry unsupported (numbers are the request's
# distances and coordinates: edits put those in, and a radius is a guess, not an invention).
CHECKED = CORE_KINDS + ("output",)
_PLACE_PLACEHOLDER = re.compile(r"^\{\{\s*(geocodeArea|nominatimArea|geocodeId|geocodeBbox|geocodeCoords)\s*:"
                                r"\s*(\"?)(.*?)\2\s*\}\}$", re.S)


def place_aliases(nls: Iterable[str], queries: Iterable[str], spans: Mapping[str, str] | None = None) -> dict[str, set[str]]:
    """Other spellings of places from training pairs (``learn_place_aliases``), with the CPU
    default's own request span -> query spelling map (``spans``) folded in, so that a place
    an edit writes ("Germany" -> "Deutschland") counts as the request's."""
    aliases: dict[str, set[str]] = defaultdict(set)
    for place, spellings in learn_place_aliases(zip(nls, queries)).items():
        aliases[place] |= set(spellings)
    for span, name in (spans or {}).items():
        aliases[name].add(span)
    return {k: set(v) for k, v in sorted(aliases.items())}


def problems(request: Request, query: str, aliases: Mapping[str, Iterable[str]] | None,
             kinds: tuple[str, ...] = CHECKED) -> list[Constant]:
    """The constants of ``query`` of one of ``kinds`` that the request does not support (``output:meta``
    names one output format, ``output`` all of them)."""
    return [c for c in unsupported_constants(request, query, aliases=aliases)
            if c.kind in kinds or (c.kind == "output" and f"output:{c.value}" in kinds)]


def supported(request: Request, query: str, aliases, kinds: tuple[str, ...] = CHECKED) -> bool:
    return not problems(request, query, aliases, kinds)


# ``formats``: the output formats that change what comes back (a table, a number, shapes or
# centres instead of the elements), not ``out meta`` (the same elements with their version and
# author), which 28 % of the OverpassNL dev gold queries print unasked.
LEVELS = {"all": CHECKED, "formats": CORE_KINDS + ("output:csv", "output:count", "output:geom", "output:center"),
          "core": CORE_KINDS, "off": ()}


def level_kinds(level: str) -> tuple[str, ...]:
    """The kinds a ``faithful`` level checks (``all``; ``formats``: not ``out meta``; ``core``: no output format; ``off``)."""
    return LEVELS[level]


def _placeholder_value(text: str) -> str | None:
    m = _PLACE_PLACEHOLDER.match(text.strip())
    return m.group(3) if m else None


def _rename_placeholder(text: str, new: str) -> str:
    m = _PLACE_PLACEHOLDER.match(text.strip())
    kind = m.group(1) if m.group(1) in ("geocodeArea", "nominatimArea") else "geocodeArea"
    return f'{{{{{kind}:"{new}"}}}}'


def _fix_places(script, bad: set[str], place: str | None) -> bool:
    """Rename every unsupported place to ``place``; without one, filter by the map view instead."""
    if place:
        changed = False
        for node in A.walk(script):
            if isinstance(node, (A.Placeholder, A.PlaceholderFilter)):
                value = _placeholder_value(node.text)
                if value is not None and value in bad:
                    node.text, changed = _rename_placeholder(node.text, place), True
            elif isinstance(node, A.Query):
                for i, f in enumerate(node.filters):
                    if isinstance(f, A.Tag) and f.value in bad:
                        if node.type == "area":
                            node.filters[i] = A.Tag("name", place, "=", line=f.line)
                            changed = True
                        else:
                            return False  # an is_in / ISO code on the elements themselves: no safe rename
        return changed
    return _to_view(script, bad)


def _defines_bad_place(stmt, bad: set[str]) -> bool:
    if isinstance(stmt, A.Placeholder):
        value = _placeholder_value(stmt.text)
        return value is not None and value in bad
    if isinstance(stmt, A.Query) and stmt.type == "area":
        return any(isinstance(f, A.Tag) and f.value in bad for f in stmt.filters)
    return False


def _to_view(script, bad: set[str]) -> bool:
    """Drop the statements that find an unsupported place; their area filters become ``({{bbox}})``."""
    sets = set()
    for body in statement_lists(script):
        for stmt in list(body):
            if _defines_bad_place(stmt, bad):
                sets.add(stmt.into or "_")
                body.remove(stmt)
    if not sets:
        return False
    for node in A.walk(script):
        if isinstance(node, A.Query):
            for i, f in enumerate(node.filters):
                if isinstance(f, A.AreaFilter) and f.ref is None and (f.set or "_") in sets:
                    node.filters[i] = A.PlaceholderFilter("{{bbox}}", line=f.line)
                elif isinstance(f, A.PlaceholderFilter) and (_placeholder_value(f.text) or "\0") in bad:
                    node.filters[i] = A.PlaceholderFilter("{{bbox}}", line=f.line)
    # A later map_to_area / pivot of the removed set would now read nothing: such a query is dropped by the re-check.
    return True


def _drop_filters(script, keep) -> bool:
    """Remove the filters for which ``keep(query, filter)`` is false; a query left without
    any filter (``node;``) makes the repair fail."""
    changed = False
    for node in A.walk(script):
        if isinstance(node, A.Query):
            kept = [f for f in node.filters if keep(node, f)]
            if len(kept) != len(node.filters):
                if not kept:
                    raise _Unrepairable
                node.filters[:] = kept
                changed = True
    return changed


class _Unrepairable(Exception):
    pass


def _fix_names(script, bad: set[str], request: Request) -> bool:
    quoted = request.english.quoted_names

    def keep(query, f) -> bool:
        if isinstance(f, A.Tag) and f.value in bad and query.type != "area":
            if quoted and f.op in ("=", "~"):
                f.value = quoted[0]  # the name the request gives in quotes takes the neighbour's place
                return True
            return False
        return True

    changed = _drop_filters(script, keep)
    return changed or bool(quoted)


def _fix_ids(script, bad: set[str], request: Request) -> bool:
    ids = request.english.ids
    changed = False
    for node in A.walk(script):
        if isinstance(node, A.Query):
            for f in node.filters:
                if isinstance(f, A.AreaFilter) and f.ref in bad:
                    raise _Unrepairable
                if isinstance(f, A.Ids) and set(f.ids) & bad:
                    if not ids:
                        raise _Unrepairable  # the ids are what the query is about: nothing to keep
                    f.ids, f.short, changed = list(ids), f.short and len(ids) == 1, True
    return changed


def _fix_users(script, bad: set[str]) -> bool:
    def keep(_query, f) -> bool:
        if isinstance(f, A.User):
            return not any(n.strip('"') in bad for n in f.names)
        if isinstance(f, A.Uid):
            return not set(f.uids) & bad
        return True

    return _drop_filters(script, keep)


def _fix_dates(script, bad: set[str]) -> bool:
    def is_bad(v) -> bool:
        return bool(v) and (v.strip().strip('"') in bad or any(b in v for b in bad))

    def keep(_query, f) -> bool:
        if isinstance(f, A.Newer):
            return not is_bad(f.date)
        if isinstance(f, A.Changed):
            return not (is_bad(f.since) or is_bad(f.until))
        return True

    changed = _drop_filters(script, keep)
    settings = [s for s in script.settings if not (s.key in ("date", "diff", "adiff") and (is_bad(s.value) or is_bad(s.extra)))]
    if len(settings) != len(script.settings):
        script.settings[:] = settings
        changed = True
    return changed


def _fix_output(script, bad: set[str]) -> bool:
    changed = False
    for s in script.settings:
        if s.key == "out" and s.value == "csv" and (bad & {"csv", "count"}):
            s.value, s.config, changed = "json", None, True
    for node in A.walk(script):
        if isinstance(node, A.Out):
            options = [o for o in node.options if o not in bad]
            if options != node.options:
                node.options, changed = options, True
    return changed


_FIXES = ("place", "name", "id", "user", "date", "output")


def repair(request: Request, query: str, *, place: str | None, aliases,
           kinds: tuple[str, ...] = CHECKED) -> tuple[str, tuple[str, ...]] | None:
    """``query`` with no constant the request does not support, and the kinds that were fixed;
    ``None`` when that cannot be done (the caller drops the candidate).

    ``place`` is the request's place as the queries spell it (``None``: the request names none).
    """
    found = problems(request, query, aliases, kinds)
    if not found:
        return query, ()
    try:
        script = overpassql.parse(query)
    except overpassql.ParseError:
        return None
    bad: dict[str, set[str]] = defaultdict(set)
    for c in found:
        bad[c.kind].add(c.value)
    fixed = []
    try:
        for kind in _FIXES:
            if kind not in bad:
                continue
            if kind == "place":
                ok = _fix_places(script, bad[kind], place)
            elif kind == "name":
                ok = _fix_names(script, bad[kind], request)
            elif kind == "id":
                ok = _fix_ids(script, bad[kind], request)
            elif kind == "user":
                ok = _fix_users(script, bad[kind])
            elif kind == "date":
                ok = _fix_dates(script, bad[kind])
            else:
                ok = _fix_output(script, bad[kind])
            if not ok:
                return None
            fixed.append(kind)
    except _Unrepairable:
        return None
    text = overpassql.dump(script)
    if not parses(text) or problems(request, text, aliases, kinds):
        return None
    return text, tuple(fixed)


def guard_pool(request: Request, candidates: list, *, place: str | None, aliases, kinds: tuple[str, ...] = CHECKED) -> list:
    """The pool with every candidate repaired (its ``edits`` gain ``faithful``) or dropped;
    a repaired query equal to another candidate merges into it (the votes add up)."""
    out: dict[str, object] = {}
    for cand in candidates:
        fixed = repair(request, cand.query, place=place, aliases=aliases, kinds=kinds)
        if fixed is None:
            continue
        text, fixed_kinds = fixed
        if fixed_kinds:
            cand.query = text
            cand.edits = tuple(cand.edits) + ("faithful",)
            cand.repairs = len(fixed_kinds)
        have = out.get(cand.query)
        if have is None:
            out[cand.query] = cand
        else:
            have.votes += cand.votes
    return list(out.values())


# What an unlicensed part can be replaced by: the house's timeout, a set name of the house's.
HOUSE_TIMEOUT = "25"
_HOUSE_SETS = ("searchArea", "a", "b", "c", "d", "e", "f", "g", "h")
# The kinds :func:`unlicense` takes out; the others (an area, an around, a constant) need the request's own
# value, which the edits and :func:`repair` put in where they can.
UNLICENSE_KINDS = ("tag", "set", "setting", "output")


def unlicense(query: str, parts: list[Part]) -> str | None:
    """``query`` without its unlicensed ``parts`` (``geoql.eval.license.unlicensed_parts``), or ``None``
    where one cannot go without changing the question: a tag filter goes (a statement's last one only
    with the statement, from a union that keeps others), a set takes a house name, an odd timeout the house's 25 s and an odd maxsize goes, ``out ids``
    prints the elements; an area, an around or a constant stays (``None``).

    >>> unlicense('[timeout:8000];{{geocodeArea:"Seoul"}}->.paris;nwr["amenity"="cafe"]["maxspeed"](area.paris);out ids;',
    ...           [Part("tag", '["maxspeed"]', ""), Part("set", ".paris", ""), Part("setting", "[timeout:8000]", ""),
    ...            Part("output", "out ids", "")])
    '[timeout:25];{{geocodeArea:"Seoul"}}->.searchArea;nwr["amenity"="cafe"](area.searchArea);out;'
    >>> unlicense('nwr["maxspeed"]({{bbox}});out;', [Part("tag", '["maxspeed"]', "")]) is None
    True
    >>> unlicense('(nwr["amenity"="bar"]({{bbox}});nwr["amenity"="restaurant"]({{bbox}}););out;',
    ...           [Part("tag", '["amenity"="restaurant"]', "")])
    '(nwr["amenity"="bar"]({{bbox}}););out;'
    """
    if not parts or any(p.kind not in UNLICENSE_KINDS for p in parts):
        return None if parts else query
    try:
        script = overpassql.parse(query)
    except overpassql.ParseError:
        return None
    texts = {(p.kind, p.text) for p in parts}
    for setting in list(script.settings):
        if ("setting", part_text(setting)) in texts:
            if setting.key == "timeout":
                setting.value = HOUSE_TIMEOUT
            else:
                script.settings.remove(setting)
    renamed = _house_names(script, [p.text[1:] for p in parts if p.kind == "set"])
    # A union's statement left without its tags is a neighbour's feature ("bars and pubs" + restaurants): it goes.
    for node in list(A.walk(script)):
        if isinstance(node, A.Union_):
            kept = [st for st in node.body if not (isinstance(st, A.Query) and _only_unlicensed_tags(st, texts))]
            if kept and len(kept) < len(node.body):
                node.body[:] = kept
    for node in A.walk(script):
        for attr in SET_ATTRIBUTES.get(type(node), ()):
            name = getattr(node, attr, None)
            if name in renamed:
                setattr(node, attr, renamed[name])
        if isinstance(node, A.Query):
            tags = [f for f in node.filters if isinstance(f, A.Tag)]
            gone = [f for f in tags if ("tag", part_text(f)) in texts]
            if gone and len(gone) == len(tags):
                return None  # a statement left without a tag filter selects everything there
            node.filters[:] = [f for f in node.filters if not any(f is g for g in gone)]
        elif isinstance(node, A.Out) and ("output", "out ids") in texts and "ids" in node.options:
            node.options = [o for o in node.options if o != "ids"]
    text = overpassql.dump(script)
    return text if parses(text) else None


def _only_unlicensed_tags(query: A.Query, texts: set) -> bool:
    tags = [f for f in query.filters if isinstance(f, A.Tag)]
    return bool(tags) and all(("tag", part_text(f)) in texts for f in tags)


def _house_names(script, names: list[str]) -> dict[str, str]:
    """A house name for each of ``names``: ``searchArea`` for the first set a place defines, else a free letter,
    in the order the query first names them (the same answer in every run, whatever the hash seed).

    >>> script = overpassql.parse('node(1)->.maison;node(around.maison:350)->.alentours;.alentours out;')
    >>> _house_names(script, ["alentours", "maison"])
    {'maison': 'a', 'alentours': 'b'}
    """
    named = [getattr(node, attr, None) for node in A.walk(script) for attr in SET_ATTRIBUTES.get(type(node), ())]
    used = set(named)
    first = {name: i for i, name in reversed(list(enumerate(named)))}
    places = {node.into for node in A.walk(script) if isinstance(node, A.Placeholder) or
              (isinstance(node, A.Query) and node.type == "area")}
    out = {}
    for name in sorted(dict.fromkeys(names), key=lambda n: (n not in places, first.get(n, len(named)))):
        free = (h for h in (*_HOUSE_SETS, *(f"s{i}" for i in range(1, 100))) if h not in used)
        new = next(h for h in free if h != "searchArea" or name in places)
        used.add(new)
        out[name] = new
    return out
