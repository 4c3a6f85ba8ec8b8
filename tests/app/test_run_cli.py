"""``geoql run``: the demo's messages on the command line, the result in a file named after it."""

from __future__ import annotations

import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from fakes.fixtures import fake_nominatim, fake_overpass  # noqa: F401 (fixtures)
from fakes.servers import Reply, json_reply
from testdata import data_dir

from geoql.app.cli import main

BOX = "49.40,8.68,49.41,8.69"


def run(fake_overpass, fake_nominatim, tmp_path, *argv):
    return main(["run", *argv, "--endpoint", fake_overpass.url, "--nominatim-url", fake_nominatim.url,
                 "--cache-dir", str(tmp_path / "cache")])


def test_a_query_runs_and_its_geojson_is_written(fake_overpass, fake_nominatim, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fake_overpass.default = json_reply("heidelberg_cafes.json")
    assert run(fake_overpass, fake_nominatim, tmp_path, "--query", 'nwr["amenity"="cafe"]({{bbox}});out;', "--bbox", BOX) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"geoql run: Ran on {fake_overpass.url} (")
    assert err[1].startswith("geoql run: 4 elements (2 nodes, 1 way, 1 relation)")
    assert err[2] == f"geoql run: wrote {tmp_path / 'geoql-cafe.geojson'}"
    assert len(json.loads((tmp_path / "geoql-cafe.geojson").read_text(encoding="utf-8"))["features"]) == 4


def test_a_count_goes_to_stdout_as_csv(fake_overpass, fake_nominatim, tmp_path, capsys):
    fake_overpass.default = json_reply("count.json")
    assert run(fake_overpass, fake_nominatim, tmp_path, "-q", 'nwr["amenity"="pharmacy"]({{bbox}});out count;',
               "--bbox", BOX, "--out", "-") == 0
    out, err = capsys.readouterr()
    assert out == "total,nodes,ways,relations\n15,12,3,0\n"
    assert "geoql run: count: 15 (12 nodes, 3 ways, 0 relations)" in err


def test_a_syntax_error_is_marked_and_nothing_is_sent(fake_overpass, fake_nominatim, tmp_path, capsys):
    assert run(fake_overpass, fake_nominatim, tmp_path, "-q", 'nwr["amenity"="cafe"({{bbox}});out;', "--bbox", BOX) == 1
    err = capsys.readouterr().err
    assert "line 1, column 21: ']' expected - '(' found." in err and "                     ^" in err
    assert "Nothing was sent" in err and fake_overpass.queries() == []


