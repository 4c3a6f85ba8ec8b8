"""The Overpass client against a real HTTP server on 127.0.0.1 speaking the Overpass protocol."""

from __future__ import annotations

import json
import re
import socket
import sqlite3
import threading

import pytest
from fakes.fixtures import fake_nominatim, fake_overpass  # noqa: F401 (fixtures)
from fakes.servers import (
    Reply,
    gateway_timeout,
    json_reply,
    parse_error,
    payload,
    rate_limited,
    static_error,
)

from geoql.core.errors import GeoqlError
from geoql.eval.dataset import resolve_data_dir
from geoql.osm.cache import SqliteStore
from geoql.osm.nominatim import Nominatim, NominatimConfig
from geoql.osm.overpass import (
    EVAL_MAXSIZE,
    OverpassClient,
    OverpassConfig,
    OverpassError,
    classify,
    prepare_query,
)


def gold_rows() -> list[dict]:
    with open(resolve_data_dir() / "reference" / "gold_reference.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def make_client(server, tmp_path, geocoder=None, **overrides) -> OverpassClient:
    options = {"url": server.url, "cache_dir": str(tmp_path), "backoff_s": 0.01}
    options.update(overrides)
    return OverpassClient(OverpassConfig(**options), geocoder=geocoder)


# ---------------------------------------------------------------- prepare_query


@pytest.mark.parametrize("row", gold_rows()[:400:7], ids=lambda r: r["query"][:40])
def test_prepare_query_sets_official_settings_on_gold_queries(row):
    final = prepare_query(row["query"])
    assert "[out:json]" in final
    assert not re.search(r"\[out:(?!json\])", final)
    assert re.findall(r"timeout:(\d+)", final)[:1] == ["300"]
    for size in re.findall(r"maxsize:(\d+)", final):
        assert int(size) <= EVAL_MAXSIZE
    # The query body itself is untouched apart from the settings.
    assert re.sub(r"\[(out|timeout|maxsize):[^\]]*\]", "", final).replace(";", "").replace(" ", "") == re.sub(
        r"\[(out|timeout|maxsize):[^\]]*\]", "", row["query"].strip()
    ).replace(";", "").replace(" ", "")


@pytest.mark.parametrize(
    "query, expected",
    [
        ("node(1);out;", "[out:json][timeout:300];node(1);out;"),
        ("[out:json][timeout:25];node(1);out;", "[out:json][timeout:300];node(1);out;"),
        ("[out:xml];node(1);out;", "[timeout:300][out:json];node(1);out;"),
        ("[maxsize:2000000000][timeout:900];way;out;", "[out:json][maxsize:1073741824][timeout:300];way;out;"),
        ("[maxsize:1000];way;out;", "[out:json][timeout:300][maxsize:1000];way;out;"),
    ],
)
def test_prepare_query_cases(query, expected):
    assert prepare_query(query) == expected


# ---------------------------------------------------------------- classification


@pytest.mark.parametrize(
    "reply, kind, words",
    [
        (parse_error(), "parse_error", 'Unknown type "nod"'),
        (static_error("line 3: static error: Invalid regular expression: \"(\""), "static_error", "Invalid regular"),
        (json_reply("runtime_timeout.json"), "runtime_timeout", "timed out"),
        (json_reply("out_of_memory.json"), "memory", "2048 MB"),
        (Reply(200, payload("runtime_timeout.xml"), "application/osm3s+xml"), "runtime_timeout", "after 26 seconds"),
        (gateway_timeout(), "gateway_timeout", "too busy"),
        (rate_limited(), "rate_limited", "rate_limited"),
        (Reply(500, "Internal Server Error", "text/plain"), "http_error", "500"),
        (Reply(200, '{"elements": [', "application/json"), "bad_response", ""),
    ],
)
def test_classify_real_formats(reply, kind, words):
    error = classify(reply.status, reply.body)
    assert error is not None and error.kind == kind
    assert words in str(error)
    assert "<" not in error.detail  # server words without markup


@pytest.mark.parametrize("name", ["heidelberg_cafes.json", "count.json", "empty.json"])
def test_classify_accepts_results(name):
    assert classify(200, payload(name)) is None


def test_result_mentioning_error_words_is_still_a_result():
    text = json.dumps({"elements": [{"type": "node", "id": 1, "tags": {"note": "parse error: rate_limited <strong>Error</strong>"}}]})
    assert classify(200, text) is None


def test_dispatcher_refusal_with_status_200_is_recognised():
    assert classify(200, rate_limited().body).kind == "rate_limited"
    assert classify(200, gateway_timeout().body).kind == "gateway_timeout"


# ---------------------------------------------------------------- the client over HTTP


def test_run_returns_elements_and_caches_by_final_query(fake_overpass, tmp_path):
    fake_overpass.add("amenity=cafe", json_reply("heidelberg_cafes.json"))
    client = make_client(fake_overpass, tmp_path)
    first = client.run('node["amenity=cafe"]({{bbox}});out;', bbox="49.38,8.64,49.43,8.73")
    assert not first.from_cache
    assert len(first.elements) == 17
    assert first.query == '[out:json][timeout:300];node["amenity=cafe"](49.38,8.64,49.43,8.73);out;'
    assert fake_overpass.queries() == [first.query]
    assert fake_overpass.log[0]["user_agent"].startswith("geoql/")

    again = make_client(fake_overpass, tmp_path).run('node["amenity=cafe"]({{bbox}});out;', bbox="49.38,8.64,49.43,8.73")
    assert again.from_cache and again.data == first.data
    assert len(fake_overpass.queries()) == 1  # answered from SQLite
    fresh = client.run('node["amenity=cafe"]({{bbox}});out;', bbox="49.38,8.64,49.43,8.73", use_cache=False)
    assert not fresh.from_cache and len(fake_overpass.queries()) == 2


@pytest.mark.parametrize(
    "reply, kind",
    [
        (parse_error(), "parse_error"),
        (static_error("line 1: static error: For the attribute \"k\" of the element \"has-kv\" the only allowed values are non-empty strings."), "static_error"),
        (json_reply("runtime_timeout.json"), "runtime_timeout"),
        (json_reply("out_of_memory.json"), "memory"),
        (gateway_timeout(), "gateway_timeout"),
        (rate_limited(), "rate_limited"),
    ],
)
def test_run_raises_classified_errors(fake_overpass, tmp_path, reply, kind):
    fake_overpass.add("node", reply)
    client = make_client(fake_overpass, tmp_path, max_retries=1)
    with pytest.raises(OverpassError) as info:
        client.run("node(1);out;")
    assert info.value.kind == kind
    assert str(info.value)[0].isupper()  # a sentence, not a code
    retried = kind in ("gateway_timeout", "rate_limited")
    assert len(fake_overpass.queries()) == (2 if retried else 1)


def test_retries_after_429_then_succeeds(fake_overpass, tmp_path):
    fake_overpass.add("node", rate_limited(retry_after="0"), gateway_timeout(), json_reply("count.json"))
    result = make_client(fake_overpass, tmp_path, max_retries=3).run("node(1);out count;")
    assert result.elements[0]["tags"]["total"] == "15"
    assert len(fake_overpass.queries()) == 3


def test_transient_errors_are_not_cached_but_syntax_errors_are(fake_overpass, tmp_path):
    fake_overpass.add("busy", gateway_timeout(), json_reply("empty.json"))
    fake_overpass.add("nod(", parse_error())
    client = make_client(fake_overpass, tmp_path, max_retries=0)
    with pytest.raises(OverpassError):
        client.run("node(1);out; // busy")
    assert client.run("node(1);out; // busy").elements == []  # asked again, not served the 504
    for _ in range(2):
        with pytest.raises(OverpassError) as info:
            client.run("nod(1);out;")
        assert info.value.kind == "parse_error"
    assert sum("nod(" in q for q in fake_overpass.queries()) == 1


def test_slow_server_gives_timeout_error(fake_overpass, tmp_path):
    fake_overpass.add("slow", Reply(200, payload("empty.json"), delay_s=1.5))
    client = make_client(fake_overpass, tmp_path, http_timeout_s=0.3, max_retries=2)
    with pytest.raises(OverpassError) as info:
        client.run("node(1);out; // slow")
    assert info.value.kind == "timeout"
    assert len(fake_overpass.queries()) == 1  # a slow query is not retried


def test_unreachable_server(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = OverpassClient(
        OverpassConfig(url=f"http://127.0.0.1:{port}/api/interpreter", cache_dir=str(tmp_path), max_retries=1, backoff_s=0)
    )
    with pytest.raises(OverpassError) as info:
        client.run("node(1);out;")
    assert info.value.kind == "unreachable" and str(port) in str(info.value)


def test_empty_query_and_bad_shortcut_are_clear_errors(fake_overpass, tmp_path):
    client = make_client(fake_overpass, tmp_path)
    with pytest.raises(OverpassError, match="empty"):
        client.run("   ")
    with pytest.raises(OverpassError, match="map box"):
        client.run("node({{bbox}});out;")
    with pytest.raises(OverpassError, match="unknown overpass-turbo shortcut"):
        client.run("node({{nonsense}});out;", bbox="1,2,3,4")
    assert fake_overpass.queries() == []


def test_geocode_area_expands_through_nominatim(fake_overpass, fake_nominatim, tmp_path):
    geocoder = Nominatim(NominatimConfig(url=fake_nominatim.url, cache_dir=str(tmp_path), min_interval_s=0))
    fake_overpass.add("area(id:3600285864)", json_reply("heidelberg_cafes.json"))
    client = make_client(fake_overpass, tmp_path, geocoder=geocoder)
    result = client.run('{{geocodeArea:Heidelberg}}->.a;node[amenity=cafe](area.a);out;')
    assert len(result.elements) == 17
    assert fake_overpass.queries() == ["[out:json][timeout:300];area(id:3600285864)->.a;node[amenity=cafe](area.a);out;"]


# ---------------------------------------------------------------- cache safety


def test_cache_survives_concurrent_writers(fake_overpass, tmp_path):
    fake_overpass.add("node", json_reply("heidelberg_cafes.json", delay_s=0.01))
    errors: list[BaseException] = []

    def worker(w: int):
        client = make_client(fake_overpass, tmp_path)  # own connections, like another process
        try:
            for i in range(10):
                assert len(client.run(f"node({i % 5 + w * 5});out;").elements) == 17
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    store = SqliteStore(tmp_path / OverpassClient.CACHE_FILE, "results")
    assert store.integrity_ok()
    assert len(store) == 40
    with sqlite3.connect(tmp_path / OverpassClient.CACHE_FILE) as conn:
        assert conn.execute("SELECT COUNT(DISTINCT key) FROM results").fetchone()[0] == 40


def test_cache_defaults_to_the_user_cache_dir(fake_overpass, tmp_path, monkeypatch):
    monkeypatch.setenv("GEOQL_CACHE_DIR", str(tmp_path / "cache"))
    client = OverpassClient(OverpassConfig(url=fake_overpass.url))
    assert client.run("node(1);out;").elements == []
    assert (tmp_path / "cache" / OverpassClient.CACHE_FILE).is_file()
    assert client.geocoder.store.path == tmp_path / "cache" / Nominatim.CACHE_FILE


def test_errors_derive_from_the_geoql_root(fake_overpass, tmp_path):
    with pytest.raises(GeoqlError, match="empty"):
        make_client(fake_overpass, tmp_path).run("")


def test_corrupt_cache_file_is_moved_aside_not_deleted(fake_overpass, tmp_path):
    bad = tmp_path / OverpassClient.CACHE_FILE
    bad.write_bytes(b"this is not a database" * 100)
    client = make_client(fake_overpass, tmp_path)
    assert client.run("node(1);out;").elements == []
    kept = list(tmp_path.glob(OverpassClient.CACHE_FILE + ".corrupt-*"))
    assert len(kept) == 1 and kept[0].read_bytes().startswith(b"this is not a database")


@pytest.mark.parametrize(
    "options, words",
    [
        ({"url": "overpass-api.de/api/interpreter"}, "must start with http"),
        ({"query_timeout_s": 0}, "official value is 300"),
        ({"max_retries": -1}, "never retry"),
        ({"http_timeout_s": 0}, "e.g. 500"),
    ],
)
def test_config_errors_name_the_fix(options, words):
    with pytest.raises(ValueError, match=words):
        OverpassConfig(**options)


def test_result_json_round_trip(fake_overpass, tmp_path):
    fake_overpass.add("node", json_reply("heidelberg_cafes.json"))
    data = make_client(fake_overpass, tmp_path).run("node(1);out;").data
    assert data == json.loads(payload("heidelberg_cafes.json"))


def test_long_queries_go_by_post(fake_overpass, tmp_path):
    fake_overpass.add("node", json_reply("count.json"))
    client = make_client(fake_overpass, tmp_path)
    long_query = "(" + "".join(f"node({i});" for i in range(400)) + ");out count;"
    assert client.run(long_query).elements[0]["type"] == "count"
    assert client.run("node(1);out count;").elements[0]["type"] == "count"
    assert [e["method"] for e in fake_overpass.log] == ["POST", "GET"]
    assert fake_overpass.log[0]["query"] == prepare_query(long_query)


def test_relative_dates_count_back_from_the_reference_time(fake_overpass, tmp_path):
    from datetime import datetime, timezone

    client = make_client(fake_overpass, tmp_path)
    now = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)
    client.run("node(newer:'{{date:2 weeks}}');out;", now=now)
    assert fake_overpass.queries() == ["[out:json][timeout:300];node(newer:'2024-02-16T12:00:00Z');out;"]


def test_unreachable_server_says_no_server_answered_and_counts_down(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/api/interpreter"
    client = OverpassClient(OverpassConfig(url=url, cache_dir=str(tmp_path), max_retries=2, backoff_s=0.3))
    waits = []
    with pytest.raises(OverpassError) as info:
        client.run("node(1);out;", on_wait=waits.append)
    assert str(info.value) == f"No server answered at {url} (connection refused)."
    assert "Server said" not in str(info.value)
    assert [w.retry for w in waits][:1] == [1] and waits[-1].retry == 2 and {w.retries for w in waits} == {2}
    assert all(w.error.kind == "unreachable" and 0 < w.left_s <= 0.6 for w in waits)
