"""Queries composed from the request alone: house-style shapes, always valid, never inventing."""

from __future__ import annotations

import pytest

import overpassql
from geoql.app.cpu.compose import compose, query_shape, request_shape
from geoql.app.cpu.faithful import problems
from geoql.nl import read_request

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
    # A uid's edits: the dataset's one shape for them; a single day is a changed window over it.
    ("What ways and nodes with the UID 10019250 were changed on July 15, 2019?", None, [], [],
     ['[out:xml][timeout:30];(way(uid:10019250)(changed:"2019-07-15T00:00:00Z","2019-07-15T23:59:59Z");'
      'node(uid:10019250)(changed:"2019-07-15T00:00:00Z","2019-07-15T23:59:59Z"););out meta;>;out meta qt;']),
    ("Welche Änderungen hat der Benutzer mit der ID 8710057 am 13. November 2018 vorgenommen?", None, [], [],
     ['(way(uid:8710057)(changed:"2018-11-13T00:00:00Z","2018-11-13T23:59:59Z");node(uid:8710057)']),
    ("Objekte der UID 8710057, die seit dem 1. Juni 2019 geändert wurden", None, [], [],
     ['way(uid:8710057)(newer:"2019-06-01T00:00:00Z")']),
]



def _read(nl: str):
    """What compose() takes: the English patterns' reading (without the frame's merge) and the request."""
    request = read_request(nl)
    return request.english, request


@pytest.mark.parametrize("nl,place,what,of,parts", CASES, ids=[c[0][:24] for c in CASES])
def test_shapes(nl, place, what, of, parts):
    queries = compose(*_read(nl), place=place, what=what, of=of)
    assert queries, nl
    for part in parts:
        assert part in queries[0]
    for q in queries:
        assert not overpassql.check(q)
        assert problems(read_request(nl), q, {}) == []


def test_a_uid_is_no_element_id():
    nl = "Welche Wege und Knoten mit der UID 10019250 wurden am 15. Juli 2019 geändert?"
    assert request_shape(*_read(nl), None).where == "view"
    assert "way(10019250)" not in " ".join(compose(*_read(nl), place=None, what=[]))


def test_a_uids_edits_are_also_offered_without_the_retrievers_tag():
    nl = "Welche Wege und Knoten mit der UID 8794071 wurden am 8. Juli 2019 geändert?"
    out = compose(*_read(nl), place=None, what=[("climbing:grade:uiaa=8", 0.4)])
    assert len(out) == 2 and '"climbing:grade:uiaa"="8"' in out[0]
    assert out[1].startswith("[out:xml][timeout:30];(way(uid:8794071)(changed:")


@pytest.mark.parametrize("nl,place", [
    ("What OpenStreetMap features are in Kharkiv Oblast?", "Kharkiv Oblast"),
    ("Entities in Житомирська область", "Житомирська область"),
    ("Welche OpenStreetMap-Elemente gibt es in der Oblast Schytomyr?", "Oblast Schytomyr"),
    ("哈尔科夫州有哪些OpenStreetMap要素？", "哈尔科夫州"),
])
def test_every_element_of_a_place_is_also_offered_without_a_tag(nl, place):
    out = compose(*_read(nl), place=place, what=[("map_source=OpenStreetMap", 0.3)])
    assert len(out) == 2 and out[1].endswith("(node(area.searchArea);way(area.searchArea);relation(area.searchArea););"
                                             "out;>;out skel qt;")


@pytest.mark.parametrize("nl,place", [("cafes in Bonn", "Bonn"), ("ボンのカフェ", "ボン")])
def test_a_request_naming_a_kind_gets_no_query_without_tags(nl, place):
    out = compose(*_read(nl), place=place, what=[("amenity=cafe", 0.6)])
    assert len(out) == 1 and '"amenity"="cafe"' in out[0]


def test_two_main_tags_give_two_candidates():
    nl = "cafes in Bonn"
    out = compose(*_read(nl), place="Bonn", what=[("amenity=cafe", 0.6), ("shop=coffee", 0.3)])
    assert len(out) == 2 and '"shop"="coffee"' in out[1]


def test_a_confident_qualifier_is_added():
    nl = "cafes with wheelchair access in Bonn"
    (q, *_) = compose(*_read(nl), place="Bonn", what=[("amenity=cafe", 0.6)],
                      qualifiers=[("wheelchair=yes", 0.7)])
    assert 'node["amenity"="cafe"]["wheelchair"="yes"](area.searchArea)' in q


def test_around_without_its_centre_tag_composes_nothing():
    nl = "benches within 100 m of a playground"
    assert compose(*_read(nl), place=None, what=[("amenity=bench", 0.9)]) == []


@pytest.mark.parametrize("nl", ["", "🙂🙂🙂", "مقاهي في القاهرة", "Кафе in Berlin and in Paris", "x" * 5000])
def test_any_text_gives_valid_queries_or_none(nl):
    for q in compose(*_read(nl), place=None, what=[("amenity=cafe", 0.5)]):
        assert not overpassql.check(q)


def test_shapes_agree_between_request_and_query():
    nl = "How many pubs are there in Dublin?"
    shape = request_shape(*_read(nl), "Dublin")
    assert shape.where == "place" and shape.count
    (q, *_) = compose(*_read(nl), place="Dublin", what=[("amenity=pub", 0.8)])
    assert query_shape(q) == shape.where
