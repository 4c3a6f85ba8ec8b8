"""The user-request benchmark's data (eval/data/user_requests.jsonl): every row well-formed, the
coverage the issue asks for, a fixed stratified split, no request from OverpassNL or OsmNL, every
row answerable; and right and wrong answers written by hand for a sample of rows."""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import pytest

from geoql.eval import facts as F
from geoql.eval.userbench import CLASSES, Report, format_report, load_rows, read_answers, report_json, score
from geoql.nl.text import fold
from testdata import data_dir, osmnl_dir

ROWS = load_rows("all")
BY_ID = {r.id: r for r in ROWS}


# -- the data ------------------------------------------------------------------------------

def test_size_languages_and_classes():
    """At least 420 requests in at least 12 languages, English about a quarter, every other
    language at least 20, every class at least 20."""
    langs = Counter(r.lang for r in ROWS)
    assert len(ROWS) >= 420
    assert {"en", "de", "fr", "es", "it", "pt", "ru", "zh", "ja", "ko", "tr", "pl"} <= set(langs)
    assert 0.2 <= langs["en"] / len(ROWS) <= 0.3, langs
    assert all(n >= 20 for lang, n in langs.items()), langs
    classes = Counter(r.cls for r in ROWS)
    assert set(classes) == set(CLASSES)
    assert all(n >= 20 for n in classes.values()), classes


def test_split_is_stratified():
    """dev and test are halves of every class (±1) and of every language (±2)."""
    for key in (lambda r: r.cls, lambda r: r.lang):
        halves = defaultdict(Counter)
        for r in ROWS:
            halves[key(r)][r.split] += 1
        for group, c in halves.items():
            assert abs(c["dev"] - c["test"]) <= (1 if key(ROWS[0]) == ROWS[0].cls else 2), (group, c)
    assert {r.id for r in load_rows("dev")} | {r.id for r in load_rows("test")} == set(BY_ID)


def test_rows_are_json_lines_with_their_fields():
    from geoql.eval.userbench import REQUESTS_FILE
    lines = REQUESTS_FILE.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(ROWS)
    for line in lines:
        row = json.loads(line)
        assert row["request"] == row["request"].strip() and "?" not in row["request"], row["id"]
        assert row["id"].startswith(row["lang"] + "-")


def _grams(text: str, n: int = 4) -> set:
    text = f" {fold(text)} "
    return {text[i:i + n] for i in range(len(text) - n + 1)}


