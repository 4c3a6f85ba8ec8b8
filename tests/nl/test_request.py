"""geoql.nl.request: one reading of a request, in any language, into a typed ``Request``.

The cases are data: the cue tables' cases (``frame_cases/<lang>.jsonl``, one file per language)
must come out of the ``Request`` as they come out of the frame, and reference rows of OverpassNL
dev give the place the gold query names.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from geoql.eval.dataset import load_split
from geoql.nl import Feature, Knowledge, Place, Request, read_request
from geoql.nl.english import read_english
from geoql.nl.lexicon import Lexicon
from geoql.nl.request import FeatureMatch
from geoql.nl.frame import read_frame
from geoql.nl.support import read_support
from geoql.nl.words import content_words, topic_words, word_stems
from testdata import frame_cases

_GEOCODE = re.compile(r'\{\{geocodeArea:"([^"]+)"\}\}')


def _field(request: Request, key: str):
    """A Request field in the frame cases' shape."""
    if key == "places":
        return list(request.place_names)
    value = getattr(request, key)
    if key == "around":
        return None if value is None else [value.radius_m, value.of]
    if key == "ids":
        return [list(v) for v in value]
    if isinstance(value, frozenset):
        return sorted(value)
    if isinstance(value, tuple):
        return list(value)
    return value


@pytest.mark.parametrize("lang,case", frame_cases())
def test_the_request_reads_what_the_cue_tables_read(lang, case):
    request = read_request(case["nl"])
    expect = dict(case["frame"])
    expect.setdefault("language", lang)
    for key, want in expect.items():
        if key in ("types", "output"):
            want = sorted(want)
        assert _field(request, key) == want, f"{key}: {_field(request, key)!r} != {want!r} for {case['nl']!r}"


@pytest.mark.parametrize("lang,case", frame_cases())
def test_spans_point_at_the_words(lang, case):
    request = read_request(case["nl"])
    for part in (*request.features, *request.places):
        name = part.text if isinstance(part, Feature) else part.name
        assert part.span is not None and request.text[part.span[0]:part.span[1]] == name, (name, part.span)
    assert [f.text for f in request.features] == [*request.what, *request.negated]


@pytest.mark.parametrize("lang,case", frame_cases())
def test_every_part_is_read_by_its_one_rule(lang, case):
    """The Request holds what each rule of geoql.nl reads of the words, no other reading."""
    nl = case["nl"]
    request = read_request(nl)
    frame = read_frame(nl)
    assert (request.language, request.script, request.in_view, request.bbox, request.coords) == \
        (frame.language, frame.script, frame.in_view, frame.bbox, frame.coords)
    # in its language: Polish, Turkish and Dutch requests drop their own table's stop words too
    assert request.words == tuple(content_words(nl, request.language)) and request.stems == word_stems(nl)
    assert request.topic_words == topic_words(nl, request.language) and request.english == read_english(nl)
    assert request.support.words == read_support(nl).words and request.support.dates == read_support(nl).dates


def _place_rows(limit: int = 40) -> list:
    """OverpassNL dev rows whose request ends with "in <the gold query's place>"."""
    rows = []
    for ex in load_split("dev"):
        names = _GEOCODE.findall(ex.query)
        if len(names) == 1 and ex.nl.rstrip(" .").endswith(" in " + names[0]):
            rows.append(pytest.param(ex.nl, names[0], id=f"dev{ex.index}"))
    return rows[:limit]


@pytest.mark.parametrize("nl, place", _place_rows())
def test_the_place_of_reference_rows(nl, place):
    assert read_request(nl).english_with_frame.area == place


@pytest.mark.parametrize("nl, place", [
    ("toalety przystosowane dla osób na wózkach w Warszawie", "Warszawa"),
    ("парковки в Москве", "Москва"),
    ("Museen in Stuttgart", "Stuttgart"),
])
def test_the_copy_edits_get_the_dictionary_form_of_an_inflected_place(nl, place):
    # the copy-edit path writes this name into its neighbour's query, as the composition writes it
    assert read_request(nl).english_with_frame.area == place


# ------------------------------------------------------------------ what a caller tells the reader

class _Cafes:
    """A lexicon that knows the tag of cafés, and a brand."""

    def lookup(self, text: str, lang: str, *, opening: bool = True, prefer: frozenset = frozenset()) -> list[FeatureMatch]:
        if "starbucks" in text.lower():
            return [FeatureMatch((0, len(text)), ("amenity=cafe", "brand=Starbucks"), 0.95, "Starbucks")]
        return [FeatureMatch((0, len(text)), ("amenity=cafe",), 0.9, "Café")] if "caf" in text.lower() else []

    def known_words(self, text: str, lang: str) -> int:
        return 0  # every language alike: the guess stands

    def corrected(self, text: str, lang: str) -> FeatureMatch | None:
        return None  # no misspellings known

    def surface_words(self, lang: str) -> frozenset[str]:
        return frozenset({"cafe", "cafes", "café", "cafés"})


class _Things:
    """Names of two things, in every language."""

    def names_a_thing(self, phrase: str, language: str) -> bool:
        return phrase in ("公园", "博物馆", "a playground")


