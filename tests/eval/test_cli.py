"""``geoql eval`` end to end (the real dispatcher, converter and files), and the
report's numbers checked against the official per-example scores."""

from __future__ import annotations

import gc
import json

import pytest

from geoql.app.cli import main
from geoql.eval.metrics import Scorer
from geoql.eval.report import EvalConfig, evaluate, read_predictions
from testdata import osmnl_dir, reference_rows

KNN_ROWS = reference_rows("knn_dev.official_scores.jsonl")


@pytest.fixture(scope="module")
def recorded_scorer() -> Scorer:
    table = {}
    for name in ("gold_reference.jsonl", "conformance.jsonl"):
        for row in reference_rows(name):
            table[row["query"]] = row["xml"]
    return Scorer(xml_source=table.__getitem__)


@pytest.fixture
def knn_pred(overpassnl_dir):
    return overpassnl_dir / "reference" / "knn_dev.pred"


def _eval(capsys, *argv):
    rc = main(["eval", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_eval_prints_the_table_and_writes_consistent_files(capsys, tmp_path, knn_pred, overpassnl_dir):
    out_json, out_rows = tmp_path / "r.json", tmp_path / "r.jsonl"
    rc, out, err = _eval(
        capsys, "--pred", knn_pred, "--split", "dev", "--data-dir", overpassnl_dir,
        "--json", out_json, "--per-example", out_rows,
    )
    assert rc == 0, err
    assert gc.isenabled()  # the command pauses the collector only while it scores
    assert "EM" in out and "chrF" in out and "TreeS" in out and "OQS" in out
    assert "hard         333" in out and "all         1000" in out
    assert "KVS buckets" in out and "if KVS were perfect" in out and "parse failures" in out
    figures = json.loads(out_json.read_text())
    assert {"oqs", "kvs", "tree", "chrf", "em", "n", "hard"} <= set(figures)
    assert figures["n"] == 1000 and figures["hard"]["n"] == 333
    rows = [json.loads(line) for line in out_rows.read_text().splitlines()]
    assert [r["index"] for r in rows] == list(range(1000))
    assert sum(r["hard"] for r in rows) == 333
    assert all(r["xml_ok"] for r in rows)
    assert sum(bool(r["converter_errors"]) for r in rows) == figures["analysis"]["parse_failures"]["converter_errors"]
    for key in ("oqs", "kvs", "tree", "chrf", "em"):
        assert figures[key] == pytest.approx(sum(r[key] for r in rows) / 10, abs=1e-9)
        assert figures["hard"][key] == pytest.approx(sum(r[key] for r in rows if r["hard"]) / 3.33, abs=1e-9)
    # the table shows the JSON figures, two decimals
    assert f"{figures['oqs']:.2f}" in out and f"{figures['hard']['kvs']:.2f}" in out
    assert figures["em"] == 0.1  # EM needs no converter
    assert figures["chrf"] == pytest.approx(60.17669057486694, abs=1e-9)


def test_report_reproduces_the_official_figures(tmp_path, knn_pred, overpassnl_dir, recorded_scorer):
    out_rows = tmp_path / "r.jsonl"
    result = evaluate(
        EvalConfig(pred=str(knn_pred), data_dir=str(overpassnl_dir), per_example_out=str(out_rows), progress=False),
        scorer=recorded_scorer,
    )
    got = {k: round(result.figures[k], 4) for k in ("oqs", "kvs", "tree", "chrf", "em")}
    assert got == {"oqs": 54.2869, "kvs": 41.6644, "tree": 61.0197, "chrf": 60.1767, "em": 0.1}
    rows = [json.loads(line) for line in out_rows.read_text().splitlines()]
    for row, official in zip(rows, KNN_ROWS):
        for key in ("oqs", "kvs", "tree", "chrf"):
            assert row[key] == pytest.approx(official[key], abs=1e-9)
        assert row["em"] == official["em"]
    buckets = result.figures["analysis"]["kvs_buckets"]
    assert buckets["0"] == sum(r["kvs"] == 0 for r in KNN_ROWS)
    assert buckets["1"] == sum(r["kvs"] == 1 for r in KNN_ROWS)
    assert sum(buckets.values()) == 1000
    ceiling = sum((1 + r["tree"] + r["chrf"]) / 3 for r in KNN_ROWS) / 10
    assert result.figures["analysis"]["ceilings"]["oqs_if_kvs_perfect"] == pytest.approx(ceiling, abs=1e-9)


def test_compare_counts_the_churn(tmp_path, knn_pred, overpassnl_dir, recorded_scorer):
    gold_pred = tmp_path / "gold.pred"
    gold_pred.write_text((overpassnl_dir / "dataset.dev.query").read_text(encoding="utf-8"), encoding="utf-8")
    result = evaluate(
        EvalConfig(pred=str(gold_pred), compare=str(knn_pred), data_dir=str(overpassnl_dir), progress=False),
        scorer=recorded_scorer,
    )
    churn = result.figures["churn"]
    assert churn["improved"] == sum(r["oqs"] < 1 - 1e-9 for r in KNN_ROWS)
    assert churn["regressed"] == 0
    assert churn["em_gained"] == 999 and churn["em_lost"] == 0
    assert churn["oqs_gained"] == pytest.approx(100 - 54.28693428497697, abs=1e-9)
    assert churn["catastrophic_before"] == sum(r["oqs"] < 0.10 for r in KNN_ROWS)
    assert churn["catastrophic_after"] == 0
    assert result.figures["oqs"] == 100.0
    assert "improved" in result.text and "EM gained 999, lost 0" in result.text


def test_jsonl_predictions_in_any_order(tmp_path, knn_pred, overpassnl_dir):
    queries = read_predictions(knn_pred, expected=1000)
    rows = [{"index": i, "query": q} for i, q in enumerate(queries)]
    path = tmp_path / "preds.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in reversed(rows)) + "\n", encoding="utf-8")
    assert read_predictions(path, expected=1000) == queries
    unsuffixed = tmp_path / "preds.txt"
    unsuffixed.write_text("\n".join(json.dumps({"query": q}) for q in queries), encoding="utf-8")
    assert read_predictions(unsuffixed, expected=1000) == queries


def test_line_endings_trailing_blank_lines_and_empty_answers(tmp_path, knn_pred):
    queries = read_predictions(knn_pred, expected=1000)
    queries[3] = ""
    path = tmp_path / "p.txt"
    path.write_bytes(("\r\n".join(queries) + "\r\n\r\n\n").encode())
    assert read_predictions(path, expected=1000) == queries


@pytest.mark.parametrize("n_lines", [999, 1001])
def test_wrong_line_count_is_one_line_error(capsys, tmp_path, knn_pred, overpassnl_dir, n_lines):
    queries = read_predictions(knn_pred, expected=1000)
    path = tmp_path / "short.pred"
    path.write_text("\n".join((queries * 2)[:n_lines]) + "\n", encoding="utf-8")
    keep = tmp_path / "keep.json"
    keep.write_text('{"oqs": 1}')
    rc, out, err = _eval(capsys, "--pred", path, "--data-dir", overpassnl_dir, "--json", keep)
    assert rc == 2
    assert err.count("\n") == 1 and f"has {n_lines} predictions" in err and "one query per line" in err
    assert keep.read_text() == '{"oqs": 1}'  # an earlier result is not clobbered


@pytest.mark.parametrize(
    "content,message",
    [
        (b'{"query": "node;out;"}\n{"query": \n', "is not valid JSON"),
        (b'{"query": 3}\n', "string 'query' field"),
        (b"\xff\xfenode;out;\n", "not UTF-8"),
    ],
)
def test_bad_prediction_files(capsys, tmp_path, overpassnl_dir, content, message):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    rc, _, err = _eval(capsys, "--pred", path, "--data-dir", overpassnl_dir)
    assert rc == 2 and message in err and err.count("\n") == 1


def test_jsonl_index_must_cover_the_split(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"index": 0, "query": "a"}\n{"index": 0, "query": "b"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="must be 0..1"):
        read_predictions(path, expected=2)


def test_missing_inputs(capsys, tmp_path, knn_pred):
    rc, _, err = _eval(capsys, "--pred", tmp_path / "nope.pred", "--data-dir", tmp_path)
    assert rc == 2 and "does not exist" in err
    rc, _, err = _eval(capsys, "--pred", knn_pred, "--data-dir", tmp_path / "nodata")
    assert rc == 2 and "GEOQL_DATA_DIR" in err and err.count("\n") == 1


def test_option_mistakes(capsys, tmp_path, knn_pred, overpassnl_dir):
    rc, _, err = _eval(capsys, "--pred", knn_pred, "--data-dir", overpassnl_dir, "--json", tmp_path)
    assert rc == 2 and "is a directory" in err
    (tmp_path / "file").write_text("a user's file")
    rc, _, err = _eval(capsys, "--pred", knn_pred, "--data-dir", overpassnl_dir, "--per-example", tmp_path / "file" / "x.jsonl")
    assert rc == 2 and f"--per-example: cannot write to {tmp_path / 'file'}" in err and err.count("\n") == 1
    rc, _, err = _eval(capsys, "--pred", knn_pred, "--overpass-url", "http://127.0.0.1:1/api/interpreter")
    assert rc == 2 and "--execution" in err
    with pytest.raises(SystemExit):
        main(["eval", "--pred", str(knn_pred), "--split", "train"])


# -- --execution against a loopback Overpass server ----------------------------------

GOLD = '[out:json];node["amenity"="cafe"]({{bbox}});out;'
OTHER = '[out:json];node["amenity"="pub"]({{bbox}});out;'


@pytest.fixture
def bbox_only_data(tmp_path):
    """A dataset of the official shape whose queries need no geocoding (and no difficulty files)."""
    data = tmp_path / "data"
    data.mkdir()
    for split, n in (("train", 6352), ("dev", 1000), ("test", 1000)):
        (data / f"dataset.{split}.nl").write_text("cafes in the box\n" * n, encoding="utf-8")
        (data / f"dataset.{split}.query").write_text(f"{GOLD}\n" * n, encoding="utf-8")
        (data / f"dataset.{split}.bbox").write_text("49.40,8.68,49.42,8.71\n" * n, encoding="utf-8")
    return data


def test_execution_metrics_through_the_command(capsys, tmp_path, bbox_only_data):
    from fakes.servers import FakeOverpass, json_reply

    preds = tmp_path / "p.pred"
    preds.write_text("\n".join([GOLD] * 600 + [OTHER] * 400) + "\n", encoding="utf-8")
    out_json, out_rows = tmp_path / "r.json", tmp_path / "r.jsonl"
    with FakeOverpass() as server:
        server.add('"cafe"', json_reply("heidelberg_cafes.json"))
        rc, out, err = _eval(
            capsys, "--pred", preds, "--data-dir", bbox_only_data, "--execution", "--overpass-url", server.url,
            "--cache-dir", tmp_path / "cache", "--json", out_json, "--per-example", out_rows, "--no-progress",
        )
    assert rc == 0, err
    assert "EX 60.00" in out and "hard" not in out.split("failure analysis")[0]
    figures = json.loads(out_json.read_text())
    assert figures["execution"]["ex"] == 60.0 and figures["execution"]["n"] == 1000
    assert "hard" not in figures
    rows = [json.loads(line) for line in out_rows.read_text().splitlines()]
    assert [r["execution"]["ex"] for r in rows] == [1] * 600 + [0] * 400


def test_unreachable_overpass_is_a_clear_error(capsys, tmp_path, bbox_only_data):
    import socket

    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    preds = tmp_path / "p.pred"
    preds.write_text(f"{GOLD}\n" * 1000, encoding="utf-8")
    rc, _, err = _eval(
        capsys, "--pred", preds, "--data-dir", bbox_only_data, "--execution",
        "--overpass-url", f"http://127.0.0.1:{port}/api/interpreter", "--cache-dir", tmp_path / "cache", "--no-progress",
    )
    assert rc == 2 and "execution stopped" in err and err.count("\n") == 1


# -- any gold file: --gold / --requests / --bbox ---------------------------------------------

@pytest.fixture(scope="module")
def osmnl():
    return osmnl_dir()


def test_gold_file_scores_like_the_split(capsys, tmp_path, knn_pred, overpassnl_dir):
    """The dev split's own query file as --gold gives the split's figures (without the hard subset)."""
    split_json, gold_json = tmp_path / "split.json", tmp_path / "gold.json"
    assert _eval(capsys, "--pred", knn_pred, "--data-dir", overpassnl_dir, "--json", split_json, "--no-progress")[0] == 0
    rc, out, err = _eval(capsys, "--pred", knn_pred, "--gold", overpassnl_dir / "dataset.dev.query",
                         "--requests", overpassnl_dir / "dataset.dev.nl", "--json", gold_json, "--no-progress")
    assert rc == 0, err
    split, gold = json.loads(split_json.read_text()), json.loads(gold_json.read_text())
    assert {k: gold[k] for k in ("oqs", "kvs", "tree", "chrf", "em", "n")} == {k: split[k] for k in ("oqs", "kvs", "tree", "chrf", "em", "n")}
    assert gold["analysis"] == split["analysis"] and "hard" not in gold
    assert "dataset.dev.query (gold): 1000 predictions" in out and "KVS buckets" in out and "hard " not in out


def test_osmnl_language_with_its_failure_analysis_and_unlicensed_parts(capsys, tmp_path, overpassnl_dir, osmnl):
    """OverpassNL's dev gold scored against the German OsmNL files: the command's full report."""
    out_json, out_rows = tmp_path / "de.json", tmp_path / "de.jsonl"
    rc, out, err = _eval(capsys, "--pred", overpassnl_dir / "dataset.dev.query", "--gold", osmnl / "dev.de.query",
                         "--requests", osmnl / "dev.de.nl", "--unlicensed", "--data-dir", overpassnl_dir,
                         "--json", out_json, "--per-example", out_rows, "--no-progress")
    assert rc == 0, err
    figures = json.loads(out_json.read_text())
    golds = (osmnl / "dev.de.query").read_text(encoding="utf-8").splitlines()
    preds = (overpassnl_dir / "dataset.dev.query").read_text(encoding="utf-8").splitlines()
    from geoql.eval.metrics import corpus

    expected = corpus([p.strip() for p in preds], [g.strip() for g in golds])
    for key in ("oqs", "kvs", "tree", "chrf", "em"):
        assert figures[key] == pytest.approx(expected[key], abs=1e-9)
    # about 267 of the 1,000 OsmNL gold queries are OverpassNL's own (the directory's README)
    assert 26.0 <= figures["em"] <= 27.0
    rates = figures["analysis"]["unlicensed"]
    assert 0 < rates["pred"]["core"] <= rates["pred"]["any"] < 100 and 0 < rates["gold"]["any"] < 100 and rates["aliases"] > 0
    assert rates["pred"]["area"] > rates["gold"]["area"]  # German requests do not spell OverpassNL's gold's places
    assert "unlicensed parts:" in out and "of the gold queries" in out and "by kind: area" in out
    rows = [json.loads(line) for line in out_rows.read_text(encoding="utf-8").splitlines()]
    assert rows[6]["nl"] == (osmnl / "dev.de.nl").read_text(encoding="utf-8").splitlines()[6]
    assert not any(r["hard"] for r in rows)


def test_a_prediction_identical_to_the_gold_is_as_faithful_as_the_gold(tmp_path, osmnl):
    result = evaluate(EvalConfig(pred=str(osmnl / "dev.fr.query"), gold=str(osmnl / "dev.fr.query"),
                                 requests=str(osmnl / "dev.fr.nl"), unlicensed=True, progress=False))
    assert result.figures["oqs"] == 100.0 and result.figures["em"] == 100.0
    rates = result.figures["analysis"]["unlicensed"]
    assert rates["pred"] == rates["gold"]


def _lines(path, n=None):
    lines = path.read_text(encoding="utf-8").splitlines()
    return lines if n is None else lines[:n]


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("which", ["gold", "requests", "bbox"])
def test_gold_files_of_other_lengths(capsys, tmp_path, osmnl, which):
    files = {"gold": osmnl / "dev.ko.query", "requests": osmnl / "dev.ko.nl", "bbox": osmnl / "dev.ko.bbox"}
    if which != "gold":
        files[which] = _write(tmp_path / f"short.{which}", _lines(files[which], 999))
    pred = osmnl / "dev.ko.query"
    if which == "gold":  # the predictions are the other file
        pred = _write(tmp_path / "short.pred", _lines(pred, 999))
    rc, _, err = _eval(capsys, "--pred", pred, "--gold", files["gold"], "--requests", files["requests"],
                       "--bbox", files["bbox"])
    assert rc == 2 and err.count("\n") == 1, err
    if which == "gold":
        assert "has 999 predictions but the gold file" in err and "has 1000 examples" in err
    else:
        assert f"short.{which} has 999 lines but" in err and "has 1000" in err and "line i with line i" in err


@pytest.mark.parametrize("option", ["--gold", "--requests", "--bbox"])
@pytest.mark.parametrize("problem, message", [
    ("missing", "does not exist; pass an existing file to"),
    ("directory", "is a directory; pass an existing file to"),
    ("empty", "is empty;"),
    ("blank", "is empty;"),
    ("latin1", "is not UTF-8 text;"),
])
def test_unusable_gold_files(capsys, tmp_path, osmnl, option, problem, message):
    files = {"--gold": osmnl / "dev.ja.query", "--requests": osmnl / "dev.ja.nl", "--bbox": osmnl / "dev.ja.bbox"}
    bad = tmp_path / "bad"
    if problem == "directory":
        bad.mkdir()
    elif problem == "empty":
        bad.write_bytes(b"")
    elif problem == "blank":
        bad.write_bytes(b"\n\n")
    elif problem == "latin1":
        bad.write_bytes("Café in Zürich\n".encode("latin-1"))
    files[option] = bad
    argv = ["--pred", osmnl / "dev.ja.query"]
    for name, path in files.items():
        argv += [name, path]
    rc, _, err = _eval(capsys, *argv)
    assert rc == 2 and err.count("\n") == 1, err
    assert message in err and str(bad) in err
    if problem != "directory" and problem != "missing":
        assert option in err


@pytest.mark.parametrize("argv, message", [
    (["--split", "dev", "--gold", "G"], "--split and --gold both name the gold queries"),
    (["--requests", "R"], "--requests goes with --gold FILE"),
    (["--bbox", "B"], "--bbox goes with --gold FILE"),
    (["--gold", "G", "--unlicensed"], "add --requests FILE"),
    (["--gold", "G", "--unsupported"], "add --requests FILE"),  # its old name
    (["--gold", "G", "--execution"], "add --bbox FILE"),
])
def test_gold_option_mistakes(capsys, knn_pred, argv, message):
    rc, _, err = _eval(capsys, "--pred", knn_pred, *argv)
    assert rc == 2 and message in err and err.count("\n") == 1


def test_execution_against_a_gold_file_with_its_boxes(capsys, tmp_path):
    from fakes.servers import FakeOverpass, json_reply

    gold = _write(tmp_path / "g.query", [GOLD] * 4)
    boxes = _write(tmp_path / "g.bbox", ["49.40,8.68,49.42,8.71"] * 4)
    preds = _write(tmp_path / "p.pred", [GOLD, OTHER, GOLD, GOLD])
    out_json = tmp_path / "r.json"
    with FakeOverpass() as server:
        server.add('"cafe"', json_reply("heidelberg_cafes.json"))
        rc, out, err = _eval(capsys, "--pred", preds, "--gold", gold, "--bbox", boxes, "--execution",
                             "--overpass-url", server.url, "--cache-dir", tmp_path / "cache", "--json", out_json,
                             "--no-progress")
    assert rc == 0, err
    assert "EX 75.00" in out
    assert json.loads(out_json.read_text())["execution"]["n"] == 4
