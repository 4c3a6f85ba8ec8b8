"""``geoql ui``: argument errors in one line, and a real start serving the page."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from fakes.fixtures import fake_overpass  # noqa: F401 (fixture)
from fakes.support import free_port

from geoql.app.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "argv, words",
    [
        (["ui", "--port", "0"], "is not a TCP port"),
        (["ui", "--backend", "nope"], "unknown backend 'nope'"),
        (["ui", "--overpass-url", "localhost/api"], "must start with http"),
    ],
)
def test_bad_arguments_are_one_line_errors(capsys, argv, words):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err and err.count("\n") == 1


def _start_ui(overpass_url: str, cache_dir: Path, stderr) -> tuple[subprocess.Popen, int]:
    """``geoql ui`` in a process of its own on a free port, its stdout piped."""
    port = free_port()
    env = dict(os.environ, GEOQL_CACHE_DIR=str(cache_dir), GRADIO_ANALYTICS_ENABLED="False")
    proc = subprocess.Popen(
        [sys.executable, "-m", "geoql", "ui", "--port", str(port), "--no-warm-up", "--overpass-url", overpass_url],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True,
    )
    return proc, port


def test_geoql_ui_serves_the_page(fake_overpass, tmp_path):
    proc, port = _start_ui(fake_overpass.url, tmp_path, subprocess.STDOUT)
    try:
        for _ in range(240):
            if proc.poll() is not None:
                pytest.fail(f"geoql ui exited with {proc.returncode}: {proc.stdout.read()[-2000:]}")
            try:
                page = requests.get(f"http://127.0.0.1:{port}/", timeout=5)
                break
            except requests.ConnectionError:
                time.sleep(0.5)
        else:
            pytest.fail("geoql ui did not answer within 120 s")
        assert page.status_code == 200 and "GeoQL" in page.text
        info = requests.get(f"http://127.0.0.1:{port}/gradio_api/info", timeout=10).json()
        assert {"/compile", "/run", "/compile_and_run"} <= set(info["named_endpoints"])
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_geoql_ui_prints_its_address_on_a_line_of_its_own(fake_overpass, tmp_path):
    proc, port = _start_ui(fake_overpass.url, tmp_path, subprocess.DEVNULL)
    try:
        line = proc.stdout.readline()
        assert line == f"GeoQL demo: http://127.0.0.1:{port}/ (Ctrl+C stops it)\n"
        assert requests.get(f"http://127.0.0.1:{port}/", timeout=10).status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)
