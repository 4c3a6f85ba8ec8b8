"""Reading the request: the place, the view, counting, types, numbers."""

from __future__ import annotations

import re

import pytest

from app.cpu.request import analyse, content_words, extract_area
from eval.dataset import load_split

_GEOCODE = re.compile(r'\{\{geocodeArea:"([^"]+)"\}\}')


def _simple_place_rows(limit: int = 40):
    """Dev rows whose request ends with "in <the gold query's place>" (the common case).

    Place names written in lower case ("in algeria") are not recognised (they
    look like any other word), so those rows are not part of this check.
    """
    rows = []
    for ex in load_split("dev"):
        names = _GEOCODE.findall(ex.query)
        if len(names) == 1 and ex.nl.rstrip(" .").endswith(" in " + names[0]) and not names[0][0].islower():
            rows.append(pytest.param(ex.nl, names[0], id=f"dev{ex.index}"))
    return rows[:limit]


@pytest.mark.parametrize(("nl", "place"), _simple_place_rows())
def test_place_is_the_literal_span(nl, place):
    assert extract_area(nl) == place


@pytest.mark.parametrize(
    ("nl", "place"),
    [
        ("Cafes in Rio de Janeiro, Brazil that have wifi", "Rio de Janeiro, Brazil"),
        ("Schools in the city of Frankfurt am Main", "Frankfurt am Main"),
        ("Fuel stations in Ukraine selling E10 fuel", "Ukraine"),
        ("Hotels in Москва", "Москва"),
        ("benches in current view", None),
        ("all benches", None),
    ],
)
def test_place_hand_written(nl, place):
    assert extract_area(nl) == place


def test_analyse_flags():
    info = analyse("How many nodes and ways with a name within 250 m of schools in Bonn since 2020-01-02?")
    assert info.count and not info.in_view
    assert info.types == {"node", "way"}
    assert info.numbers == ["250"] and info.dates == ["2020-01-02"]
    assert info.area == "Bonn" and "bonn" not in info.words and "school" in info.words


def test_view_and_quotes():
    info = analyse('Streets named "Hauptstraße" in the current view')
    assert info.in_view and info.area is None and info.quoted == ["Hauptstraße"]


def test_content_words_fold_and_stem():
    assert content_words("Cafés and Libraries in the city") == {"cafe", "library", "city"}
