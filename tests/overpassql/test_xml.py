"""XML serialiser; the per-row reference checks are in test_api.py."""

from __future__ import annotations

from testdata import reference_rows
from overpassql import to_xml, to_xml_with_errors
from overpassql.lower import Element
from overpassql.xml import element_to_xml, escape

CONFORMANCE = reference_rows("conformance.jsonl")


def test_an_aborted_parse_prints_nothing():
    xml, errors = to_xml_with_errors('node;for(t"k"]){out;}')
    assert xml == ""
    assert [e.message for e in errors][-2:] == [
        'Token "t" has not been recognized as statement', "')' expected - ']' found."]


def test_conformance_rate_meets_the_bar():
    exact = sum(to_xml(r["converter_input"]) == r["xml"] for r in CONFORMANCE)
    assert exact / len(CONFORMANCE) >= 0.995


def test_escaping_and_empty_elements():
    assert escape('a&b"<c>\t') == "a&amp;b&quot;&lt;c&gt;&#x09;"
    tree = Element("osm-script", [("timeout", "5")], [Element("union", [("into", "_")])])
    assert element_to_xml(tree) == '<osm-script timeout="5">\n  <union into="_"/>\n</osm-script>'
    assert to_xml("") == "<osm-script/>"
