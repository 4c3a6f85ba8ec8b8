"""EX / EX-soft as the official OverpassNL evaluation defines them, over real HTTP on 127.0.0.1."""

from __future__ import annotations

import json

import pytest
from fakes.fixtures import fake_nominatim, fake_overpass  # noqa: F401 (fixtures)
from fakes.servers import (
    Reply,
    error_page,
    gateway_timeout,
    json_reply,
    parse_error,
    payload,
    rate_limited,
    static_error,
)

from geoql.eval.dataset import Example, load_split
from geoql.eval.execution import compare, evaluate_execution, outcome_from_text
from geoql.osm.nominatim import Nominatim, NominatimConfig
from geoql.osm.overpass import OverpassClient, OverpassConfig, OverpassError

# ---------------------------------------------------------------- outcomes


def elements(*pairs) -> str:
    return json.dumps({"elements": [{"type": t, "id": i} for t, i in pairs]})


@pytest.mark.parametrize(
    "text, expected",
    [
        (payload("heidelberg_cafes.json"), None),  # checked separately below
        (payload("count.json"), ("count_15", 15)),
        (payload("empty.json"), ([], 0)),
        (elements(("way", 2), ("node", 10), ("node", 2)), (["node_10", "node_2", "way_2"], 3)),
        (elements(("node", 1), ("node", 1)), (["node_1", "node_1"], 2)),  # duplicates count
        (json.dumps({"elements": [{"type": "count", "id": 0, "tags": {"all": "4"}}, {"type": "node", "id": 1}]}), ("count_4", 4)),
        (parse_error().body, ("parse_error", -1)),
        (static_error("line 1: static error: Invalid regular expression: \"[\"").body, ("static_error_re", -1)),
        (static_error('line 1: static error: Unknown attribute "regexp" in element "has-kv".').body, ("static_error_re", -1)),
        (static_error("line 2: static error: The selected output format does not support the diff or adiff mode.").body, ("static_error_diff", -1)),
        (static_error("line 1: static error: Bad timestamp value").body, ("static_error_timestamp", -1)),
        (static_error("line 1: static error: Latitudes in bounding boxes must be between -90.0 and 90.0.").body, ("static_error_bbox", -1)),
        (static_error('line 1: static error: For the attribute "k" of the element "has-kv" the only allowed values are non-empty strings.').body, ("static_error_attribute_value", -1)),
        (static_error("line 1: static error: A convert statement can have at most one tag.").body, ("static_error_convert", -1)),
        (payload("runtime_timeout.json"), ("runtime_error_timeout", -1)),
        (static_error("line 1: static error: something new").body, ("unknown_error", -2)),
        (rate_limited().body, ("unknown_error", -2)),
        (gateway_timeout().body, ("unknown_error", -2)),
        ("", ("unknown_error", -2)),
        (json.dumps({"elements": [{"type": "node"}]}), ("unknown_error", -2)),
    ],
)
def test_outcome_from_text(text, expected):
    outcome = outcome_from_text(text)
    if expected is None:
        assert outcome[1] == 17 and outcome[0][0] == "node_240109189" and outcome[0] == sorted(outcome[0])
    else:
        assert outcome == expected


def test_memory_remark_is_not_an_official_error():
    # The official code only knows "memory_error" for giant answers; a memory
    # remark with partial elements is scored on those elements.
    assert outcome_from_text(payload("out_of_memory.json")) == (["node_21"], 1)


# Hand-made cases: (gold outcome, predicted outcome, EX, EX-soft).
A, B, C, D = "node_1", "node_2", "way_3", "relation_4"
CASES = [
    ("same list", ([A, B, C], 3), ([A, B, C], 3), 1, 1.0),
    ("subset", ([A, B, C, D], 4), ([A, B], 2), 0, 0.5),
    ("superset", ([A, B], 2), ([A, B, C, D], 4), 0, 0.5),
    ("disjoint", ([A], 1), ([B], 1), 0, 0.0),
    ("duplicates differ", ([A, A], 2), ([A], 1), 0, 1.0),
    ("same count", ("count_15", 15), ("count_15", 15), 1, 1.0),
    ("other count", ("count_15", 15), ("count_14", 14), 0, 0.0),
    ("count vs list", ("count_1", 1), ([A], 1), 0, 0.0),
    ("list vs count", ([A], 1), ("count_1", 1), 0, 0.0),
    ("both empty", ([], 0), ([], 0), 0, 0.0),
    ("pred empty", ([A], 1), ([], 0), 0, 0.0),
    ("gold empty", ([], 0), ([A], 1), 0, 0.0),
    ("zero counts", ("count_0", 0), ("count_0", 0), 0, 0.0),
    ("pred error", ([A], 1), ("parse_error", -1), 0, 0.0),
    ("same error", ("runtime_error_timeout", -1), ("runtime_error_timeout", -1), 0, 0.0),
    ("gold error", ("unknown_error", -2), ([A], 1), 0, 0.0),
]


