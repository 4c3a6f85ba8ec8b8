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
'2 elements (1 node, 1 count) · 1 on the map · count: total 7 (nodes 7)'
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

__all__ = ["to_geojson", "element_rows", "summarize", "map_html", "write_geojson", "TABLE_HEADERS"]

TABLE_HEADERS = ["type", "id", "name", "tags"]
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


def _is_skeleton(element: dict) -> bool:
    # "out skel" nodes of a way: geometry only, not a result a person asked for.
    return element.get("type") == "node" and not element.get("tags")


def element_rows(data: dict[str, Any], limit: int = 500) -> list[list[Any]]:
    """Rows ``[type, id, name, tags]`` for the table; tagged elements first, at most ``limit``."""
    elements = data.get("elements") or []
    ordered = [e for e in elements if not _is_skeleton(e)] + [e for e in elements if _is_skeleton(e)]
    rows = []
    for element in ordered[:limit]:
        tags = element.get("tags") or {}
        name = tags.get("name") or tags.get("ref") or ""
        text = "; ".join(f"{k}={v}" for k, v in tags.items() if k != "name")
        rows.append([element.get("type", "?"), element.get("id", ""), name, text])
    return rows


def summarize(data: dict[str, Any], geojson: dict[str, Any] | None = None) -> str:
    """One line: how many elements of which type, how many drawn, and any ``out count`` result."""
    elements = data.get("elements") or []
    if not elements:
        return "No elements: the query ran but matched nothing here."
    by_type = Counter(e.get("type", "?") for e in elements)
    parts = ", ".join(f"{n} {t}" for t, n in by_type.most_common())
    line = f"{len(elements)} elements ({parts})"
    if geojson is None:
        geojson = to_geojson(data)
    line += f" · {len(geojson['features'])} on the map"
    for element in elements:
        if element.get("type") == "count":
            tags = element.get("tags") or {}
            rest = ", ".join(f"{k} {v}" for k, v in tags.items() if k != "total")
            line += f" · count: total {tags.get('total', '?')}" + (f" ({rest})" if rest else "")
    return line


@lru_cache(maxsize=1)
def _leaflet_assets() -> tuple[str, str] | None:
    """Leaflet's CSS and JS from the installed package, or None when it is not installed."""
    try:
        from importlib.resources import files

        base = files("js_lib_leaflet") / "static" / "js_lib_leaflet"
        return (base / "leaflet.css").read_text(encoding="utf-8"), (base / "leaflet.js").read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError, OSError):
        return None


def _page(geojson: dict[str, Any]) -> str:
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
if (layer.getLayers().length) {{ map.fitBounds(layer.getBounds(), {{padding: [20, 20], maxZoom: 17}}); }}
else {{ map.setView([20, 0], 2); }}
document.body.setAttribute('data-features', String(layer.getLayers().length));
</script></body></html>"""


def map_html(geojson: dict[str, Any], height: int = 480) -> str:
    """An ``<iframe srcdoc>`` holding the Leaflet page (scripts run inside the frame)."""
    n = len(geojson.get("features") or [])
    return (
        f'<iframe class="geoql-map" data-features="{n}" title="result map" '
        f'style="width:100%;height:{height}px;border:0" srcdoc="{html.escape(_page(geojson), quote=True)}"></iframe>'
    )


def write_geojson(geojson: dict[str, Any], directory: str | os.PathLike, stem: str = "geoql-result") -> Path:
    """Write the GeoJSON for download, atomically, in a folder of its own (one per result)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    target = Path(tempfile.mkdtemp(prefix="result-", dir=directory)) / f"{stem}.geojson"
    return write_atomic(target, json.dumps(geojson, ensure_ascii=False))
