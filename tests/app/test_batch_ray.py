"""``geoql compile --cluster``: a batch run on a real Ray cluster, started here with ``ray start
--head`` on 127.0.0.1 (token authentication on, as Ray's local clusters have it by default), gives
the answers of one process, and a worker or a driver that dies loses nothing already written."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from geoql.app.batch import log_path, read_log
from geoql.eval.dataset import load_split

ray = pytest.importorskip("ray", reason="the ray extra (pip install 'geoql[ray]'; scripts/setup.sh --dev has it)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(hinted_cpu_model_dir, small_index_dir):
    """A one-node Ray cluster of 2 CPUs on 127.0.0.1: (its address, the environment of a driver)."""
    token = secrets.token_hex(32)
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token, "RAY_USAGE_STATS_ENABLED": "0",
           "GEOQL_CPU_MODEL_DIR": str(hinted_cpu_model_dir), "GEOQL_INDEX_DIR": str(small_index_dir)}
    port = _free_port()
    temp = Path(tempfile.mkdtemp(prefix="ray", dir="/tmp"))  # short: Ray's unix socket paths must fit 107 bytes
    log = open(temp / "start.log", "w")
    head = subprocess.Popen([str(Path(sys.executable).parent / "ray"), "start", "--head", "--block", "--port", str(port),
                             "--node-ip-address", "127.0.0.1", "--num-cpus", "2", "--include-dashboard", "false",
                             "--temp-dir", str(temp), "--disable-usage-stats"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while "Ray runtime started" not in (temp / "start.log").read_text():
            assert head.poll() is None and time.monotonic() < deadline, (temp / "start.log").read_text()
            time.sleep(0.2)
        yield f"127.0.0.1:{port}", env, head.pid
    finally:
        head.send_signal(signal.SIGTERM)  # `ray start --block` stops the processes it started
        try:
            head.wait(90)
        except subprocess.TimeoutExpired:
            head.kill()
        log.close()
        shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture(scope="module")
def requests(tmp_path_factory, cluster) -> tuple[Path, bytes]:
    """30 dev requests and the prediction file one local process writes for them."""
    base = tmp_path_factory.mktemp("ray-requests")
    path = base / "thirty.nl"
    path.write_text("\n".join(e.nl for e in load_split("dev")[:30]) + "\n", encoding="utf-8")
    _, env, _ = cluster
    done = subprocess.run([sys.executable, "-m", "geoql", "compile", "--requests", str(path), "--out",
                           str(base / "alone.pred"), "--workers", "1"], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return path, (base / "alone.pred").read_bytes()


def _run(env: dict, *argv: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "geoql", "compile", *argv], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        for task in Path(f"/proc/{todo.pop()}/task").iterdir():
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            out += children
            todo += children
    return out


def _actors(head_pid: int) -> list[int]:
    """This cluster's processes that hold a GeoQL worker (Ray names them after the actor class)."""
    found = []
    for pid in _descendants(head_pid):
        try:
            if b"_Worker" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            pass
    return found


def _wait_for_answers(out: Path, process: subprocess.Popen, at_least: int) -> int:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if log_path(out).exists() and len(read_log(log_path(out), 30).answers) >= at_least:
            return len(read_log(log_path(out), 30).answers)
        time.sleep(0.05)
    raise AssertionError(f"no {at_least} answers in {log_path(out)}: {process.communicate()}")


def test_a_cluster_gives_the_answers_of_one_process(cluster, requests, tmp_path):
    address, env, _ = cluster
    path, alone = requests
    out = tmp_path / "ray.pred"
    stdout, stderr = _run(env, "--requests", str(path), "--out", str(out), "--cluster", address,
                          "--batch-size", "4").communicate(timeout=600)
    assert out.read_bytes() == alone, stderr
    assert "compile thirty.nl (cpu, 2 workers)" in stderr and "Traceback" not in stderr
    assert "wrote" in stdout


def test_a_killed_ray_worker_is_replaced_and_nothing_is_lost(cluster, requests, tmp_path):
    address, env, head = cluster
    path, alone = requests
    out = tmp_path / "ray.pred"
    run = _run(env, "--requests", str(path), "--out", str(out), "--cluster", address, "--batch-size", "1")
    _wait_for_answers(out, run, 5)
    actors = _actors(head)
    assert actors, "no GeoQL worker found among the cluster's processes"
    os.kill(actors[0], signal.SIGKILL)  # Ray restarts the actor and gives its chunk again
    stdout, stderr = run.communicate(timeout=600)
    assert run.returncode == 0, stderr
    assert out.read_bytes() == alone


def test_a_killed_driver_resumes_with_what_it_wrote(cluster, requests, tmp_path):
    address, env, _ = cluster
    path, alone = requests
    out = tmp_path / "ray.pred"
    argv = ["--requests", str(path), "--out", str(out), "--cluster", address, "--batch-size", "1"]
    run = _run(env, *argv)
    written = _wait_for_answers(out, run, 6)
    run.send_signal(signal.SIGKILL)  # the driver, and with it the run's actors
    run.wait(60)
    kept = len(read_log(log_path(out), 30).answers)
    assert kept >= written and not out.exists()
    stdout, stderr = _run(env, *argv).communicate(timeout=600)
    assert f"resuming {log_path(out)}: {kept} of 30 answered" in stdout, stderr
    assert out.read_bytes() == alone


def test_an_address_without_a_cluster_is_a_clear_error(cluster, requests, tmp_path):
    _, env, _ = cluster
    path, _ = requests
    done = subprocess.run([sys.executable, "-m", "geoql", "compile", "--requests", str(path), "--out",
                           str(tmp_path / "x.pred"), "--cluster", f"127.0.0.1:{_free_port()}"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "cannot join the Ray cluster at 127.0.0.1:" in done.stderr, done.stderr
    assert "nothing answers there" in done.stderr
    assert "Traceback" not in done.stderr
