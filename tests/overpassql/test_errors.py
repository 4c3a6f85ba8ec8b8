"""The error hierarchy and the stderr format of diagnostics."""

from __future__ import annotations

import pytest

import overpassql
from overpassql.errors import Diagnostic, OverpassQLError, ParseError


def test_diagnostic_prints_like_osm3s_query():
    assert str(Diagnostic(3, 7, "Unexpected end of input.")) == \
        "line 3: parse error: Unexpected end of input."
    assert str(Diagnostic(1, 1, "x", "static")) == "line 1: static error: x"


def test_parse_error_carries_position_and_all_errors():
    with pytest.raises(ParseError) as info:
        overpassql.parse('node["a"="b"]\nway;')
    err = info.value
    assert isinstance(err, OverpassQLError) and isinstance(err, ValueError)
    assert (err.line, err.message) == (2, "';' expected - 'way' found.")
    assert err.column == 1
    assert len(err.errors) >= 1 and err.script is not None


def test_parse_error_without_diagnostics_still_formats():
    assert "invalid query" in str(ParseError([]))