def test_a_lexicon_gives_features_their_tags():
    request = read_request("cafés and benches in Bonn", Knowledge(lexicon=_Cafes()))
    cafes, benches = request.features
    assert cafes.tags == (FeatureMatch((0, 5), ("amenity=cafe",), 0.9, "Café"),) and benches.tags == ()
    assert read_request("cafés and benches in Bonn").features[0].tags == ()  # without one: nothing
    assert [f.text for f in read_request("Starbucks in Seoul", Knowledge(lexicon=_Cafes())).brands] == ["Starbucks"]
    assert read_request("Starbucks in Seoul").brands == ()


@pytest.mark.parametrize("nl, place, what", [
    ("公园的长椅", None, ("公园", "长椅")),  # the benches of parks: 公园 names a thing
    ("北京的博物馆", "北京", ("博物馆",)),  # the museums of Beijing
])
def test_an_opening_word_the_lexicon_knows_is_a_thing(nl, place, what):
    request = read_request(nl, Knowledge(things=_Things()))
    assert request.place == place and request.what == what and request.opening_place == place
    plain = read_request(nl)
    assert plain.places[0].opening and plain.opening_place == plain.place  # read only by its position


def test_known_places_let_a_lower_case_place_count():
    knowledge = Knowledge(places={"algeria": "Algeria"})
    assert read_request("castles in algeria", knowledge).english.area == "algeria"
    assert read_request("castles in algeria").english.area is None
    assert "algeria" not in read_request("castles in algeria", knowledge).english.stems


# ------------------------------------------------------------------ bad input: a Request, never a traceback

@pytest.mark.parametrize("nl", ["", "   ", "🏛️🏛️", "!!!", "x" * 10_000, "Museen in 成都 near Кремль", "مطاعم في القاهرة",
                                "\u202eevil\u202c", None, 42, "cafes in Bonn and bakeries in Cologne",
                                "bars in Bar", "Parks in Park City"])
def test_any_input_gives_a_request(nl):
    request = read_request(nl)
    assert isinstance(request, Request) and isinstance(request.nl, str) and len(request.text) <= 4000
    assert all(isinstance(f, Feature) for f in request.features) and all(isinstance(p, Place) for p in request.places)


def test_odd_requests_are_read_as_far_as_they_go():
    assert read_request("🏛️🏛️").language == "und" and read_request("🏛️🏛️").what == ()
    mixed = read_request("Welche Museen gibt es in 成都?")
    assert mixed.language == "de" and mixed.place == "成都" and set(mixed.scripts) == {"Latin", "Han"}
    two = read_request("cafes in Bonn and bakeries in Cologne")
    assert two.place_names == ("Bonn", "Cologne") and two.what == ("cafes", "bakeries")
    assert read_request("bars in Bar").place == "Bar"  # a place that is also a tag word
    assert read_request("Museums in Стамбул").place == "Стамбул"


def test_a_reading_is_frozen():
    request = read_request("cafes in Bonn")
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.language = "de"
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.features[0].text = "pubs"
    assert isinstance(request.features, tuple) and isinstance(request.types, frozenset)


# ------------------------------------------------------------------ what composition reads: roles, centres, filters

def _request_cases() -> list:
    path = Path(__file__).parent / "request_cases.jsonl"
    return [pytest.param(json.loads(line), id=f"case-{n}")
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if line.strip()]


def _composed_field(request: Request, key: str):
    """A Request field in ``request_cases.jsonl``'s shape."""
    if key == "places":
        return [[p.name, p.role] for p in request.places]
    if key == "feature_places":
        return [[f.text, None if f.place is None else request.places[f.place].name] for f in request.features]
    if key == "around":
        return None if request.around is None else [request.around.radius_m, request.around.centre, request.around.place]
    if key == "things":
        return [f.text for f in request.things]
    if key == "brands":
        return [f.text for f in request.brands]
    if key == "filters":
        return [[f.kind, f.text, f.op, f.value] for f in request.filters]
    if key == "output":
        return sorted(request.output)
    if key == "numbers":
        return [[n.value, n.text, n.unit] for n in request.numbers]
    value = getattr(request, key)
    return list(value) if isinstance(value, tuple) else value  # users, dates, periods: JSON lists


@pytest.mark.parametrize("case", _request_cases())
def test_request_case(case):
    # "lexicon": read with the feature lexicon; "known_places": with place names a caller knows
    # "world_places": false reads without the gazetteer of the world's cities
    knowledge = Knowledge(lexicon=Lexicon.default() if case.get("lexicon") else None, places=case.get("known_places", {}),
                          world_places=case.get("world_places", True))
    request = read_request(case["nl"], knowledge)
    for key, want in case["request"].items():
        assert _composed_field(request, key) == want, f"{key}: {_composed_field(request, key)!r} != {want!r} for {case['nl']!r}"


def test_the_places_a_request_is_in_leave_out_the_centre():
    request = read_request("pharmacies within 500 m of the Brandenburg Gate in Berlin")
    assert request.place_names == ("Berlin",) and request.place == "Berlin"
    assert [p.role for p in request.places] == ["area", "centre"] and request.around.place == "Brandenburg Gate"
