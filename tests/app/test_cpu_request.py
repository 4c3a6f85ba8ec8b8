"""The CPU default's view of a request (``app.cpu.request.view``) and the place names of its training queries."""

from __future__ import annotations

from geoql.app.cpu.request import known_places, view
from geoql.nl import read_request


def test_the_view_is_the_english_patterns_with_the_frame():
    request = read_request("成都有哪些博物馆？")
    assert view(request).area == "成都" and view(request, frame=False).area is None
    assert view(request) is request.english_with_frame


def test_a_glossed_request_takes_the_stems_of_its_translation_without_its_place():
    request = read_request("Museen in Bonn")
    assert "museen" in view(request).stems
    assert view(request, gloss="museums in Bonn").stems == {"museum"}


def test_known_places_most_common_spelling_and_filters():
    places = known_places(['{{geocodeArea:"Paris"}}', '{{geocodeArea:"paris"}}', '{{geocodeArea:"Paris"}}',
                           '{{nominatimArea:"Köln"}}', '{{geocodeArea:"of"}}', '{{geocodeArea:"{{x}}"}}'])
    assert places == {"koln": "Köln", "paris": "Paris"}
