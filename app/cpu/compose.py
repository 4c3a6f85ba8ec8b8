"""A query composed from the request alone, in the dataset's house style.

The neighbours' queries carry the right skeleton only when a training request is worded
like this one; a German or Chinese request often has no such neighbour. :func:`compose`
builds the query from what the request itself says (its reading, ``geoql.nl.Request``:
the cue tables' fields and the English patterns' view, ``app.cpu.request.view``) and the
tags the tag index and the lexicon tie to its words, through the ``overpassql`` AST, in
the shapes the OverpassNL training queries use most (the overpass-turbo wizard's):

* a named place: ``{{geocodeArea:"X"}}->.searchArea;(node[..](area.searchArea);way..;relation..;);``
* the map view or no place: the same with ``({{bbox}})``;
* around: ``(around:R,lat,lon)``, or around the elements of another tag
  (``nwr[..](area.searchArea)->.center;(node[..](around.center:R);...)``);
* ids: ``way(id:1,2);``, an area id: ``area(3600062422)->.searchArea;``;
* users, uids, dates and periods as ``(user:..)``, ``(uid:..)``, ``(newer:..)``, ``(changed:..)``;
* output: ``out;>;out skel qt;`` unless the request asks for a count, geometry,
  centres or metadata.

It adds to the pool beside the copy-edits (``Candidate.edits == ("compose",)``); the
selector learns when to trust it.

>>> from geoql.app.cpu.request import view
>>> from geoql.nl import read_request
>>> request = read_request("benches within 100 m of a playground in Zurich")
>>> compose(view(request), request, place="Zurich", what=[("amenity=bench", 0.9)],
...         of=[("leisure=playground", 0.8)])[0]
'[out:json][timeout:25];{{geocodeArea:"Zurich"}}->.searchArea;nwr["leisure"="playground"](area.searchArea)->.center;(node["amenity"="bench"](around.center:100);way["amenity"="bench"](around.center:100);relation["amenity"="bench"](around.center:100););out;>;out skel qt;'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import overpassql
from geoql.app.cpu.edits import parses
from geoql.nl.text import plain_number
from overpassql import ast as A

TYPES = ("node", "way", "relation")
# What a request calls "everything": OpenStreetMap's own name and the nouns of "Entities in ...".
_OSM_NAMES = frozenset({"openstreetmap", "osm", "map", "data", "entities", "entity"})
# How sure a tag must be to be put in a composed query: the retriever's probability for
# the main tag; a second, qualifying tag (a key rarely first in a statement) needs more.
MAIN_MIN = 0.05
QUALIFIER_MIN = 0.5
AREA_SET = "searchArea"
CENTER_SET = "center"


@dataclass(frozen=True)
class Shape:
    """Where a request looks, read once: what the composed query filters by."""

    where: str  # "ids", "coords", "around", "area_id", "place", "view"
    count: bool
    output: frozenset  # asked-for outputs other than count (geom, center, meta)


def request_shape(info, request, place: str | None) -> Shape:
    """The shape of the request (also a feature: does a candidate have it?)."""
    output = set(getattr(request, "output", ()) or ()) if request is not None else set()
    count = bool(info.count or "count" in output)
    if request is not None and (request.ids or (_element_ids(info, request) and (info.types or request.types) and
                                            not request.coords and not request.area_ids)):
        where = "ids"
    elif request is not None and request.around is not None and request.coords:
        where = "coords"
    elif request is not None and request.around is not None and request.around.of:
        where = "around"
    elif request is not None and request.area_ids:
        where = "area_id"
    elif place:
        where = "place"
    else:
        where = "view"
    return Shape(where, count, frozenset(output & {"geom", "center", "meta"}))


def _element_ids(info, request) -> list[str]:
    """The request's ids that are not a user's ("ways and nodes of UID 8710004" names no way)."""
    uids = {str(u) for u in getattr(request, "uids", ())} if request is not None else set()
    return [i for i in info.ids if i not in uids]


def query_shape(query: str) -> str:
    """The same reading of a query (plain patterns: a feature, not an edit).

    >>> query_shape('{{geocodeArea:"Bonn"}}->.a;node[a=b](area.a);out;'), query_shape('node(id:1,2);out;')
    ('place', 'ids')
    """
    if "(around" in query:
        return "around" if "around." in query else "coords"
    if "geocodeArea" in query or "nominatimArea" in query or 'area["name' in query or "area[name" in query:
        return "place"
    if "area(" in query:
        return "area_id"
    if "{{bbox}}" in query:
        return "view"
    if "(id:" in query or any(f"{t}({d}" in query for t in ("node", "way", "rel", "relation") for d in "123456789"):
        return "ids"
    return "other"


def _tag(name: str) -> A.Tag:
    key, _, value = name.partition("=")
    return A.Tag(key, value, "=") if value else A.Tag(key)


def _types(info, request) -> list[str]:
    named = set(info.types) | (set(request.types) if request is not None else set())
    named &= set(TYPES)
    return [t for t in TYPES if t in named] or list(TYPES)


def _time_filters(request) -> list:
    if request is None:
        return []
    out: list = [A.User([u.strip('"')]) for u in request.users[:1]]  # the dump quotes
    out += [A.Uid([str(u)]) for u in getattr(request, "uids", [])[:1]]
    dates = [d if "T" in d else f"{d}T00:00:00Z" for d in request.dates]
    if len(dates) >= 2:
        out.append(A.Changed(dates[0], dates[1]))
    elif dates and (request.users or getattr(request, "uids", None)) and not getattr(request, "since", False) \
            and "T" not in request.dates[0]:
        # A user's edits "on July 15, 2019": that day, as the dataset writes it.
        out.append(A.Changed(dates[0], f"{request.dates[0]}T23:59:59Z"))
    elif dates:
        out.append(A.Newer(dates[0]))
    elif request.periods:
        out.append(A.Newer(f"{{{{date:{request.periods[0]}}}}}"))
    return out


def _outputs(shape: Shape) -> list:
    if shape.count:
        return [A.Out(["count"])]
    if "geom" in shape.output:
        return [A.Out(["geom"])]
    if "center" in shape.output:
        return [A.Out(["center"])]
    if "meta" in shape.output:
        return [A.Out(["meta"]), A.Recurse(">"), A.Out(["meta", "qt"])]
    return [A.Out([]), A.Recurse(">"), A.Out(["skel", "qt"])]


def _user_edits(info, request, place, shape: Shape, tags: list, extra: list) -> A.Script | None:
    """A uid's edits with no tag, place or view: the dataset's one shape for them (224 of its 234
    training queries with a uid), ``[out:xml]``, ways then nodes, metadata out."""
    if tags or place or shape.where != "view" or request is None or not getattr(request, "uids", None) \
            or request.in_view or shape.count:
        return None
    named = [t for t in ("way", "node", "relation") if t in set(info.types) | set(request.types)]
    body = [A.Query(t, [_copy(x) for x in extra]) for t in named or ("way", "node")]
    return A.Script(settings=[A.Setting("out", "xml"), A.Setting("timeout", "30")],
                    statements=[A.Union_(body) if len(body) > 1 else body[0],
                                A.Out(["meta"]), A.Recurse(">"), A.Out(["meta", "qt"])])


def names_no_kind(request) -> bool:
    """Whether the request asks for every element ("What OpenStreetMap features are in Kharkiv
    Oblast?", "Entities in Житомирська область"): what it names, less the cue table's stop words
    ("features", "Elemente", "要素"), is OpenStreetMap's own name or "entities". A request whose
    reading finds nothing it names is not one: the cue tables miss words in some languages.

    >>> from geoql.nl import read_request
    >>> names_no_kind(read_request("Welche OpenStreetMap-Elemente gibt es in Charkiw?")), names_no_kind(read_request("cafes in Bonn"))
    (True, False)
    >>> names_no_kind(read_request("Entities in Житомирська область")), names_no_kind(read_request("in Bonn"))
    (True, False)
    """
    return request is not None and bool(request.what) and \
        all(set(re.findall(r"\w+", w.casefold())) <= _OSM_NAMES for w in request.what)


def _every_element(request, shape: Shape) -> bool:
    """Every element of a place, an area id or around coordinates (:func:`names_no_kind`): composed without a tag."""
    return names_no_kind(request) and shape.where in ("place", "area_id", "coords")


def _script(info, request, place, shape: Shape, main: list[str], of_tag: str | None) -> A.Script | None:
    statements: list = []
    where_filters: list
    tags = [_tag(t) for t in main]
    extra = _time_filters(request)
    types = _types(info, request)
    edits = _user_edits(info, request, place, shape, tags, extra)
    if edits is not None:
        return edits
    if shape.where == "ids":
        ids = list(request.ids) if request is not None and request.ids else [(types[0], int(i)) for i in _element_ids(info, request)]
        by_type: dict[str, list[str]] = {}
        for typ, i in ids:
            by_type.setdefault(typ if typ in TYPES else "nwr", []).append(str(i))
        body = [A.Query(t, [A.Ids(v, short=len(v) == 1)] + extra) for t, v in by_type.items()]
        statements.append(A.Union_(body) if len(body) > 1 else body[0])
        return A.Script(settings=_settings(), statements=statements + _outputs(shape))
    if shape.where == "coords":
        lat, lon = request.coords
        where_filters = [A.Around(_number(request.around.radius_m), [_number(lat, 7), _number(lon, 7)])]
    elif shape.where == "around":
        if of_tag is None:
            return None
        scope = _scope(statements, request, place)
        statements.append(A.Query("nwr", [_tag(of_tag), scope], into=CENTER_SET))
        where_filters = [A.Around(_number(request.around.radius_m), [], set=CENTER_SET)]
    else:
        where_filters = [_scope(statements, request, place)]
    if not tags and not extra and not _every_element(request, shape):
        return None
    body = [A.Query(t, [*(_copy(x) for x in tags), *(_copy(x) for x in extra), *(_copy(x) for x in where_filters)])
            for t in types]
    statements.append(A.Union_(body))
    return A.Script(settings=_settings(), statements=statements + _outputs(shape))


def _scope(statements: list, request, place: str | None):
    """The area filter for a place / area id (its defining statement appended) or ``({{bbox}})``."""
    if request is not None and request.area_ids and not place:
        statements.append(A.Query("area", [A.Ids([str(request.area_ids[0])], short=True)], into=AREA_SET))
        return A.AreaFilter(set=AREA_SET)
    if place:
        statements.append(A.Placeholder(f'{{{{geocodeArea:"{place}"}}}}', into=AREA_SET))
        return A.AreaFilter(set=AREA_SET)
    return A.PlaceholderFilter("{{bbox}}")


def _copy(node):
    import copy

    return copy.copy(node)


def _settings() -> list:
    return [A.Setting("out", "json"), A.Setting("timeout", "25")]


def _number(x: float, digits: int = 0) -> str:
    if digits:
        return f"{x:.{digits}f}".rstrip("0").rstrip(".")
    return plain_number(float(x))


def compose(info, request, *, place: str | None, what: list[tuple[str, float]], of: list[tuple[str, float]] = (),
            qualifiers: list[tuple[str, float]] = (), limit: int = 2) -> list[str]:
    """Composed queries for the request, most confident first (at most ``limit``, each valid).

    ``what``: candidate main tags with their confidence, best first (``key=value``);
    ``of``: the tags of the elements an ``around`` request measures from; ``qualifiers``:
    tags that narrow the main tag down (``wheelchair=yes``), one added when confident.
    """
    shape = request_shape(info, request, place)
    of_tag = of[0][0] if of else None
    extra = [t for t, p in qualifiers if p >= QUALIFIER_MIN][:1]
    out: list[str] = []
    mains = [t for t, p in what if p >= MAIN_MIN and t != of_tag]
    choices = [[m] + [q for q in extra if q.split("=", 1)[0] != m.split("=", 1)[0]] for m in mains[:limit]]
    timed = request is not None and bool(request.users or getattr(request, "uids", None) or request.dates or request.periods)
    if shape.where == "ids" or (not choices and timed):
        choices = choices[:1] or [[]]
    elif (not timed and _every_element(request, shape)) or (timed and getattr(request, "uids", None)):
        # Also the query without a tag, beside the tagged ones: every element of a place names no
        # kind, and 224 of the 234 training queries with a uid have no tag; the retriever's tags
        # for "way node UID 8794071 8 july 2019" are mostly noise. Offered alone, the uid's query
        # lost to a neighbour's copy for the Japanese requests (ja -0.9 OQS on OsmNL dev;
        # docs/notes/2026-12-glossaries.md).
        choices = choices[:limit] + [[]]
        limit += 1
    for main in choices:
        script = _script(info, request, place, shape, main, of_tag)
        if script is None:
            continue
        text = overpassql.dump(script)
        if parses(text) and text not in out:
            out.append(text)
        if len(out) == limit:
            break
    return out
