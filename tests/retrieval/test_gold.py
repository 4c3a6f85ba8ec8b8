"""Gold tags come from overpassql; they must agree with the real converter's XML."""

from __future__ import annotations

import re

import pytest

from testdata import reference_rows
from geoql.retrieval.gold import controlled_pairs, is_free_text_key, query_keys, query_tags, regex_values, tag_id

ROWS = [r for r in reference_rows("gold_reference.jsonl") if not r["stderr"].strip()][::40]
_HAS_KV = re.compile(r"<has-kv ([^>]*)/>")
_ATTR = re.compile(r'(\w+)="([^"]*)"')


def xml_filters(xml: str) -> list[dict]:
    """has-kv elements of osm3s_query --dump-xml: the converter's view of the tag filters."""
    return [dict(_ATTR.findall(m.group(1))) for m in _HAS_KV.finditer(xml)]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r['split']}{r['index']}")
def test_controlled_pairs_agree_with_converter_xml(row):
    expected = set()
    for f in xml_filters(row["xml"]):
        if f.get("modv") == "not" or "regk" in f or is_free_text_key(f.get("k", "")):
            continue
        if "v" in f and f["v"]:
            expected.add(f"{f['k']}={f['v']}")
        elif "regv" in f:
            expected.update(f"{f['k']}={v}" for v in regex_values(f["regv"]))
    assert set(controlled_pairs(row["query"])) == expected


@pytest.mark.parametrize("row", ROWS[:60], ids=lambda r: f"{r['split']}{r['index']}")
def test_keys_agree_with_converter_xml(row):
    expected = {f["k"] for f in xml_filters(row["xml"]) if "k" in f and f.get("modv") != "not"}
    assert set(query_keys(row["query"])) == expected


def test_filters_that_are_not_targets():
    query = '[out:json];node["amenity"="cafe"]["name"="Luigi"]["shop"!="bakery"][!"fee"][~"^addr"~"."]["highway"~"^(primary|secondary)$"];out;'
    tags = query_tags(query)
    assert [(t.key, t.value, t.controlled) for t in tags] == [
        ("amenity", "cafe", True), ("name", "Luigi", False), ("highway", "primary", True), ("highway", "secondary", True),
    ]
    assert controlled_pairs(query) == ["amenity=cafe", "highway=primary", "highway=secondary"]
    assert tag_id("name", "Luigi") == "name=*" and tag_id("amenity", None) == "amenity=*"


@pytest.mark.parametrize("text", ["", "not a query", "node[amenity=cafe", "\x00\x01"])
def test_broken_queries_give_what_parses(text):
    assert isinstance(controlled_pairs(text), list)
