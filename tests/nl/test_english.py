"""The English patterns (``geoql.nl.english``): the place, the view, counting, types, numbers, and the
merge with the cue tables' reading (``Request.english_with_frame``)."""

from __future__ import annotations

import re

import pytest

from geoql.app.cpu.request import known_places
from geoql.eval.dataset import load_split
from geoql.nl import Knowledge, read_request
from geoql.nl.english import extract_area, read_english
from geoql.nl.words import word_stems

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


def test_english_flags():
    info = read_english("How many nodes and ways with a name within 250 m of schools in Bonn since 2020-01-02?")
    assert info.count and not info.in_view
    assert info.types == {"node", "way"}
    assert info.numbers == ("250",) and info.dates == ("2020-01-02",)
    assert info.area == "Bonn" and "bonn" not in info.stems and "school" in info.stems
    assert info.area_stems == {"bonn"} and info.distance == ("250", "m") and info.time_words and not info.user_words


def test_view_and_quotes():
    info = read_english('Streets named "Hauptstraße" in the current view')
    assert info.in_view and info.area is None and info.quoted == ("Hauptstraße",)


def test_word_stems_fold_and_stem():
    assert word_stems("Cafés and Libraries in the city") == {"cafe", "library", "city"}


@pytest.mark.parametrize(("nl", "uid", "users"), [
    ("nodes by user MassGIS_Import", None, ("MassGIS_Import",)),
    ('ways edited by "Jane Doe" since 2020', None, ("Jane Doe",)),
    ("changes of uid 12345", "12345", ()),
    ("ways of the user with the id 77", "77", ()),
    ("ways by user with id 77", "77", ()),  # "with" is no user name
])
def test_users_and_uids(nl, uid, users):
    info = read_english(nl)
    assert (info.uid, info.users) == (uid, users)


@pytest.mark.parametrize(("nl", "word", "negated"), [
    ("benches without a backrest", "backrest", True),
    ("shops with no opening hours", "opening", True),
    ("no x no y z backrest", "backrest", True),  # the second negation's scope starts inside the first's
    ("benches with a backrest", "backrest", False),
    ("without a b c backrest", "backrest", False),  # more than three words away
    ("cannot backrest", "backrest", False),  # "not" inside a word negates nothing
])
def test_negation_scopes(nl, word, negated):
    assert read_english(nl).negates(word) is negated


# -- lower-case places, the selected window, counting -------------------------------------

PLACES = known_places(['{{geocodeArea:"Algeria"}}->.a;', '{{geocodeArea:"jaraguá do sul"}}->.a;',
                       '{{geocodeArea:"Bonn"}}->.a;', '{{geocodeArea:"the"}}->.a;'])


@pytest.mark.parametrize(
    ("nl", "place"),
    [
        ("Admin level 6 in algeria", "algeria"),  # as the request writes it
        ("highway in jaragua do sul.", "jaragua do sul"),  # accents folded, longest name wins
        ("castles in Algeria", "Algeria"),
        ("castles in Bavaria or in algeria", "algeria"),  # the last place counts
        ("benches in use", None),  # an unknown lower-case word is no place
        ("benches in the park", None),  # stop words are never places
    ],
)
def test_lower_case_places_known_from_training_queries(nl, place):
    assert extract_area(nl, PLACES) == place


def test_lower_case_place_needs_the_gazetteer():
    assert extract_area("Admin level 6 in algeria") is None
    assert read_english("Admin level 6 in algeria", PLACES).area == "algeria"
    assert "algeria" not in read_english("Admin level 6 in algeria", PLACES).stems
    assert read_request("Admin level 6 in algeria", Knowledge(places=PLACES)).english_with_frame.area == "algeria"


def test_elided_article_stays_in_the_name():
    assert extract_area("Charging stations in Provence-Alpes-Côte d'Azur") == "Provence-Alpes-Côte d'Azur"


@pytest.mark.parametrize(
    ("nl", "in_view"),
    [("toilets in the selected window", True), ("cafes in the displayed area", True),
     ("cafes in Bonn", False), ("selected cafes in Bonn", False)],
)
def test_selected_window_is_the_map_view(nl, in_view):
    assert read_english(nl).in_view is in_view


@pytest.mark.parametrize(
    ("nl", "count"),
    [
        ("How many benches in Bonn", True),
        ("Count of old name in brazil", True),
        ("Number of cafes in Bonn", True),
        ("The number of subway tracks in Berlin", True),
        ("Motorways in Saarland without information about the number of lanes", False),
        ("hospitals without a given number of beds in the selected window", False),
        ("Cafes in the country of Chile", False),
    ],
)
def test_counting_requests(nl, count):
    assert read_english(nl).count is count


def test_of_inside_a_place_name_starts_no_new_place():
    assert extract_area("oneway ways in United States of America") == "United States of America"
    assert extract_area("Schools in the city of Frankfurt am Main") == "Frankfurt am Main"


# What the intent frame adds where the English rules find nothing (request, area, in_view, count).
FRAME_CASES = [
    ("成都有哪些博物馆？", "成都", False, False),
    ("Wie viele Apotheken gibt es im aktuellen Kartenausschnitt?", None, True, True),
    ("What breweries are in the specified area?", None, True, False),
    ("Cafes in Rio de Janeiro, Brazil", "Rio de Janeiro, Brazil", False, False),
    # the map view wins over a word the frame reads as a place ("車椅子で": by wheelchair)
    ("現在の表示範囲内で、車椅子で利用可能な駐車場はどこにありますか？", None, True, False),
    # German capitalises every noun: where the English rules read one noun after "in" as the place and the
    # frame reads another place or the map view, the frame wins ...
    ("Welche Marktplätze in Rennes befinden sich nicht in Gebäuden?", "Rennes", False, False),
    ("Zeige alle Gehwege und Fußwege in Gebäudedurchgängen im aktuellen Kartenausschnitt.", None, True, False),
    ("Welche Straßen in Thüringen haben Abbiegespuren sowohl in Vorwärts- als auch in Rückwärtsrichtung?",
     "Thüringen", False, False),
    # ... but not over a name of several words, and a compound of "-ebene" (level) is no place for the frame
    ("Welche Gemeindegrenzen auf Admin-Ebene 8 gibt es in Conceição dos Ouros, MG, Brasilien?",
     "Conceição dos Ouros, MG, Brasilien", False, False),
    ("Welche Verwaltungsgrenzen auf Distriktebene gibt es in Nagaland?", "Nagaland", False, False),
    # English requests keep the English rules' reading
    ("Which market places in Rennes are not in Buildings?", "Buildings", False, False),
]


@pytest.mark.parametrize("nl,area,in_view,count", FRAME_CASES)
def test_the_frame_fills_in_what_the_rules_miss(nl, area, in_view, count):
    info = read_request(nl).english_with_frame
    assert (info.area, info.in_view, info.count) == (area, in_view, count)
    assert not info.area or not (word_stems(info.area) & info.stems)  # the place's words are no tag words
