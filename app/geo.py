"""Overpass JSON -> what the demo shows: GeoJSON, an element table, a count, a map page.

An answer is read once (:func:`read_answer`): whatever a server sent (an element that is
not an object, ``lat: null``, an id that is a list, tags that are not text), the rest of
this module sees well-formed elements. Geometry is assembled by osm2geojson (ways from
their node lists, multipolygon relations from their member ways). The map is a
self-contained Leaflet page (Leaflet's JS and CSS inlined from the
``django-js-lib-leaflet`` package) so the GeoJSON layer renders without internet; only
the background tiles come from the tile server, and the map works without them.

Everything in an answer is data, never markup: the popups are built with ``textContent``,
the GeoJSON is embedded with ``<`` escaped, and the page runs in a sandboxed frame
(scripts, but not the demo's origin), which tells the page its view by ``postMessage``.

>>> data = {"elements": [{"type": "node", "id": 1, "lat": 49.4, "lon": 8.7, "tags": {"name": "Café"}},
...                      {"type": "count", "id": 0, "tags": {"total": "7", "nodes": "7"}}]}
>>> [f["geometry"]["type"] for f in to_geojson(data)["features"]]
['Point']
>>> element_rows(data)[0][:3]
['node', 1, 'Café']
>>> summarize(data)
'1 element (1 node) · 1 on the map · count: 7 (7 nodes)'
>>> summarize({"elements": [{"type": "count", "id": 0, "tags": {"total": "15", "nodes": "12", "ways": "3"}}]})
'count: 15 (12 nodes, 3 ways)'
>>> read_answer({"elements": [7, {"type": "node", "id": [1], "lat": None, "lon": 8.7, "tags": {"a": 1}}]})["elements"]
[{'type': 'node', 'id': '[1]', 'tags': {'a': '1'}}]
"""

from __future__ import annotations

import html
import json
import logging
import math
import os
import tempfile
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any

from geoql.core.files import write_atomic

__all__ = ["read_answer", "to_geojson", "element_rows", "summarize", "map_html", "write_geojson", "write_counts",
           "counts", "is_count", "skeleton_ids", "TABLE_HEADERS", "MAP_FRAME_SANDBOX", "MAP_MESSAGE_LISTENER"]

log = logging.getLogger(__name__)

TABLE_HEADERS = ["type", "id", "name", "tags", "geometry"]
# The fields of an ``out count`` element, in the order they are shown and exported.
COUNT_FIELDS = ("total", "nodes", "ways", "relations", "areas")
TILE_URL = "https://tile.openstreetmap.org/{z}/{x}/{y}.png"
_CDN = "https://unpkg.com/leaflet@1.9.4/dist/"


