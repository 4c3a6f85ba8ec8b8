"""Clauses in parentheses: the operator tree decides which filter a clause is."""

from __future__ import annotations

import pytest

import overpassql
from overpassql import ast as A


def _filter(clause: str, qtype: str = "node"):
    script = overpassql.parse(f"{qtype}{clause};", collect_errors=True)
    return script.statements[0].filters[0] if script.statements else None, script.errors


@pytest.mark.parametrize("clause, expected", [
    ("(1,2,3,4)", A.BBox("1", "2", "3", "4", line=1)),
    ("(-1.5,-2,3,4)", A.BBox("-1.5", "-2", "3", "4", line=1)),
    ("(42)", A.Ids(["42"], short=True, line=1)),
    ("(id:3,1,2)", A.Ids(["3", "1", "2"], line=1)),
    ("(around:10)", A.Around("10", [], None, line=1)),
    ("(around.s:10,1,2)", A.Around("10", ["1", "2"], "s", line=1)),
    ("(area)", A.AreaFilter(None, None, line=1)),
    ("(area.a)", A.AreaFilter("a", None, line=1)),
    ("(area:3600000001)", A.AreaFilter(None, "3600000001", line=1)),
    ("(pivot.p)", A.Pivot("p", line=1)),
    ('(poly:"1 2 3 4 5 6")', A.Poly("1 2 3 4 5 6", line=1)),
    ('(user:"a","b")', A.User(["a", "b"], line=1)),
    ("(uid:7)", A.Uid(["7"], line=1)),
    ('(newer:"2020-01-01T00:00:00Z")', A.Newer("2020-01-01T00:00:00Z", line=1)),
    ('(changed:"2020-01-01T00:00:00Z")', A.Changed("2020-01-01T00:00:00Z", None, line=1)),
    ("(changed)", A.Changed(None, None, line=1)),
    ("(w.x)", A.RecurseFilter("w", "x", None, line=1)),
    ('(r.x:"stop")', A.RecurseFilter("r", "x", "stop", line=1)),
    ("(<)", A.RecurseFilter("<", None, None, line=1)),
])
def test_clause_shapes(clause, expected):
    flt, errors = _filter(clause)
    assert flt == expected and errors == []


@pytest.mark.parametrize("clause, message", [
    ("(1,2,3)", "bbox requires four arguments"),
    ("(1,2,,4)", "bbox requires four arguments"),
    ("(foo:1)", "Unknown query clause"),
    ('(newer:"2020")', 'The attribute "than" must contain a timestamp exactly in the form '
                      'yyyy-mm-ddThh:mm:ssZ.'),
    ('(poly:"1 2 3")', 'For the attribute "bounds" of the element "polygon-query" an even '
                      'number of float values must be provided.'),
])
def test_clause_errors(clause, message):
    _, errors = _filter(clause)
    assert message in [e.message for e in errors]


def test_recursion_type_must_fit_the_query_type():
    _, errors = _filter("(w)", "way")
    assert [e.message for e in errors][0] == "A recursion of type 'w' produces nodes."
