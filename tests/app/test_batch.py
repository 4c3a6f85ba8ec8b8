"""geoql.app.batch: batch runs that cannot silently lie (issue 42 #5, #6) and use every core (issue 43).

Everything runs the real ``geoql compile`` on the CPU default (a small model trained with the
small tag index), in this process or as a child process; damaged files are real files damaged,
and a full disk is a real tmpfs that is full.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from geoql.app.batch import LOG_FORMAT, RunLog, log_path, read_log, record_path, run_name
from geoql.app.cli import main
from geoql.app.config import CompileConfig
from geoql.eval.dataset import load_split

N = 13  # requests in the test file: 12 of dev and a blank line (a request without answer, not a failure)


def _requests(n: int = 12) -> list[str]:
    nls = [e.nl for e in load_split("dev")[:n]]
    return nls[:5] + [""] + nls[5:]


@pytest.fixture
def cpu_env(hinted_cpu_model_dir, small_index_dir, monkeypatch):
    monkeypatch.setenv("GEOQL_CPU_MODEL_DIR", str(hinted_cpu_model_dir))
    monkeypatch.setenv("GEOQL_INDEX_DIR", str(small_index_dir))
    return {**os.environ}


@pytest.fixture(scope="module")
def reference(hinted_cpu_model_dir, small_index_dir, tmp_path_factory) -> bytes:
    """The prediction file one process writes for the test file, in a run nothing disturbed."""
    base = tmp_path_factory.mktemp("reference")
    requests = base / "requests.nl"
    requests.write_text("\n".join(_requests()) + "\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GEOQL_CPU_MODEL_DIR", str(hinted_cpu_model_dir))
        mp.setenv("GEOQL_INDEX_DIR", str(small_index_dir))
        assert main(["compile", "--requests", str(requests), "--out", str(base / "out.pred"), "--workers", "1"]) == 0
    data = (base / "out.pred").read_bytes()
    lines = data.decode("utf-8").split("\n")
    assert len(lines) == N + 1 and lines[5] == "" and all(lines[i] for i in range(N) if i != 5)
    return data


@pytest.fixture
def requests_file(tmp_path) -> Path:
    path = tmp_path / "requests.nl"
    path.write_text("\n".join(_requests()) + "\n", encoding="utf-8")
    return path


def _compile(requests: Path, out: Path, *more: str) -> int:
    return main(["compile", "--requests", str(requests), "--out", str(out), *more])


def _geoql(env: dict, *argv: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "geoql", "compile", *argv], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def _damaged_model(hinted_cpu_model_dir: Path, tmp_path: Path, monkeypatch) -> tuple[Path, bytes]:
    """A copy of the CPU model with a damaged neighbours.npz, on a machine without the dataset: the
    backend refuses the file and cannot prepare the model again, so every answer fails."""
    model = tmp_path / "model"
    shutil.copytree(hinted_cpu_model_dir, model)
    npz = model / "neighbours.npz"
    whole = npz.read_bytes()
    npz.write_bytes(whole[: len(whole) // 2])  # a copy cut off halfway
    monkeypatch.setenv("GEOQL_CPU_MODEL_DIR", str(model))
    monkeypatch.setenv("GEOQL_DATA_DIR", str(tmp_path / "no-dataset"))
    return npz, whole


# ------------------------------------------------------------------ issue 42 #5: failures are failures

def test_a_failed_compile_is_no_empty_line_and_a_rerun_retries_it(cpu_env, hinted_cpu_model_dir, requests_file, tmp_path,
                                                                   reference, capsys, monkeypatch):
    """The issue's run: a damaged file wrote empty lines, exit 0, and after the repair the rerun said
    "complete" and kept them. (A damaged index is now rebuilt on the way; a damaged model where it
    cannot be prepared again still fails every line.)"""
    npz, whole = _damaged_model(hinted_cpu_model_dir, tmp_path, monkeypatch)
    out = tmp_path / "mine.pred"
    assert _compile(requests_file, out) == 1
    err = capsys.readouterr().err
    # the blank request has no answer (not a failure); every other one failed, and the message says with what
    assert f"{N - 1} of {N} requests failed (lines 1, 2, 3, 4, 5, ...): {N - 1}× cannot train the CPU model: dataset" in err, err
    assert "neighbours.npz" in err and "Traceback" not in err
    assert f"run the same command again: it tries only these again; the other 1 answer is kept in {log_path(out)}" in err
    assert not out.exists() and log_path(out).exists()  # nothing that looks finished
    npz.write_bytes(whole)  # the repair
    assert _compile(requests_file, out) == 0
    assert f"1 of {N} answered ({N - 1} that failed are tried again)" in capsys.readouterr().out
    assert out.read_bytes() == reference and not log_path(out).exists()
    assert _compile(requests_file, out) == 0 and "is complete" in capsys.readouterr().out


def test_a_run_whose_first_answers_all_fail_stops(cpu_env, hinted_cpu_model_dir, tmp_path, capsys, monkeypatch):
    requests = tmp_path / "many.nl"
    requests.write_text("\n".join(e.nl for e in load_split("dev")[:40]) + "\n", encoding="utf-8")
    _damaged_model(hinted_cpu_model_dir, tmp_path, monkeypatch)
    out = tmp_path / "many.pred"
    assert _compile(requests, out, "--batch-size", "5") == 2
    err = capsys.readouterr().err
    assert "stopped: the first 20 requests all failed" in err and f"it resumes with 0 answers kept in {log_path(out)}" in err, err
    assert len(read_log(log_path(out), 40).failures) == 20  # the rest was never tried


def test_a_prediction_file_of_other_requests_is_not_complete(cpu_env, requests_file, tmp_path, reference, capsys):
    """Issue 42: a stale prediction file of another request file was reported complete."""
    out = tmp_path / "mine.pred"
    assert _compile(requests_file, out) == 0
    capsys.readouterr()
    other = tmp_path / "other.nl"  # as many lines, other requests
    other.write_text("\n".join(e.nl for e in load_split("dev")[100:100 + N]) + "\n", encoding="utf-8")
    assert _compile(other, out) == 2
    err = capsys.readouterr().err
    assert f"{out} exists and holds the answers of a run with other requests ({N} requests from {requests_file}; " \
           f"these are {N} requests from {other})" in err, err
    assert out.read_bytes() == reference  # the user's file is left as it was
    # other settings, a file changed since, a file nothing vouches for: the same refusal
    assert _compile(requests_file, out, "-o", "k=3") == 2
    assert "other settings (backend_options: {} there, {k: 3} now)" in capsys.readouterr().err
    out.write_bytes(reference.replace(b"\n", b" \n", 1))
    assert _compile(requests_file, out) == 2 and "changed after geoql compile wrote it" in capsys.readouterr().err
    record_path(out).unlink()
    assert _compile(requests_file, out) == 2 and "nothing says which requests it answers" in capsys.readouterr().err


def test_a_leftover_log_of_other_requests_is_not_resumed(cpu_env, requests_file, tmp_path, capsys):
    """Issue 42: a leftover .tmp of other requests was resumed into the new output."""
    other = ["castles in Bonn", "pubs in Cork"]
    out = tmp_path / "mine.pred"
    tmp = log_path(out)
    log = [{"format": LOG_FORMAT, **run_name(other, "other.nl", CompileConfig())},
           {"i": 0, "query": 'nwr["historic"="castle"];out;', "valid": True}]
    tmp.write_text("".join(json.dumps(r) + "\n" for r in log), encoding="utf-8")
    before = tmp.read_bytes()
    assert _compile(requests_file, out) == 2
    err = capsys.readouterr().err
    assert f"{tmp} is an unfinished run with other requests (2 requests from other.nl; these are {N} requests " \
           f"from {requests_file})" in err and "delete it to start over" in err, err
    assert tmp.read_bytes() == before and not out.exists()
    # the .tmp of an older geoql (queries, one a line) is not taken for this run's answers either
    tmp.write_text('nwr["historic"="castle"];out;\n', encoding="utf-8")
    assert _compile(requests_file, out) == 2 and "is not the log of a geoql compile run" in capsys.readouterr().err
    # a log of another run that holds no answer keeps nothing worth asking about
    tmp.write_text(json.dumps(log[0]) + "\n" + json.dumps({"i": 1, "failed": "server down"}) + "\n", encoding="utf-8")
    assert _compile(requests_file, out) == 0 and "held no answers: starting over" in capsys.readouterr().out


# ------------------------------------------------------------------ issue 42 #6: damaged files, a full disk

def test_damaged_and_cut_off_lines_of_the_log_are_compiled_again(cpu_env, requests_file, tmp_path, reference,
                                                                 capsys):
    out = tmp_path / "mine.pred"
    lines = reference.decode("utf-8").split("\n")
    log = [{"format": LOG_FORMAT, **run_name(_requests(), str(requests_file), CompileConfig())}]
    log += [{"i": i, "query": lines[i], "valid": True} for i in range(6)]
    text = "".join(json.dumps(r) + "\n" for r in log)
    text = text.replace('{"i": 3', '{"i": \x00\x00\xff', 1)  # a damaged line in the middle
    log_path(out).write_bytes(text.encode("utf-8", "surrogateescape") + b'{"i": 6, "query": "node')  # and one cut off
    assert _compile(requests_file, out) == 0
    assert f"5 of {N} answered (1 damaged lines of the log are compiled again)" in capsys.readouterr().out
    assert out.read_bytes() == reference
    # a log whose first line was cut off (the disk filled up while it was written) holds nothing: started over
    out.unlink()
    log_path(out).write_text(json.dumps(log[0])[:50], encoding="utf-8")
    assert _compile(requests_file, out) == 0 and out.read_bytes() == reference


def test_jsonl_rows_come_in_order_and_a_damaged_jsonl_file_is_refused(cpu_env, requests_file, tmp_path, reference,
                                                                      capsys):
    """Issue 42: a corrupt --jsonl line crashed the resume with a traceback."""
    out, jsonl = tmp_path / "mine.pred", tmp_path / "mine.jsonl"
    jsonl.write_text('{"i": 0, "query": "node;out;"}\n{"i": 1, "tr\x00\n', encoding="utf-8")
    assert _compile(requests_file, out, "--jsonl", str(jsonl)) == 2
    assert f"{jsonl} exists and is not the --jsonl of this run: move it away" in capsys.readouterr().err
    jsonl.unlink()
    assert _compile(requests_file, out, "--jsonl", str(jsonl), "--batch-size", "4") == 0
    rows = [json.loads(line) for line in jsonl.read_text(encoding="utf-8").splitlines()]
    assert [r["i"] for r in rows] == list(range(N)) and [r["index"] for r in rows] == list(range(N))
    assert [r["query"] + "\n" for r in rows] == reference.decode("utf-8").splitlines(keepends=True)
    assert rows[5]["errors"] and not rows[5]["failed"]  # the blank request: no answer, and not a failure
    capsys.readouterr()
    assert _compile(requests_file, out, "--jsonl", str(jsonl)) == 0 and "is complete" in capsys.readouterr().out
    # deleting the prediction file recomputes, over the --jsonl the run's record lists
    out.unlink()
    assert _compile(requests_file, out, "--jsonl", str(jsonl)) == 0 and out.read_bytes() == reference


def test_a_full_disk_says_so_and_the_run_resumes(cpu_env, requests_file, tmp_path, reference):
    """ENOSPC on a real tmpfs of 16 kB (a mount namespace of its own): the message names the fix,
    and once there is room the same command resumes with what was written."""
    if shutil.which("unshare") is None:
        pytest.fail("this test needs util-linux's unshare (a private mount namespace for a tiny tmpfs)")
    disk = tmp_path / "disk"
    disk.mkdir()
    keep = tmp_path / "kept"
    keep.mkdir()
    geoql = f"{sys.executable} -m geoql compile --requests {requests_file} --out {disk}/mine.pred --jsonl {disk}/mine.jsonl"
    script = (f"mount -t tmpfs -o size=16k tmpfs {disk} && {{ {geoql} > {keep}/first.out 2> {keep}/first.err; "
              f"echo $? > {keep}/first.rc; cp {disk}/mine.pred.tmp {keep}/; "
              f"mount -o remount,size=4m {disk} && {geoql} > {keep}/second.out 2> {keep}/second.err; "
              f"echo $? > {keep}/second.rc; cp {disk}/mine.pred {keep}/; }}")
    done = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script], env=cpu_env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    first = (keep / "first.err").read_text()
    assert (keep / "first.rc").read_text().strip() == "2", first
    assert "no space left on the disk of" in first and "free some space and run the same command again" in first
    assert "answers kept in" in first and "Traceback" not in first
    kept = read_log(keep / "mine.pred.tmp", N)
    assert kept.header is not None and kept.answers  # what was written before the disk filled up stays
    assert (keep / "second.rc").read_text().strip() == "0", (keep / "second.err").read_text()
    assert f"{len(kept.answers)} of {N} answered" in (keep / "second.out").read_text()
    assert (keep / "mine.pred").read_bytes() == reference


def test_a_second_run_on_the_same_output_is_refused(cpu_env, requests_file, tmp_path, capsys):
    out = tmp_path / "mine.pred"
    holder = RunLog(log_path(out))  # another geoql compile, mid-run
    try:
        assert _compile(requests_file, out) == 2
        assert f"another geoql compile is writing {log_path(out)}" in capsys.readouterr().err
    finally:
        holder.close()


# ------------------------------------------------------------------ issue 43: every core

def test_workers_give_the_answers_of_one_process(cpu_env, requests_file, tmp_path, reference):
    out = tmp_path / "mine.pred"
    run = _geoql(cpu_env, "--requests", str(requests_file), "--out", str(out), "--workers", "2", "--batch-size", "3")
    stdout, stderr = run.communicate(timeout=600)
    assert run.returncode == 0, stderr
    assert out.read_bytes() == reference
    bars = {part.split(":")[0] for part in stderr.replace("\r", "\n").splitlines() if part.startswith("compile ")}
    assert bars == {"compile requests.nl (cpu, 2 workers)"}  # one bar over all workers


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] not in "ZX"
    except OSError:
        return False


def _all_gone(pids: list[int], patience_s: float = 60) -> bool:
    deadline = time.monotonic() + patience_s
    while any(_alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _wait_for_answers(log: Path, count: int, process: subprocess.Popen, at_least: int) -> int:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if log.exists() and len(read_log(log, count).answers) >= at_least:
            return len(read_log(log, count).answers)
        time.sleep(0.05)
    raise AssertionError(f"no {at_least} answers in {log}: {process.poll()}")


def test_a_killed_worker_or_coordinator_loses_nothing_written(cpu_env, tmp_path):
    requests = tmp_path / "forty.nl"
    requests.write_text("\n".join(e.nl for e in load_split("dev")[:40]) + "\n", encoding="utf-8")
    alone, out = tmp_path / "alone.pred", tmp_path / "mine.pred"
    assert _geoql(cpu_env, "--requests", str(requests), "--out", str(alone), "--workers", "1").wait(600) == 0
    argv = ["--requests", str(requests), "--out", str(out), "--workers", "2", "--batch-size", "1"]
    # a worker process dies mid-run: the run stops, says so, and keeps every answer it wrote
    run = _geoql(cpu_env, *argv)
    written = _wait_for_answers(log_path(out), 40, run, 6)
    os.kill(_children(run.pid)[-1], signal.SIGKILL)
    _, stderr = run.communicate(timeout=300)
    assert run.returncode == 2 and "a worker process died" in stderr and "Traceback" not in stderr, stderr
    kept = read_log(log_path(out), 40)
    assert len(kept.answers) >= written and not out.exists()
    # the coordinator itself is killed: the same, without a word
    run = _geoql(cpu_env, *argv)
    written = _wait_for_answers(log_path(out), 40, run, len(kept.answers) + 4)
    workers = _children(run.pid)
    assert len(workers) >= 2, workers
    run.send_signal(signal.SIGKILL)
    run.wait(60)
    assert len(read_log(log_path(out), 40).answers) >= written
    # ... and its workers end with it, instead of sleeping on with their models (they did on 909ecfe)
    assert _all_gone(workers), [pid for pid in workers if _alive(pid)]
    # the same command finishes it, with the answers of one process
    run = _geoql(cpu_env, *argv)
    stdout, stderr = run.communicate(timeout=600)
    assert run.returncode == 0 and "resuming" in stdout, stderr
    assert out.read_bytes() == alone.read_bytes()
