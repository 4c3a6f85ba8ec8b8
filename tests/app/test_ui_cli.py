"""``geoql ui``: argument errors in one line, and a real start serving the page."""

from __future__ import annotations

import os
import select
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
        (["ui", "--auth-token", "hunter2"], "use at least 16"),
    ],
)
def test_bad_arguments_are_one_line_errors(capsys, argv, words):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err and err.count("\n") == 1


def _start_ui(overpass_url: str, cache_dir: Path, stderr, *more: str, **env) -> tuple[subprocess.Popen, int]:
    """``geoql ui`` in a process of its own on a free port, its stdout piped."""
    port = free_port()
    env = dict(os.environ, GEOQL_CACHE_DIR=str(cache_dir), GRADIO_ANALYTICS_ENABLED="False", **env)
    proc = subprocess.Popen(
        [sys.executable, "-m", "geoql", "ui", "--port", str(port), "--no-warm-up", "--overpass-url", overpass_url, *more],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True,
    )
    return proc, port


def _first_line(stream, timeout: float = 60.0) -> str:
    """The first line on ``stream``, or "" when none comes in time."""
    ready, _, _ = select.select([stream], [], [], timeout)
    return stream.readline() if ready else ""


def _wait_for_page(proc, port: int) -> requests.Response:
    for _ in range(240):
        if proc.poll() is not None:
            pytest.fail(f"geoql ui exited with {proc.returncode}")
        try:
            return requests.get(f"http://127.0.0.1:{port}/", timeout=5)
        except requests.ConnectionError:
            time.sleep(0.5)
    pytest.fail("geoql ui did not answer within 120 s")


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


def test_stopping_the_demo_removes_its_temporary_files(fake_overpass, tmp_path):
    """Issue 42: the demo's download folder (geoql-ui-*) stayed in the temporary directory. A
    service manager stops it with SIGTERM."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc, port = _start_ui(fake_overpass.url, tmp_path / "cache", subprocess.DEVNULL, TMPDIR=str(scratch),
                           GRADIO_TEMP_DIR=str(scratch / "gradio"))
    try:
        assert _wait_for_page(proc, port).status_code == 200
        assert list(scratch.glob("geoql-ui-*"))
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    assert list(scratch.glob("geoql-ui-*")) == []


def test_listening_beyond_this_machine_warns_and_a_secret_guards_it(fake_overpass, tmp_path):
    proc, port = _start_ui(fake_overpass.url, tmp_path / "cache", subprocess.PIPE, "--host", "0.0.0.0",
                           GEOQL_UI_TOKEN="a-shared-secret-of-some-length")
    try:
        warning = _first_line(proc.stderr)
        assert warning.startswith("geoql ui: warning: listening on 0.0.0.0") and "shared secret" in warning
        _wait_for_page(proc, port)
        for path in ("config", "gradio_api/info"):  # the app's settings and its API ask for the secret
            assert requests.get(f"http://127.0.0.1:{port}/{path}", timeout=10).status_code == 401
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_listening_beyond_this_machine_without_a_secret_says_how_to_set_one(fake_overpass, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "GEOQL_UI_TOKEN"}
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "geoql", "ui", "--port", str(port), "--no-warm-up", "--host",
                             "--overpass-url", fake_overpass.url], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=dict(env, GEOQL_CACHE_DIR=str(tmp_path)))
    try:
        warning = _first_line(proc.stderr)
        assert "listening on 0.0.0.0" in warning and "Set $GEOQL_UI_TOKEN (or --auth-token)" in warning
    finally:
        proc.terminate()
        proc.wait(timeout=60)
