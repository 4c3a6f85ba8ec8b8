"""geoql.app.run: checking, sending, retrying with a countdown, and what is said, against the loopback fakes."""

from __future__ import annotations

import json
import socket

import pytest
from fakes.fixtures import fake_nominatim, fake_overpass  # noqa: F401 (fixtures)
from fakes.servers import json_reply, rate_limited

from geoql.app.compile import Compilation
from geoql.app.run import (ENDPOINTS, SyntaxProblem, endpoint_url, export, make_client, mark_problems, run_query,
                           slug, syntax_problems, turbo_link)
from geoql.core.errors import ConfigError
from geoql.osm.overpass import DEFAULT_OVERPASS_URL

BOX = "49.40,8.68,49.41,8.69"


def client(fake_overpass, fake_nominatim, tmp_path, **config):
    return make_client(fake_overpass.url, cache_dir=str(tmp_path), nominatim_url=fake_nominatim.url, **config)


def test_a_run_reads_the_result_and_says_where_it_ran(fake_overpass, fake_nominatim, tmp_path):
    fake_overpass.default = json_reply("heidelberg_cafes.json")
    result = run_query('nwr["amenity"="cafe"]({{bbox}});out;', bbox=BOX, client=client(fake_overpass, fake_nominatim, tmp_path))
    assert result.ok and result.sent and result.kind == ""
    assert result.message.startswith(f"Ran on {fake_overpass.url} (") and result.message.endswith(" s).")
    assert result.final == f'[out:json][timeout:300];nwr["amenity"="cafe"]({BOX});out;'
    assert fake_overpass.queries() == [result.final]
    assert result.summary().startswith("4 elements (2 nodes, 1 way, 1 relation)")
    again = run_query('nwr["amenity"="cafe"]({{bbox}});out;', bbox=BOX, client=client(fake_overpass, fake_nominatim, tmp_path))
    assert again.from_cache and "answer from the cache" in again.message and len(fake_overpass.queries()) == 1


@pytest.mark.parametrize("query, where, words", [
    ('node["amenity"="cafe"({{bbox}});out;', (1, 22), "']' expected - '(' found."),
    ('[out:json];\n{{geocodeArea:"Zürich"}}->.a;\nnwr["amenity"="bench"(area.a);\nout;', (3, 22), "']' expected"),
    ("node(1);\nout ske;", (2, 5), 'Invalid parameter for print: "ske"'),
    ('node(newer:"2020");out;', (1, 0), "timestamp"),
])
def test_a_query_that_does_not_parse_is_never_sent(fake_overpass, fake_nominatim, tmp_path, query, where, words):
    result = run_query(query, bbox=BOX, client=client(fake_overpass, fake_nominatim, tmp_path))
    assert not result.ok and not result.sent and result.kind == "syntax"
    first = result.problems[0]
    assert (first.line, first.column) == where and words in first.message
    line = f"line {where[0]}" + (f", column {where[1]}" if where[1] else "")
    assert f"at {line}: " in result.message and "Nothing was sent" in result.message
    assert fake_overpass.queries() == [] and fake_nominatim.log == []


def test_problems_are_marked_under_their_column():
    query = 'node(1);\nnwr["a"="b"(area.a);'
    marked = mark_problems(query, syntax_problems(query)).splitlines()
    assert marked[:3] == ["line 2, column 12: ']' expected - '(' found.", '   2 | nwr["a"="b"(area.a);',
                          "     |            ^"]
    assert syntax_problems('nwr["amenity"="cafe"]({{bbox}});out;') == []
    assert syntax_problems("  ") == [SyntaxProblem(1, 0, "the query is empty")]


def test_an_unreachable_server_counts_down_and_says_no_server_answered(tmp_path, fake_nominatim):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/api/interpreter"
    heard = []
    result = run_query("node(1);out;", client=make_client(url, cache_dir=str(tmp_path), nominatim_url=fake_nominatim.url,
                                                          max_retries=2, backoff_s=1.0), on_wait=heard.append)
    assert not result.ok and result.sent and result.kind == "unreachable" and result.attempts == 3
    assert result.message.startswith(f"The query did not run: No server answered at {url} (connection refused).")
    assert "Tried 3 times over" in result.message and "choose another server" in result.message
    assert "Server said" not in result.message and "press" not in result.message.lower()
    assert heard[0] == f"No server answered at {url}; trying again in 1 s (retry 1 of 2)."
    assert any("(retry 2 of 2)" in m for m in heard) and all("trying again in" in m for m in heard)