# ---------------------------------------------------------------- reading an answer


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False) if isinstance(
        value, (dict, list)) else str(value)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any, limit: float) -> float | None:
    """A finite number within ``±limit``; None for anything else (``null``, text, 1e400, true)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:  # an integer of hundreds of digits
        return None
    return value if math.isfinite(value) and -limit <= value <= limit else None


def _point(item: Any) -> dict[str, float] | None:
    if not isinstance(item, dict):
        return None
    lat, lon = _number(item.get("lat"), 90), _number(item.get("lon"), 180)
    return None if lat is None or lon is None else {"lat": lat, "lon": lon}


def _points(items: Any) -> list[dict[str, float]] | None:
    """A geometry list whose every point is good, else None (a gap would join distant points)."""
    if not isinstance(items, list):
        return None
    points = [_point(p) for p in items]
    return points if points and all(points) else None


def _member(item: Any) -> dict[str, Any] | None:
    if not isinstance(item, dict) or not isinstance(item.get("type"), str):
        return None
    member = {"type": item["type"], "ref": item.get("ref") if _whole(item.get("ref")) else _text(item.get("ref")),
              "role": _text(item.get("role", ""))}
    geometry = _points(item.get("geometry"))
    if geometry:
        member["geometry"] = geometry
    point = _point(item)
    if point:
        member.update(point)
    return member


# The fields of an element read below; any other field is kept when it is a plain value (out meta's
# timestamp, version, user...).
_READ = frozenset({"type", "id", "tags", "lat", "lon", "nodes", "members", "geometry", "center", "bounds"})


def _element(item: Any) -> dict[str, Any] | None:
    if not isinstance(item, dict) or not isinstance(item.get("type"), str):
        return None
    ident = item.get("id", "")
    element: dict[str, Any] = {"type": item["type"], "id": ident if _whole(ident) or isinstance(ident, str) else _text(ident)}
    for key, value in item.items():
        if key not in _READ and isinstance(key, str) and (isinstance(value, (str, bool)) or _whole(value)):
            element[key] = value
    tags = item.get("tags")
    if isinstance(tags, dict):
        element["tags"] = {_text(k): _text(v) for k, v in tags.items()}
    point = _point(item)
    if point:
        element.update(point)
    if isinstance(item.get("nodes"), list):
        element["nodes"] = [n for n in item["nodes"] if _whole(n)]
    if isinstance(item.get("members"), list):
        element["members"] = [m for m in map(_member, item["members"]) if m]
    geometry = _points(item.get("geometry"))
    if geometry:
        element["geometry"] = geometry
    center = _point(item.get("center"))
    if center:
        element["center"] = center
    bounds = item.get("bounds")
    if isinstance(bounds, dict):
        box = {k: _number(bounds.get(k), 180) for k in ("minlat", "minlon", "maxlat", "maxlon")}
        if all(v is not None for v in box.values()):
            element["bounds"] = box
    return element


def read_answer(data: Any) -> dict[str, Any]:
    """An Overpass JSON answer as this module reads it: ``elements`` a list of objects, each with
    a text ``type``, an id that is a number or text, ``tags`` text to text, and coordinates only
    where they are finite numbers in range; ``remark`` text. What cannot be read is left out,
    so a hostile or broken answer gives fewer results, never an exception. Idempotent."""
    if not isinstance(data, dict):
        return {"elements": []}
    elements = data.get("elements")
    read: dict[str, Any] = {key: value for key, value in data.items() if isinstance(key, str)
                            and isinstance(value, (str, bool, int)) and key not in ("elements", "remark")}
    read["elements"] = [e for e in map(_element, elements if isinstance(elements, list) else []) if e]
    if data.get("remark") is not None:
        read["remark"] = _text(data["remark"])
    return read


def _elements(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects among ``data``'s elements (an answer not read by :func:`read_answer` may hold others)."""
    elements = data.get("elements") if isinstance(data, dict) else None
    return [e for e in elements if isinstance(e, dict)] if isinstance(elements, list) else []


# ---------------------------------------------------------------- what is shown


def to_geojson(data: dict[str, Any]) -> dict[str, Any]:
    """A GeoJSON FeatureCollection of every element with a geometry (ways/relations assembled)."""
    import osm2geojson

    # A node without coordinates (``out tags``, ``out ids``, or coordinates read_answer left out) has
    # nothing to draw and stops osm2geojson: it stays in the table.
    elements = [e for e in _elements(data) if e.get("type") in ("way", "relation", "area")
                or (e.get("type") == "node" and "lat" in e and "lon" in e)]
    if not elements:
        return {"type": "FeatureCollection", "features": []}
    try:
        collection = osm2geojson.json2geojson({"elements": elements}, log_level="CRITICAL")
    except Exception:  # noqa: BLE001 (an answer read_answer has not cleaned): read it, then try again
        log.info("osm2geojson could not read the answer as it came; reading it first", exc_info=True)
        collection = osm2geojson.json2geojson(read_answer({"elements": elements}), log_level="CRITICAL")
    collection.setdefault("features", [])
    return collection


