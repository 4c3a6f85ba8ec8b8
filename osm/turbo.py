"""Expand overpass-turbo shortcuts into a query Overpass can run.

This is the execution-time expansion with real values (a geocoder, a map
box, a date) -- unlike ``overpassql.replace_turbo_vars``, which substitutes
fixed constants for the OQS metric.

Two flavours:

* ``official=False`` (the demo): what overpass-turbo does -- ``{{center}}`` is
  the centre of the box as ``lat,lon``, ``{{geocodeBbox:X}}`` is
  ``south,west,north,east``, relative dates count back from now.
* ``official=True`` (EX/EX-soft): what the OverpassNL execution evaluation
  does, quirks included, so scores are comparable with the paper:
  ``{{center}}`` becomes the whole box, ``{{geocodeBbox:X}}`` keeps
  Nominatim's ``south,north,west,east`` order, and relative dates count back
  from 2022-07-04 in whole days, the remainder dropped
  (``{{date:1 hour}}`` -> 2022-07-04, ``{{date:1 month}}`` -> 30 days back).

Order (as in the official code): geocoder shortcuts, ``{{name=value}}``
variables, dates, then ``{{bbox}}``/``{{center}}``.

>>> expand("node({{bbox}});out;", geocoder=None, bbox="49.3,8.6,49.5,8.8")
'node(49.3,8.6,49.5,8.8);out;'
>>> expand("node(around:50,{{center}});out;", geocoder=None, bbox="49.3,8.6,49.5,8.8")
'node(around:50,49.4,8.7);out;'
>>> expand("node(newer:'{{date:1 month}}');out;", geocoder=None, official=True)
"node(newer:'2022-06-04T00:00:00.000000Z');out;"
>>> expand("{{a=amenity}}node[{{a}}=cafe];out;", geocoder=None)
' node[amenity=cafe];out;'
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone

from geoql.core.errors import GeoqlError
from geoql.osm.nominatim import GeocodeError

__all__ = ["ExpansionError", "expand", "REFERENCE_DATE", "parse_bbox"]

# The day the benchmark's execution evaluation counts relative dates from.
REFERENCE_DATE = date(2022, 7, 4)

_UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800, "month": 2628000, "year": 31536000}
_UNIT_SECONDS.update({unit + "s": s for unit, s in list(_UNIT_SECONDS.items())})
# Overpass turns area ids of ways/relations into area ids with these offsets.
_AREA_OFFSET = {"way": 2400000000, "relation": 3600000000}


class ExpansionError(GeoqlError):
    """A shortcut could not be expanded. ``kind`` follows the official error types."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def parse_bbox(bbox: str) -> tuple[float, float, float, float]:
    """``"south,west,north,east"`` -> floats, with a clear error for anything else.

    >>> parse_bbox(" 49.3, 8.6 ,49.5,8.8")
    (49.3, 8.6, 49.5, 8.8)
    """
    try:
        parts = [float(p) for p in bbox.split(",")]
    except (ValueError, AttributeError):
        parts = []
    if len(parts) != 4:
        raise ExpansionError("bbox", f"map box {bbox!r} must be four numbers: south,west,north,east")
    s, w, n, e = parts
    if not (-90 <= s <= 90 and -90 <= n <= 90 and -180 <= w <= 180 and -180 <= e <= 180):
        raise ExpansionError("bbox", f"map box {bbox!r} is outside the world: latitudes -90..90, longitudes -180..180")
    return s, w, n, e


def _name(text: str) -> str:
    return text.strip().strip('"')


def _geocode(geocoder, text: str, kind: str, shortcut: str) -> dict:
    if geocoder is None:
        raise ExpansionError("nominatim", f"{{{{{shortcut}:{text}}}}} needs a geocoder, and none is configured")
    try:
        answer = geocoder.lookup(text, kind)
    except GeocodeError as exc:
        raise ExpansionError("nominatim", f"could not geocode {_name(text)!r}: {exc}") from None
    if not answer:
        raise ExpansionError("nominatim", f"Nominatim found no place named {_name(text)!r} (in {{{{{shortcut}:...}}}})")
    return answer


def _area_statement(answer: dict, text: str) -> str:
    osm_type, osm_id = answer.get("osm_type"), answer.get("osm_id")
    if osm_id is None:
        raise ExpansionError("nominatim", f"Nominatim's answer for {_name(text)!r} has no OSM id")
    if osm_type == "node":
        return f"node(id:{osm_id})"
    if osm_type not in _AREA_OFFSET:
        raise ExpansionError("nominatim", f"{_name(text)!r} is a {osm_type}, which cannot be an area")
    return f"area(id:{int(osm_id) + _AREA_OFFSET[osm_type]})"


