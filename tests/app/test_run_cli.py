"""``geoql run``: the demo's messages on the command line, the result in a file named after it."""

from __future__ import annotations

import json

import pytest
from fakes.fixtures import fake_nominatim, fake_overpass  # noqa: F401 (fixtures)
from fakes.servers import json_reply

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
