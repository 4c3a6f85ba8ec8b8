"""QL serialisers and dump() round trips; the per-row compact/pretty checks against the
reference are in test_api.py."""

from __future__ import annotations

import re

import pytest

import overpassql
from testdata import reference_rows
from overpassql.ql import quote

GOLD = reference_rows("gold_reference.jsonl")


def test_dump_round_trips_canonical_gold_queries():
    canonical = [r for r in GOLD if r["compact_ql"] == r["converter_input"]]
    same = sum(overpassql.dump(overpassql.parse(r["query"], collect_errors=True)) == r["query"]
               for r in canonical)
    assert same / len(canonical) >= 0.96


@pytest.mark.parametrize("query", [
    '[out:json][timeout:25];{{geocodeArea:"Bonn"}}->.searchArea;'
    'nwr["amenity"="cafe"](area.searchArea);out center;',
    'node["shop"]({{bbox}});out;',
    '(way(uid:1)(newer:"{{date:1 day}}");node(user:"a","b"););out meta;',
    'way["highway"](if:length()>100&&t["name"]!="");out geom;',
    'relation["route"="bus"];node(r:"stop")->.s;.s out;',
    '(.a;- .b;)->.c;foreach.c->.d{.d out;}',
    'make stat n=count(nodes),name=_.val;out;',
    '[out:csv(::id,"name";false;"|")];node[~"^name"~".",i][!"fee"](50.1,7.1,50.2,7.2);out;',
    '{{user=me}}[timeout:100][bbox:{{bbox}}];node(user:{{user}});out; {{bbox=area:1}}',
    'timeline(relation,123);local ll->.x;out noids;',
])
def test_dump_parse_dump_is_stable(query):
    text = overpassql.dump(overpassql.parse(query))
    assert text == query
    assert overpassql.dump(overpassql.parse(text)) == text


@pytest.mark.parametrize("value", ['a"b', "back\\slash", "new\nline", "tab\t", "ünï"])
def test_quote_reads_back(value):
    script = overpassql.parse(f"node[{quote('k')}={quote(value)}];")
    assert script.statements[0].filters[0].value == value


def test_pretty_layout_of_groups_and_blocks():
    text = '(way["a"]["b"](1,2,3,4);complete{node(w);});for(t["x"]){make s n=1,m=2;}'
    assert overpassql.to_ql(text, pretty=True) == "\n".join([
        "(", "  way", '    ["a"]', '    ["b"]', "    (1,2,3,4);", "  complete{", "    node(w);",
        "}", ");", 'for(t[""x""]){', "  make s", "    n=1,", "    m=2;", "}"])


def test_pretty_keeps_the_query_on_all_gold_queries():
    # pretty() is what the demo shows and the user edits: it must read back as the same query.
    placeholder = re.compile(r"{{.*?}}")
    for row in GOLD:
        query = row["query"]
        script = overpassql.parse(query, collect_errors=True)
        shown = overpassql.pretty(query)
        again = overpassql.parse(shown, collect_errors=True)
        assert overpassql.dump(again) == overpassql.dump(script), query
        assert bool(again.errors) == bool(script.errors), query
        assert placeholder.findall(shown) == placeholder.findall(query) or script.errors, query


@pytest.mark.parametrize("query, expected", [
    ('node["shop"]({{bbox}});out;', ['node["shop"]({{bbox}});', "out;"]),
    ('(node["amenity"="cafe"]["outdoor_seating"="yes"]["wheelchair"="yes"]["internet_access"="wlan"]({{bbox}}););out;',
     ["(", "  node", '    ["amenity"="cafe"]', '    ["outdoor_seating"="yes"]', '    ["wheelchair"="yes"]',
      '    ["internet_access"="wlan"]', "    ({{bbox}});", ");", "out;"]),
    ('node(1);out skel qt;', ["node(1);", "out skel qt;"]),
    ('[out:json][timeout:25];{{geocodeArea:"Bonn"}}->.a;nw["amenity"="cafe"]["wifi"](area.a);out center;',
     ["[out:json][timeout:25];", '{{geocodeArea:"Bonn"}}->.a;', 'nw["amenity"="cafe"]["wifi"](area.a);', "out center;"]),
    ('{{user=me}}[timeout:100];node(user:{{user}});out; {{bbox=area:1}}',
     ["{{user=me}}", "[timeout:100];", "node(user:{{user}});", "out;", "{{bbox=area:1}}"]),
    ('if(count(nodes)>1){node(1);out;}', ["if (count(nodes)>1)", "{", "  node(1);", "  out;", "}"]),
    ('for(t["highway"]){make stat value=_.val,n=count(ways);out;}',
     ['for(t["highway"]){', "  make stat", "    value=_.val,", "    n=count(ways);", "  out;", "}"]),
])
def test_pretty_layout_in_the_query_s_own_spelling(query, expected):
    assert overpassql.pretty(query).splitlines() == expected


@pytest.mark.parametrize("query", ["nod(1);out;", "node[amenity=cafe", "", "   "])
def test_pretty_leaves_a_query_that_does_not_parse_as_it_is(query):
    assert overpassql.pretty(query) == query
