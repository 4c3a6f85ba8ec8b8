"""Composition (geoql.app.compose): requests -> the query they say, or None; and the gate in compile()."""

from __future__ import annotations

import json
from pathlib import Path

import overpassql
import pytest

from geoql.app import Compiler
from geoql.app.compose import compose, prefer_composed, same_facts
from geoql.app.decoding import Candidate
from geoql.nl.lexicon import Lexicon
from geoql.nl.request import Knowledge, read_request

from fakes.backends import FixedBackend as _Fixed

CASES = [json.loads(line) for line in (Path(__file__).parent / "compose_cases.jsonl").read_text(encoding="utf-8").splitlines()
         if line.strip()]
KNOWLEDGE = Knowledge(lexicon=Lexicon.default())


@pytest.mark.parametrize("case", CASES, ids=[c["request"] for c in CASES])
def test_composed_query(case):
    # None: the request says something composition does not build, or a word it cannot account for
    assert compose(read_request(case["request"], KNOWLEDGE)) == case["query"]


@pytest.mark.parametrize("case", [c for c in CASES if c["query"]], ids=lambda c: c["request"])
def test_composed_queries_are_valid(case):
    script = overpassql.parse(case["query"])
    assert not script.errors and overpassql.dump(script) == case["query"]


def test_without_a_lexicon_nothing_is_composed():
    # no tags, no query: the reading alone does not know what "museums" are in OSM
    assert compose(read_request("museums in Dresden")) is None
    assert compose(None) is None


@pytest.mark.parametrize("a, b, same", [
    ('{{geocodeArea:"Bonn"}}->.a;(node["amenity"="cafe"](area.a);way["amenity"="cafe"](area.a););out;',
     'area["name"="Bonn"]->.s;nwr["amenity"="cafe"](area.s);out;', True),
    ('{{geocodeArea:"Bonn"}}->.a;nwr["amenity"="cafe"](area.a);out;',
     '{{geocodeArea:"Köln"}}->.a;nwr["amenity"="cafe"](area.a);out;', False),
    ('{{geocodeArea:"Bonn"}}->.a;nwr["amenity"="cafe"](area.a);out;',
     '{{geocodeArea:"Bonn"}}->.a;nwr["amenity"="cafe"]["maxspeed"](area.a);out;', False),
    ('{{geocodeArea:"Bonn"}}->.a;nwr["amenity"="cafe"](area.a);out;',
     '{{geocodeArea:"Bonn"}}->.a;nwr["amenity"="cafe"](area.a);out count;', False),
    ('{{geocodeArea:"Bonn"}}->.a;nwr["amenity"="cafe"](area.a);out;',
     '{{geocodeArea:"Bonn"}}->.a;nwr["amenity"="cafe"](area.a);out center;', True),
    ('{{geocodeArea:"Bonn"}}->.a;nwr["amenity"="cafe"](area.a);out geom;',
     '{{geocodeArea:"Bonn"}}->.a;nwr["amenity"="cafe"](area.a);out;', False),
    ('nwr["amenity"="cafe"];out;', 'nwr[broken', False),
    # a limit nobody asked for prints two cafés of all of them
    ('{{geocodeArea:"Bonn"}}->.a;nwr["amenity"="cafe"](area.a);out;',
     '[timeout:250];{{geocodeArea:"Bonn"}}->.a;nwr["amenity"="cafe"](area.a);out 2;', False),
    # tags without geometry where the composed query shows the element: not the same answer
    ('node(123456789);out;', 'node(123456789);out qt;node(123456789);out tags qt;', False),
    # around a named point is not around the map's centre; the point's spelling in quotes or not is
    ('nwr["amenity"="cafe"](around:500,{{geocodeCoords:"Ayasofya"}});out;', 'nwr["amenity"="cafe"](around:500,{{center}});out;', False),
    ('nwr["amenity"="cafe"](around:500,{{geocodeCoords:"Ayasofya"}});out;', 'nwr["amenity"="cafe"](around:500,{{geocodeCoords:Ayasofya}});out;', True),
])
def test_same_facts(a, b, same):
    assert same_facts(a, b) is same


def test_gate_a_fully_read_request_is_answered_by_its_composition():
    comp = Compiler(_Fixed('{{geocodeArea:"Dresden"}}->.a;nwr["shop"="bakery"](area.a);out;')).compile("museums in Dresden")
    assert comp.request.features[0].tags  # compile() reads with the lexicon, whatever the backend
    assert comp.valid and comp.query == compose(read_request("museums in Dresden", KNOWLEDGE))
    assert comp.candidates[0].source == "composed" and comp.candidates[1].source == "backend"
    assert comp.as_dict()["candidates"][0]["source"] == "composed"


def test_gate_keeps_a_pick_with_the_same_facts():
    pick = '[out:json];area["name"="Dresden"]->.a;nwr["tourism"="museum"](area.a);out center;'
    comp = Compiler(_Fixed(pick)).compile("museums in Dresden")
    assert comp.query == pick and [c.source for c in comp.candidates] == ["backend"]


def test_gate_leaves_what_is_not_fully_read_to_the_backend():
    pick = 'node(123456);out;'
    comp = Compiler(_Fixed(pick)).compile("node 123456 edited by bob")
    assert comp.query == pick and [c.source for c in comp.candidates] == ["backend"]


def test_prefer_composed_without_a_reading_keeps_the_pick():
    best = Candidate("node[a];out;", True)
    assert prefer_composed(None, [best], best) is best


def test_a_statement_with_no_tag_is_a_fact_of_its_own():
    # a pick that selects every node of the area says more than the composed query ("成都的电影院")
    composed = '[out:json];{{geocodeArea:"成都"}}->.a;(node["amenity"="cinema"](area.a);way["amenity"="cinema"](area.a););out;'
    pick = '[out:json];{{geocodeArea:"成都"}}->.a;(node(area.a);way["amenity"="cinema"](area.a););out;'
    assert not same_facts(composed, pick) and same_facts(composed, composed)


def test_which_side_of_an_around_is_a_fact():
    # playgrounds near schools is not schools near playgrounds
    composed = 'nwr["amenity"="school"]->.c;(node["leisure"="playground"](around.c:300););out;'
    pick = 'nwr["leisure"="playground"]->.c;(node["amenity"="school"](around.c:300););out;'
    assert not same_facts(composed, pick)
