"""scripts/missing_attributes.py: rows whose gold says an attribute is missing, and whether the answer does."""

from __future__ import annotations

import importlib.util

import pytest

from testdata import REPO_ROOT


def _script():
    spec = importlib.util.spec_from_file_location("missing_attributes", REPO_ROOT / "scripts" / "missing_attributes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("query, keys", [
    ('nwr[leisure=park][!"name"];out;', ["name"]),
    ('way[highway]["maxspeed"!~".*"];out;', ["maxspeed"]),
    ('nwr[amenity=toilets]["wheelchair"="no"]["fee"!="yes"];out;', ["fee", "wheelchair"]),
    ('nwr[amenity=cafe]["name"]["wheelchair"="yes"];out;', []),
    ('nwr[amenity=cafe]["name"!~"Starbucks"];out;', []),  # a name pattern, not the name missing
    ("this is no query", []),
])
def test_missing_keys_of_a_gold_query(query, keys):
    assert sorted(_script().missing_keys(query, frozenset({"name", "maxspeed", "wheelchair", "fee"}))) == keys


def test_rows_are_those_whose_gold_says_an_attribute_is_missing(tmp_path, capsys, small_cpu_model_dir):
    (tmp_path / "dataset.dev.nl").write_text("unnamed parks in Bonn\ncafes in Bonn\nstreets in Bonn\n", encoding="utf-8")
    (tmp_path / "dataset.dev.query").write_text(
        '{{geocodeArea:"Bonn"}}->.a;nwr["leisure"="park"][!"name"](area.a);out;\n'
        '{{geocodeArea:"Bonn"}}->.a;nwr["amenity"="cafe"](area.a);out;\n'
        '{{geocodeArea:"Bonn"}}->.a;way["highway"][!"maxspeed"](area.a);out;\n', encoding="utf-8")
    assert _script().main(["--data-dir", str(tmp_path), "-o", f"model_dir={small_cpu_model_dir}", "--show", "5"]) == 0
    out = capsys.readouterr().out
    # the cafes ask nothing missing; the streets' gold does, but the request does not say it
    assert "overpassnl: 1/2 50.0 %" in out and "overpassnl:3 wants maxspeed missing | streets in Bonn" in out


def test_missing_files_are_a_clear_error(tmp_path, capsys):
    assert _script().main(["--data-dir", str(tmp_path)]) == 2
    assert "no " in capsys.readouterr().err
