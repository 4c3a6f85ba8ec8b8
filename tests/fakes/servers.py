"""Loopback servers that speak the Overpass and Nominatim protocols.

The public Overpass and Nominatim services are not reachable from the test
machine, so the tests run real HTTP against these stand-ins on 127.0.0.1.
They answer with real-format payloads: Overpass JSON/XML as the API prints
it (``payloads/``), the OSM3S HTML error page for parse/static errors and for
429/504 refusals, and Nominatim ``jsonv2`` search results.

An Overpass answer is chosen by the first route whose needle occurs in the
received query text; a route can hold several replies that are served in
turn (the last one repeats), e.g. "429 once, then the result".
"""

from __future__ import annotations

import gzip
import html
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

PAYLOADS = Path(__file__).resolve().parent / "payloads"

_ERROR_PAGE = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN"
    "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">
<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="en" lang="en">
<head>
  <meta http-equiv="content-type" content="text/html; charset=utf-8" lang="en"/>
  <title>OSM3S Response</title>
</head>
<body>

<p>The data included in this document is from www.openstreetmap.org. The data is made available under ODbL.</p>
{errors}
</body>
</html>
"""


def payload(name: str) -> str:
    return (PAYLOADS / name).read_text(encoding="utf-8")


def error_page(*messages: str) -> str:
    """The OSM3S HTML error page with one ``Error:`` paragraph per message (HTML-escaped)."""
    errors = "".join(
        f'<p><strong style="color:#FF0000">Error</strong>: {html.escape(m, quote=True)} </p>\n' for m in messages
    )
    return _ERROR_PAGE.format(errors=errors)


@dataclass
class Reply:
    status: int = 200
    body: str = ""
    content_type: str = "application/json"
    delay_s: float = 0.0
    headers: dict = field(default_factory=dict)
    drip_s: float = 0.0  # > 0: the body goes out one byte at a time, this many seconds apart
    gzip: bool = False  # the body gzip-compressed, with Content-Encoding: gzip


def json_reply(name: str, **kw) -> Reply:
    return Reply(200, payload(name), "application/json", **kw)


def parse_error(message: str = 'line 1: parse error: Unknown type "nod"') -> Reply:
    return Reply(400, error_page(message), "text/html; charset=utf-8")


def static_error(message: str) -> Reply:
    return Reply(400, error_page(message), "text/html; charset=utf-8")


def huge_answer(megabytes: float) -> str:
    """A well-formed Overpass JSON answer of about ``megabytes`` MB: benches, one node each."""
    node = ('{{"type": "node", "id": {i}, "lat": 49.4{i:06d}, "lon": 8.7{i:06d}, '
            '"tags": {{"amenity": "bench", "backrest": "yes", "material": "wood"}}}}')
    count = int(megabytes * 2**20 / len(node.format(i=100000)))
    return ('{"version": 0.6, "generator": "Overpass API 0.7.62.1 084b4234", "elements": [\n'
            + ",\n".join(node.format(i=i) for i in range(count)) + "\n]}")


def redirect(location: str, status: int = 302) -> Reply:
    return Reply(status, "", "text/html", headers={"Location": location})


def bad_gateway_page(secret: str) -> Reply:
    """What a proxy in front of a server sends: its own HTML page, not Overpass' error page."""
    return Reply(502, f"<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1>"
                      f"<p>upstream at 10.0.0.7:8080 {html.escape(secret)}</p></body></html>", "text/html")


def rate_limited(retry_after: str | None = None) -> Reply:
    headers = {"Retry-After": retry_after} if retry_after else {}
    page = error_page(
        "runtime error: open64: 0 Success /osm3s_osm_base Dispatcher_Client::request_read_and_idx::rate_limited. "
        "Please check /api/status for the quota of your IP address."
    )
    return Reply(429, page, "text/html; charset=utf-8", headers=headers)


def gateway_timeout() -> Reply:
    page = error_page(
        "runtime error: open64: 0 Success /osm3s_osm_base Dispatcher_Client::request_read_and_idx::timeout. "
        "The server is probably too busy to handle your request."
    )
    return Reply(504, page, "text/html; charset=utf-8")


