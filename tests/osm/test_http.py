"""What a server can do to the Overpass client, on 127.0.0.1: drip its answer, send gigabytes,
redirect to an address it should not reach, answer with a page of its own; and what a typed
server address may be (issue 42: SSRF, open proxy, DoS by a slow or huge answer)."""

from __future__ import annotations

import json
import socket
import threading

import pytest
from fakes.fixtures import fake_overpass  # noqa: F401 (fixture)
from fakes.servers import FakeOverpass, Reply, bad_gateway_page, huge_answer, json_reply, payload, redirect

from geoql.osm.overpass import OverpassClient, OverpassConfig, OverpassError


def client_of(server, tmp_path, **overrides) -> OverpassClient:
    options = {"url": server.url, "cache_dir": str(tmp_path), "backoff_s": 0.01, "max_retries": 0}
    options.update(overrides)
    return OverpassClient(OverpassConfig(**options))


def failure(client, query="node(1);out;") -> OverpassError:
    with pytest.raises(OverpassError) as info:
        client.run(query)
    return info.value


def test_the_deadline_is_for_the_whole_answer_not_for_each_read(fake_overpass, tmp_path):
    """A byte every 0.2 s: every read is quick, the answer is not. Read by read (the old client)
    the 3 s answer came through a 1 s timeout."""
    fake_overpass.default = Reply(200, payload("empty.json")[:15], drip_s=0.2)
    error = failure(client_of(fake_overpass, tmp_path, http_timeout_s=1.0))
    assert error.kind == "timeout" and "No whole answer from" in error.message and "within 1 s" in error.message


