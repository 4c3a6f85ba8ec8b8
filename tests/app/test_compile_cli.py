"""``geoql compile``: one request, a split or a file of requests to a .pred file, resuming."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import overpassql
from geoql.app.cli import main
from geoql.app.confidence import NO_OUTPUT_WARNING
from testdata import osmnl_dir


@pytest.fixture(scope="module")
def tiny_args(tiny_model_dir):
    return ["--backend", "transformers", "-o", f"model={tiny_model_dir}", "-o", "device=cpu",
            "--max-new-tokens", "32"]


def test_single_request_prints_one_query(tiny_args, capsys):
    assert main(["compile", "cafes in Bonn", *tiny_args]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    from geoql.app.decoding import validate

    assert validate(out[0]) == []


def test_json_output(tiny_args, capsys):
    assert main(["compile", "cafes", "--json", *tiny_args]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["valid"] and data["backend"] == "transformers" and data["candidates"]


@pytest.mark.parametrize("argv, message", [
    (["compile"], "give a request"),
    (["compile", "   "], "empty request"),
    # bytes that are not UTF-8 on the command line reach Python as lone surrogates (issue 42)
    (["compile", "cafes in Bonn \udced\udca0\udc80"], "not UTF-8 text (lone surrogates)"),
    (["compile", "x", "--option", "novalue"], "KEY=VALUE"),
    (["compile", "x", "--n", "0"], "n must be >= 1"),
    (["compile", "--split", "dev"], "--out"),
    (["compile", "--requests", "requests.nl"], "--requests needs --out"),
    (["compile", "--requests", "requests.nl", "--split", "dev", "--out", "x.pred"], "not both"),
    (["compile", "cafes in Bonn", "--requests", "requests.nl", "--out", "x.pred"], "not both"),
    (["compile", "--requests", "no-such-file.nl", "--out", "x.pred"], "no-such-file.nl does not exist"),
    (["compile", "--split", "dev", "--out", "x.pred", "--jsonl", "./x.pred"], "--jsonl and --out name the same file"),
    (["compile", "cafes in Bonn", "--workers", "2"], "--workers and --cluster are for --split or --requests"),
])
def test_user_errors_exit_2(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--out", "--jsonl"])
def test_unwritable_output_is_said_before_compiling(option, tmp_path, capsys, overpassnl_dir):
    (tmp_path / "file").write_text("a user's file")
    paths = {"--out": str(tmp_path / "dev.pred"), "--jsonl": str(tmp_path / "dev.jsonl")}
    paths[option] = str(tmp_path / "file" / "x")
    # the default backend would train its model first: the error must come before any of that
    argv = ["compile", "--split", "dev", "--limit", "2", "-o", f"model_dir={tmp_path / 'model'}",
            "--out", paths["--out"], "--jsonl", paths["--jsonl"]]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'file'} is not a directory" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def _interrupted_run(tmp, requests, config, source, answers: dict) -> None:
    """The log an interrupted run leaves: its name, then one record per answered request."""
    from geoql.app.batch import LOG_FORMAT, run_name

    records = [{"format": LOG_FORMAT, **run_name(requests, source, config)}]
    records += [{"i": i, "query": q, "valid": True, "row": {"nl": requests[i], "query": q}} for i, q in answers.items()]
    tmp.write_text("".join(json.dumps(r) + "\n" for r in records) + '{"i": 2, "qu', encoding="utf-8")  # + a cut-off line


def test_split_run_resumes_and_writes_the_official_format(tiny_args, tiny_model_dir, tmp_path, capsys, overpassnl_dir):
    from geoql.app.config import CompileConfig
    from geoql.eval.dataset import load_split

    dev = load_split("dev")[:4]
    out = tmp_path / "dev.pred"
    jsonl = tmp_path / "dev.jsonl"
    tmp = tmp_path / "dev.pred.tmp"
    argv = ["compile", "--split", "dev", "--limit", "4", "--out", str(out), "--jsonl", str(jsonl), *tiny_args]
    config = CompileConfig(backend="transformers", backend_options={"model": str(tiny_model_dir), "device": "cpu"},
                           max_new_tokens=32)  # what tiny_args asks for
    # An interrupted earlier run of the same command: two finished answers and half a third one.
    _interrupted_run(tmp, [e.nl for e in dev], config, "OverpassNL dev", {0: "node[a];out;", 1: "way[b];out;"})
    assert main(argv) == 0
    assert "resuming " + str(tmp) + ": 2 of 4 answered" in capsys.readouterr().out
    lines = out.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == "" and len(lines) == 5  # one query per line, newline-terminated
    assert lines[:2] == ["node[a];out;", "way[b];out;"]  # finished lines are not redone
    assert not tmp.exists()
    rows = [json.loads(line) for line in jsonl.read_text(encoding="utf-8").splitlines()]
    assert [r["i"] for r in rows] == [0, 1, 2, 3] and [r["query"] for r in rows[:2]] == lines[:2]
    assert [r["index"] for r in rows] == [ex.index for ex in dev]
    # Running again leaves the finished file alone.
    assert main(argv) == 0
    assert "is complete" in capsys.readouterr().out


def test_a_file_of_requests_in_any_language_gives_one_line_each(hinted_cpu_model_dir, small_index_dir, tmp_path,
                                                                 capsys, monkeypatch):
    """``--requests``: any file of one request a line (here OsmNL's German and Mandarin requests, a blank line
    and an emoji), one query a line back, in order, resumable like a split run."""
    from geoql.app.config import CompileConfig

    monkeypatch.setenv("GEOQL_CPU_MODEL_DIR", str(hinted_cpu_model_dir))
    monkeypatch.setenv("GEOQL_INDEX_DIR", str(small_index_dir))
    requests = [*(osmnl_dir() / "dev.de.nl").read_text(encoding="utf-8").splitlines()[:2], "",
                *(osmnl_dir() / "dev.zh.nl").read_text(encoding="utf-8").splitlines()[:2], "🙂"]
    path = tmp_path / "mine.nl"
    path.write_text("\n".join(requests) + "\n", encoding="utf-8")
    out = tmp_path / "mine.pred"
    _interrupted_run(tmp_path / "mine.pred.tmp", requests, CompileConfig(), str(path), {0: "node[a];out;"})
    assert main(["compile", "--requests", str(path), "--out", str(out)]) == 0
    assert "1 of 6 answered" in capsys.readouterr().out
    lines = out.read_text(encoding="utf-8").split("\n")
    assert len(lines) == 7 and lines[-1] == "" and lines[0] == "node[a];out;"
    assert lines[2] == ""  # a blank request gets an empty line: no answer, and the lines stay aligned
    for i in (1, 3, 4, 5):
        assert overpassql.check(lines[i]) == [], (requests[i], lines[i])


def test_a_single_request_on_the_cpu_default_is_quiet(hinted_cpu_model_dir, small_index_dir):
    """One request prints its query and nothing else: no progress bars (the embedding model's
    "Loading weights" bar was printed on every call); a doubt is one line on stderr."""
    env = {**os.environ, "GEOQL_CPU_MODEL_DIR": str(hinted_cpu_model_dir), "GEOQL_INDEX_DIR": str(small_index_dir)}
    result = subprocess.run([sys.executable, "-m", "geoql", "compile", "pubs in Dublin"], env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    # at most the one-line doubt (this small model is often unsure), never a progress bar
    assert [line for line in result.stderr.splitlines() if not line.startswith("geoql compile: warning: ")] == []
    assert len(result.stderr.splitlines()) <= 1
    assert len(result.stdout.splitlines()) == 1 and '"amenity"="pub"' in result.stdout


def _cpu_env(hinted_cpu_model_dir, small_index_dir):
    return {**os.environ, "GEOQL_CPU_MODEL_DIR": str(hinted_cpu_model_dir), "GEOQL_INDEX_DIR": str(small_index_dir)}


def test_a_request_not_about_places_warns_on_stderr_only(hinted_cpu_model_dir, small_index_dir):
    result = subprocess.run([sys.executable, "-m", "geoql", "compile", "'; DROP TABLE --"],
                            env=_cpu_env(hinted_cpu_model_dir, small_index_dir), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    from geoql.app.decoding import validate

    assert len(result.stdout.splitlines()) == 1 and validate(result.stdout.strip()) == []  # stdout: the query only
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("geoql compile: warning: this does not look like a request about places")


def test_json_output_has_the_doubts(hinted_cpu_model_dir, small_index_dir, capsys, monkeypatch):
    monkeypatch.setenv("GEOQL_CPU_MODEL_DIR", str(hinted_cpu_model_dir))
    monkeypatch.setenv("GEOQL_INDEX_DIR", str(small_index_dir))
    assert main(["compile", "benches within 100 m of a playground in Zurich", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert 0 <= data["confidence"] <= 1 and isinstance(data["uncovered"], list) and isinstance(data["far"], bool)
    assert data["off_topic"] is False and data["status"].startswith("Compiled")


def test_the_warning_line_joins_the_doubts():
    from geoql.app.compile import Compilation
    from geoql.app.compile_cli import doubt_line

    comp = Compilation(nl="x", query="node;out;", valid=True, confidence=0.9, doubts=["not covered by the query: x"])
    assert doubt_line(comp) == ""  # sure enough: the uncovered words are in --json and the demo, not on stderr
    comp.low_confidence, comp.confidence = True, 0.3
    comp.doubts.insert(0, "low confidence (0.30): check the query before relying on it")
    assert doubt_line(comp) == "low confidence (0.30): check the query before relying on it; not covered by the query: x"
    silent = Compilation(nl="x", query="node(1);", valid=True, no_output=True, doubts=[NO_OUTPUT_WARNING])
    assert doubt_line(silent) == NO_OUTPUT_WARNING  # a query that returns nothing is always said on stderr