@pytest.mark.parametrize("name, gold, pred, ex, soft", CASES, ids=[c[0] for c in CASES])
def test_compare_hand_made_cases(name, gold, pred, ex, soft):
    assert compare(gold, pred) == (ex, pytest.approx(soft))


# ---------------------------------------------------------------- end to end over HTTP


def ex(index, query, bbox="49.38,8.64,49.43,8.73") -> Example:
    return Example("dev", index, f"request {index}", query, bbox)


def geocoder_for(server, tmp_path):
    return Nominatim(NominatimConfig(url=server.url, cache_dir=str(tmp_path), min_interval_s=0))


def scenario(fake_overpass):
    """Gold/pred pairs whose answers the loopback Overpass serves (needles are in the queries)."""
    fake_overpass.add("/*cafes*/", json_reply("heidelberg_cafes.json"))
    fake_overpass.add("/*half*/", Reply(200, elements(("node", 240109189), ("node", 268113427))))
    fake_overpass.add("/*count15*/", json_reply("count.json"))
    fake_overpass.add("/*count0*/", Reply(200, json.dumps({"elements": [{"type": "count", "id": 0, "tags": {"total": "0"}}]})))
    fake_overpass.add("/*broken*/", parse_error())
    fake_overpass.add("/*slowgold*/", json_reply("runtime_timeout.json"))
    # Retry-After: 0 keeps the default client's backoff out of the test's run time.
    fake_overpass.add("/*busy*/", Reply(504, gateway_timeout().body, "text/html", headers={"Retry-After": "0"}))
    gold_cafes = "node[amenity=cafe]({{bbox}});out; /*cafes*/"
    examples = [
        ex(0, gold_cafes),
        ex(1, gold_cafes),
        ex(2, "node[amenity=cafe]({{bbox}});out count; /*count15*/"),
        ex(3, "node[amenity=cafe]({{bbox}});out count; /*count15*/"),
        ex(4, gold_cafes),
        ex(5, gold_cafes),
        ex(6, "node[amenity=bar]({{bbox}});out; /*empty*/"),
        ex(7, "{{geocodeArea:Heidelberg}}->.a;node(area.a);out; /*cafes*/"),
        ex(8, gold_cafes),
        ex(9, "node;out; /*slowgold*/"),
        ex(10, gold_cafes),
    ]
    preds = [
        "[out:xml][timeout:25];node[amenity=cafe]({{bbox}});out; /*cafes*/",  # same elements
        "node[amenity=cafe]({{bbox}});out; /*half*/",  # 2 of 17
        "node[amenity=cafe]({{bbox}});out count; /*count15*/",  # same count
        "node[amenity=cafe]({{bbox}});out count; /*count0*/",  # empty count
        "nod[amenity=cafe]({{bbox}});out; /*broken*/",  # parse error
        "{{geocodeArea:Atlantis}}->.a;node(area.a);out; /*cafes*/",  # geocoder finds nothing
        "node[amenity=bar]({{bbox}});out; /*empty*/",  # both empty
        "{{geocodeArea:Heidelberg}}->.a;node(area.a);out; /*cafes*/",  # geocoded, same
        "",  # no prediction
        "node;out; /*slowgold*/",  # gold timed out on the server
        "node;out; /*busy*/",  # server busy: unknown_error, not cached
    ]
    return preds, examples


