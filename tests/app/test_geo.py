"""Overpass JSON -> GeoJSON, table, summary and the offline Leaflet map page."""

from __future__ import annotations

import html
import json
import re

import pytest
from fakes.servers import payload
from fakes.support import embedded_geojson

from geoql.app import geo
from geoql.app.geo import counts, element_rows, is_count, map_html, skeleton_ids, summarize, to_geojson, write_counts, write_geojson

CAFES = json.loads(payload("heidelberg_cafes.json"))


def test_ways_and_multipolygons_are_assembled():
    features = to_geojson(CAFES)["features"]
    by_id = {(f["properties"]["type"], f["properties"]["id"]): f["geometry"] for f in features}
    assert set(by_id) == {("node", 240109189), ("node", 268113427), ("way", 48251337), ("relation", 1613720)}
    assert by_id[("way", 48251337)]["type"] == "Polygon"
    assert len(by_id[("way", 48251337)]["coordinates"][0]) == 5
    outer_and_hole = by_id[("relation", 1613720)]
    assert outer_and_hole["type"] == "MultiPolygon" and len(outer_and_hole["coordinates"][0]) == 2
    assert by_id[("node", 240109189)]["coordinates"] == [8.7060043, 49.4106512]


@pytest.mark.parametrize(
    "data, n",
    [
        ({"elements": []}, 0),
        ({"elements": [{"type": "count", "id": 0, "tags": {"total": "3"}}]}, 0),
        ({"elements": [{"type": "way", "id": 5, "center": {"lat": 1.0, "lon": 2.0}, "tags": {}}]}, 1),
        ({"elements": [{"type": "way", "id": 6, "nodes": [1, 2]}]}, 0),  # nodes missing: nothing to draw
    ],
)
def test_geometry_edge_cases(data, n):
    assert len(to_geojson(data)["features"]) == n


def test_table_folds_skeleton_elements_into_their_parents():
    rows = element_rows(CAFES)
    assert [r[2] for r in rows] == ["Café Frisch", "Café Knösel", "Schlosscafé", "Café im Marstallhof"]
    assert rows[0][3] == "amenity=cafe; outdoor_seating=yes; cuisine=coffee_shop"
    assert [r[4] for r in rows] == ["point", "point", "5 nodes", "2 members"]
    assert len(skeleton_ids(CAFES["elements"])) == 13 and len(element_rows(CAFES, limit=3)) == 3


def test_untagged_elements_nothing_is_built_from_stay_rows():
    data = {"elements": [{"type": "node", "id": 1, "lat": 1.0, "lon": 2.0},
                         {"type": "way", "id": 2, "nodes": [3, 4], "tags": {"highway": "path"}},
                         {"type": "node", "id": 3, "lat": 1.0, "lon": 2.0}, {"type": "node", "id": 4, "lat": 1.1, "lon": 2.0}]}
    assert [(r[0], r[1]) for r in element_rows(data)] == [("node", 1), ("way", 2)]
    assert summarize(data).startswith("2 elements (1 node, 1 way) built from 2 untagged elements")


def test_counts_are_counts():
    data = json.loads(payload("count.json"))
    assert is_count(data) and not is_count(CAFES) and not is_count({"elements": []})
    assert counts(data) == [{"total": 15, "nodes": 12, "ways": 3, "relations": 0}]
    assert element_rows(data) == []
    assert summarize(data) == "count: 15 (12 nodes, 3 ways, 0 relations)"


@pytest.mark.parametrize(
    "name, words",
    [
        ("heidelberg_cafes.json", "4 elements (2 nodes, 1 way, 1 relation) built from 13 untagged elements · 4 on the map"),
        ("count.json", "count: 15 (12 nodes, 3 ways, 0 relations)"),
        ("empty.json", "matched nothing"),
    ],
)
def test_summary(name, words):
    assert words in summarize(json.loads(payload(name)))


def test_map_page_is_self_contained_and_carries_the_features():
    geojson = to_geojson(CAFES)
    fragment = map_html(geojson)
    assert 'data-features="4"' in fragment
    assert embedded_geojson(fragment) == geojson
    srcdoc = html.unescape(fragment)
    # Leaflet itself is inlined: the map draws without internet; only tiles are remote.
    assert "unpkg.com" not in srcdoc and "L.geoJSON" in srcdoc and "Leaflet" in srcdoc
    assert re.findall(r"https?://[^\s'\"]+", srcdoc.split("var data")[1]) == ["https://tile.openstreetmap.org/{z}/{x}/{y}.png"]


def test_script_breaking_tag_values_are_escaped():
    data = {"elements": [{"type": "node", "id": 1, "lat": 1.0, "lon": 2.0, "tags": {"name": "</script><b>x"}}]}
    fragment = map_html(to_geojson(data))
    assert "</script><b>" not in html.unescape(fragment).split("var data")[1].split(";\nvar map")[0]
    assert embedded_geojson(fragment)["features"][0]["properties"]["tags"]["name"] == "</script><b>x"


def test_write_geojson_is_atomic_and_readable(tmp_path):
    geojson = to_geojson(CAFES)
    first, second = write_geojson(geojson, tmp_path), write_geojson(geojson, tmp_path)
    assert first != second  # concurrent downloads never overwrite each other
    assert json.loads(first.read_text(encoding="utf-8")) == geojson
    assert not list(tmp_path.glob(".geojson-*"))  # no temporary files left behind


