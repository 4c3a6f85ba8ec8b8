"""AST: walking and editing queries through the tree."""

from __future__ import annotations

import pytest

import overpassql
from overpassql import ast as A
from testdata import reference_rows

GOLD = reference_rows("gold_reference.jsonl")


def test_walk_visits_every_node_in_source_order():
    script = overpassql.parse('(node["a"](1,2,3,4);way["b"];);out;')
    kinds = [type(n).__name__ for n in A.walk(script)]
    assert kinds == ["Script", "Union_", "Query", "Tag", "BBox", "Query", "Tag", "Out"]


def test_edit_through_the_ast_and_dump():
    script = overpassql.parse('{{geocodeArea:"Bonn"}}->.a;nwr["amenity"="cafe"](area.a);'
                              'node(around.a:100)(newer:"{{date:1 day}}");out center;')
    for node in A.walk(script):
        if isinstance(node, A.Placeholder):
            node.text = '{{geocodeArea:"Köln"}}'
        elif isinstance(node, A.Tag) and node.key == "amenity":
            node.value = "pub"
        elif isinstance(node, A.Around):
            node.radius = "250"
        elif isinstance(node, A.Newer):
            node.date = "{{date:7 days}}"
        elif isinstance(node, A.Query) and node.type == "nwr":
            node.type = "way"
        elif isinstance(node, A.Out):
            node.options = ["geom"]
    assert overpassql.dump(script) == (
        '{{geocodeArea:"Köln"}}->.a;way["amenity"="pub"](area.a);'
        'node(around.a:250)(newer:"{{date:7 days}}");out geom;')


def test_nodes_built_by_hand_dump():
    script = A.Script(settings=[A.Setting("out", "json")], statements=[
        A.Query("node", [A.Tag("shop", "bakery", "="), A.PlaceholderFilter("{{bbox}}")]),
        A.Out(["center"])])
    assert overpassql.dump(script) == '[out:json];node["shop"="bakery"]({{bbox}});out center;'


@pytest.mark.parametrize("row", GOLD, ids=[f"{r['split']}-{r['index']}" for r in GOLD])
def test_clone_copies_every_gold_tree(row):
    script = overpassql.parser.Parser(row["query"]).parse()
    copy = A.clone(script)
    assert copy == script
    # no node nor list is shared (diagnostics are immutable and may be): editing the copy everywhere
    # leaves the original as it was
    nodes = lambda tree: {id(n) for n in A.walk(tree) if not isinstance(n, overpassql.Diagnostic)}  # noqa: E731
    assert not nodes(copy) & nodes(script)
    for node in (n for n in A.walk(copy) if not isinstance(n, overpassql.Diagnostic)):
        for name, value in vars(node).items():
            if isinstance(value, list):
                value.append("x")
            elif isinstance(value, str):
                setattr(node, name, value + "x")
    assert script == overpassql.parser.Parser(row["query"]).parse()
