"""geoql.app.confidence: uncovered words, topicality, the calibrated confidence of the CPU default."""

from __future__ import annotations

import json

import pytest

from geoql.app import Compiler
from geoql.app.confidence import (CALIBRATOR_VERSION, FEATURES, MODEL_CALIBRATOR_FILE, NO_OUTPUT_WARNING, Calibrator, _words_table, assess,
                                  load_calibrator, mbr_agreement, packaged_calibrator_path, query_tags, uncovered_words)
from geoql.app.decoding import Candidate
from geoql.core.errors import ConfigError
from geoql.nl import read_request
from geoql.nl.text import fold

PLAYGROUNDS = ('[out:json][timeout:25];{{geocodeArea:"Zurich"}}->.searchArea;(node["leisure"="playground"](area.searchArea);'
               'way["leisure"="playground"](area.searchArea););out;>;out skel qt;')
BENCHES = ('[out:json][timeout:25];{{geocodeArea:"Zurich"}}->.a;nwr["leisure"="playground"](area.a)->.p;'
           'node["amenity"="bench"](around.p:100);out;')
JUNK = ["'; DROP TABLE --", "hello", "what is 2+2", "🙂🙂🙂"]


# ------------------------------------------------------------------ words (the data file)

@pytest.mark.parametrize("name", list(_words_table()["constructs"]))
def test_construct_word_lists_are_folded_and_without_repeats(name):
    words = _words_table()["constructs"][name]
    assert words and all(w == fold(w) and w.strip() == w and " " not in w for w in words), words
    assert len(words) == len(set(words)), sorted(w for w in words if words.count(w) > 1)


@pytest.mark.parametrize("nl, query, uncovered", [
    # the issue's example: the query has the playgrounds, not the benches nor the 100 m
    ("benches within 100 m of a playground in Zurich", PLAYGROUNDS, ["benches", "100"]),
    ("benches within 100 m of a playground in Zurich", BENCHES, []),
    ("drinking water taps in Vienna", '{{geocodeArea:"Vienna"}}->.a;nwr["amenity"="drinking_water"](area.a);out;', ["taps"]),
    ("restaurants in the current view", 'nwr["amenity"="restaurant"]({{bbox}});out;', []),
    ("how many pubs are in Dublin", '{{geocodeArea:"Dublin"}}->.a;nwr["amenity"="pub"](area.a);out count;', []),
    ("how many pubs are in Dublin", '{{geocodeArea:"Dublin"}}->.a;nwr["amenity"="pub"](area.a);out;', ["many"]),
    ("ways changed by the user with the ID 10019212", 'way(uid:10019212);out meta;', []),
    ("ways changed since 2019 by the user with the ID 10019212", 'way(uid:10019212);out meta;', ["since", "2019"]),
    ("public railway corssings in Bern", '{{geocodeArea:"Bern"}}->.a;node["railway"="crossing"](area.a);out;', ["public"]),
    ("shops within 1 km of 50.937468,6.887891", 'node["shop"](around:1000,50.9374,6.8878);out;', []),
])
def test_uncovered_words(nl, query, uncovered):
    assert uncovered_words(read_request(nl), query) == uncovered


HUGE = "9" * 309  # float() reads it as infinity


def test_a_number_past_float_s_range_is_an_uncovered_word_not_an_overflow():
    """Issue 42: "cafes in Bonn 99…9" (309 digits) said "Compiled." while the confidence had failed
    with an OverflowError (``int(inf)`` in the km reading of a number)."""
    query = '{{geocodeArea:"Bonn"}}->.a;nwr["amenity"="cafe"](area.a);out;'
    assert uncovered_words(read_request(f"cafes in Bonn {HUGE}"), query) == [HUGE]
    assert uncovered_words(read_request(f"cafes within {HUGE} km of Bonn"), query) == [HUGE, "km"]


@pytest.mark.parametrize("nl", [f"cafes in Bonn {HUGE}", f"benches within {HUGE} m of a playground in Zurich",
                                f"nodes changed in the last {HUGE} days", "9" * 1990])
