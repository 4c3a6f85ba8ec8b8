"""Overpass JSON -> what the demo shows: GeoJSON, an element table, a count, a map page.

Geometry is assembled by osm2geojson (ways from their node lists, multipolygon
relations from their member ways). The map is a self-contained Leaflet page
(Leaflet's JS and CSS inlined from the ``django-js-lib-leaflet`` package) so
the GeoJSON layer renders without internet; only the background tiles come
from the tile server, and the map works without them.

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
"""

from __future__ import annotations

import html
import json
import os
import tempfile
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any

from geoql.core.files import write_atomic

__all__ = ["to_geojson", "element_rows", "summarize", "map_html", "write_geojson", "write_counts", "counts",
           "is_count", "skeleton_ids", "TABLE_HEADERS"]

TABLE_HEADERS = ["type", "id", "name", "tags", "geometry"]
# The fields of an ``out count`` element, in the order they are shown and exported.
COUNT_FIELDS = ("total", "nodes", "ways", "relations", "areas")
TILE_URL = "https://tile.openstreetmap.org/{z}/{x}/{y}.png"
_CDN = "https://unpkg.com/leaflet@1.9.4/dist/"


def to_geojson(data: dict[str, Any]) -> dict[str, Any]:
    """A GeoJSON FeatureCollection of every element with a geometry (ways/relations assembled)."""
    import osm2geojson

    elements = [e for e in data.get("elements") or [] if e.get("type") in ("node", "way", "relation", "area")]
    if not elements:
        return {"type": "FeatureCollection", "features": []}
    collection = osm2geojson.json2geojson({"elements": elements}, log_level="CRITICAL")
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
    elements = [e for e in data.get("elements") or [] if e.get("type") != "count"]
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
    elements = data.get("elements") or []
    return bool(elements) and all(e.get("type") == "count" for e in elements)


def counts(data: dict[str, Any]) -> list[dict[str, int | str]]:
    """The ``out count`` results, one dict per count element (``total``, ``nodes``, ...)."""
    found = []
    for element in data.get("elements") or []:
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
    elements = data.get("elements") or []
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


def _page(geojson: dict[str, Any], view: tuple[float, float, float, float] | None = None) -> str:
    assets = _leaflet_assets()
    if assets is None:
        head = f'<link rel="stylesheet" href="{_CDN}leaflet.css"><script src="{_CDN}leaflet.js"></script>'
    else:
        css, js = assets
        head = f"<style>{css}</style><script>{js}</script>"
    # "</" inside JSON would end the script element early.
    payload = json.dumps(geojson, ensure_ascii=False).replace("</", "<\\/")
    return f"""<!DOCTYPE html><html><head><meta charset="utf-8">{head}
<style>html,body,#map{{height:100%;margin:0}} .leaflet-container{{background:#eef2f3}}</style></head>
<body><div id="map"></div><script>
var data = {payload};
var map = L.map('map', {{preferCanvas: false}});
L.tileLayer('{TILE_URL}', {{maxZoom: 19, attribution: '&copy; OpenStreetMap contributors'}}).addTo(map);
function popup(f) {{
  var p = f.properties || {{}}, t = p.tags || {{}}, rows = [];
  for (var k in t) rows.push('<tr><td>' + k + '</td><td>' + String(t[k]).replace(/</g, '&lt;') + '</td></tr>');
  return '<b>' + p.type + ' ' + p.id + '</b><table>' + rows.join('') + '</table>';
}}
var layer = L.geoJSON(data, {{
  style: function () {{ return {{color: '#d33', weight: 3, fillOpacity: 0.3}}; }},
  pointToLayer: function (f, latlng) {{ return L.circleMarker(latlng, {{radius: 7, color: '#d33', fillOpacity: 0.6}}); }},
  onEachFeature: function (f, l) {{ l.bindPopup(popup(f)); }}
}}).addTo(map);
var view = {json.dumps(list(view) if view else None)};
if (layer.getLayers().length) {{ map.fitBounds(layer.getBounds(), {{padding: [20, 20], maxZoom: 17}}); }}
else if (view) {{ map.fitBounds([[view[0], view[1]], [view[2], view[3]]]); }}
else {{ map.setView([20, 0], 2); }}
document.body.setAttribute('data-features', String(layer.getLayers().length));
// The view is the area of {{{{bbox}}}}, as in overpass-turbo: each move the person makes
// (drag, zoom, shift-drag a box) writes it into the page's map-area field.
function round(x) {{ return Math.round(x * 1e5) / 1e5; }}
function share() {{
  var b = map.getBounds(), text = [round(b.getSouth()), round(b.getWest()), round(b.getNorth()), round(b.getEast())].join(',');
  document.body.setAttribute('data-bbox', text);
  try {{
    var field = window.parent.document.querySelector('#bbox textarea, #bbox input');
    if (field && field.value !== text) {{
      field.value = text;
      field.dispatchEvent(new Event('input', {{bubbles: true}}));
    }}
  }} catch (e) {{}}  // a page that embeds the map elsewhere has no field
}}
map.on('moveend', share);
</script></body></html>"""


def map_html(geojson: dict[str, Any], height: int = 480, view: tuple[float, float, float, float] | None = None) -> str:
    """An ``<iframe srcdoc>`` holding the Leaflet page (scripts run inside the frame).

    ``view`` (south, west, north, east) is shown when there is nothing to draw; moving the
    map writes its view into the page's ``#bbox`` field (the frame is same-origin)."""
    n = len(geojson.get("features") or [])
    return (
        f'<iframe class="geoql-map" data-features="{n}" title="result map" '
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
    header = list(dict.fromkeys(k for row in rows for k in row))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([row.get(k, "") for k in header])
    return write_atomic(_target(directory, f"{stem}.csv"), buffer.getvalue())
