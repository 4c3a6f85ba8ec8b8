"""Queries composed from the request alone: house-style shapes, always valid, never inventing."""

from __future__ import annotations

import pytest

import overpassql
from geoql.app.cpu.compose import compose, query_shape, request_shape
from geoql.app.cpu.faithful import problems
from geoql.app.cpu.request import analyse
from geoql.nl.frame import read_frame

# (request, place the caller passes, main tags, "of" tags, what the first composed query contains)
CASES = [
    ("benches within 100 m of a playground in Zurich", "Zurich", [("amenity=bench", 0.9)], [("leisure=playground", 0.8)],
     ['{{geocodeArea:"Zurich"}}', 'nwr["leisure"="playground"](area.searchArea)->.center',
      'node["amenity"="bench"](around.center:100)']),
    ("How many pubs are there in Dublin?", "Dublin", [("amenity=pub", 0.8)], [],
     ['{{geocodeArea:"Dublin"}}->.searchArea', 'relation["amenity"="pub"](area.searchArea)', "out count;"]),
    ("Wie viele Apotheken gibt es im aktuellen Kartenausschnitt?", None, [("amenity=pharmacy", 0.7)], [],
     ['node["amenity"="pharmacy"]({{bbox}})', "out count;"]),
    ("成都有哪些博物馆？", "成都", [("tourism=museum", 0.6)], [],
     ['{{geocodeArea:"成都"}}', 'way["tourism"="museum"](area.searchArea)', "out;>;out skel qt;"]),
    ("What major and residential roads are within 20 meters of the coordinates 49.798213, 5.522851?", None,
     [("highway=residential", 0.5)], [], ['(around:20,49.798213,5.522851)']),
    ("the ways with the IDs 613126639, 613126640 and 613126642", None, [], [],
     ["way(id:613126639,613126640,613126642);"]),
    ("nodes edited since 2018-11-01 by user HK2002", None, [], [],
     ['node(user:"HK2002")(newer:"2018-11-01T00:00:00Z")({{bbox}})']),
    ("Springs in the area with the ID 3600062504", None, [("natural=spring", 0.7)], [],
     ["area(3600062504)->.searchArea;", 'node["natural"="spring"](area.searchArea)']),
    ("ways that are cafes in the current view", None, [("amenity=cafe", 0.7)], [],
     ['(way["amenity"="cafe"]({{bbox}});)']),
]


@pytest.mark.parametrize("nl,place,what,of,parts", CASES, ids=[c[0][:24] for c in CASES])
def test_shapes(nl, place, what, of, parts):
    queries = compose(analyse(nl), read_frame(nl), place=place, what=what, of=of)
    assert queries, nl
    for part in parts:
        assert part in queries[0]
    for q in queries:
        assert not overpassql.check(q)
        assert problems(nl, q, {}) == []


def test_two_main_tags_give_two_candidates():
    nl = "cafes in Bonn"
    out = compose(analyse(nl), read_frame(nl), place="Bonn", what=[("amenity=cafe", 0.6), ("shop=coffee", 0.3)])
    assert len(out) == 2 and '"shop"="coffee"' in out[1]


def test_a_confident_qualifier_is_added():
    nl = "cafes with wheelchair access in Bonn"
    (q, *_) = compose(analyse(nl), read_frame(nl), place="Bonn", what=[("amenity=cafe", 0.6)],
                      qualifiers=[("wheelchair=yes", 0.7)])
    assert 'node["amenity"="cafe"]["wheelchair"="yes"](area.searchArea)' in q


def test_around_without_its_centre_tag_composes_nothing():
    nl = "benches within 100 m of a playground"
    assert compose(analyse(nl), read_frame(nl), place=None, what=[("amenity=bench", 0.9)]) == []


@pytest.mark.parametrize("nl", ["", "🙂🙂🙂", "مقاهي في القاهرة", "Кафе in Berlin and in Paris", "x" * 5000])
def test_any_text_gives_valid_queries_or_none(nl):
    for q in compose(analyse(nl), read_frame(nl), place=None, what=[("amenity=cafe", 0.5)]):
        assert not overpassql.check(q)


def test_shapes_agree_between_request_and_query():
    nl = "How many pubs are there in Dublin?"
    shape = request_shape(analyse(nl), read_frame(nl), "Dublin")
    assert shape.where == "place" and shape.count
    (q, *_) = compose(analyse(nl), read_frame(nl), place="Dublin", what=[("amenity=pub", 0.8)])
    assert query_shape(q) == shape.where
