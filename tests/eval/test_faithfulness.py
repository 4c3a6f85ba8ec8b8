"""geoql.eval.faithfulness: the constants of a query that its request does not support.

The requests are real: OsmNL dev (``../shared/osmnl``, beside ``$GEOQL_DATA_DIR``) and
OverpassNL; the wrong queries are the CPU default's answers quoted in issue 19.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from geoql.eval.dataset import load_split
from geoql.eval.faithfulness import (Constant, learn_place_aliases, query_constants, train_place_aliases,
                                     unsupported_constants)
from geoql.nl import read_request
from geoql.nl.support import name_spans
from testdata import data_dir


def _osmnl_en() -> list[str]:
    path = Path(data_dir()).parent / "osmnl" / "dev.en.nl"
    if not path.is_file():
        pytest.skip(f"OsmNL dev not found at {path}")
    return path.read_text(encoding="utf-8").split("\n")


def _line(n: int) -> str:
    """OsmNL dev.en, 1-based as in the issue."""
    return _osmnl_en()[n - 1]


def _found(nl, query, **kw) -> set[tuple[str, str]]:
    found = {(c.kind, c.value) for c in unsupported_constants(read_request(nl), query, **kw)}
    assert found == {(c.kind, c.value) for c in unsupported_constants(nl, query, **kw)}  # the words alone: read alike
    return found


@pytest.fixture(scope="module")
def aliases():
    return train_place_aliases(data_dir())


# ------------------------------------------------------------ the examples

def test_a_place_for_the_map_view_is_unsupported():
    nl = _line(24)
    assert "in the specified area" in nl
    query = ('[out:json][timeout:25];{{geocodeArea:"Bas-Rhin"}}->.searchArea;(nwr["craft"="brewery"](area.searchArea);'
             'nwr["microbrewery"="yes"](area.searchArea););out;')
    assert _found(nl, query) == {("place", "Bas-Rhin")}
    # the OsmNL gold for this line uses the view: nothing unsupported
    assert unsupported_constants(nl, Path(data_dir()).parent.joinpath("osmnl", "dev.en.query")
                                 .read_text(encoding="utf-8").split("\n")[23]) == []


def test_a_place_beside_coordinates_is_unsupported_but_the_radius_and_coordinates_are_not():
    nl = _line(37)
    assert "20 meters" in nl and "49.798213, 5.522851" in nl
    query = ('[out:json];{{geocodeArea:"Heidelberg"}}->.searchArea;'
             'way["highway"~"^(primary|secondary)$"](around:20,49.798213,5.522851)(area.searchArea);out;')
    assert _found(nl, query) == {("place", "Heidelberg")}
    numbers = [c for c in query_constants(query) if c.kind == "number"]
    assert [c.value for c in numbers] == ["20", "49.798213", "5.522851"]
    assert numbers[0].where == "around radius" and numbers[1].where == "around coords"


def test_ids_of_a_neighbour_are_unsupported():
    nl = _line(21)
    assert "613126639" in nl and "metadata" in nl
    query = "[out:xml];way(217398172);way(132685415);way(156262170);out meta;>;out meta;"
    found = unsupported_constants(nl, query)
    assert [(c.kind, c.value, c.where) for c in found] == [
        ("id", "217398172", "way id"), ("id", "132685415", "way id"), ("id", "156262170", "way id")]
    # the request's own ids, as the gold writes them, are supported; so is "out meta" ("metadata")
    gold = "[out:xml];way(id:613126639,613126640,613126642);out meta;>;out meta;"
    assert unsupported_constants(nl, gold) == []


def test_csv_output_and_a_place_for_the_map_view_are_unsupported():
    nl = _line(44)
    assert "located in the specified area" in nl
    query = ('[out:csv(::type,::id,::lat,::lon)];{{geocodeArea:"Guadeloupe"}}->.searchArea;'
             '(nwr["leisure"="bowling_alley"](area.searchArea);nwr["amenity"="bar"](area.searchArea););out;')
    assert _found(nl, query) == {("output", "csv"), ("place", "Guadeloupe")}


def test_a_count_nobody_asked_for_is_unsupported():
    query = ('[out:csv(::type,::id,"name",::count)];{{geocodeArea:"西安"}}->.searchArea;'
             'nwr["tourism"="museum"](area.searchArea);out count;')
    # the place is the request's own, in its own script
    assert _found("List the museums in 西安", query) == {("output", "csv"), ("output", "count")}
    assert _found("How many museums are there in 西安?", query) == {("output", "csv")}
    assert _found("西安有多少博物馆?", query) == {("output", "csv")}


# ------------------------------------------------------------ what counts as support

@pytest.mark.parametrize("nl", ["Where are the cafés in Zürich?", "cafes in zurich", "CAFES IN ZÜRICH",
                                "cafes in Ｚｕｒｉｃｈ"])
def test_a_place_spelled_as_in_the_request_is_supported_folded(nl):
    assert unsupported_constants(nl, '{{geocodeArea:"Zürich"}}->.a;nwr[amenity=cafe](area.a);out;') == []


def test_a_qualified_or_misspelt_place_is_still_the_request_s_place():
    query = '{{geocodeArea:"Paris, France"}}->.a;nwr[amenity=cafe](area.a);out;'
    assert unsupported_constants("cafes in Paris", query) == []
    assert unsupported_constants("Rabbits in Predrola", '{{geocodeArea:"Pedrola"}}->.a;nwr(area.a);out;') == []
    assert _found("Rabbits in Madrid", '{{geocodeArea:"Pedrola"}}->.a;nwr(area.a);out;') == {("place", "Pedrola")}


def test_another_spelling_counts_through_learned_aliases(aliases):
    query = '{{geocodeArea:"Wien"}}->.a;nwr[amenity=cafe](area.a);out;'
    assert "vienna" in aliases["Wien"]
    assert _found("cafes in Vienna", query) == {("place", "Wien")}
    assert unsupported_constants("cafes in Vienna", query, aliases=aliases) == []
    # either side may be in the query
    assert unsupported_constants("Cafés in Wien", '{{geocodeArea:"Vienna"}}->.a;nwr(area.a);out;', aliases=aliases) == []
    assert _found("cafes in Graz", query, aliases=aliases) == {("place", "Wien")}


def test_real_dev_request_with_a_translated_place(aliases):
    dev = load_split("dev", data_dir())
    ex = dev[239]  # "motorways and motorway links and junctions in Germany" -> {{geocodeArea:"Deutschland"}}
    assert "Germany" in ex.nl and "Deutschland" in ex.query
    assert ("place", "Deutschland") in _found(ex.nl, ex.query)
    assert ("place", "Deutschland") not in _found(ex.nl, ex.query, aliases=aliases)


@pytest.mark.parametrize("nl, radius", [
    ("benches within 100 m of a playground", "100"),
    ("benches within 100m of a playground", "100"),
    ("benches within 1 km of a playground", "1000"),
    ("benches within 1.5km of a playground", "1500"),
    ("Bänke im Umkreis von 1,5 km um einen Spielplatz", "1500"),
    ("benches within 1,000 meters of a playground", "1000"),
    ("benches within 1 000 m of a playground", "1000"),
    ("benches within half a mile, 0.5 mi, of a playground", "805"),
    ("towns between 100 and 300 km from Moscow", "100000"),
])
def test_numbers_with_units_and_separators(nl, radius):
    query = f"node[leisure=playground]->.p;node[amenity=bench](around.p:{radius});out;"
    assert unsupported_constants(nl, query) == []
    assert _found(nl, "node[leisure=playground]->.p;node[amenity=bench](around.p:250);out;") == {("number", "250")}


def test_coordinates_rounded_and_area_ids():
    query = "node(around:50,47.2665,8.8281);out;"
    assert unsupported_constants("ruins within 50 meters of 47.26650, 8.82811", query) == []
    assert unsupported_constants("highways in area id 3600044880", "area(3600044880)->.a;way(area.a);out;") == []
    assert unsupported_constants("memorials in relation 10301123", "area(3610301123)->.a;nwr(area.a);out;") == []
    assert _found("highways in area id 3600044880", "area(3600043199)->.a;way(area.a);out;") == {("id", "3600043199")}


@pytest.mark.parametrize("nl, date", [
    ("roads edited since November 1, 2018", "2018-11-01T00:00:00Z"),
    ("Straßen, die seit dem 1. November 2018 bearbeitet wurden", "2018-11-01T00:00:00Z"),
    ("routes modifiées depuis le 1er novembre 2018", "2018-11-01T00:00:00Z"),
    ("roads changed after 01.11.2018", "2018-11-01T00:00:00Z"),
    ("nodes changed on 2018-10-30", "2018-10-30T00:00:00Z"),
    ("shops added since 2020", "2020-01-01T00:00:00Z"),
    ("2018年11月1日以后修改的道路", "2018-11-01T00:00:00Z"),
    ("roads edited last week", "{{date:1 week}}"),
    ("roads edited in the past 7 days", "{{date:1 week}}"),
    ("Straßen, die in den letzten 3 Tagen geändert wurden", "{{date:3 days}}"),
    ("routes modifiées depuis un mois", "{{date:1 month}}"),
])
def test_dates_in_words(nl, date):
    query = f'way[highway](newer:"{date}");out;'
    assert unsupported_constants(nl, query) == []


def test_dates_the_request_does_not_give():
    assert _found("All roads in Syria", '[date:"2018-02-15T00:00:00Z"];way[highway];out;') == {
        ("date", "2018-02-15T00:00:00Z")}
    assert _found("shops added since 2020", 'nwr[shop](newer:"2019-01-01T00:00:00Z");out;') == {
        ("date", "2019-01-01T00:00:00Z")}
    assert _found("roads edited last week", 'way(newer:"{{date:3 days}}");out;') == {("date", "{{date:3 days}}")}


@pytest.mark.parametrize("nl,date,supported", [
    ("What ways and nodes with the UID 10019250 were changed on July 15, 2019?", "2019-07-15", True),
    # a neighbour's day in the same month and year is not the request's
    ("What ways and nodes with the UID 10019250 were changed on July 15, 2019?", "2019-07-17", False),
    ("Welche Wege wurden am 15. Juli 2019 geändert?", "2019-07-17", False),
    ("2019年7月15日に変更されたウェイ", "2019-07-17", False),
    ("roads changed since 2019", "2019-07-17", True),  # a year alone: any day of it
    ("roads changed in November 2018", "2018-11-05", True),  # a month: any day of it
    ("roads changed in 2019 and on July 15, 2019", "2019-03-01", True),  # the year also stands alone
])
def test_a_day_supports_that_day_only(nl, date, supported):
    query = f'way(changed:"{date}T00:00:00Z","{date}T23:59:59Z");out;'
    assert (unsupported_constants(nl, query) == []) is supported


def test_names_users_and_output_cues_in_three_languages():
    query = 'nwr["brand"="Lidl"](user:"KaiserFranz");out meta;'
    assert _found("Lidl shops edited by KaiserFranz", query) == set()
    assert _found("Aldi shops", query) == {("name", "Lidl"), ("user", "KaiserFranz"), ("output", "meta")}
    count = '[out:csv(::count)];nwr[amenity=pharmacy];out count;'
    for nl in ("How many pharmacies are there?", "Wie viele Apotheken gibt es?", "Combien de pharmacies ?"):
        assert unsupported_constants(nl, count) == [], nl
    assert _found("pharmacies", count) == {("output", "count")}
    geom = "way[highway=primary];out geom;"
    assert unsupported_constants("primary roads with their geometry", geom) == []
    assert unsupported_constants("Hauptstraßen mit Geometrie", geom) == []
    assert _found("primary roads", geom) == {("output", "geom")}



# The cue words come from geoql.nl's tables (nl/cues/<lang>.json), every language at once.
@pytest.mark.parametrize("nl", [
    "¿Cuántas farmacias hay?", "Quante farmacie ci sono?", "Quantas farmácias existem?", "Сколько аптек?",
    "有多少家药店？", "有幾多間藥房？", "薬局は何件ありますか？", "약국이 몇 개 있습니까?",
])
def test_count_cues_in_every_language(nl):
    count = '[out:csv(::count)];nwr[amenity=pharmacy];out count;'
    assert unsupported_constants(nl, count) == [], nl


@pytest.mark.parametrize("nl, period", [
    ("Магазины, измененные за последнюю неделю", "1 week"), ("先週編集された店", "1 week"),
    ("过去3天内修改过的商店", "3 days"), ("지난 3일 동안 수정된 상점", "3 days"),
    ("tiendas modificadas en los últimos 3 días", "3 days"),
])
def test_periods_in_every_language(nl, period):
    assert unsupported_constants(nl, f'nwr(newer:"{{{{date:{period}}}}}");out;') == [], nl


@pytest.mark.parametrize("nl, date", [
    ("Какие узлы были отредактированы 11 февраля 2019 года?", "2019-02-11"),
    ("¿Qué nodos fueron editados el 11 de febrero de 2019?", "2019-02-11"),
])
def test_month_names_in_every_language(nl, date):
    assert unsupported_constants(nl, f'node(changed:"{date}T00:00:00Z","{date}T23:59:59Z");out;') == [], nl


@pytest.mark.parametrize("nl", ["почтовые ящики в радиусе 5 км от Катманду", "距离学校5公里以内的公园",
                                "学校から5キロメートル以内の公園", "학교에서 5킬로미터 이내의 공원"])
def test_distance_units_in_every_language(nl):
    found = unsupported_constants(nl, "nwr(around:5000,27.7,85.3);out;")
    assert [c.where for c in found] == ["around coords", "around coords"], nl  # 5 km is 5000 m

def test_regex_names_give_their_words():
    query = 'nwr["name"~"^(Aldi|Lidl)$"];out;'
    assert _found("Aldi or Lidl", query) == set()
    assert _found("Aldi", query) == {("name", "Lidl")}
    assert query_constants('nwr["name"~"^[^A-Z]"];out;') == []  # a pattern, not a name


# ------------------------------------------------------------ bad input

@pytest.mark.parametrize("nl, query", [
    ("cafes in Bonn", "node[broken"),
    ("cafes in Bonn", '{{geocodeArea:"Berlin"->.a; nwr[amenity=cafe](area.a; out;'),
    ("cafes in Bonn", ""),
    ("cafes in Bonn", None),
    ("", '{{geocodeArea:"Bonn"}}->.a;nwr(area.a);out;'),
    ("🚰🚰🚰", '{{geocodeArea:"Bonn"}}->.a;nwr(area.a);out;'),
    (None, "node(1);out;"),
    (42, "node(1);out;"),
    ("مقاهي في القاهرة", '{{geocodeArea:"القاهرة"}}->.a;nwr(area.a);out;'),
    ("x" * 5000, "node(1);" * 500 + "out;"),
])
def test_bad_input_gives_a_list_not_an_exception(nl, query):
    found = unsupported_constants(nl, query)
    assert isinstance(found, list) and all(isinstance(c, Constant) for c in found)


def test_bad_input_details():
    assert _found("", '{{geocodeArea:"Bonn"}}->.a;nwr(area.a);out;') == {("place", "Bonn")}
    assert _found("🚰🚰🚰", '{{geocodeArea:"Bonn"}}->.a;nwr(area.a);out;') == {("place", "Bonn")}
    assert unsupported_constants("مقاهي في القاهرة", '{{geocodeArea:"القاهرة"}}->.a;nwr(area.a);out;') == []
    assert learn_place_aliases([(None, None), ("", ""), ("🚰", "node[broken")]) == {}
    assert name_spans(None) == []


# ------------------------------------------------------------ learning and measuring

def test_learning_keeps_a_spelling_seen_alone_and_drops_ambiguous_ones():
    q = '{{geocodeArea:"Wien"}}->.a;nwr(area.a);out;'
    assert learn_place_aliases([("cafes in Vienna", q)]) == {"Wien": {"vienna"}}
    # one request, two candidates: nothing to learn from it
    assert learn_place_aliases([("Cafes in Vienna near Stephansplatz", q)]) == {}
    # seen twice with the same spelling, once with a street: the spelling wins
    pairs = [("cafes in Vienna", q), ("bars in Vienna", q), ("pubs near Stephansplatz", q)]
    assert learn_place_aliases(pairs) == {"Wien": {"vienna"}}


def test_aliases_learned_from_train_are_spellings(aliases):
    assert {"germany"} <= aliases["Deutschland"] and "italy" in aliases["Italia"]
    assert "munich" in aliases["München"] and "ukraine" in aliases["Україна"]
    words = {s for spellings in aliases.values() for s in spellings}
    assert not words & {"name", "current view", "show", "primary"}
    assert 40 <= len(aliases) <= 200


def test_learned_aliases_are_cached_in_the_user_cache(tmp_path, monkeypatch):
    """A single `geoql compile` reads the aliases back instead of learning them again."""
    from geoql.eval import faithfulness

    monkeypatch.setenv("GEOQL_CACHE_DIR", str(tmp_path))
    faithfulness._learned_from.cache_clear()
    learned = train_place_aliases(data_dir())
    cached = sorted((tmp_path / "place-aliases").glob(f"v{faithfulness.ALIASES_VERSION}-*.json"))
    assert len(cached) == 1
    faithfulness._learned_from.cache_clear()
    monkeypatch.setattr(faithfulness, "learn_place_aliases", lambda pairs: pytest.fail("learned again"))
    assert train_place_aliases(data_dir()) == learned
    cached[0].write_text("not json")  # a damaged cache is learned again, not an error
    faithfulness._learned_from.cache_clear()
    monkeypatch.undo()
    monkeypatch.setenv("GEOQL_CACHE_DIR", str(tmp_path))
    assert train_place_aliases(data_dir()) == learned
    faithfulness._learned_from.cache_clear()