def test_rate_limiting_is_retried_with_its_words(fake_overpass, fake_nominatim, tmp_path):
    fake_overpass.add("node(7)", rate_limited("1"), json_reply("heidelberg_cafes.json"))
    heard = []
    result = run_query("node(7);out;", client=client(fake_overpass, fake_nominatim, tmp_path), on_wait=heard.append)
    assert result.ok and result.attempts == 2 and len(fake_overpass.queries()) == 2
    assert heard and heard[0].startswith(f"{fake_overpass.url} is limiting requests from this address; trying again in 1 s")


def test_a_placeholder_that_cannot_be_filled_is_not_sent(fake_overpass, fake_nominatim, tmp_path):
    result = run_query('{{geocodeArea:"Atlantis"}}->.a;nwr(area.a);out;', client=client(fake_overpass, fake_nominatim, tmp_path))
    assert result.kind == "expansion" and not result.sent and "no place named 'Atlantis'" in result.message
    result = run_query("node({{bbox}});out;", client=client(fake_overpass, fake_nominatim, tmp_path))
    assert result.kind == "expansion" and "map box" in result.message
    assert fake_overpass.queries() == []


def test_a_count_is_exported_as_a_count(fake_overpass, fake_nominatim, tmp_path):
    fake_overpass.default = json_reply("count.json")
    result = run_query('nwr["amenity"="pharmacy"]({{bbox}});out count;', bbox=BOX,
                       client=client(fake_overpass, fake_nominatim, tmp_path))
    assert result.is_count and result.counts == [{"total": 15, "nodes": 12, "ways": 3, "relations": 0}]
    assert result.summary() == "count: 15 (12 nodes, 3 ways, 0 relations)"
    path = export(result, tmp_path / "dl", "How many pharmacies are there in Berlin?")
    assert path.name == "geoql-how-many-pharmacies-are-there-in-berlin.csv"
    assert path.read_text(encoding="utf-8").splitlines() == ["total,nodes,ways,relations", "15,12,3,0"]


def test_downloads_are_named_after_the_request(fake_overpass, fake_nominatim, tmp_path):
    fake_overpass.default = json_reply("heidelberg_cafes.json")
    result = run_query("node(1);out;", client=client(fake_overpass, fake_nominatim, tmp_path))
    path = export(result, tmp_path / "dl", "Benches in Zürich")
    assert path.name == "geoql-benches-in-zurich.geojson"
    assert len(json.loads(path.read_text(encoding="utf-8"))["features"]) == 4
    assert export(run_query("nod(1);", client=client(fake_overpass, fake_nominatim, tmp_path)), tmp_path, "x") is None


@pytest.mark.parametrize("text, expected", [
    ("Benches in Zürich", "benches-in-zurich"), ("  ", ""), ("東京のカフェ", "東京のカフェ"),
    ("Cafés, bars & pubs!", "cafes-bars-pubs"), ("a " * 80, "-".join(["a"] * 30)),
])
def test_slug(text, expected):
    assert slug(text) == expected


def test_turbo_link_carries_the_query():
    from urllib.parse import parse_qs, urlsplit

    query = '[out:json];{{geocodeArea:"Zürich"}}->.a;nwr["amenity"="bench"](area.a);out;'
    link = turbo_link(query)
    assert link.startswith("https://overpass-turbo.eu/?Q=") and parse_qs(urlsplit(link).query)["Q"] == [query]


def test_endpoints():
    assert ENDPOINTS[0] == ("overpass-api.de", DEFAULT_OVERPASS_URL)
    assert all(url.startswith("https://") and url.endswith("/api/interpreter") for _, url in ENDPOINTS)
    assert endpoint_url("overpass.kumi.systems") == "https://overpass.kumi.systems/api/interpreter"
    assert endpoint_url("") == DEFAULT_OVERPASS_URL
    assert endpoint_url("http://127.0.0.1:1/api/interpreter") == "http://127.0.0.1:1/api/interpreter"
    with pytest.raises(ConfigError, match="https://host/api/interpreter"):
        endpoint_url("my-server")
    result = run_query("node(1);out;", endpoint="my-server")
    assert result.kind == "config" and "neither a listed server" in result.message


def test_compilation_run_says_the_same(fake_overpass, fake_nominatim, tmp_path):
    fake_overpass.default = json_reply("heidelberg_cafes.json")
    comp = Compilation(nl="cafes here", query='nwr["amenity"="cafe"]({{bbox}});out;', valid=True)
    result = comp.run(bbox=BOX, client=client(fake_overpass, fake_nominatim, tmp_path))
    assert result.ok and result.message.startswith(f"Ran on {fake_overpass.url}")
    empty = Compilation(nl="!!!", errors=["the request has no words"]).run()
    assert not empty.ok and empty.message == "There is no query to run: the request has no words."