EXPECTED = [(1, 1.0), (0, 2 / 17), (1, 1.0), (0, 0.0), (0, 0.0), (0, 0.0), (0, 0.0), (1, 1.0), (0, 0.0), (0, 0.0), (0, 0.0)]


def test_evaluate_execution_end_to_end(fake_overpass, fake_nominatim, tmp_path):
    preds, examples = scenario(fake_overpass)
    geocoder = geocoder_for(fake_nominatim, tmp_path)
    client = OverpassClient(OverpassConfig(url=fake_overpass.url, cache_dir=str(tmp_path), max_retries=0))
    result = evaluate_execution(preds, examples, cache_dir=tmp_path, client=client, geocoder=geocoder, progress=False)

    got = [(row["ex"], row["ex_soft"]) for row in result["per_example"]]
    assert [g[0] for g in got] == [e[0] for e in EXPECTED]
    assert [g[1] for g in got] == pytest.approx([e[1] for e in EXPECTED])
    assert result["n"] == 11
    assert result["ex"] == pytest.approx(100 * 3 / 11)
    assert result["ex_soft"] == pytest.approx(100 * (3 + 2 / 17) / 11)
    assert result["pred_errors"] == {"parse_error": 2, "nominatim": 1, "runtime_error_timeout": 1, "unknown_error": 1}
    assert result["gold_errors"] == {"runtime_error_timeout": 1}
    assert result["pred_empty"] == 2 and result["gold_empty"] == 1
    row = result["per_example"][4]
    assert row["pred"] == {"result": "parse_error", "num": -1} and row["gold"] == {"result": "elements", "num": 17}

    # Every query went out prepared the official way.
    for query in fake_overpass.queries():
        assert query.startswith("[out:json]") and "timeout:300" in query and "{{" not in query
    assert any("area(id:3600285864)" in q for q in fake_overpass.queries())

    # Resume: everything but the 504 comes from the outcome cache.
    before = len(fake_overpass.queries())
    again = evaluate_execution(preds, examples, cache_dir=tmp_path, client=client, geocoder=geocoder, progress=False)
    assert again["per_example"] == result["per_example"]
    assert len(fake_overpass.queries()) == before + 1
    assert "/*busy*/" in fake_overpass.queries()[-1]
    assert again["requests"] == 1


def test_evaluate_execution_default_client_and_workers(fake_overpass, fake_nominatim, tmp_path):
    preds, examples = scenario(fake_overpass)
    result = evaluate_execution(
        preds,
        examples,
        overpass_url=fake_overpass.url,
        cache_dir=tmp_path,
        nominatim_url=fake_nominatim.url,
        workers=4,
        progress=False,
    )
    assert [r["index"] for r in result["per_example"]] == list(range(11))
    assert [r["ex"] for r in result["per_example"]] == [e[0] for e in EXPECTED]
    assert result["overpass_url"] == fake_overpass.url


def test_gold_against_itself_on_dev_examples(fake_overpass, fake_nominatim, tmp_path):
    # Every prepared dev gold query gets the same non-empty answer: EX must be 100.
    fake_overpass.default = json_reply("heidelberg_cafes.json")
    dev = load_split("dev")[:30]
    result = evaluate_execution(
        [e.query for e in dev], dev, overpass_url=fake_overpass.url, cache_dir=tmp_path,
        nominatim_url=fake_nominatim.url, progress=False,
    )
    assert result["ex"] == 100.0 and result["ex_soft"] == 100.0
    assert fake_nominatim.log == []  # dev place names come from the benchmark's geocoder cache


def test_unreachable_server_stops_with_a_clear_error(tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = OverpassClient(
        OverpassConfig(url=f"http://127.0.0.1:{port}/api/interpreter", cache_dir=str(tmp_path), backoff_s=0)
    )
    with pytest.raises(OverpassError, match="No server answered at"):
        evaluate_execution(["node(1);out;"], [ex(0, "node(1);out;")], client=client, cache_dir=tmp_path, progress=False)


def test_length_mismatch():
    with pytest.raises(ValueError, match="one query per example"):
        evaluate_execution(["a"], [], progress=False)


def test_error_page_helper_is_real_format():
    page = error_page('line 1: parse error: Unknown type "nod"')
    assert "<title>OSM3S Response</title>" in page and "&quot;nod&quot;" in page