@pytest.mark.parametrize("argv, words", [
    ([], "give a request"),
    (["cafes", "--query", "node(1);out;"], "not both"),
    (["-q", "node(1);out;", "--endpoint", "somewhere"], "neither a listed server"),
])
def test_bad_arguments_are_one_line_errors(capsys, argv, words):
    assert main(["run", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("geoql run: error: ") and words in err and len(err.splitlines()) == 1


def test_a_bbox_query_without_a_box_says_how_to_give_one(fake_overpass, fake_nominatim, tmp_path, capsys):
    assert run(fake_overpass, fake_nominatim, tmp_path, "-q", 'nwr["amenity"="cafe"]({{bbox}});out;') == 1
    err = capsys.readouterr().err
    assert "--bbox south,west,north,east" in err and fake_overpass.queries() == []


def test_a_request_is_compiled_on_the_cpu_default_and_run(fake_overpass, fake_nominatim, tmp_path, capsys, monkeypatch,
                                                          hinted_cpu_model_dir, small_index_dir):
    monkeypatch.setenv("GEOQL_CPU_MODEL_DIR", str(hinted_cpu_model_dir))
    monkeypatch.setenv("GEOQL_INDEX_DIR", str(small_index_dir))
    monkeypatch.chdir(tmp_path)
    fake_overpass.default = json_reply("heidelberg_cafes.json")
    assert run(fake_overpass, fake_nominatim, tmp_path, "cafes in the current view", "--bbox", BOX) == 0
    out, err = capsys.readouterr()
    query = out.strip()
    assert "cafe" in query and "{{bbox}}" in query  # the compiled query, as geoql compile prints it
    assert f"geoql run: Ran on {fake_overpass.url}" in err
    assert BOX in fake_overpass.queries()[-1]
    assert (tmp_path / "geoql-cafes-in-the-current-view.geojson").is_file()


# ---------------------------------------------------------------- what a server or a machine can do to a run

BROKEN = {
    "elements that are not objects": '{"elements": [1, "node", null, {"type": "count", "id": 0, "tags": {"total": "2"}}]}',
    "lat null": '{"elements": [{"type": "node", "id": 1, "lat": null, "lon": 8.7, "tags": {"amenity": "bench"}}]}',
    "an id that is a list": '{"elements": [{"type": "node", "id": [1], "lat": 49.4, "lon": 8.7, "tags": ["a"]}]}',
    "count tags null": '{"elements": [{"type": "count", "id": 0, "tags": null}]}',
}


@pytest.mark.parametrize("body", list(BROKEN.values()), ids=list(BROKEN))
def test_a_broken_answer_is_written_as_what_can_be_read(fake_overpass, fake_nominatim, tmp_path, capsys, body):
    """Issue 42: `geoql run` crashed in geo.counts on an element that is not an object or has lat: null."""
    fake_overpass.default = Reply(200, body)
    assert run(fake_overpass, fake_nominatim, tmp_path, "-q", 'nwr["amenity"="bench"]({{bbox}});out;', "--bbox", BOX,
               "--out", str(tmp_path / "out.geojson")) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Ran on" in err
    written = (tmp_path / "out.geojson").read_text(encoding="utf-8")
    assert written.startswith("total") or json.loads(written)["type"] == "FeatureCollection"


def test_no_temporary_folder_is_left_behind(fake_overpass, fake_nominatim, tmp_path, capsys, monkeypatch):
    """Issue 42: every `geoql run` left a geoql-run-* folder in the system's temporary directory."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    fake_overpass.default = json_reply("heidelberg_cafes.json")
    query = 'nwr["amenity"="cafe"]({{bbox}});out;'
    assert run(fake_overpass, fake_nominatim, tmp_path, "-q", query, "--bbox", BOX, "--out", str(tmp_path / "a.geojson")) == 0
    assert run(fake_overpass, fake_nominatim, tmp_path, "-q", query, "--bbox", BOX, "--out", "-") == 0
    capsys.readouterr()
    assert list(scratch.iterdir()) == []


# As root, a folder's permissions bind only without the capabilities that override them (util-linux setpriv).
AS_A_USER = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", "--inh-caps=-all", "--"]


def _run_in_a_process(fake_overpass, fake_nominatim, cache: Path, out: Path, *, prefix=(), **popen):
    env = dict(os.environ, GEOQL_DATA_DIR=str(data_dir().resolve()))
    return subprocess.run(
        [*prefix, sys.executable, "-m", "geoql", "run", "-q", 'nwr["amenity"="cafe"]({{bbox}});out;', "--bbox", BOX,
         "--endpoint", fake_overpass.url, "--nominatim-url", fake_nominatim.url, "--cache-dir", str(cache),
         "--out", str(out)], env=env, capture_output=True, text=True, timeout=300, **popen)


def test_a_read_only_cache_folder_gives_the_answer_and_says_why_nothing_is_kept(fake_overpass, fake_nominatim, tmp_path):
    """Issue 42: a read-only cache folder crashed `geoql run` with sqlite3.OperationalError."""
    fake_overpass.default = json_reply("heidelberg_cafes.json")
    cache = tmp_path / "cache"
    cache.mkdir()
    with sqlite3.connect(cache / "overpass_cache.sqlite") as db:
        db.execute("CREATE TABLE results (key TEXT PRIMARY KEY, value BLOB NOT NULL, created REAL NOT NULL)")
    (cache / "overpass_cache.sqlite").chmod(0o444)
    cache.chmod(0o555)
    try:
        done = _run_in_a_process(fake_overpass, fake_nominatim, cache, tmp_path / "cafes.geojson",
                                 prefix=AS_A_USER if os.geteuid() == 0 else ())
    finally:
        cache.chmod(0o755)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "OperationalError" not in done.stderr
    assert "cannot be used" in done.stderr and "--cache-dir" in done.stderr
    assert len(json.loads((tmp_path / "cafes.geojson").read_text(encoding="utf-8"))["features"]) == 4


def test_a_full_disk_under_the_cache_gives_the_answer_and_says_why_nothing_is_kept(fake_overpass, fake_nominatim, tmp_path):
    """The file size limit of the process stands in for a full disk: the cache's writes fail
    (the answer, a few kB, is still written)."""
    fake_overpass.default = json_reply("heidelberg_cafes.json")

    def small_disk():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead of killing the process
        resource.setrlimit(resource.RLIMIT_FSIZE, (16384, 16384))

    done = _run_in_a_process(fake_overpass, fake_nominatim, tmp_path / "cache", tmp_path / "cafes.geojson",
                             preexec_fn=small_disk)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "cannot be used" in done.stderr
    assert len(json.loads((tmp_path / "cafes.geojson").read_text(encoding="utf-8"))["features"]) == 4