def skeleton_ids(elements: list[dict]) -> set[tuple[str, Any]]:
    """``(type, id)`` of the untagged elements that another element of the result is built
    from (the nodes of its ways, the members of its relations: ``>; out skel``): geometry
    of a result, not a result a person asked for."""
    used: set[tuple[str, Any]] = set()
    for element in elements:
        for ref in element.get("nodes") or []:
            used.add(("node", ref))
        for member in element.get("members") or []:
            used.add((member.get("type"), member.get("ref")))
    return {(e.get("type"), e.get("id")) for e in elements if not e.get("tags") and (e.get("type"), e.get("id")) in used}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _geometry(element: dict) -> str:
    kind = element.get("type")
    if kind == "way" and element.get("nodes"):
        return _plural(len(element["nodes"]), "node")
    if kind == "relation" and element.get("members"):
        return _plural(len(element["members"]), "member")
    if kind == "node" and "lat" in element:
        return "point"
    if "center" in element:
        return "centre"
    return ""


def element_rows(data: dict[str, Any], limit: int = 500) -> list[list[Any]]:
    """Rows ``[type, id, name, tags, geometry]`` for the table, at most ``limit``: the
    skeleton elements (:func:`skeleton_ids`) are folded into the rows of their parents,
    whose ``geometry`` says what they are built from ("5 nodes"); counts are not rows."""
    elements = [e for e in _elements(data) if e.get("type") != "count"]
    folded = skeleton_ids(elements)
    rows = []
    for element in elements:
        if (element.get("type"), element.get("id")) in folded:
            continue
        if len(rows) >= limit:
            break
        tags = element.get("tags") or {}
        name = tags.get("name") or tags.get("ref") or ""
        text = "; ".join(f"{k}={v}" for k, v in tags.items() if k != "name")
        rows.append([element.get("type", "?"), element.get("id", ""), name, text, _geometry(element)])
    return rows


def is_count(data: dict[str, Any]) -> bool:
    """The answer is only ``out count`` results (what a "how many" query prints)."""
    elements = _elements(data)
    return bool(elements) and all(e.get("type") == "count" for e in elements)


def counts(data: dict[str, Any]) -> list[dict[str, int | str]]:
    """The ``out count`` results, one dict per count element (``total``, ``nodes``, ...)."""
    found = []
    for element in _elements(data):
        if element.get("type") != "count":
            continue
        tags = element.get("tags") or {}
        row: dict[str, int | str] = {}
        for key in (*COUNT_FIELDS, *(k for k in tags if k not in COUNT_FIELDS)):
            if key in tags:
                value = str(tags[key])
                row[key] = int(value) if value.isdigit() else value
        found.append(row)
    return found


def _count_line(row: dict) -> str:
    parts = [_plural(int(row[k]), k[:-1]) if isinstance(row[k], int) else f"{row[k]} {k}"
             for k in row if k != "total"]
    return f"count: {row.get('total', '?')}" + (f" ({', '.join(parts)})" if parts else "")


def summarize(data: dict[str, Any], geojson: dict[str, Any] | None = None) -> str:
    """One line: the results by type (skeleton elements folded into them), how many are
    drawn, and any ``out count`` result as a count."""
    elements = _elements(data)
    if not elements:
        return "No elements: the query ran but matched nothing here."
    shown = [_count_line(row) for row in counts(data)]
    results = [e for e in elements if e.get("type") != "count"]
    if not results:
        return " · ".join(shown)
    folded = skeleton_ids(results)
    kept = [e for e in results if (e.get("type"), e.get("id")) not in folded]
    by_type = Counter(e.get("type", "?") for e in kept)
    parts = ", ".join(_plural(n, t) for t, n in by_type.most_common())
    line = f"{_plural(len(kept), 'element')} ({parts})"
    if folded:
        line += f" built from {len(folded)} untagged {'element' if len(folded) == 1 else 'elements'}"
    if geojson is None:
        geojson = to_geojson(data)
    line += f" · {len(geojson['features'])} on the map"
    return " · ".join([line, *shown])