class _Server:
    """A ThreadingHTTPServer on 127.0.0.1 (port chosen by the OS) in a daemon thread."""

    def __init__(self):
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out at once, as from a real server

            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                parts = urlsplit(self.path)
                owner._handle(self, parts.path, parse_qs(parts.query), "")

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode("utf-8")
                parts = urlsplit(self.path)
                params = parse_qs(parts.query)
                params.update(parse_qs(body))
                owner._handle(self, parts.path, params, body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.lock = threading.Lock()
        self.log: list[dict] = []
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @staticmethod
    def _send(handler, reply: Reply):
        if reply.delay_s:
            time.sleep(reply.delay_s)
        data = reply.body.encode("utf-8")
        if reply.gzip:
            data = gzip.compress(data)
        try:
            handler.send_response(reply.status)
            handler.send_header("Content-Type", reply.content_type)
            handler.send_header("Content-Length", str(len(data)))
            if reply.gzip:
                handler.send_header("Content-Encoding", "gzip")
            for k, v in reply.headers.items():
                handler.send_header(k, v)
            handler.end_headers()
            if not reply.drip_s:
                handler.wfile.write(data)
                return
            for i in range(len(data)):  # a server that keeps the connection alive with a byte now and then
                handler.wfile.write(data[i:i + 1])
                handler.wfile.flush()
                time.sleep(reply.drip_s)
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass  # the client gave up (its timeout), as a real client does


class FakeOverpass(_Server):
    """``/api/interpreter`` (GET ``?data=`` or POST form) answering from a route table."""

    def __init__(self):
        super().__init__()
        self.routes: list[tuple[str, list[Reply]]] = []
        self.default = json_reply("empty.json")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/interpreter"

    def add(self, needle: str, *replies: Reply) -> "FakeOverpass":
        with self.lock:
            self.routes.append((needle, list(replies)))
        return self

    def queries(self) -> list[str]:
        with self.lock:
            return [entry["query"] for entry in self.log]

    def _handle(self, handler, path, params, body):
        if path != "/api/interpreter":
            return self._send(handler, Reply(404, "not found", "text/plain"))
        query = (params.get("data") or [""])[0]
        with self.lock:
            self.log.append(
                {"query": query, "method": handler.command, "user_agent": handler.headers.get("User-Agent"), "t": time.monotonic()}
            )
            reply = None
            if not query.strip():
                reply = parse_error("line 1: parse error: An empty query is not allowed")
            for needle, replies in self.routes:
                if reply is None and needle in query:
                    reply = replies.pop(0) if len(replies) > 1 else replies[0]
            reply = reply or self.default
        self._send(handler, reply)


# Answers in Nominatim's jsonv2 format (fields as the search API returns them).
PLACES = {
    "heidelberg": {
        "place_id": 129537914,
        "licence": "Data © OpenStreetMap contributors, ODbL 1.0. http://osm.org/copyright",
        "osm_type": "relation",
        "osm_id": 285864,
        "lat": "49.4093582",
        "lon": "8.694724",
        "category": "boundary",
        "type": "administrative",
        "place_rank": 16,
        "importance": 0.6617433,
        "addresstype": "city",
        "name": "Heidelberg",
        "display_name": "Heidelberg, Baden-Württemberg, Deutschland",
        "boundingbox": ["49.3520109", "49.4596946", "8.5731788", "8.7940758"],
    },
    "brandenburger tor": {
        "place_id": 1092465,
        "licence": "Data © OpenStreetMap contributors, ODbL 1.0. http://osm.org/copyright",
        "osm_type": "way",
        "osm_id": 518071791,
        "lat": "52.5162699",
        "lon": "13.3777034",
        "category": "tourism",
        "type": "attraction",
        "place_rank": 30,
        "importance": 0.54,
        "addresstype": "tourism",
        "name": "Brandenburger Tor",
        "display_name": "Brandenburger Tor, Pariser Platz, Mitte, Berlin, 10117, Deutschland",
        "boundingbox": ["52.5161167", "52.5164225", "13.3775375", "13.3778753"],
    },
}


class FakeNominatim(_Server):
    """``/search?q=...&format=jsonv2&limit=1`` over a small gazetteer."""

    def __init__(self, places: dict | None = None):
        super().__init__()
        self.places = dict(PLACES if places is None else places)
        self.refuse_next = 0  # answer this many requests with 429 first

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/search"

    def _handle(self, handler, path, params, body):
        q = (params.get("q") or [""])[0]
        with self.lock:
            self.log.append(
                {
                    "q": q,
                    "format": (params.get("format") or [""])[0],
                    "limit": (params.get("limit") or [""])[0],
                    "user_agent": handler.headers.get("User-Agent"),
                    "t": time.monotonic(),
                }
            )
            refuse = self.refuse_next > 0
            if refuse:
                self.refuse_next -= 1
        if path != "/search":
            return self._send(handler, Reply(404, "not found", "text/plain"))
        if refuse:
            return self._send(handler, Reply(429, "<html><body>Too Many Requests</body></html>", "text/html"))
        found = self.places.get(q.strip().lower())
        self._send(handler, Reply(200, json.dumps([found] if found else []), "application/json; charset=utf-8"))
