"""geoql.eval.license: every part of an answer, licensed by the request or listed.

The rows are cases: a request, a query, the tag evidence a backend passes (if any) and the unlicensed
parts the check must list (kind, text), every kind in several languages.
"""

from __future__ import annotations

import pytest

from geoql.eval.dataset import load_split
from geoql.eval.faithfulness import train_place_aliases
from geoql.eval.license import CORE_KINDS, KINDS, Part, TagEvidence, measure, unlicensed_parts
from geoql.nl import read_request
from geoql.nl.request import FeatureMatch, Knowledge
from testdata import data_dir

AREA = '{{geocodeArea:"Bonn"}}->.searchArea;'
CAFES = AREA + 'nwr["amenity"="cafe"](area.searchArea);out;'

ROWS = [
    # ---- tag filters: licensed by the request's words, its features' tags or the backend's evidence
    ("en", "cafes in Bonn", CAFES, None, []),
    ("en", "cafes in Bonn", AREA + 'nwr["amenity"="cafe"]["maxspeed"](area.searchArea);out;', None,
     [("tag", '["maxspeed"]')]),
    ("en", "hospitals in Munich", '{{geocodeArea:"Munich"}}->.a;node["amenity"="hospital"]["admin_level"](area.a);out;',
     None, [("tag", '["admin_level"]')]),
    ("en", "wheelchair accessible toilets in Bonn", AREA + 'node["amenity"="toilets"]["wheelchair"="yes"](area.searchArea);out;',
     None, []),
    ("en", "benches without a backrest in Bonn", AREA + 'node["amenity"="bench"][!"backrest"](area.searchArea);out;', None, []),
    # an exclusion or a subkey of a licensed key refines the asked feature; of another key it is a leftover
    ("en", "roads in Bonn", AREA + 'way["highway"]["highway"!="platform"](area.searchArea);out;', {"highway"}, []),
    ("en", "roads in Bonn", AREA + 'way["highway"]["access"!="private"](area.searchArea);out;', {"highway"},
     [("tag", '["access"!="private"]')]),
    ("en", "residential roads without a speed limit in Bonn", AREA + 'way["highway"="residential"][!"maxspeed"]'
     '[!"maxspeed:forward"](area.searchArea);out;', {"highway=residential", "maxspeed"}, []),
    ("en", "primary or secondary roads in Bonn", AREA + 'way["highway"~"primary|secondary"](area.searchArea);out;', None, []),
    ("en", "bars and pubs in Bonn", AREA + '(nwr["amenity"="bar"](area.searchArea);nwr["amenity"="pub"](area.searchArea);'
     'nwr["amenity"="restaurant"](area.searchArea););out;', None, [("tag", '["amenity"="restaurant"]')]),
    ("en", "mountain peaks in Austria", '{{geocodeArea:"Austria"}}->.a;node["natural"="peak"](area.a);out;',
     {"natural=peak"}, []),
    ("de", "Welche Apotheken gibt es in Stuttgart?", '{{geocodeArea:"Stuttgart"}}->.a;nwr["amenity"="pharmacy"](area.a);out;', None,
     [("tag", '["amenity"="pharmacy"]')]),
    ("de", "Welche Apotheken gibt es in Stuttgart?", '{{geocodeArea:"Stuttgart"}}->.a;nwr["amenity"="pharmacy"](area.a);out;',
     {"amenity=pharmacy"}, []),
    ("de", "Welche Apotheken gibt es in Stuttgart?", '{{geocodeArea:"Stuttgart"}}->.a;nwr["amenity"="pharmacy"]["wheelchair"="yes"](area.a);out;',
     {"amenity=pharmacy"}, [("tag", '["wheelchair"="yes"]')]),
    ("fr", "cafés à Lyon", '{{geocodeArea:"Lyon"}}->.a;nwr["amenity"="cafe"](area.a);out;', None, []),
    ("zh", "成都的博物馆", '{{geocodeArea:"成都"}}->.a;nwr["tourism"="museum"](area.a);out;', {"tourism=museum"}, []),
    ("zh", "成都的博物馆", '{{geocodeArea:"成都"}}->.a;nwr["tourism"="museum"]["fee"="no"](area.a);out;', {"tourism=museum"},
     [("tag", '["fee"="no"]')]),
    ("ja", "東京のカフェ", '{{geocodeArea:"東京"}}->.a;nwr["amenity"="cafe"](area.a);out;', {"amenity=cafe"}, []),
    ("ru", "Кафе в Москве", '{{geocodeArea:"Москва"}}->.a;nwr["amenity"="cafe"]["cuisine"="pizza"](area.a);out;',
     {"amenity=cafe"}, [("tag", '["cuisine"="pizza"]')]),
    # ---- areas: licensed by the request's places (one letter off, learned spellings)
    ("en", "Starbucks in Seoul", '{{geocodeArea:"Paris"}}->.a;nwr["brand"="Starbucks"](area.a);out;', None,
     [("area", '{{geocodeArea:"Paris"}}')]),
    ("en", "cafes in the current view", '{{geocodeArea:"Bas-Rhin"}}->.a;nwr["amenity"="cafe"](area.a);out;', None,
     [("area", '{{geocodeArea:"Bas-Rhin"}}')]),
    ("en", "cafes in Bonn", 'area["name"="Köln"]->.a;nwr["amenity"="cafe"](area.a);out;', None,
     [("area", '["name"="Köln"]')]),
    ("en", "cafes in area 3600062422", 'nwr["amenity"="cafe"](area:3600062422);out;', None, []),
    ("en", "cafes in area 3600062422", 'nwr["amenity"="cafe"](area:3600062423);out;', None, [("area", "area(3600062423)")]),
    ("en", "cafes in Vienna", '{{geocodeArea:"Wien"}}->.a;nwr["amenity"="cafe"](area.a);out;', None, []),
    ("ru", "Кафе в Москве", '{{geocodeArea:"Москва"}}->.a;nwr["amenity"="cafe"](area.a);out;', {"amenity=cafe"}, []),
    ("de", "Cafés in Bonn", '{{geocodeArea:"Köln"}}->.a;nwr["amenity"="cafe"](area.a);out;', None,
     [("area", '{{geocodeArea:"Köln"}}')]),
    # ---- arounds: radius and centre
    ("en", "toilets within 300 m of the Eiffel Tower",
     'node["amenity"="toilets"](around:300,{{geocodeCoords:"Eiffel Tower"}});out;', None, []),
    ("en", "toilets within 300 m of the Eiffel Tower", 'node["amenity"="toilets"](around:500,48.858,2.294);out;', None,
     [("around", "(around:500)"), ("around", "(around:…,48.858,2.294)")]),
    ("en", "hospitals within 5 km of Munich central station",
     'node["amenity"="hospital"](around:5000,{{geocodeCoords:"Munich central station"}});out;', None, []),
    ("de", "Bänke im Umkreis von 100 m um einen Spielplatz", 'node["leisure"="playground"]({{bbox}})->.c;'
     'node["amenity"="bench"](around.c:100);out;', {"amenity=bench", "leisure=playground"}, []),
    ("de", "Bänke im Umkreis von 100 m um einen Spielplatz", 'node["leisure"="playground"]({{bbox}})->.c;'
     'node["amenity"="bench"](around.c:500);out;', {"amenity=bench", "leisure=playground"}, [("around", "(around:500)")]),
    ("fr", "cafés à moins de 2 km de la gare de Lyon", 'node["amenity"="cafe"](around:2000,{{geocodeCoords:"Gare de Lyon"}});out;',
     None, []),
    # ---- set names: the house's, or words of the request or the query
    ("en", "Starbucks in Seoul", '{{geocodeArea:"Seoul"}}->.paris;nwr["brand"="Starbucks"](area.paris);out;', None,
     [("set", ".paris")]),
    ("en", "cafes in Bonn", '{{geocodeArea:"Bonn"}}->.boundaryarea;nwr["amenity"="cafe"](area.boundaryarea)->.cafes;.cafes out;',
     None, []),
    ("ko", "서울의 카페", '{{geocodeArea:"서울"}}->.paris;nwr["amenity"="cafe"](area.paris);out;', {"amenity=cafe"},
     [("set", ".paris")]),
    ("de", "Schulen in Bonn", AREA + 'nwr["amenity"="school"](area.searchArea)->.schools;.schools out;', {"amenity=school"}, []),
    ("en", "municipalities of Bonn", AREA + 'rel["admin_level"="8"](area.searchArea)->.muni;.muni out;', {"admin_level=8"}, []),
    # ---- settings: the house's; an odd value only when asked for
    ("en", "cafes in Bonn", "[out:json][timeout:25];" + CAFES, None, []),
    ("en", "cafes in Bonn", "[out:json][timeout:8000];" + CAFES, None, [("setting", "[timeout:8000]")]),
    ("en", "cafes in Bonn with a timeout of 8000 seconds", "[timeout:8000];" + CAFES, None, []),
    ("en", "cafes in Bonn", "[maxsize:2000000000];" + CAFES, None, [("setting", "[maxsize:2000000000]")]),
    ("de", "Cafés in Bonn", "[out:xml][timeout:900];" + CAFES, None, []),
    # ---- outputs that change the answer: a count, a table, ids; not out meta / geom / center
    ("en", "how many cafes in Bonn", AREA + 'nwr["amenity"="cafe"](area.searchArea);out count;', None, []),
    ("en", "cafes in Bonn", AREA + 'nwr["amenity"="cafe"](area.searchArea);out count;', None, [("output", "out count")]),
    ("de", "Wie viele Cafés gibt es in Bonn?", AREA + 'nwr["amenity"="cafe"](area.searchArea);out count;', None, []),
    ("ja", "ボンのカフェはいくつありますか", '{{geocodeArea:"ボン"}}->.a;nwr["amenity"="cafe"](area.a);out count;',
     {"amenity=cafe"}, []),
    ("en", "cafes in Bonn", "[out:csv(name)];" + CAFES, None, [("output", "[out:csv]")]),
    ("en", "cafes in Bonn as a table", "[out:csv(name)];" + CAFES, None, []),
    ("en", "cafes in Bonn", AREA + 'nwr["amenity"="cafe"](area.searchArea);out ids;', None, [("output", "out ids")]),
    ("en", "ids of cafes in Bonn", AREA + 'nwr["amenity"="cafe"](area.searchArea);out ids;', None, []),
    ("en", "cafes in Bonn", AREA + 'nwr["amenity"="cafe"](area.searchArea);out meta;', None, []),
    ("en", "cafes in Bonn", AREA + 'nwr["amenity"="cafe"](area.searchArea);out center;', None, []),
    # ---- names, ids, users, dates, numbers (today's constants, folded in)
    ("en", "McDonald's in Paris", '{{geocodeArea:"Paris"}}->.a;nwr["name"="Burger King"](area.a);out;', None,
     [("name", '["name"="Burger King"]')]),
    ("en", "Shops named Vögele in the Netherlands", '{{geocodeArea:"Netherlands"}}->.a;nwr["shop"]["name"="Vögele"](area.a);out;',
     None, []),
    ("en", "ways with the ids 1, 2", "way(id:1,3);out;", None, [("id", "way(3)")]),
    ("zh", "ID为1和2的路径", "way(id:1,2);out;", None, []),
    ("en", "ways edited by user Alice", 'way(user:"Bob");out;', None, [("user", '(user:"Bob")')]),
    ("en", "nodes changed by uid 42", "node(uid:43);out;", None, [("user", "(uid:43)")]),
    ("en", "ways changed since 2019", 'way(newer:"2018-01-01T00:00:00Z")({{bbox}});out;', None,
     [("date", '(newer:"2018-01-01T00:00:00Z")')]),
    ("de", "Wege, die seit 2019 geändert wurden", 'way(newer:"2019-01-01T00:00:00Z")({{bbox}});out;', None, []),
    # a limit prints fewer elements: only the request's number licenses it
    ("en", "cafes in Bonn", AREA + 'nwr["amenity"="cafe"](area.searchArea);out 2;', None, [("number", "2 (out 2)")]),
    ("en", "10 cafes in Bonn", AREA + 'nwr["amenity"="cafe"](area.searchArea);out 10;', None, []),
    # the attribute words license their key in any language; a place in its dictionary form is the place
    ("pt", "edifícios sem número de porta em braga", '{{geocodeArea:"braga"}}->.a;nwr["building"][!"addr:housenumber"](area.a);out;',
     {"building"}, []),
    ("pl", "drogi bez oświetlenia w lublinie", '{{geocodeArea:"lublin"}}->.a;nwr["highway"]["lit"="no"](area.a);out;',
     {"highway"}, []),
    ("en", "cafes in the current view", 'node["amenity"="cafe"](50.1,7.0,50.2,7.1);out;', None,
     [("number", "50.1 (bbox)"), ("number", "7.0 (bbox)"), ("number", "50.2 (bbox)"), ("number", "7.1 (bbox)")]),
]


