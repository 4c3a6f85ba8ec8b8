"""Index fixtures for every package's tests (registered in tests/conftest.py).

``small_index_dir`` is a real index — real FAISS, real embedding model, real
BM25 — built once per session from a trimmed copy of id-tagging-schema 7.2.0
(tests/index/data) and the first training examples. The schema is served by
``FakeNpmRegistry``: the npm registry protocol on 127.0.0.1 with the real
package layout, so the build runs its real download and integrity check.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

import pytest

SUBSET_DIR = Path(__file__).resolve().parent / "index" / "data" / "id-tagging-schema-7.2.0-subset"
SCHEMA_VERSION = "7.2.0"
SMALL_TRAIN_LIMIT = 300


def schema_tarball(subset_dir: Path = SUBSET_DIR, *, drop: tuple[str, ...] = ()) -> bytes:
    """A gzip tarball laid out like the npm package: ``package/dist/...``.

    Byte-identical on every call (gzip mtime 0, like ``npm pack``): tests
    compare downloads with it, and a header stamped with the current second
    made two builds differ whenever a test straddled a second boundary.
    """
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as archive:
        for path in sorted(subset_dir.rglob("*.json")):
            rel = path.relative_to(subset_dir).as_posix()
            if rel in drop:
                continue
            data = path.read_bytes()
            info = tarfile.TarInfo(f"package/dist/{rel}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def sri_sha512(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


class FakeNpmRegistry:
    """Serves ``GET /@openstreetmap%2fid-tagging-schema/<version>`` and the tarball, like registry.npmjs.org."""

    def __init__(self, tarball: bytes | None = None, *, integrity: str | None = None) -> None:
        self.tarball = tarball if tarball is not None else schema_tarball()
        self.integrity = integrity or sri_sha512(self.tarball)
        self.requests: list[str] = []
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server API)
                registry.requests.append(self.path)
                path = unquote(self.path)
                if path == f"/@openstreetmap/id-tagging-schema/{SCHEMA_VERSION}":
                    body = json.dumps({
                        "name": "@openstreetmap/id-tagging-schema",
                        "version": SCHEMA_VERSION,
                        "dist": {
                            "integrity": registry.integrity,
                            "shasum": hashlib.sha1(registry.tarball).hexdigest(),
                            "tarball": f"{registry.url}/@openstreetmap/id-tagging-schema/-/id-tagging-schema-{SCHEMA_VERSION}.tgz",
                        },
                    }).encode()
                    self._send(200, body, "application/json")
                elif path.endswith(f"id-tagging-schema-{SCHEMA_VERSION}.tgz"):
                    self._send(200, registry.tarball, "application/octet-stream")
                else:
                    self._send(404, b'{"error":"Not found"}', "application/json")

            def _send(self, status, body, ctype):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> "FakeNpmRegistry":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()


def build_small_index(out_dir: Path, data_dir: Path, cache_dir: Path, *, train_limit: int = SMALL_TRAIN_LIMIT) -> Path:
    from geoql.index.build import build_index
    from geoql.index.config import IndexConfig

    with FakeNpmRegistry() as registry:
        config = IndexConfig(
            out_dir=out_dir,
            data_dir=data_dir,
            cache_dir=cache_dir,
            registry=registry.url,
            train_limit=train_limit,
            taginfo=False,
            glossaries=(),  # the dictionaries come from Debian; tests/index/test_glossary.py serves its own
            progress=False,
        )
        return build_index(config)


@pytest.fixture(scope="session")
def small_index_dir(tmp_path_factory, overpassnl_dir) -> Path:
    """A real small index (≈370 presets, 300 training examples), built once per session."""
    base = tmp_path_factory.mktemp("small_index")
    return build_small_index(base / "index", overpassnl_dir, base / "cache")


@pytest.fixture(scope="session")
def glossed_index_dir(small_index_dir, tmp_path_factory) -> Path:
    """The small index with a small German glossary, as ``geoql index build`` writes one from FreeDict
    (tests/index/test_glossary.py builds one from a real-format package)."""
    import shutil

    from geoql.retrieval import artifacts as A
    from geoql.retrieval.glossary import write_glossary

    out = tmp_path_factory.mktemp("glossed") / "index"
    shutil.copytree(small_index_dir, out)
    words = {"honigmacher": "beekeeper", "briefkasten": "post box", "kinder": "children", "spielplätze": "playgrounds"}
    write_glossary(out / A.glossary_file("de"), "de", words, {}, endings=("n", "en", "e", "s"), compounds=True)
    # Russian: dictionary forms only, as FreeDict's WikDict edition has them; pymorphy3 finds them
    write_glossary(out / A.glossary_file("ru"), "ru", {"медовик": "beekeeper", "детский": "children"}, {},
                   lemmatizer="pymorphy3")
    reseal(out)
    return out


def reseal(index_dir: Path) -> Path:
    """List the files of an index a test has changed in its manifest, as a writer of the index does
    (``index.build.write_manifest``), or loading it refuses the changed files."""
    from geoql.index.build import write_manifest
    from geoql.retrieval import artifacts as A

    return write_manifest(index_dir, json.loads((index_dir / A.MANIFEST).read_text(encoding="utf-8")))