@lru_cache(maxsize=1)
def _leaflet_assets() -> tuple[str, str] | None:
    """Leaflet's CSS and JS from the installed package, or None when it is not installed."""
    try:
        from importlib.resources import files

        base = files("js_lib_leaflet") / "static" / "js_lib_leaflet"
        return (base / "leaflet.css").read_text(encoding="utf-8"), (base / "leaflet.js").read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError, OSError):
        return None


# The map's frame may run scripts (Leaflet) but is not of the demo's origin: nothing in it can
# reach the page, its cookies or its API, whatever an answer smuggles into it.
MAP_FRAME_SANDBOX = "allow-scripts"

# On the demo's page: the map frame says its view by postMessage (it cannot reach the page
# itself); this writes it into the map-area field, from the map frames only and as a box only.
MAP_MESSAGE_LISTENER = """<script>
window.addEventListener('message', function (event) {
  var said = event.data, box = /^-?[0-9]+(\\.[0-9]+)?(,-?[0-9]+(\\.[0-9]+)?){3}$/;
  if (!said || said.geoql !== 'bbox' || typeof said.bbox !== 'string' || !box.test(said.bbox)) return;
  var frames = document.querySelectorAll('iframe.geoql-map'), ours = false;
  for (var i = 0; i < frames.length; i++) { if (frames[i].contentWindow === event.source) ours = true; }
  var field = document.querySelector('#bbox textarea, #bbox input');
  if (ours && field && field.value !== said.bbox) {
    field.value = said.bbox;
    field.dispatchEvent(new Event('input', {bubbles: true}));
  }
});
</script>"""


def _script_json(value: Any) -> str:
    """JSON to embed in a ``<script>``: no ``<`` at all, so no text of an answer can close the
    element or open a comment (``</script>``, ``<!--``); JSON reads ``\\u003c`` back as ``<``."""
    return json.dumps(value, ensure_ascii=False).replace("<", "\\u003c")