@pytest.mark.parametrize("lang, nl, query, evidence, expected", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_unlicensed_parts(lang, nl, query, evidence, expected):
    request = read_request(nl)
    aliases = {"Wien": {"vienna"}}
    found = unlicensed_parts(request, query, aliases=aliases, evidence=TagEvidence(frozenset(evidence or ())))
    assert [(p.kind, p.text) for p in found] == expected
    assert all(p.kind in KINDS and p.why for p in found)


def test_a_part_says_why():
    [part] = unlicensed_parts("Starbucks in Seoul", '{{geocodeArea:"Paris"}}->.a;nwr(area.a);out;')
    assert part == Part("area", '{{geocodeArea:"Paris"}}', "the request names no place 'Paris'")


def test_evidence_is_the_hits_above_the_bar_and_the_lexicon_ties():
    request = read_request("peaks in Austria")
    hits = [{"tag": "natural=peak", "score": 0.45}, {"tag": "mountain_pass=yes", "score": 0.19}]
    ev = TagEvidence.of(request, hits=hits, word_tags={"peak": {"ele": 0.25, "highway=motorway": 0.1}})
    assert ev.tags == {"natural=peak", "ele"}
    assert TagEvidence.of(request, hits=hits, min_hit=0.1).tags == {"natural=peak", "mountain_pass=yes"}
    assert TagEvidence.of(None, word_tags={"peak": {"ele": 1.0}}).tags == frozenset()


def test_the_lexicon_of_the_reading_licenses_its_tags():
    """A feature's tags (``Knowledge.lexicon``) license them, the negated ones too ("without a name")."""

    class Lexicon:
        def lookup(self, text, lang, *, opening=True, prefer=frozenset()):
            table = {"Tankstellen": ("amenity=fuel",), "Namen": ("name",)}
            return [FeatureMatch((0, len(text)), table[text], 0.9)] if text in table else []

        def known_words(self, text, lang):
            return 0

        def surface_words(self, lang):
            return frozenset({"tankstellen", "namen"})

    query = '{{geocodeArea:"Stuttgart"}}->.a;nwr["amenity"="fuel"](area.a);out;'
    assert [p.text for p in unlicensed_parts(read_request("Tankstellen in Stuttgart"), query)] == ['["amenity"="fuel"]']
    request = read_request("Tankstellen in Stuttgart", Knowledge(lexicon=Lexicon()))
    assert unlicensed_parts(request, query) == []


@pytest.mark.parametrize("query", ["", "   ", "not a query ((", 'node["amenity"="cafe"', None])
def test_bad_queries_give_what_they_have_never_an_error(query):
    assert isinstance(unlicensed_parts("cafes in Bonn", query), list)


@pytest.mark.parametrize("nl", ["", "🏛️🏛️", "x" * 10000, None])
def test_bad_requests_license_nothing_never_an_error(nl):
    found = unlicensed_parts(nl, CAFES)
    assert {p.kind for p in found} <= {"area", "tag", "set"}


def test_the_dev_gold_rate_by_the_request_alone():
    """OverpassNL dev's own gold, judged by its requests' words alone (no backend's tag evidence)."""
    dev = load_split("dev", data_dir())
    aliases = train_place_aliases(data_dir())
    report = measure([e.nl for e in dev], [e.query for e in dev], aliases=aliases)
    assert report.total == 1000
    assert 0.25 <= report.share(report.with_any) <= 0.6
    assert report.by_kind["output"] >= 80  # the gold prints CSV tables nobody asked for (9 % of dev)
    assert report.with_core <= report.with_any
    without = measure([e.nl for e in dev], [e.query for e in dev])
    assert without.by_kind["area"] > report.by_kind["area"]  # learned spellings license places
    figures = report.as_dict()
    assert set(figures) == {"n", "any", "core", *KINDS} and figures["n"] == 1000
    text = report.format()
    assert "[out:csv]" in text and all(kind in text for kind in CORE_KINDS)
