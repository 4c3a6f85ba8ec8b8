"""replace_turbo_vars: the metric's placeholder step, kind by kind."""

from __future__ import annotations

import pytest

from overpassql import replace_turbo_vars

# Every reference row's query -> converter_input is checked in test_api.py.


@pytest.mark.parametrize("query, expected", [
    ('{{geocodeArea:"A"}}->.a;{{geocodeArea:B}}->.b;', "area(3600069990)->.a;area(3600069991)->.b;"),
    ("{{nominatimArea:X}};{{geocodeId:Y}};", "area(3600169990);relation(3600079990);"),
    ("({{bbox}});({{ center }})", "(44.99,-0.99,44.99,-0.99);(44.88,-0.88,44.88,-0.88)"),
    ('(newer:"{{date:1 day}}")(newer:"{{date}}")', '(newer:"1000-00-00T00:00:00Z")(newer:"{{date}}")'),
    ("{{x=node}} {{x}}[a];", "node[a];"),
    ("{{bbox=area(1)}} out;", "out;"),
    ("{{data:overpass,server=x}}node;", "node;"),
    ("{{geocodeCoords:X}} {{geocodeBbox:Y}}", "10.66,-0.88,44.88,-0.88 10.77,-0.88,44.88,-0.88"),
    ("  node;  ", "node;"),
    # a dangling placeholder makes the metric keep the query as it was
    ("{{geocodeArea:A}} {{date:1 day", "{{geocodeArea:A}} {{date:1 day"),
])
def test_placeholder_kinds(query, expected):
    assert replace_turbo_vars(query) == expected


def test_rejects_non_strings():
    with pytest.raises(TypeError):
        replace_turbo_vars(b"node;")
