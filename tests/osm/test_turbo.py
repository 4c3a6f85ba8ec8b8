"""overpass-turbo shortcut expansion: the official evaluation's flavour and overpass-turbo's."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from geoql.core.errors import GeoqlError
from geoql.eval.dataset import load_nominatim_cache, load_split
from geoql.osm.nominatim import GeocodeError, cache_key
from geoql.osm.turbo import ExpansionError, expand


class CacheGeocoder:
    """The benchmark's own geocoder answers (the official cache), no network."""

    def __init__(self):
        self.cache = load_nominatim_cache()

    def lookup(self, text, kind="id"):
        return self.cache.get(cache_key(text, kind))


GEOCODER = CacheGeocoder()
DEV = load_split("dev")
WITH_SHORTCUTS = [ex for ex in DEV if "{{" in ex.query]


@pytest.mark.parametrize("example", WITH_SHORTCUTS[::4], ids=lambda ex: f"dev{ex.index}")
def test_every_gold_shortcut_expands_with_the_benchmark_cache(example):
    final = expand(example.query, geocoder=GEOCODER, bbox=example.bbox, official=True)
    assert "{{" not in final
    if "{{bbox}}" in example.query and "{{bbox=" not in example.query:  # {{bbox=..}} redefines it
        assert example.bbox in final


@pytest.mark.parametrize(
    "query, official, expected",
    [
        ("{{geocodeArea:Heidelberg}}->.a;", True, "area(id:3600285864)->.a;"),
        ("{{geocodeArea:Brandenburger Tor}}->.a;", False, "area(id:2918071791)->.a;"),
        ("{{geocodeId:Heidelberg}};out;", False, "relation(id:285864);out;"),
        ("node(around:100,{{geocodeCoords:Heidelberg}});", False, "node(around:100,49.4,8.7);"),
        ("node({{geocodeBbox:Heidelberg}});", False, "node(49.35,8.57,49.46,8.79);"),
        ("node({{geocodeBbox:Heidelberg}});", True, "node(49.35,49.46,8.57,8.79);"),
        ("node({{center}});", True, "node(1,2,3,4);"),
        ("node(around:5,{{center}});", False, "node(around:5,2,3);"),
        ("node(newer:'{{date:2021-01-02T03:04:05Z}}');", True, "node(newer:'2021-01-02T03:04:05Z');"),
        ("node(newer:'{{date:1day}}');", True, "node(newer:'2022-07-03T00:00:00.000000Z');"),
        ("node(newer:'{{date:1 hour}}');", True, "node(newer:'2022-07-04T00:00:00.000000Z');"),
        ("node(newer:'{{date:3Day}}');", False, "node(newer:'2024-01-07T12:00:00Z');"),
        ("{{x=cafe}}node[amenity={{x}}];", False, " node[amenity=cafe];"),
    ],
)
def test_expansion_cases(query, official, expected):
    geocoder = TinyGeocoder()
    now = datetime(2024, 1, 10, 12, 0, tzinfo=timezone.utc)
    assert expand(query, geocoder=geocoder, bbox="1,2,3,4", official=official, now=now) == expected


class TinyGeocoder:
    answers = {
        ("Heidelberg", "id"): {"osm_id": 285864, "osm_type": "relation"},
        ("Brandenburger Tor", "id"): {"osm_id": 518071791, "osm_type": "way"},
        ("Heidelberg", "centre"): {"lat": "49.4", "lon": "8.7"},
        ("Heidelberg", "bbox"): {"bbox": ["49.35", "49.46", "8.57", "8.79"]},
    }

    def lookup(self, text, kind="id"):
        return self.answers.get((text.strip().strip('"'), kind))


@pytest.mark.parametrize(
    "query, kind, words",
    [
        ("{{geocodeArea:Atlantis}}->.a;", "nominatim", "no place named 'Atlantis'"),
        ("node(newer:'{{date:yesterday}}');", "relative_date", "not a relative date"),
        ("node(newer:'{{date:3 fortnights}}');", "relative_date", "units:"),
        ("node({{bbox}});", "bbox", "south,west,north,east"),
        ("node({{foo}});", "shortcut", "unknown overpass-turbo shortcut {{foo}}"),
    ],
)
def test_expansion_errors_are_clear(query, kind, words):
    bbox = None if "bbox" in query else "1,2,3,4"
    with pytest.raises(ExpansionError, match=words.replace("{", r"\{").replace("}", r"\}")) as info:
        expand(query, geocoder=TinyGeocoder(), bbox=bbox)
    assert info.value.kind == kind


@pytest.mark.parametrize("bbox", ["1,2,3", "a,b,c,d", "95,0,96,1"])
def test_bad_map_box(bbox):
    with pytest.raises(ExpansionError, match="map box"):
        expand("node({{bbox}});", geocoder=None, bbox=bbox)


class DownGeocoder:
    def lookup(self, text, kind="id"):
        raise GeocodeError("could not reach Nominatim at http://127.0.0.1:9/search (ConnectionError); try again later")


def test_geocoder_failure_becomes_an_expansion_error():
    with pytest.raises(ExpansionError, match="could not geocode 'Heidelberg': could not reach Nominatim") as info:
        expand("{{geocodeArea:Heidelberg}}->.a;", geocoder=DownGeocoder())
    assert info.value.kind == "nominatim" and isinstance(info.value, GeoqlError)
