"""Optional taginfo source: used when reachable, skipped cleanly when not."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from geoql.index.taginfo import fetch_usage

# Shapes of taginfo API v4 answers (/site/info, /key/values).
SITE_INFO = {"name": "OpenStreetMap Taginfo", "url": "https://taginfo.openstreetmap.org", "data_until": "2026-11-28T00:00:00Z"}
VALUES = {
    "amenity": [{"value": "parking", "count": 5200000, "fraction": 0.17, "in_wiki": True, "description": "Car park"},
                {"value": "post_box", "count": 420000, "fraction": 0.014, "in_wiki": True, "description": "A box for posting mail"}],
}


@pytest.fixture()
def taginfo_server():
    calls = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            url = urlparse(self.path)
            calls.append(url.path)
            if url.path == "/api/4/site/info":
                body = SITE_INFO
            elif url.path == "/api/4/key/values":
                key = parse_qs(url.query)["key"][0]
                rows = VALUES.get(key, [])
                body = {"url": self.path, "data_until": SITE_INFO["data_until"], "page": 1, "rp": 500, "total": len(rows), "data": rows}
            else:
                self.send_response(404)
                self.end_headers()
                return
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/api/4", calls
    server.shutdown()
    server.server_close()


def test_usage_counts_are_fetched_and_cached(taginfo_server, tmp_path):
    url, calls = taginfo_server
    usage, info = fetch_usage(["amenity", "shop"], url, tmp_path, timeout=5, progress=False)
    assert usage["amenity=post_box"] == (420000, "A box for posting mail")
    assert info["status"] == "used" and info["fetched"] == 2
    calls.clear()
    usage_again, info_again = fetch_usage(["amenity", "shop"], url, tmp_path, timeout=5, progress=False)
    assert usage_again == usage and info_again["fetched"] == 0
    assert calls == ["/api/4/site/info"]


def test_unreachable_taginfo_is_skipped(tmp_path):
    usage, info = fetch_usage(["amenity"], "http://127.0.0.1:9/api/4", tmp_path, timeout=1, progress=False)
    assert usage == {} and info["status"] == "skipped" and "unreachable" in info["reason"]