def test_a_309_digit_number_compiles_with_its_confidence(hinted, nl):
    comp = hinted.compile(nl)
    assert comp.query and not comp.errors and not comp.failed, comp.errors
    assert comp.warnings == [] and comp.confidence is not None


def test_a_lexicon_or_a_used_hit_covers_a_word():
    query = '{{geocodeArea:"Vienna"}}->.a;nwr["amenity"="drinking_water"](area.a);out;'

    request = read_request("drinking water taps in Vienna")
    assert uncovered_words(request, query, word_tags={"tap": {"amenity=drinking_water": 0.6}}) == []
    hit = {"tag": "amenity=drinking_water", "key": "amenity", "name": "Drinking Water", "score": 0.9, "why": "term: water tap"}
    assert uncovered_words(request, query, hits=[hit]) == []
    unused = {**hit, "tag": "man_made=water_tap", "key": "man_made"}
    assert uncovered_words(request, query, hits=[unused]) == ["taps"]


def test_place_spellings_cover_the_request_s_place():
    query = '{{geocodeArea:"Brasil"}}->.a;relation["admin_level"="7"](area.a);out;'
    assert uncovered_words(read_request("Admin level 7 in Brasil"), query) == []
    assert uncovered_words(read_request("Admin level 7 in Brazil"), query) == []  # one letter off
    query = '{{geocodeArea:"Deutschland"}}->.a;nwr["historic"="castle"](area.a);out;'
    assert uncovered_words(read_request("castles in Germany"), query) == ["germany"]
    assert uncovered_words(read_request("castles in Germany"), query, aliases={"Deutschland": {"germany"}}) == []


def test_query_tags():
    assert query_tags('[out:json][timeout:25];node["amenity"="cafe"]["wifi"](area.a);way[!"name"];') == {
        "amenity", "amenity=cafe", "wifi", "name"}


# ------------------------------------------------------------------ the calibrator

def test_the_packaged_calibrator_says_where_it_comes_from():
    calib = load_calibrator()
    assert set(calib.models) == {"hits", "nohits"}
    assert calib.models["hits"]["features"] == list(FEATURES)
    assert 0 < calib.warn_below < 1 and 0 < calib.far_below < 1 and 0 < calib.off_topic_hit < 1
    prov = calib.provenance
    assert "dev" in prov["fitted_on"] and prov["held_out"] == "half B" and "confidence_table.py" in prov["command"]
    assert prov["requests_fit"] + prov["requests_held_out"] == 1000


def test_calibrator_round_trip_and_model_folder_override(tmp_path):
    calib = load_calibrator()
    calib.warn_below = 0.123
    path = calib.save(tmp_path / MODEL_CALIBRATOR_FILE)
    assert json.loads(path.read_text())["version"] == CALIBRATOR_VERSION
    assert load_calibrator(tmp_path).warn_below == 0.123
    path.write_text("{broken")
    assert load_calibrator(tmp_path).warn_below == load_calibrator().warn_below  # falls back to the packaged fit
    with pytest.raises(ConfigError, match="refit"):
        Calibrator.from_json({"version": 0})
    assert packaged_calibrator_path().is_file()


def test_confidence_is_a_probability_and_follows_the_signals():
    calib = load_calibrator()
    good = {"nearest": 0.9, "nearest_mean": 0.8, "agreement": 0.9, "hit_used": 0.95, "hit_unused": 0.0, "hit_max": 0.95,
            "uncovered": 0, "uncovered_share": 0.0, "words": 4, "query_length": 5.0, "place": 1}
    bad = {**good, "nearest": 0.3, "agreement": 0.0, "hit_used": 0.0, "hit_unused": 0.9, "uncovered": 3, "uncovered_share": 1.0}
    for setting in ("hits", "nohits"):
        hi, lo = calib.predict(good, setting), calib.predict(bad, setting)
        assert 0 <= lo < hi <= 1
    assert Calibrator().predict(good, "hits") is None