def _expand_geocoder(query: str, geocoder, official: bool) -> str:
    for shortcut in ("geocodeArea", "nominatimArea"):
        for text in re.findall(r"{{" + shortcut + r":(.*?)}}", query):
            answer = _geocode(geocoder, text, "id", shortcut)
            query = query.replace("{{" + shortcut + ":" + text + "}}", _area_statement(answer, text))
    for text in re.findall(r"{{geocodeId:(.*?)}}", query):
        answer = _geocode(geocoder, text, "id", "geocodeId")
        query = query.replace("{{geocodeId:" + text + "}}", f"{answer.get('osm_type')}(id:{answer.get('osm_id')})")
    for text in re.findall(r"{{geocodeCoords:(.*?)}}", query):
        answer = _geocode(geocoder, text, "centre", "geocodeCoords")
        query = query.replace("{{geocodeCoords:" + text + "}}", f"{answer['lat']},{answer['lon']}")
    for text in re.findall(r"{{geocodeBbox:(.*?)}}", query):
        south, north, west, east = _geocode(geocoder, text, "bbox", "geocodeBbox")["bbox"]
        # Nominatim's boundingbox is south,north,west,east; Overpass wants
        # south,west,north,east. The official evaluation joins it unchanged.
        box = (south, north, west, east) if official else (south, west, north, east)
        query = query.replace("{{geocodeBbox:" + text + "}}", ",".join(str(v) for v in box))
    return query


def _expand_variables(query: str) -> str:
    # {{name=value}} defines a text macro used later as {{name}}.
    for name, value in re.findall(r"{{([^}]+?)=(.*?)}}", query):
        query = query.replace("{{" + name + "}}", value)
        query = query.replace("{{ " + name + " }}", value)
        query = query.replace("{{" + name + "=" + value + "}}", " ")
    return query


def _expand_dates(query: str, official: bool, now: datetime | None) -> str:
    for spec in re.findall(r"{{date:(.*?)}}", query):
        try:
            datetime.strptime(spec, "%Y-%m-%dT%H:%M:%SZ")
            query = query.replace("{{date:" + spec + "}}", spec)
            continue
        except ValueError:
            pass
        found = re.match(r"(\d+)\s*(\w+)", spec.strip().lower())
        if found is None or found.group(2) not in _UNIT_SECONDS:
            raise ExpansionError(
                "relative_date",
                f"{{{{date:{spec}}}}} is not a relative date; write e.g. {{{{date:7 days}}}} "
                "(units: second, minute, hour, day, week, month, year)",
            )
        delta = timedelta(seconds=int(found.group(1)) * _UNIT_SECONDS[found.group(2)])
        if official:
            # date minus timedelta subtracts whole days only (the remainder is dropped).
            value = (REFERENCE_DATE - delta).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        else:
            value = ((now or datetime.now(timezone.utc)) - delta).strftime("%Y-%m-%dT%H:%M:%SZ")
        query = query.replace("{{date:" + spec + "}}", value)
    return query


def _format(value: float) -> str:
    return f"{value:.7f}".rstrip("0").rstrip(".")


def expand(
    query: str,
    *,
    geocoder,
    bbox: str | None = None,
    center: str | None = None,
    official: bool = False,
    now: datetime | None = None,
) -> str:
    """Return ``query`` with every overpass-turbo shortcut replaced.

    ``geocoder`` has ``lookup(text, kind) -> dict | None`` (:class:`geoql.osm.nominatim.Nominatim`).
    ``bbox`` is ``south,west,north,east`` (the map view, or the benchmark's
    ``.bbox`` line); ``center`` is ``lat,lon`` (default: the centre of ``bbox``).
    Raises :class:`ExpansionError` with a message a person can act on.
    """
    query = _expand_geocoder(query, geocoder, official)
    query = _expand_variables(query)
    query = _expand_dates(query, official, now)
    uses_box = any(s in query for s in ("{{bbox}}", "{{center}}"))
    if uses_box and bbox is None:
        raise ExpansionError("bbox", "the query uses {{bbox}} or {{center}}: give a map box as south,west,north,east")
    if uses_box:
        if official:
            query = query.replace("{{bbox}}", bbox).replace("{{center}}", bbox)
        else:
            s, w, n, e = parse_bbox(bbox)
            # The numbers as the user wrote them (checked above), like overpass-turbo's map bounds.
            query = query.replace("{{bbox}}", ",".join(part.strip() for part in bbox.split(",")))
            if center is None:
                center = f"{_format((s + n) / 2)},{_format((w + e) / 2)}"
            query = query.replace("{{center}}", center)
    if not official:
        leftover = re.search(r"{{.*?}}", query)
        if leftover:
            raise ExpansionError("shortcut", f"unknown overpass-turbo shortcut {leftover.group(0)}")
    return query
