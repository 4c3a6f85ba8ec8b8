"""Helpers shared by the demo tests: a lookup backend, a service factory, page readers."""

from __future__ import annotations

import html
import json
import re
import socket
import threading
from functools import lru_cache

from geoql.app.backends.base import Backend, BackendError, Generation, GenerationRequest


@lru_cache(maxsize=1)
def dev_requests() -> tuple:
    """Real dev examples whose gold queries use {{bbox}}: the map box decides what runs."""
    from geoql.eval.dataset import load_split

    return tuple(e for e in load_split("dev") if "{{bbox}}" in e.query and "{{bbox=" not in e.query)[:5]


class LookupBackend(Backend):
    """A backend without a model: answers requests it knows with their gold query.

    It asks for the prompt (``needs_prompt``), so the compiler retrieves real
    tags and examples from the index for the page to show.
    """

    name = "lookup"
    needs_prompt = True

    def __init__(self, table: dict[str, str]):
        self.table = table

    def generate(self, request: GenerationRequest) -> Generation:
        if request.nl not in self.table:
            raise BackendError(f"no query known for {request.nl!r}: add it to the table")
        return request.generation([self.table[request.nl]])


def make_service(overpass, nominatim, tmp_path, backend=None, index_dir=None, **config):
    """A DemoService on the loopback servers with a real Compiler around ``backend``;
    ``config``: more DemoConfig fields."""
    from geoql.app import Compiler
    from geoql.app.ui import DemoConfig, DemoService

    config = DemoConfig(overpass_url=overpass.url, nominatim_url=nominatim.url, cache_dir=str(tmp_path), **config)
    backend = backend or LookupBackend({e.nl: e.query for e in dev_requests()})
    options = {"index_dir": str(index_dir)} if index_dir else {"k_tags": 0, "k_examples": 0}
    return DemoService(config, compiler=Compiler(backend, **options))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def embedded_geojson(fragment: str) -> dict:
    """The GeoJSON the map page draws, read back out of the iframe's srcdoc."""
    srcdoc = html.unescape(re.search(r'srcdoc="(.*)"', fragment, re.S).group(1))
    return json.loads(re.search(r"var data = (.*?);\nvar map", srcdoc, re.S).group(1).replace("<\\/", "</"))


def run_concurrently(call, n: int) -> tuple[list, list]:
    """``call()`` in ``n`` threads at once: its results and the exceptions raised (an exception in a
    thread would otherwise pass silently)."""
    results, errors = [], []

    def run():
        try:
            results.append(call())
        except Exception as exc:  # noqa: BLE001 (collected for the test to assert on)
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, errors