def test_write_counts_is_a_csv_of_the_count(tmp_path):
    path = write_counts(json.loads(payload("count.json")), tmp_path, "geoql-how-many")
    assert path.name == "geoql-how-many.csv"
    assert path.read_text(encoding="utf-8") == "total,nodes,ways,relations\n15,12,3,0\n"


def test_map_shows_the_view_and_posts_its_moves_to_the_page():
    srcdoc = html.unescape(map_html(to_geojson({"elements": []}), view=(49.4, 8.68, 49.42, 8.72)))
    assert "var view = [49.4, 8.68, 49.42, 8.72];" in srcdoc
    # The sandboxed frame cannot reach the page: it posts its view, the page's listener writes the field.
    assert "map.on('moveend', share)" in srcdoc and "postMessage" in srcdoc and "#bbox" not in srcdoc
    assert "#bbox textarea" in geo.MAP_MESSAGE_LISTENER and "iframe.geoql-map" in geo.MAP_MESSAGE_LISTENER


def test_the_map_frame_runs_scripts_without_the_page_s_origin():
    fragment = map_html(to_geojson(CAFES))
    assert re.search(r'<iframe [^>]*sandbox="allow-scripts"', fragment)
    assert "allow-same-origin" not in fragment.split("srcdoc=")[0]


HOSTILE = '<img src=x onerror="document.body.setAttribute(\'data-pwned\', 1)">'


def test_an_answer_s_text_never_becomes_markup_of_the_map_page():
    """Keys, values and ids are embedded without a single "<" (so nothing can close the script)
    and the popup is built from text nodes (the browser test clicks one: tests/app/test_ui_browser.py)."""
    data = {"elements": [{"type": "node", "id": HOSTILE, "lat": 49.4, "lon": 8.7, "tags": {HOSTILE: HOSTILE}}]}
    fragment = map_html(to_geojson(geo.read_answer(data)))
    script = html.unescape(fragment).split("var data = ")[1].split(";\nvar map")[0]
    assert "<" not in script and "onerror" in script
    feature = embedded_geojson(fragment)["features"][0]["properties"]
    assert feature["id"] == HOSTILE and feature["tags"] == {HOSTILE: HOSTILE}
    page = html.unescape(fragment)
    assert "innerHTML" not in page.split("var data = ")[1] and "textContent" in page


# What servers have sent instead of Overpass elements (issue 42: `geoql run` crashed on the first two).
BROKEN_ANSWERS = {
    "elements that are not objects": {"elements": [1, "node", None, [2]]},
    "lat null": {"elements": [{"type": "node", "id": 1, "lat": None, "lon": 8.7, "tags": {"amenity": "cafe"}}]},
    "coordinates as text": {"elements": [{"type": "node", "id": 1, "lat": "north", "lon": "8.7"}]},
    "coordinates out of range": {"elements": [{"type": "node", "id": 1, "lat": 1e400, "lon": 700}]},
    "an id that is a list": {"elements": [{"type": "node", "id": [1], "lat": 49.4, "lon": 8.7, "tags": {}}]},
    "tags that are a list": {"elements": [{"type": "node", "id": 1, "lat": 49.4, "lon": 8.7, "tags": ["a", "b"]}]},
    "tag values that are objects": {"elements": [{"type": "node", "id": 1, "lat": 49.4, "lon": 8.7,
                                                  "tags": {"name": {"de": "x"}, "n": 7}}]},
    "elements not a list": {"elements": {"type": "node"}},
    "no type": {"elements": [{"id": 1, "lat": 49.4, "lon": 8.7}]},
    "nodes and members of the wrong kind": {"elements": [{"type": "way", "id": 2, "nodes": "1,2"},
                                                         {"type": "relation", "id": 3, "members": [5, {"ref": 2}]}]},
    "geometry with gaps": {"elements": [{"type": "way", "id": 2, "tags": {"highway": "path"},
                                         "geometry": [None, {"lat": 49.4, "lon": 8.7}, {"lat": 49.5, "lon": 8.8}]}]},
    "a count whose tags are null": {"elements": [{"type": "count", "id": 0, "tags": None}]},
    "a count of objects": {"elements": [{"type": "count", "id": 0, "tags": {"total": {"n": 1}, "nodes": "3"}}]},
    "not an object at all": [1, 2, 3],
}


@pytest.mark.parametrize("data", list(BROKEN_ANSWERS.values()), ids=list(BROKEN_ANSWERS))
def test_a_broken_answer_is_read_into_fewer_results_never_an_exception(data, tmp_path):
    read = geo.read_answer(data)
    assert geo.read_answer(read) == read  # idempotent: reading twice changes nothing
    geojson = to_geojson(read)
    element_rows(read), summarize(read, geojson), counts(read), is_count(read)
    map_html(geojson)
    write_geojson(geojson, tmp_path), write_counts(read, tmp_path)
    for element in read["elements"]:
        assert isinstance(element["type"], str) and isinstance(element["id"], (int, str))
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in element.get("tags", {}).items())


@pytest.mark.parametrize("name", ["heidelberg_cafes.json", "count.json", "runtime_timeout.json"])
def test_reading_keeps_what_overpass_sends(name):
    data = json.loads(payload(name))
    read = geo.read_answer(data)
    assert read["elements"] == data["elements"] and read.get("remark") == data.get("remark")
