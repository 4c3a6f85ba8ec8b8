"""Entry points: tag_filters, the converter cache, type checks."""

from __future__ import annotations

import pytest

import overpassql
from overpassql import ast as A


def test_tag_filters_in_source_order_without_if_tags():
    tags = overpassql.tag_filters(
        'nwr["amenity"="cafe"][!"fee"]["name"~"^A",i][~"^addr:.*"~"."](if:t["x"]=="y");'
        '(way["highway"!="path"];);')
    assert [(t.key, t.value, t.op, t.key_regex, t.case_insensitive) for t in tags] == [
        ("amenity", "cafe", "=", False, False), ("fee", "", "not_exists", False, False),
        ("name", "^A", "~", False, True), ("^addr:.*", ".", "~", True, False),
        ("highway", "path", "!=", False, False)]


def test_tag_filters_accepts_a_script_and_broken_text():
    script = overpassql.parse('node["a"];')
    assert overpassql.tag_filters(script)[0].key == "a"
    # a missing "]": the filter is still read, as Overpass does
    assert overpassql.tag_filters('node["a"="b"') == [A.Tag("a", "b", "=", line=1)]


def test_to_ql_compact_and_pretty():
    text = 'node[amenity=cafe](1,2,3,4);out geom qt;'
    assert overpassql.to_ql(text) == 'node["amenity"="cafe"](1,2,3,4);out qt geom;'
    assert overpassql.to_ql(text, pretty=True).startswith("node")


def test_repeated_conversions_are_cached():
    from overpassql.api import _convert_cached
    text = 'node["cache-test"="y"];out;'
    first = overpassql.to_xml(text)
    hits = _convert_cached.cache_info().hits
    assert overpassql.to_xml(text) == first
    assert _convert_cached.cache_info().hits == hits + 1


@pytest.mark.parametrize("fn", [overpassql.to_xml, overpassql.to_ql, overpassql.tag_filters])
def test_non_strings_are_rejected_clearly(fn):
    with pytest.raises(TypeError):
        fn(42)