def test_headers_dripped_slowly_meet_the_deadline_too(tmp_path):
    """The status line and headers one byte at a time: the deadline holds before the body too."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    stop = threading.Event()

    def serve():
        conn, _ = listener.accept()
        with conn:
            for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Slow: " + b"a" * 100:
                if stop.is_set():
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return
                stop.wait(0.1)

    threading.Thread(target=serve, daemon=True).start()
    try:
        client = OverpassClient(OverpassConfig(url=f"http://127.0.0.1:{port}/api/interpreter", cache_dir=str(tmp_path),
                                               http_timeout_s=1.0, max_retries=0))
        assert failure(client).kind == "timeout"
    finally:
        stop.set()
        listener.close()


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_an_answer_past_the_size_cap_stops_with_a_clear_message(fake_overpass, tmp_path, compressed):
    body = huge_answer(3)
    assert json.loads(body)["elements"]  # a real answer, only too large
    fake_overpass.default = Reply(200, body, gzip=compressed)
    error = failure(client_of(fake_overpass, tmp_path, max_answer_bytes=2**20))
    assert error.kind == "too_large"
    assert "is larger than 1 MB" in error.message and "narrow the area or the filters" in error.message


def test_an_answer_under_the_cap_is_read_whole_also_gzipped(fake_overpass, tmp_path):
    fake_overpass.default = json_reply("heidelberg_cafes.json", gzip=True)
    result = client_of(fake_overpass, tmp_path, max_answer_bytes=2**20).run("node(1);out;")
    assert result.data == json.loads(payload("heidelberg_cafes.json"))


def test_a_redirect_is_never_followed(tmp_path):
    """A server that sends the client elsewhere (here: another loopback server) reaches nobody."""
    with FakeOverpass() as public, FakeOverpass() as inside:
        public.default = redirect(inside.url + "?data=node(1);out;")
        error = failure(client_of(public, tmp_path))
        assert error.kind == "redirect" and "does not follow redirects" in error.message
        assert inside.queries() == [] and len(public.queries()) == 1


def test_a_page_that_is_not_overpass_is_not_shown(fake_overpass, tmp_path):
    fake_overpass.default = bad_gateway_page("session=7f3a9c internal-token")
    error = failure(client_of(fake_overpass, tmp_path))
    assert error.kind == "http_error" and "answered HTTP 502" in error.message
    assert "7f3a9c" not in str(error) and "10.0.0.7" not in str(error) and error.detail == ""


def test_a_non_json_answer_is_not_shown(fake_overpass, tmp_path):
    fake_overpass.default = Reply(200, "<html>admin console, password hint: tulip</html>", "text/html")
    error = failure(client_of(fake_overpass, tmp_path))
    assert error.kind == "bad_response" and "tulip" not in str(error)


def test_a_body_that_breaks_off_is_an_error_not_a_short_answer(tmp_path):
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve():
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
                         b'{"elements": []')

    threading.Thread(target=serve, daemon=True).start()
    try:
        client = OverpassClient(OverpassConfig(url=f"http://127.0.0.1:{port}/api/interpreter", cache_dir=str(tmp_path),
                                               max_retries=0))
        error = failure(client)
        assert error.kind == "interrupted" and "broke off" in error.message
    finally:
        listener.close()


# ---------------------------------------------------------------- addresses a visitor typed

@pytest.mark.parametrize("address, public", [
    ("93.184.215.14", True), ("2606:4700:4700::1111", True),
    ("127.0.0.1", False), ("127.1.2.3", False), ("0.0.0.0", False), ("10.1.2.3", False), ("172.16.0.1", False),
    ("192.168.1.1", False), ("169.254.169.254", False), ("100.64.0.1", False), ("224.0.0.1", False),
    ("255.255.255.255", False), ("240.0.0.1", False), ("::1", False), ("::", False), ("fe80::1", False),
    ("fe80::1%eth0", False), ("fc00::1", False), ("ff02::1", False), ("::ffff:127.0.0.1", False),
    ("::ffff:10.0.0.1", False), ("2002:7f00:1::", False), ("64:ff9b::7f00:1", False), ("64:ff9b::a00:1", False),
    ("not an address", False),
])
def test_public_addresses(address, public):
    from geoql.osm import http

    assert http.public_address(address) is public


@pytest.mark.parametrize("url", [
    "http://127.0.0.1/api/interpreter", "http://127.1/api/interpreter", "http://2130706433/api/interpreter",
    "http://0x7f000001/api/interpreter", "http://0.0.0.0/api/interpreter", "http://localhost/api/interpreter",
    "http://[::1]/api/interpreter", "http://[::ffff:127.0.0.1]/api/interpreter", "http://10.0.0.1/api/interpreter",
    "http://169.254.169.254/latest/meta-data/", "https://localhost./api/interpreter",
    "http://no-such-host.invalid/api/interpreter",
])
def test_a_typed_server_that_is_not_public_is_refused_before_any_connection(url, tmp_path):
    client = OverpassClient(OverpassConfig(url=url, cache_dir=str(tmp_path), public_only=True, max_retries=2))
    error = failure(client)
    assert error.kind == "not_public" and "not a public address" in error.message
    assert error.retryable is False


def test_the_connection_goes_to_the_address_that_was_checked(fake_overpass, tmp_path, monkeypatch):
    """DNS is asked once per request and the connection goes to that answer: a second answer
    (DNS rebinding to an inside address) never gets the chance. Here the fake's loopback
    address is let through the check to see where the connection goes."""
    from geoql.osm import http

    asked = []
    real = socket.getaddrinfo

    def resolver(host, *args, **kwargs):
        asked.append(host)
        return real("127.0.0.1" if host == "overpass.test" else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    monkeypatch.setattr(http, "public_address", lambda address: address == "127.0.0.1")
    answer = http.fetch(f"http://overpass.test:{fake_overpass.port}/api/interpreter", {"data": "node(1);out;"},
                        deadline_s=10, max_bytes=2**20, public_only=True)
    assert answer.status == 200 and fake_overpass.queries() == ["node(1);out;"]
    assert asked == ["overpass.test"]


def test_the_operator_s_own_endpoint_may_be_on_loopback(fake_overpass, tmp_path):
    """Trusted: the tests' loopback fakes are the operator's endpoint."""
    assert client_of(fake_overpass, tmp_path).run("node(1);out;").elements == []


@pytest.mark.parametrize("url, words", [
    ("http://user:pw@127.0.0.1/api/interpreter", "user name or password"),
    ("http://overpass.example.org/api/interpreter?data=node(1);out;", "query string"),
    ("http://overpass.example.org/api/interpreter#x", "query string"),
    ("http://overpass.example.org:6379/api/interpreter", "standard port"),
    ("https://overpass.example.org:80/api/interpreter", "standard port"),
    ("ftp://overpass.example.org/api/interpreter", "must start with http"),
    ("http:///api/interpreter", "host name"),
    ('https://overpass.example.org/<img src=x onerror="alert(1)">', "characters a URL does not"),
])
def test_a_typed_server_address_has_a_plain_form(url, words):
    with pytest.raises(ValueError, match=words):
        OverpassConfig(url=url, public_only=True)
