"""Lowering: which statements Overpass builds from a query."""

from __future__ import annotations

import pytest

import overpassql
from overpassql.lower import format_double, lower, poly_bounds


def _tags(text: str) -> list[str]:
    root, _ = lower(overpassql.parse(text, collect_errors=True))
    return [child.tag for child in root.children]


@pytest.mark.parametrize("text, tags", [
    ("node(1);", ["id-query"]),
    ("area(1);", ["query"]),
    ("node(around:5,1,2);", ["around"]),
    ("way(around:5,1,2);", ["query"]),
    ("node(w);", ["recurse"]),
    ("node(poly:\"1 2 3 4 5 6\");", ["polygon-query"]),
    ("node(area.a);", ["query"]),
    ("._;", ["item"]),
    (".a >;", ["recurse"]),
])
def test_single_clause_queries(text, tags):
    assert _tags(text) == tags


def test_tags_and_sets_come_before_parenthesised_clauses():
    root, _ = lower(overpassql.parse('way(1,2,3,4)["a"].s(if:id()>1);'))
    assert [c.tag for c in root.children[0].children] == ["has-kv", "item", "bbox-query",
                                                          "filter"]


@pytest.mark.parametrize("text, expected", [("200.0", "200"), ("0.5", "0.5"),
                                            ("52.11267263352193", "52.112672633522"),
                                            ("2960000", "2960000"), ("x", "x")])
def test_format_double(text, expected):
    assert format_double(text) == expected


def test_poly_bounds_are_reread_as_numbers():
    assert poly_bounds("1 2 3 -58..5") == "1 2  3 -58"
