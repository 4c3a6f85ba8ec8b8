"""Evaluator trees: if:, make, convert, for."""

from __future__ import annotations

import pytest

from overpassql import to_xml, to_xml_with_errors


@pytest.mark.parametrize("expr, fragment", [
    ('t["a"]=="b"', '<eval-equal>'),
    ("is_tag(\"a\")", '<eval-is-tag k="a"/>'),
    ("count_by_role(\"outer\")>1", '<eval-prop-count type="by_role" role="outer"/>'),
    ("count_members(ways)>1", '<eval-prop-count type="members" members_type="ways"/>'),
    ("!is_closed()", "<eval-not>"),
    ("length()>1?1:0", "<eval-ternary>"),
    ("number(t[\"x\"])/2<3", "<eval-divided-by>"),
])
def test_filter_evaluators(expr, fragment):
    assert fragment in to_xml(f"way(if:{expr});")


def test_make_set_props():
    xml = to_xml('make stat n=count(nodes),::id=id(),::geom=geom(),name=_.val;')
    assert '<eval-set-count from="_" type="node"/>' in xml  # Overpass' own spelling
    assert '<set-prop keytype="generic">' in xml and '<set-prop keytype="geometry">' in xml
    assert '<eval-set-key from="_" key="val"/>' in xml


def test_unknown_function_is_reported():
    _, errors = to_xml_with_errors("node(if:cunt_tags()==1);")
    assert [e.message for e in errors] == ['Function "cunt_tags" not known',
                                           'Operator "==" needs a left-hand-side argument']