def _page(geojson: dict[str, Any], view: tuple[float, float, float, float] | None = None) -> str:
    assets = _leaflet_assets()
    if assets is None:
        head = f'<link rel="stylesheet" href="{_CDN}leaflet.css"><script src="{_CDN}leaflet.js"></script>'
    else:
        css, js = assets
        head = f"<style>{css}</style><script>{js}</script>"
    return f"""<!DOCTYPE html><html><head><meta charset="utf-8">{head}
<style>html,body,#map{{height:100%;margin:0}} .leaflet-container{{background:#eef2f3}}
.leaflet-popup-content td{{vertical-align:top;overflow-wrap:anywhere}}</style></head>
<body><div id="map"></div><script>
var data = {_script_json(geojson)};
var map = L.map('map', {{preferCanvas: false}});
L.tileLayer('{TILE_URL}', {{maxZoom: 19, attribution: '&copy; OpenStreetMap contributors'}}).addTo(map);
// What an answer holds is text, never markup: the popup is built from nodes with textContent.
function cell(row, text) {{
  var td = document.createElement('td');
  td.textContent = String(text);
  row.appendChild(td);
}}
function popup(f) {{
  var p = f.properties || {{}}, t = p.tags || {{}}, box = document.createElement('div');
  var head = document.createElement('b'), table = document.createElement('table');
  head.textContent = String(p.type) + ' ' + String(p.id);
  for (var k in t) {{
    if (!Object.prototype.hasOwnProperty.call(t, k)) continue;
    var row = document.createElement('tr');
    cell(row, k);
    cell(row, t[k]);
    table.appendChild(row);
  }}
  box.appendChild(head);
  box.appendChild(table);
  return box;
}}
var layer = L.geoJSON(data, {{
  style: function () {{ return {{color: '#d33', weight: 3, fillOpacity: 0.3}}; }},
  pointToLayer: function (f, latlng) {{ return L.circleMarker(latlng, {{radius: 7, color: '#d33', fillOpacity: 0.6}}); }},
  onEachFeature: function (f, l) {{ l.bindPopup(function () {{ return popup(f); }}); }}
}}).addTo(map);
var view = {json.dumps(list(view) if view else None)};
function fit() {{
  if (layer.getLayers().length) {{ map.fitBounds(layer.getBounds(), {{padding: [20, 20], maxZoom: 17}}); }}
  else if (view) {{ map.fitBounds([[view[0], view[1]], [view[2], view[3]]]); }}
  else {{ map.setView([20, 0], 2); }}
}}
document.body.setAttribute('data-features', String(layer.getLayers().length));
// The view is the area of {{{{bbox}}}}, as in overpass-turbo: each move the person makes
// (drag, zoom, shift-drag a box) is told to the page (MAP_MESSAGE_LISTENER writes it into
// its map-area field); the sandboxed frame cannot reach the page itself.
function round(x, limit) {{ return Math.max(-limit, Math.min(limit, Math.round(x * 1e5) / 1e5)); }}
function share() {{
  var b = map.getBounds();
  var text = [round(b.getSouth(), 90), round(b.getWest(), 180), round(b.getNorth(), 90), round(b.getEast(), 180)].join(',');
  document.body.setAttribute('data-bbox', text);
  if (window.parent !== window) window.parent.postMessage({{geoql: 'bbox', bbox: text}}, '*');
}}
// The frame may have no size yet when this runs: the view is fitted once it has one, and only
// the moves after that are the person's.
function start() {{ fit(); map.on('moveend', share); }}
if (map.getSize().x && map.getSize().y) {{ start(); }}
else {{
  fit();
  window.addEventListener('resize', function sized() {{
    map.invalidateSize();
    if (!map.getSize().x || !map.getSize().y) return;
    window.removeEventListener('resize', sized);
    start();
  }});
}}
</script></body></html>"""


def map_html(geojson: dict[str, Any], height: int = 480, view: tuple[float, float, float, float] | None = None) -> str:
    """An ``<iframe srcdoc>`` holding the Leaflet page, sandboxed (:data:`MAP_FRAME_SANDBOX`:
    scripts run inside the frame, without the page's origin).

    ``view`` (south, west, north, east) is shown when there is nothing to draw; moving the
    map posts its view to the page, whose :data:`MAP_MESSAGE_LISTENER` writes it into ``#bbox``."""
    n = len(geojson.get("features") or [])
    return (
        f'<iframe class="geoql-map" data-features="{n}" title="result map" sandbox="{MAP_FRAME_SANDBOX}" '
        f'style="width:100%;height:{height}px;border:0" srcdoc="{html.escape(_page(geojson, view), quote=True)}"></iframe>'
    )


def _target(directory: str | os.PathLike, name: str) -> Path:
    # A folder of its own per result: downloads keep their plain name and never collide.
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="result-", dir=directory)) / name


def write_geojson(geojson: dict[str, Any], directory: str | os.PathLike, stem: str = "geoql-result") -> Path:
    """Write the GeoJSON for download, atomically, in a folder of its own (one per result)."""
    return write_atomic(_target(directory, f"{stem}.geojson"), json.dumps(geojson, ensure_ascii=False))


def write_counts(data: dict[str, Any], directory: str | os.PathLike, stem: str = "geoql-result") -> Path:
    """Write the ``out count`` results as CSV (one row per count, a header of its fields)."""
    import csv
    import io

    rows = counts(data)
    header = list(dict.fromkeys(k for row in rows for k in row)) or ["total"]  # a count that says nothing: blank
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([row.get(k, "") for k in header])
    return write_atomic(_target(directory, f"{stem}.csv"), buffer.getvalue())