def test_no_request_comes_from_overpassnl_or_osmnl():
    """No request equals, or shares most of its character 4-grams with, a request of OverpassNL
    (train, dev) or OsmNL dev: they were written for this benchmark."""
    theirs = []
    for path in [data_dir() / "dataset.train.nl", data_dir() / "dataset.dev.nl", *sorted(osmnl_dir().glob("dev.*.nl"))]:
        theirs += [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    index: dict[str, list[int]] = defaultdict(list)
    sizes = []
    for i, text in enumerate(theirs):
        grams = _grams(text)
        sizes.append(len(grams))
        for g in grams:
            index[g].append(i)
    folded = {fold(t) for t in theirs}
    for row in ROWS:
        assert fold(row.request) not in folded, row.id
        grams = _grams(row.request)
        shared = Counter(i for g in grams for i in index.get(g, ()))
        best = max((n / (len(grams) + sizes[i] - n) for i, n in shared.items()), default=0.0)
        assert best < 0.6, (row.id, row.request, best)


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def reference_answer(row) -> str:
    """A plain right answer built from the facts (the first accepted tag of every requirement,
    ``{{geocodeArea:..}}`` for places): proof that every row can be answered at all."""
    pre, places = [], {}

    def area(pid):
        if pid not in places:
            places[pid] = f"a{len(places)}"
            pre.append(f"{{{{geocodeArea:{row.facts.places.places[pid].names[0]}}}}}->.{places[pid]};")
        return places[pid]

    def atom(a):
        if a.op == "=":
            return f"[{_quote(a.key)}={_quote(a.value)}]"
        if a.op == "*":
            return f"[{_quote(a.key)}]"
        if a.op == "!":
            return f"[!{_quote(a.key)}]"
        if a.op == "!=":
            return f"[{_quote(a.key)}!={_quote(a.value)}]"
        if a.op == "~":
            rx = a.value.removeprefix("(?i)")
            return f"[{_quote(a.key)}~{_quote(rx)}" + (",i]" if rx != a.value else "]")
        return f"(if: t[{_quote(a.key)}] {a.op} {a.value})"

    def statements(t) -> list[str]:
        s, where = t.scope, ""
        if s.kind == "in":
            where = f"(area.{area(s.place)})"
        elif s.kind == "point":
            where = f"(around:{s.radius:g},{{{{geocodeCoords:{row.facts.places.places[s.place].names[0]}}}}})"
        elif s.kind == "at":
            where = f"(around:{s.radius:g},{s.coords[0]},{s.coords[1]})"
        elif s.kind == "view":
            where = "({{bbox}})"
        elif s.kind == "bbox":
            where = "(" + ",".join(f"{x:g}" for x in s.bbox) + ")"
        elif s.kind == "of":
            name = f"s{len(pre)}"
            pre.append("(" + "".join(statements(s.anchor)) + f")->.{name};")
            where = f"(around.{name}:{s.radius:g})"
        extra = ""
        if t.since:
            start = f"{t.since[1].isoformat()}T00:00:00Z" if t.since[0] == "abs" else f"{{{{date:{t.since[1] / 86400:g} days}}}}"
            extra = f'(changed:"{start}","{t.until[1].isoformat()}T23:59:59Z")' if t.until else f'(newer:"{start}")'
        if t.user:
            extra += f"(user:{_quote(t.user)})"
        if t.ids:
            extra += "(id:" + ",".join(map(str, t.ids)) + ")"
        tags = "".join(atom(g[0]) for g in t.groups)
        return [f"{typ}{tags}{extra}{where};" for typ in (t.types or ("nwr",))]

    body = [st for t in row.facts.want for st in statements(t)]
    kinds = [k for k in ("count", "geom", "center", "meta") if k in row.facts.output] or ["center"]
    head = "[out:csv(::id," + ",".join(_quote(c) for c in row.facts.csv) + ")];" if "csv" in row.facts.output else ""
    return head + "".join(pre) + "(" + "".join(body) + ");out " + " ".join(kinds) + ";"


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_every_row_can_be_answered(row):
    verdict = F.check(row.facts, reference_answer(row))
    assert verdict.ok, [str(m) for m in verdict.misses]


# -- right and wrong answers written by hand -------------------------------------------------

RIGHT = {
    "en-001": '[out:json][timeout:25];{{geocodeArea:Lyon}}->.searchArea;nwr["amenity"="pharmacy"](area.searchArea);out center;',
    "de-001": 'area["name"="Freiburg im Breisgau"]["boundary"="administrative"]->.a;(node["amenity"="pharmacy"](area.a);'
              'way["amenity"="pharmacy"](area.a););out;>;out skel qt;',
    "zh-002": '{{geocodeArea:成都}}->.a;nwr["tourism"="museum"](area.a);out center;',
    "en-007": '{{geocodeArea:Dublin}}->.a;nwr["amenity"="parking"](area.a);out center;',
    "de-003": '{{geocodeArea:Stuttgart}}->.searchArea;nwr["amenity"="fuel"](area.searchArea);out center;',
    "pl-003": '{{geocodeArea:Kraków}}->.a;nwr["amenity"="cafe"](area.a);out center;',
    "tr-003": '{{geocodeArea:İstanbul}}->.a;(nwr["amenity"="place_of_worship"]["religion"="muslim"](area.a);'
              'nwr["building"="mosque"](area.a););out center;',
    "en-008": '[out:json][timeout:60];area["ISO3166-1"="AT"][admin_level=2]->.a;node["natural"="peak"](area.a);out;',
    "en-013": '{{geocodeArea:Heidelberg}}->.a;nwr["amenity"="cafe"]["internet_access"~"^(wlan|yes)$"](area.a);out center;',
    "it-010": '{{geocodeArea:Milano}}->.a;nwr["amenity"~"^(bar|cafe)$"]["internet_access"="wlan"](area.a);out center;',
    "ja-006": '{{geocodeArea:札幌市}}->.a;nwr["amenity"="toilets"]["wheelchair"="yes"](area.a);out center;',
    "en-019": '{{geocodeArea:Leipzig}}->.a;way["highway"="residential"][!"name"](area.a);out geom;',
    "en-022": '{{geocodeArea:Zürich}}->.a;way["building"][!"addr:housenumber"][!"addr:street"](area.a);out geom;',
    "fr-011": '{{geocodeArea:Nice}}->.a;nwr["tourism"="hotel"]["wheelchair"="no"](area.a);out center;',
    "en-026": '{{geocodeArea:Frankfurt am Main}}->.a;way["building"](if: number(t["building:levels"]) > 10)(area.a);out center;',
    "en-030": '{{geocodeArea:Wien}}->.a;nwr["tourism"="hotel"]["stars"~"^[4-7]"](area.a);out center;',
    "en-031": '{{geocodeArea:Poland}}->.a;node["place"~"^(city|town)$"](if: t["population"] > 100000)(area.a);out;',
    "en-033": '{{geocodeArea:Napoli}}->.a;nwr["amenity"="restaurant"]["name"~"pizza",i](area.a);out center;',
    "fr-013": '{{geocodeArea:Paris}}->.a;way["highway"]["name"~"Victor.Hugo"](area.a);out geom;',
    "ru-013": '{{geocodeArea:Самара}}->.a;way["highway"]["name"~"Ленин"](area.a);out geom;',
    "en-040": '{{geocodeArea:Bonn}}->.a;nwr["shop"]["shop"!="supermarket"](area.a);out center;',
    "en-042": '{{geocodeArea:Leeds}}->.a;nwr["amenity"="fuel"]["brand"!="Shell"](area.a);out center;',
    "ko-010": '{{geocodeArea:서울}}->.a;(nwr["amenity"="cafe"](area.a); - nwr["brand:wikidata"="Q37158"](area.a););out center;',
    "en-047": '{{geocodeArea:Seoul}}->.a;nwr["amenity"="cafe"]["brand:wikidata"="Q37158"](area.a);out center;',
    "en-049": '{{geocodeArea:Dublin}}->.a;nwr["brand"="McDonald\'s"](area.a);out center;',
    "en-048": '{{geocodeArea:Leeds}}->.a;(nwr["brand"="Tesco"](area.a);nwr["brand"="Tesco Express"](area.a);'
              'nwr["brand"="Tesco Extra"](area.a););out center;',
    "ru-015": '{{geocodeArea:Казань}}->.a;nwr["shop"="supermarket"]["brand"="Пятёрочка"](area.a);out center;',
    "pl-016": '{{geocodeArea:Polska}}->.a;nwr["amenity"="fuel"]["brand"="Orlen"](area.a);out center;',
    "en-053": '{{geocodeArea:Dublin}}->.a;(nwr["amenity"="bar"](area.a);nwr["amenity"="pub"](area.a););out center;',
    "en-056": '{{geocodeArea:Zürich}}->.a;nwr["amenity"~"^(atm|bank)$"](area.a);out center;',
    "en-060": '{{geocodeArea:Bonn}}->.bonn;{{geocodeArea:Köln}}->.koeln;(nwr["amenity"="cafe"](area.bonn);'
              'nwr["shop"="bakery"](area.koeln););out center;',
    "es-018": 'area[name="Madrid"][admin_level=8]->.m;area[name="Barcelona"][admin_level=8]->.b;'
              '(nwr["amenity"="hospital"](area.m);nwr["amenity"="hospital"](area.b););out center;',
    "en-067": 'nwr["amenity"="toilets"](around:300,{{geocodeCoords:Eiffel Tower}});out center;',
    "en-072": 'nwr["amenity"="parking"](around:1609,{{geocodeCoords:Wembley Stadium}});out center;',
    "de-025": 'nwr["amenity"="hospital"](around:5000,{{geocodeCoords:München Hauptbahnhof}});out center;',
    "en-074": '{{geocodeArea:Zürich}}->.z;nwr["leisure"="playground"](area.z)->.p;node["amenity"="bench"](around.p:50);out;',
    "zh-018": '{{geocodeArea:成都}}->.a;nwr["railway"="station"]["station"="subway"](area.a)->.s;'
              'nwr["shop"="convenience"](around.s:200);out center;',
    "en-081": '{{geocodeArea:Hamburg}}->.a;nwr["amenity"="pharmacy"](area.a);out count;',
    "en-084": '{{geocodeArea:Bayern}}->.a;(way["waterway"="river"](area.a);relation["waterway"="river"](area.a););out geom;',
    "en-085": '[out:csv(::type,::id,"name","opening_hours")];{{geocodeArea:Porto}}->.a;nwr["amenity"="cafe"](area.a);out;',
    "en-086": '{{geocodeArea:Brugge}}->.a;nwr["tourism"="hotel"](area.a);out meta center;',
    "zh-020": '{{geocodeArea:杭州}}->.a;nwr["leisure"="park"](area.a);out center;',
    "en-088": 'node["amenity"="bench"]({{bbox}});out;',
    "en-090": '(node["highway"="bus_stop"](52.50,13.35,52.54,13.42););out;',
    "en-091": 'nwr["amenity"="restaurant"](around:500,48.8566,2.3522);out center;',
    "en-095": '[bbox:{{bbox}}];nwr["building"](newer:"2024-01-01T00:00:00Z");out center;',
    "en-096": 'nwr(user:"bob_the_mapper")(newer:"{{date:7 days}}")({{bbox}});out meta;',
    "en-099": '{{geocodeArea:Lisboa}}->.a;nwr["amenity"="restaurant"](changed:"2023-01-01T00:00:00Z","2023-07-01T00:00:00Z")(area.a);out center;',
    "es-027": '{{geocodeArea:Sevilla}}->.a;nwr["amenity"="bar"](user:"pepe_osm")(area.a);out meta;',
    "en-103": 'way(50637691);out geom;',
    "en-105": 'node(id:21447063,21447064);out;',
    "en-106": 'relation(1543125);out geom;',
    "en-109": '{{geocodeArea:York}}->.a;nwr["amenity"="pub"]["name"="The Crown"](area.a);out center;',
    "fr-028": '{{geocodeArea:Paris}}->.a;nwr["amenity"="restaurant"]["name"="Le Procope"](area.a);out center;',
}

# The misses, and others a neighbour's copy makes: (row, query, the kinds of fact that fail).
WRONG = [
    ("en-007", '{{geocodeArea:"dublin"}}->.searchArea;(node["leisure"="park"](area.searchArea);'
               'way["leisure"="park"](area.searchArea););out;>;out skel qt;', {"tags", "foreign"}),
    ("en-008", '[out:json][timeout:8000];{{geocodeArea:Austria}}->.a;(way["highway"="motorway"](area.a);'
               'node["mountain_pass"="yes"](area.a););out;', {"tags", "foreign"}),
    ("de-003", '{{geocodeArea:Stuttgart}}->.a;nwr["amenity"="kindergarten"](area.a);out;', {"tags", "foreign"}),
    ("en-047", '{{geocodeArea:Seoul}}->.paris;nwr(area.paris);out;', {"tags"}),
    ("en-060", '{{geocodeArea:Köln}}->.a;(nwr["amenity"="cafe"](area.a);nwr["shop"="bakery"](area.a););out;', {"place"}),
    ("en-067", '{{geocodeArea:Eiffel Tower}}->.a;nwr["amenity"="toilets"](area.a);out;', {"relation"}),
    ("en-068", 'area["name"="munich"]->.a;(node["amenity"="hospital"]["maxspeed"]["admin_level"](area.a););out;',
     {"tags", "foreign"}),
    ("en-053", '{{geocodeArea:Dublin}}->.a;nwr["amenity"="pub"](area.a);out;', {"tags"}),
    ("ru-004", '{{geocodeArea:Москва}}->.a;(nwr["amenity"="cafe"](area.a);nwr["amenity"="restaurant"](area.a);'
               'nwr["amenity"="fast_food"](area.a););out;', {"tags", "foreign"}),
    ("en-013", '{{geocodeArea:Heidelberg}}->.a;nwr["amenity"="cafe"](area.a);out;', {"tags"}),
    ("en-033", '{{geocodeArea:Napoli}}->.a;nwr["amenity"="restaurant"](area.a);out;', {"tags"}),
    ("pl-003", '{{geocodeArea:Krakowie}}->.a;nwr["amenity"="cafe"](area.a);out;', {"place", "foreign"}),
    ("en-081", '{{geocodeArea:Hamburg}}->.a;nwr["amenity"="pharmacy"](area.a);out;', {"output"}),
    ("en-001", '{{geocodeArea:Lyon}}->.a;nwr["amenity"="pharmacy"](area.a);out count;', {"output"}),
    ("en-088", 'node["amenity"="bench"];out;', {"relation"}),
    ("en-095", 'nwr["building"]({{bbox}});out;', {"time"}),
    ("en-103", 'nwr(50637691);out;', {"types"}),
    ("en-109", '{{geocodeArea:York}}->.a;nwr["amenity"="pub"]["name"~"crown",i](area.a);out;', {"tags"}),
    ("en-074", '{{geocodeArea:Zürich}}->.z;nwr["amenity"="bench"](area.z);out;', {"relation"}),
    ("en-042", '{{geocodeArea:Leeds}}->.a;nwr["amenity"="fuel"](area.a);out;', {"tags"}),
    ("en-090", 'node["highway"="bus_stop"](13.35,52.50,13.42,52.54);out;', {"place", "foreign"}),
    ("en-072", 'nwr["amenity"="parking"](around:1000,{{geocodeCoords:Wembley Stadium}});out;', {"radius", "foreign"}),
    ("ru-015", '{{geocodeArea:Казань}}->.a;nwr["brand"="Пятерочка"](area.a);out;', {"tags", "foreign"}),
    ("en-095", 'nwr["building"="yes"](newer:"2024-01-01T00:00:00Z")({{bbox}});out;', {"tags"}),
    ("en-112", '{{geocodeArea:Copenhagen}}->.a;nwr["amenity"="restaurant"]["name"~"Noma",i](area.a);out;', {"tags"}),
    ("en-034", '{{geocodeArea:Hamburg}}->.a;way["highway"="residential"]["name"~"bahnhof",i](area.a);out;', {"tags"}),
]


def test_the_sample_covers_every_class():
    assert {BY_ID[i].cls for i in RIGHT} == set(CLASSES)
    assert len(RIGHT) >= 40


@pytest.mark.parametrize("rid", sorted(RIGHT))
def test_right_answers_pass(rid):
    verdict = F.check(BY_ID[rid].facts, RIGHT[rid])
    assert verdict.ok, [str(m) for m in verdict.misses]


@pytest.mark.parametrize("rid, query, failing", WRONG, ids=[f"{w[0]}-{i}" for i, w in enumerate(WRONG)])
def test_wrong_answers_fail(rid, query, failing):
    verdict = F.check(BY_ID[rid].facts, query)
    assert set(verdict.facts) == failing, [str(m) for m in verdict.misses]


# -- scoring and the report ----------------------------------------------------------------------

def test_report_per_class_and_language():
    rows = [BY_ID[i] for i in ("en-001", "en-007", "de-003")]
    report = score(rows, [RIGHT["en-001"], WRONG[0][1], RIGHT["de-003"]])
    assert (report.n, report.ok) == (3, 2)
    assert report.by_class() == {"plain": {"n": 1, "ok": 1, "share": 100.0}, "plural": {"n": 2, "ok": 1, "share": 50.0}}
    assert list(report.by_lang()) == ["en", "de"]
    assert report.by_fact() == {"tags": 1, "foreign": 1}
    text = format_report(report, title="t", misses=5)
    assert "en-007 [plural] car parks in dublin" in text and 'leisure"="park' in text
    figures = report_json(report, split="x")
    assert figures["ok"] == 2 and figures["misses"][0]["facts"] == ["tags", "foreign"]


def test_answers_by_id_or_by_line(tmp_path):
    rows = [BY_ID["en-001"], BY_ID["de-003"]]
    by_id = tmp_path / "a.jsonl"
    by_id.write_text("\n".join(json.dumps({"id": r.id, "query": RIGHT[r.id]}) for r in reversed(rows)) + "\n")
    assert read_answers(by_id, rows) == [RIGHT["en-001"], RIGHT["de-003"]]
    by_line = tmp_path / "a.pred"
    by_line.write_text(RIGHT["en-001"] + "\n" + RIGHT["de-003"] + "\n")
    assert read_answers(by_line, rows) == [RIGHT["en-001"], RIGHT["de-003"]]
    with pytest.raises(Exception, match="no answer for 1 row"):
        read_answers(by_id, rows + [BY_ID["en-007"]])


def test_an_empty_report():
    assert Report([]).share() == 0.0