def test_mbr_agreement_of_language_model_samples():
    assert mbr_agreement([Candidate("a", True, count=1)], "a") is None  # one sample: no agreement to measure
    assert mbr_agreement([Candidate("a", True, count=4)], "a") == 1.0
    assert mbr_agreement([Candidate("a", True, score=0.6, count=3), Candidate("b", True, score=0.2)], "a") == 0.6


def test_assess_without_a_query_lists_every_word():
    found = assess(read_request("cafes in Bonn"), "", calibrated=True)
    assert found.uncovered == ["cafes", "bonn"] and 0 <= (found.confidence or 0) <= 1
    assert not found.no_output  # no query, nothing to run


@pytest.mark.parametrize("calibrated", [True, False])
def test_a_query_without_output_is_a_doubt(calibrated):
    request = read_request("cafes in Bonn")
    found = assess(request, '{{geocodeArea:"Bonn"}}->.a;nwr["amenity"="cafe"](area.a);', calibrated=calibrated)
    assert found.no_output and found.warnings[-1] == NO_OUTPUT_WARNING
    found = assess(request, '{{geocodeArea:"Bonn"}}->.a;nwr["amenity"="cafe"](area.a);out;', calibrated=calibrated)
    assert not found.no_output and NO_OUTPUT_WARNING not in found.warnings


# ------------------------------------------------------------------ through compile()

@pytest.fixture(scope="module")
def hinted(hinted_cpu_model_dir, small_index_dir):
    compiler = Compiler("cpu", model_dir=str(hinted_cpu_model_dir), index_dir=str(small_index_dir))
    yield compiler
    compiler.close()


@pytest.mark.parametrize("nl", ["drinking water taps in Vienna", "pubs in Dublin", "benches within 100 m of a playground in Zurich",
                                *JUNK, "Питьевая вода в Вене", "東京のラーメン屋"])
def test_confidence_is_in_0_1_for_any_request(hinted, nl):
    comp = hinted.compile(nl)
    assert comp.query and 0.0 <= comp.confidence <= 1.0, comp.errors
    assert comp.nearest is not None and isinstance(comp.far, bool)
    assert comp.timings["confidence_s"] >= 0
    data = comp.as_dict()
    assert {"confidence", "uncovered", "nearest", "far", "off_topic", "doubts", "status"} <= set(data)
    json.dumps(data, default=str)


@pytest.mark.parametrize("nl", JUNK)
def test_requests_not_about_places_say_so(hinted, nl):
    comp = hinted.compile(nl)
    assert comp.valid  # still a query: the caller decides
    assert comp.off_topic and comp.doubts and "not look like a request about places" in comp.doubts[0]
    assert comp.status.startswith("Not a request about places")


@pytest.mark.parametrize("nl", ["drinking water taps in Vienna", "pubs in Dublin", "bus stops in Graz",
                                "Ways and nodes changed by uid:10019212", "restaurants in the current view"])
def test_real_requests_are_not_off_topic(hinted, nl):
    comp = hinted.compile(nl)
    assert not comp.off_topic, (comp.tags[:3], comp.doubts)


def test_a_clear_request_is_surer_than_junk(hinted):
    clear = [hinted.compile(nl).confidence for nl in ("drinking water taps in Vienna", "pubs in Dublin")]
    junk = [hinted.compile(nl).confidence for nl in JUNK]
    assert min(clear) > max(junk), (clear, junk)
    comp = hinted.compile("pubs in Dublin")
    assert not comp.low_confidence and comp.status.startswith("Compiled")


def test_the_issue_s_benches_are_listed_when_the_query_drops_them(hinted):
    comp = hinted.compile("benches within 100 m of a playground in Zurich")
    if '"bench"' not in comp.query:
        assert "benches" in comp.uncovered
    else:
        assert "benches" not in comp.uncovered


def test_a_model_without_index_still_has_a_confidence(small_cpu_model_dir):
    compiler = Compiler("cpu", model_dir=str(small_cpu_model_dir))
    comp = compiler.compile("drinking water taps in Vienna")
    assert comp.tags == [] and 0 <= comp.confidence <= 1 and not comp.off_topic
    assert compiler.compile("hello").off_topic is not None




