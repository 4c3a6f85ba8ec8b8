"""geoql.nl.frame: requests in any language read into an intent frame.

The cases are data (``frame_cases/<lang>.jsonl``, one file per language, written from
that language's cue table ``nl/cues/<lang>.json``): each line holds a request and the
frame fields it must give; fields not listed are not checked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from geoql.nl.cues import LANGUAGES, REQUIRED, SECTIONS, table
from geoql.nl.frame import Around, Frame, guess_language, read_frame
from testdata import FRAME_CASES_DIR as CASES_DIR
from testdata import frame_cases


def _value(frame: Frame, key: str):
    value = getattr(frame, key)
    if key == "around" and value is not None:
        return [value.radius_m, value.of]
    if isinstance(value, set):
        return sorted(value)
    if isinstance(value, tuple):
        return list(value)
    if key == "ids":
        return [list(v) for v in value]
    return value


@pytest.mark.parametrize("lang,case", frame_cases())
def test_frame_case(lang, case):
    frame = read_frame(case["nl"])
    expect = dict(case["frame"])
    expect.setdefault("language", lang)
    for key, want in expect.items():
        got = _value(frame, key)
        if key in ("types", "output"):
            want = sorted(want)
        assert got == want, f"{key}: {got!r} != {want!r} for {case['nl']!r}"


def test_every_case_file_has_enoughframe_cases():
    for lang in LANGUAGES:
        path = CASES_DIR / f"{lang}.jsonl"
        assert path.is_file(), f"no cases for {lang}"
        assert sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip()) >= 15


@pytest.mark.parametrize("lang", LANGUAGES)
def test_cue_table_has_every_section(lang):
    t = table(lang)
    assert [s for s in SECTIONS if s not in t] == []
    assert t["language"]["code"] == lang
    assert len(t["months"]) == 12 and all(t["months"])
    assert set(t["output"]) == {"count", "geom", "center", "csv", "meta"}
    assert set(t["types"]) == {"node", "way", "relation"}
    assert set(t["units"]) == {"m", "km", "mi", "ft"}
    assert {"units", "one", "last", "relative", "since"} <= set(t["time"])
    assert set(t["time"]["units"]) == {"minute", "hour", "day", "week", "month", "year"}
    assert {"prepositions", "postpositions", "not_places"} <= set(t["place"])
    assert {"before", "after", "scope_end"} <= set(t["negation"])
    assert t["view"] and t["stop"] and t["markers"]
    assert {"with", "absent", "compare", "name"} <= set(t["filters"]) and t["filters"]["with"] and t["filters"]["absent"]
    assert set(t["filters"]["compare"]) == {">", ">=", "<", "<="} \
        and {"contains", "starts", "ends"} <= set(t["filters"]["name"]) <= {"contains", "starts", "ends", "not_contains", "not_starts", "not_ends"}


@pytest.mark.parametrize("nl,since", [
    ("nodes edited by user 'HK2002' since November 1, 2018", True),
    ("Welche Gebäude in Hilden wurden nach dem 1. Juni 2019 hinzugefügt?", True),
    ("здания после 1 июня 2019 года", True),
    ("shops added since 2020", True),
    ("2020年以来的建筑", True),
    ("What ways and nodes with the UID 10019250 were changed on July 15, 2019?", False),
    ("Welche Wege und Knoten mit der UID 10019250 wurden am 15. Juli 2019 geändert?", False),
    ("ways changed between 2019-01-01 and 2019-02-01", False),
])
def test_a_since_cue_before_a_date_starts_a_period(nl, since):
    frame = read_frame(nl)
    assert frame.dates and frame.since is since


def test_around_keeps_the_object_as_written():
    assert read_frame("benches within 100 m of a playground in Zurich").around == Around(100.0, "a playground")


# ------------------------------------------------------------ bad input

@pytest.mark.parametrize("nl", [
    "", "   ", "🏛️🏛️🍕", "مطاعم في القاهرة", "מסעדות בתל אביב", "Museen in 成都 und Москва near 東京",
    "cafés in Paris and in Berlin", "a" * 10000, "in " * 3000, "within 100 m of", "100 m", "«", "\"unclosed",
    "\u202eevil\u202c text", "ways with the IDs " + ", ".join(str(i) for i in range(500)), None, 42,
])
def test_bad_input_never_raises(nl):
    frame = read_frame(nl)
    assert isinstance(frame, Frame)
    assert isinstance(frame.what, list) and isinstance(frame.places, list)


@pytest.mark.parametrize("nl", ["benches within {} m of a playground in Zurich", "im Umkreis von {} km um den Bahnhof",
                                "nodes changed in the last {} days"])
def test_a_number_past_float_s_range_is_no_distance_and_no_period(nl):
    """Issue 42: 309 digits read as an infinite radius (an ``OverflowError`` where the query wrote it)."""
    frame = read_frame(nl.format("9" * 309))
    assert frame.around is None and frame.periods == []
    assert read_frame(nl.format("100")).around is not None or read_frame(nl.format("100")).periods


def test_two_places_are_both_kept():
    frame = read_frame("cafés in Paris and in Berlin")
    assert frame.places == ["Paris", "Berlin"] and frame.place == "Paris"


def test_right_to_left_text_gets_its_script_and_language():
    frame = read_frame("مطاعم في القاهرة")
    assert frame.script == "Arabic" and frame.language == "ar"
    assert read_frame("מסעדות בתל אביב").language == "he"


def test_emoji_only_and_empty_are_undetermined():
    for nl in ("🏛️🍕", ""):
        frame = read_frame(nl)
        assert frame.language == "und" and frame.script == "Common" and frame.what == []


def test_guess_language_of_latin_requests():
    assert guess_language("Welche Restaurants gibt es in der Stadt?") == "de"
    assert guess_language("Quels sont les restaurants dans la ville ?") == "fr"
    assert guess_language("What restaurants are in the city?") == "en"


def test_two_places_in_chinese_and_a_long_mixed_request():
    assert read_frame("成都和重庆有哪些博物馆？").places == ["成都", "重庆"]
    long = ("cafés in Paris 成都の博物館 Москва " * 400)[:10000]
    frame = read_frame(long)
    assert frame.nl == long and frame.language in ("en", "ja", "fr")


def test_a_latin_request_naming_a_place_in_another_script_keeps_its_language():
    frame = read_frame("bus stops in Сахалинская область")
    assert frame.language == "en" and frame.place == "Сахалинская область"
    frame = read_frame("区域 3600062518 中有哪些道路的名称包含 'DROSSELSANGWEG'、'ERNSTSTRAßE'、'FINKENSCHLAGWEG'")
    assert frame.language == "zh" and frame.area_ids == [3600062518]


def test_real_requests_in_every_language_read_without_a_fault():
    """The first 300 OsmNL dev requests of each language (and OverpassNL's) go through
    the reader itself: read_frame's fallback for a fault must never be what answers."""
    from geoql.nl.frame import _Reader
    from testdata import data_dir

    root = Path(data_dir())
    files = [root / "dataset.dev.nl"] + sorted((root.parent / "osmnl").glob("dev.*.nl"))
    files = [p for p in files if p.is_file()]
    if not files:
        pytest.skip("no dev requests found beside $GEOQL_DATA_DIR")
    for path in files:
        for nl in path.read_text(encoding="utf-8").splitlines()[:300]:
            frame = _Reader(nl).read()
            assert frame.language != "und", (path.name, nl)
