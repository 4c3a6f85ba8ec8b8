"""``geoql retrieval-eval`` through the dispatcher."""

from __future__ import annotations

import json

import pytest

from geoql.app.cli import main
from geoql.retrieval.cli import parse_ks


def test_retrieval_eval_writes_json(small_index_dir, tmp_path, capsys):
    out = tmp_path / "r" / "figures.json"
    code = main(["retrieval-eval", "--split", "dev", "--k", "5,10,20", "--index-dir", str(small_index_dir),
                 "--limit", "15", "--json", str(out)])
    assert code == 0
    figures = json.loads(out.read_text())
    for name in ("recall@5", "recall@10", "recall@20", "key_recall@10", "coverage", "p50_ms", "p95_ms"):
        assert name in figures and f"{name}:" in capsys.readouterr().out + name + ":"
    assert 0 <= figures["recall@5"] <= figures["recall@20"] <= 1 and figures["n_examples"] == 15


def test_missing_index_is_a_user_error(tmp_path, capsys):
    assert main(["retrieval-eval", "--index-dir", str(tmp_path / "none")]) == 2
    assert "geoql index build --out" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["", "a,b", "0,5", "-1"])
def test_bad_k(text):
    with pytest.raises(ValueError, match="5,10,20"):
        parse_ks(text)


def test_bad_k_via_cli(capsys):
    assert main(["retrieval-eval", "--k", "ten"]) == 2
    assert "--k must be" in capsys.readouterr().err


def test_retrieval_eval_halves(small_index_dir, tmp_path):
    sizes = {}
    for half in ("even", "odd"):
        out = tmp_path / f"{half}.json"
        assert main(["retrieval-eval", "--index-dir", str(small_index_dir), "--limit", "9", "--half", half, "--json", str(out)]) == 0
        sizes[half] = json.loads(out.read_text())["n_examples"]
    assert sizes == {"even": 5, "odd": 4}


def test_retrieval_eval_writes_misses(small_index_dir, tmp_path, capsys):
    out = tmp_path / "m" / "misses.jsonl"
    assert main(["retrieval-eval", "--index-dir", str(small_index_dir), "--limit", "30", "--k", "5",
                 "--misses", str(out)]) == 0
    printed = capsys.readouterr().out
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert rows and f"missed at 5: {len(rows)} pairs" in printed and "most missed keys:" in printed
    assert "recall by cosine of the nearest training request" in printed
    for row in rows:
        assert row["why"] in {"ranked below 5", "not a candidate", "not in index"} and row["pair"] not in row["listed"]
        assert set(row) == {"index", "request", "pair", "why", "listed"}


def test_unwritable_output_is_a_user_error(small_index_dir, tmp_path, capsys):
    """A directory where the file should go: a clear message, and the directory is left as it was."""
    taken = tmp_path / "taken"
    (taken / "inside").mkdir(parents=True)
    assert main(["retrieval-eval", "--index-dir", str(small_index_dir), "--limit", "3", "--misses", str(taken)]) == 2
    assert f"cannot write {taken}" in capsys.readouterr().err
    assert (taken / "inside").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]  # no half-written temporary file left beside it
