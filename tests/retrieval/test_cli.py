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


def _osmnl_like(folder, dev, lang, first):
    """An OsmNL-shaped pair of files: OverpassNL dev's requests and gold, the first lines rewritten in ``lang``."""
    folder.mkdir(parents=True, exist_ok=True)
    nls = [ex.nl for ex in dev]
    nls[: len(first)] = first
    (folder / f"dev.{lang}.nl").write_text("\n".join(nls) + "\n", encoding="utf-8")
    (folder / f"dev.{lang}.query").write_text("\n".join(ex.query for ex in dev) + "\n", encoding="utf-8")


def test_any_request_and_query_files_with_a_reference_gold(small_index_dir, overpassnl_dir, tmp_path, capsys):
    from geoql.eval.dataset import load_split

    dev = load_split("dev", overpassnl_dir)
    _osmnl_like(tmp_path, dev, "de", ["Welche Apotheken gibt es in Berlin?", "Museen in Wien"])
    out = tmp_path / "figures.json"
    code = main(["retrieval-eval", "--index-dir", str(small_index_dir), "--requests", str(tmp_path / "dev.de.nl"),
                 "--queries", str(tmp_path / "dev.de.query"), "--reference-queries", str(overpassnl_dir / "dataset.dev.query"),
                 "--limit", "4", "--json", str(out)])
    assert code == 0
    figures = json.loads(out.read_text())
    assert figures["n_examples"] == 4 and figures["gold"].startswith("own")
    # the files' own gold is OverpassNL's here, so both golds agree
    assert figures["reference_gold"]["recall@10"] == figures["recall@10"]
    assert "against " in capsys.readouterr().out


def test_languages_table(small_index_dir, overpassnl_dir, tmp_path, capsys):
    from geoql.eval.dataset import load_split

    dev = load_split("dev", overpassnl_dir)
    _osmnl_like(tmp_path, dev, "de", ["Welche Apotheken gibt es in Berlin?"])
    _osmnl_like(tmp_path, dev, "zh", ["柏林有哪些药店？"])
    out = tmp_path / "langs.json"
    assert main(["retrieval-eval", "--index-dir", str(small_index_dir), "--data-dir", str(overpassnl_dir),
                 "--osmnl-dir", str(tmp_path), "--languages", "de,zh", "--limit", "3", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "OverpassNL dev gold" in printed and "own (OsmNL) gold" in printed
    rows = [line.split()[0] for line in printed.splitlines() if line[:3] in {"de ", "zh "}]
    assert rows == ["de", "zh"]
    figures = json.loads(out.read_text())
    assert set(figures) == {"de", "zh"} and figures["de"]["own_gold"]["n_examples"] == 3


@pytest.mark.parametrize("argv,message", [
    (["--requests", "x.nl"], "go together"),
    (["--reference-queries", "x.query"], "needs --requests"),
    (["--requests", "nope.nl", "--queries", "nope.query"], "does not exist"),
])
def test_file_options_name_the_fix(small_index_dir, argv, message, capsys):
    assert main(["retrieval-eval", "--index-dir", str(small_index_dir), *argv]) == 2
    assert message in capsys.readouterr().err


def test_languages_with_missing_files(small_index_dir, tmp_path, capsys):
    assert main(["retrieval-eval", "--index-dir", str(small_index_dir), "--osmnl-dir", str(tmp_path), "--languages", "xx"]) == 2
    assert "dev.xx" in capsys.readouterr().err