def test_a_hit_found_only_through_an_unrelated_similar_request_is_no_evidence():
    from geoql.app.confidence import grounded_hit

    route = {"tag": "type=route", "key": "type", "name": "Route", "score": 0.77,
             "why": "used for similar request: Highways and routes with official name Rodovia"}
    assert grounded_hit(read_request("hello"), [route]) == 0.0
    assert grounded_hit(read_request("bus routes in Graz"), [route]) == 0.77
    named = {**route, "why": "name: Route"}
    assert grounded_hit(read_request("hello"), [named]) == 0.77  # the index matched a name or term: its own evidence


@pytest.mark.parametrize("nl, off", [
    ("ドイツにある歴史的な城は？", False),  # geoql.nl reads the place ドイツ
    ("Quelles sont les bibliothèques en Norvège ?", False),
    ("現在の表示範囲にある駐輪場はどこですか？", False),  # the map view
    ("Ways and nodes changed by uid:10019212", False),
    ("hello", True), ("tell me a joke", True), ("lorem ipsum dolor sit amet", True), ("'; DROP TABLE --", True),
])
def test_off_topic_reads_the_request_in_its_own_language(nl, off):
    from geoql.app.confidence import is_off_topic

    assert is_off_topic(read_request(nl), {"place": 0.0}, {}, load_calibrator()) is off


def test_requests_not_in_english_are_never_called_off_topic():
    """Their hits are as weak as a greeting's: only the low confidence speaks for them."""
    from geoql.app.confidence import is_off_topic

    hit = {"tag": "highway=traffic_signals", "key": "highway", "name": "Traffic Signals", "score": 0.02, "why": ""}
    values = {"place": 0.0, "hit_max": 0.02}
    german = "Wo gibt es Ampeln mit akustischen Signalen für sehbehinderte Fußgänger?"
    assert not is_off_topic(read_request(german), values, {}, load_calibrator(), hits=[hit])
    assert is_off_topic(read_request("hello"), values, {}, load_calibrator(), hits=[hit])
    assert is_off_topic(read_request("🙂🙂🙂"), values, {}, load_calibrator(), hits=[hit])  # no words in any language


@pytest.mark.parametrize("calibrated", [True, False])
def test_unlicensed_parts_lower_the_confidence_and_are_a_doubt(calibrated):
    """Any backend: a part nothing in the request licenses caps the confidence (under the warning) and is named."""
    from types import SimpleNamespace

    from geoql.app.confidence import UNLICENSED_CAP
    from geoql.eval.license import unlicensed_parts

    request = read_request("cafes in Bonn")
    clean = '{{geocodeArea:"Bonn"}}->.a;nwr["amenity"="cafe"](area.a);out;'
    leftover = '[timeout:8000];{{geocodeArea:"Bonn"}}->.a;nwr["amenity"="cafe"]["maxspeed"](area.a);out;'
    parts = unlicensed_parts(request, leftover)
    assert [p.text for p in parts] == ['["maxspeed"]', "[timeout:8000]"]
    samples = [Candidate(leftover, True, score=0.9, count=7), Candidate(clean, True, count=1)]
    near = [SimpleNamespace(query=leftover, score=0.95)] * 5
    fresh = Calibrator.from_json(json.loads(packaged_calibrator_path().read_text()))  # not the cached one others edit
    before = assess(request, leftover, candidates=samples, calibrated=calibrated, examples=near, calibrator=fresh)
    after = assess(request, leftover, candidates=samples, unlicensed=parts, calibrated=calibrated, examples=near,
                   calibrator=fresh)
    assert before.confidence > UNLICENSED_CAP >= after.confidence
    assert any("[timeout:8000]" in w and '["maxspeed"]' in w for w in after.warnings)
    assert not any("[timeout:8000]" in w for w in before.warnings)
    if calibrated:
        assert after.low_confidence and not before.low_confidence
