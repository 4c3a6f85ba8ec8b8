"""``geoql.app.explain``: the query in words with the tag index's preset names; without
an index, or without names in the language, the plain explanation."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import overpassql
from geoql.retrieval import artifacts as A

app_explain = importlib.import_module("geoql.app.explain")  # the module, whatever geoql.app exports

QUERY = ('{{geocodeArea:"Heidelberg"}}->.searchArea;'
         'nwr["amenity"="cafe"]["amenity"!="pub"](area.searchArea);out center;')


def test_preset_names_come_from_the_index(small_index_dir):
    names = app_explain.preset_names("en", small_index_dir)
    assert names["amenity=cafe"] == "Cafe" and names["amenity=pub"] == "Pub"
    docs = A.read_jsonl(small_index_dir / A.TAGS_JSONL)
    named = {d["tag"]: d["names"][0] for d in docs if d["names"]}
    assert names == named  # every named tag document, by its first (the preset's own) name


def test_explain_with_the_index(small_index_dir):
    assert app_explain.explain(QUERY, index_dir=small_index_dir) == (
        "Nodes, ways and relations tagged `amenity=cafe` (Cafe), not tagged `amenity=pub` (Pub), "
        "inside the area named Heidelberg; output their tags and centre point.")


def test_other_languages_get_their_own_names_never_english_ones(small_index_dir):
    # The index carries iD's translations: German gets German names; a language the
    # index has no names in gets none rather than English ones.
    german = app_explain.preset_names("de", small_index_dir)
    assert german["amenity=bench"] == "Sitzbank"
    assert app_explain.preset_names("xx", small_index_dir) == {}
    assert app_explain.explain(QUERY, "xx", small_index_dir) == overpassql.explain(QUERY, "xx")


def test_names_in_the_language_when_the_index_has_them(tmp_path):
    rows = [
        {"tag": "amenity=cafe", "names": ["Cafe"], "names_by_lang": {"de": ["Café"], "fr": ["Café"]}},
        {"tag": "amenity=pub", "names": ["Pub"], "names_by_lang": {"de": ["Kneipe"]}},
    ]
    lines = [json.dumps(r, ensure_ascii=False) for r in rows]
    (tmp_path / A.TAGS_JSONL).write_text(lines[0] + "\n{torn line\n" + lines[1] + "\n",
                                         encoding="utf-8")
    assert app_explain.preset_names("de-DE", tmp_path) == {"amenity=cafe": "Café", "amenity=pub": "Kneipe"}
    assert app_explain.preset_names("fr", tmp_path) == {"amenity=cafe": "Café"}
    assert app_explain.explain(QUERY, "de", tmp_path) == (
        "Knoten, Wege und Relationen mit `amenity=cafe` (Café), ohne `amenity=pub` (Kneipe), im "
        "Gebiet namens Heidelberg; Ausgabe: Tags und Mittelpunkt.")


def test_a_rewritten_index_is_read_again(tmp_path):
    path = tmp_path / A.TAGS_JSONL
    path.write_text(json.dumps({"tag": "amenity=cafe", "names": ["Cafe"]}) + "\n", encoding="utf-8")
    assert app_explain.preset_names("en", tmp_path) == {"amenity=cafe": "Cafe"}
    path.write_text(json.dumps({"tag": "amenity=cafe", "names": ["Coffee shop"]}) + "\n",
                    encoding="utf-8")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    assert app_explain.preset_names("en", tmp_path) == {"amenity=cafe": "Coffee shop"}


def test_without_an_index_there_are_no_names(tmp_path):
    # The test session points GEOQL_INDEX_DIR at an empty place (tests/conftest.py).
    assert app_explain.preset_names() == {}
    assert app_explain.explain(QUERY) == overpassql.explain(QUERY)
    assert app_explain.explain(QUERY, index_dir=tmp_path / "nowhere") == overpassql.explain(QUERY)
    assert app_explain.explain("🙂", "fr", tmp_path) == overpassql.explain("🙂", "fr")


def test_the_helper_stays_light():
    code = ("import sys, geoql.app.explain as e; e.explain('node[amenity=cafe];out;'); "
            "print(sorted(m for m in ('torch', 'faiss', 'transformers', 'sentence_transformers', "
            "'bm25s', 'sklearn', 'lark', 'gradio') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
