"""scripts/score_rows.py: rows in the benchmark's format, scored as `geoql eval-requests` scores them."""

from __future__ import annotations

import importlib.util
import json

from geoql.eval.userbench import load_rows
from testdata import REPO_ROOT


def _script():
    spec = importlib.util.spec_from_file_location("score_rows", REPO_ROOT / "scripts" / "score_rows.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rows_of_a_file_are_scored(tmp_path, capsys, small_cpu_model_dir):
    # element ids are composed whatever the model: both answers carry their facts
    rows = [r.raw for r in load_rows("dev") if r.cls == "ids"][:2]
    wrong = dict(rows[1], id="x-1", request="way 1 and way 2", want=[{"types": ["way"], "ids": [3]}])
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [*rows, wrong]), encoding="utf-8")
    assert _script().main([str(path), "-o", f"model_dir={small_cpu_model_dir}", "--show", "5"]) == 0
    out = capsys.readouterr().out
    assert f"{path}: 2/3 66.7 %" in out and "x-1 [ids]" in out


def test_a_malformed_file_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"id": "a"}\n', encoding="utf-8")
    assert _script().main([str(path)]) == 2
    assert "row a:" in capsys.readouterr().err
