"""``geoql eval-languages`` end to end: the real dispatcher, the OsmNL dev files, the OverpassNL dev
gold, and the CPU default (a small trained model) for the compiling runs."""

from __future__ import annotations

import json

import pytest

from geoql.app.cli import main
from geoql.app.eval_cli import LanguagesConfig, run_languages
from geoql.eval.metrics import corpus
from testdata import osmnl_dir

LANGS = ("en", "de", "fr", "ru", "zh", "yue", "ja", "ko")


@pytest.fixture(scope="module")
def osmnl():
    return osmnl_dir()


def _run(capsys, *argv):
    rc = main(["eval-languages", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def _lines(path, n=None):
    lines = path.read_text(encoding="utf-8").splitlines()
    return lines if n is None else lines[:n]


def _write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def small_osmnl(tmp_path, osmnl, overpassnl_dir):
    """The first 8 lines of two OsmNL languages and of the OverpassNL dev gold (real data, cut short)."""
    base = tmp_path / "osmnl"
    for lang in ("de", "ja"):
        for kind in ("nl", "query"):
            _write(base / f"dev.{lang}.{kind}", _lines(osmnl / f"dev.{lang}.{kind}", 8))
    ref = _write(tmp_path / "ref.query", _lines(overpassnl_dir / "dataset.dev.query", 8))
    return base, ref


@pytest.fixture
def cpu_args(small_cpu_model_dir):
    return ["-o", f"model_dir={small_cpu_model_dir}", "--no-progress"]


# -- scoring files you have (--pred-dir) ------------------------------------------------------

def test_every_language_against_both_golds(capsys, tmp_path, osmnl, overpassnl_dir):
    """Each language's own gold as its predictions: 100 against itself, and against the OverpassNL
    dev gold exactly what the metrics give for the two files."""
    preds = tmp_path / "preds"
    for lang in LANGS:
        _write(preds / f"dev.{lang}.pred", _lines(osmnl / f"dev.{lang}.query"))
    out_json = tmp_path / "t.json"
    rc, out, err = _run(capsys, "--osmnl-dir", osmnl, "--pred-dir", preds, "--json", out_json,
                        "--data-dir", overpassnl_dir)
    assert rc == 0, err
    figures = json.loads(out_json.read_text(encoding="utf-8"))
    assert list(figures["languages"]) == list(LANGS)
    ref = [q.strip() for q in _lines(overpassnl_dir / "dataset.dev.query")]
    for lang in ("en", "zh"):  # the gold is the same in every language
        row = figures["languages"][lang]
        assert row["n"] == 1000 and row["vs_own"]["oqs"] == 100.0 and row["vs_own"]["em"] == 100.0
        expected = corpus([q.strip() for q in _lines(osmnl / f"dev.{lang}.query")], ref)
        for key in ("oqs", "kvs", "tree", "chrf", "em"):
            assert row["vs_ref"][key] == pytest.approx(expected[key], abs=1e-9)
        assert row["unlicensed"]["pred"] == row["unlicensed"]["gold_own"]
        assert 0 < row["unlicensed"]["gold_ref"] < 100
    assert figures["aliases"] > 0 and figures["backend"] is None
    lines = out.splitlines()
    assert "vs OverpassNL dev gold" in lines[1] and "own gold" in lines[1] and "unlicensed" in lines[1]
    rows = {line.split()[0]: line.split() for line in lines[3:3 + len(LANGS)]}
    assert list(rows) == list(LANGS)
    en = figures["languages"]["en"]
    assert rows["en"][1:4] == ["1000", f"{en['vs_ref']['oqs']:.1f}", f"{en['vs_ref']['kvs']:.1f}"]
    assert "geoql eval --gold" in out  # how to see one language's failure analysis


def test_limit_scores_the_first_lines(tmp_path, osmnl, overpassnl_dir):
    preds = tmp_path / "preds"
    _write(preds / "dev.ru.pred", _lines(overpassnl_dir / "dataset.dev.query"))
    figures, _ = run_languages(LanguagesConfig(osmnl_dir=str(osmnl), languages="ru", pred_dir=str(preds), limit=30,
                                               progress=False))
    row = figures["languages"]["ru"]
    assert row["n"] == 30 and row["vs_ref"]["oqs"] == 100.0 and row["vs_ref"]["n"] == 30
    expected = corpus([q.strip() for q in _lines(overpassnl_dir / "dataset.dev.query", 30)],
                      [q.strip() for q in _lines(osmnl / "dev.ru.query", 30)])
    assert row["vs_own"]["oqs"] == pytest.approx(expected["oqs"], abs=1e-9)


def test_original_row_is_the_benchmark_itself(capsys, tmp_path, osmnl, overpassnl_dir):
    """--original adds the OverpassNL dev requests: the reference knn predictions score their
    official figures there (OQS 54.29)."""
    preds = tmp_path / "preds"
    (preds).mkdir()
    (preds / "dev.orig.pred").write_bytes((overpassnl_dir / "reference" / "knn_dev.pred").read_bytes())
    (preds / "dev.yue.pred").write_bytes((overpassnl_dir / "reference" / "knn_dev.pred").read_bytes())
    figures, text = run_languages(LanguagesConfig(osmnl_dir=str(osmnl), languages="yue", pred_dir=str(preds),
                                                  original=True, data_dir=str(overpassnl_dir), progress=False))
    assert list(figures["languages"]) == ["orig", "yue"]
    orig = figures["languages"]["orig"]
    assert round(orig["vs_ref"]["oqs"], 2) == 54.29 and orig["vs_own"] == orig["vs_ref"]
    assert orig["unlicensed"]["gold_ref"] == orig["unlicensed"]["gold_own"]
    assert figures["languages"]["yue"]["vs_ref"] == orig["vs_ref"]  # the same queries against the same gold
    assert "orig: the OverpassNL dev requests themselves" in text and "dev.yue.query" in text


# -- compiling: the CPU default, kept predictions ---------------------------------------------

def test_compiles_keeps_and_resumes(capsys, tmp_path, small_osmnl, cpu_args):
    base, ref = small_osmnl
    out_dir = tmp_path / "runs"
    argv = ["--osmnl-dir", base, "--gold-ref", ref, "--out-dir", out_dir, *cpu_args]
    # the first language alone, as if a run over both had stopped after it
    rc, out, err = _run(capsys, *argv, "--languages", "de", "--limit", "3")
    assert rc == 0, err
    assert "compiled 3 requests now, 0 kept" in out
    de = _lines(out_dir / "dev.de.pred")
    assert len(de) == 3 and all(de)
    stamp = json.loads((out_dir / "stamp.json").read_text(encoding="utf-8"))
    assert stamp["requests"]["de"]["n"] == 3
    # both languages, more lines: de resumes after its 3, ja starts
    out_json = tmp_path / "t.json"
    rc, out, err = _run(capsys, *argv, "--languages", "de,ja", "--limit", "5", "--json", out_json)
    assert rc == 0, err
    assert "compiled 7 requests now, 3 kept from before" in out
    assert _lines(out_dir / "dev.de.pred")[:3] == de and len(_lines(out_dir / "dev.ja.pred")) == 5
    figures = json.loads(out_json.read_text(encoding="utf-8"))
    assert figures["backend"] == "cpu" and figures["limit"] == 5
    assert figures["languages"]["de"]["kept"] == 3 and figures["languages"]["ja"]["compiled"] == 5
    assert all(0 <= figures["languages"][lang]["vs_ref"]["oqs"] <= 100 for lang in ("de", "ja"))
    # the same run again compiles nothing and prints the same table
    rc, again, _ = _run(capsys, *argv, "--languages", "de,ja", "--limit", "5")
    assert "compiled 0 requests now, 10 kept from before" in again
    assert again.splitlines()[3:5] == out.splitlines()[3:5]
    # --fresh compiles again (the CPU default is deterministic: the same queries)
    rc, fresh, _ = _run(capsys, *argv, "--languages", "de", "--limit", "3", "--fresh")
    assert rc == 0 and "compiled 3 requests now, 0 kept" in fresh
    assert _lines(out_dir / "dev.de.pred") == de


def test_a_stop_between_the_predictions_and_the_stamp_keeps_what_the_stamp_vouches_for(capsys, tmp_path, small_osmnl, cpu_args):
    base, ref = small_osmnl
    out_dir = tmp_path / "runs"
    argv = ["--osmnl-dir", base, "--gold-ref", ref, "--out-dir", out_dir, "--languages", "ja", *cpu_args]
    assert _run(capsys, *argv, "--limit", "3")[0] == 0
    first = _lines(out_dir / "dev.ja.pred")
    # the next checkpoint's predictions were written, its stamp was not
    _write(out_dir / "dev.ja.pred", first + ["node;out;", "way;out;"])
    rc, out, _ = _run(capsys, *argv, "--limit", "6")
    assert rc == 0 and "compiled 3 requests now, 3 kept from before" in out
    lines = _lines(out_dir / "dev.ja.pred")
    assert lines[:3] == first and len(lines) == 6 and "node;out;" not in lines


def test_predictions_of_changed_requests_are_not_trusted(capsys, tmp_path, small_osmnl, cpu_args):
    base, ref = small_osmnl
    out_dir = tmp_path / "runs"
    argv = ["--osmnl-dir", base, "--gold-ref", ref, "--out-dir", out_dir, "--languages", "de", "--limit", "2", *cpu_args]
    assert _run(capsys, *argv)[0] == 0
    nls = _lines(base / "dev.de.nl")
    nls[1] = "Cafés in Bonn"
    _write(base / "dev.de.nl", nls)
    rc, out, _ = _run(capsys, *argv)
    assert rc == 0 and "compiled 2 requests now, 0 kept" in out


def test_a_folder_of_another_setup_is_refused(capsys, tmp_path, small_osmnl, cpu_args):
    base, ref = small_osmnl
    out_dir = tmp_path / "runs"
    argv = ["--osmnl-dir", base, "--gold-ref", ref, "--out-dir", out_dir, "--languages", "de", "--limit", "2", *cpu_args]
    assert _run(capsys, *argv)[0] == 0
    rc, _, err = _run(capsys, *argv, "-o", "k=3")  # another backend option: other predictions
    assert rc == 2 and "holds predictions of another backend" in err and "--fresh" in err and err.count("\n") == 1
    assert _run(capsys, *argv, "-o", "k=3", "--fresh")[0] == 0
    # .pred files that this command did not write
    foreign = tmp_path / "mine"
    _write(foreign / "dev.de.pred", ["node;out;"] * 8)
    argv[argv.index(out_dir)] = foreign
    rc, _, err = _run(capsys, *argv)
    assert rc == 2 and f"--pred-dir {foreign}" in err


def test_a_backend_that_cannot_answer_is_one_error(capsys, tmp_path, small_osmnl):
    """No model: an evaluation does not train one on the way, it says what is missing."""
    base, ref = small_osmnl
    missing = tmp_path / "no-model"
    rc, _, err = _run(capsys, "--osmnl-dir", base, "--gold-ref", ref, "--out-dir", tmp_path / "runs",
                      "--languages", "de", "-o", f"model_dir={missing}", "--no-progress")
    assert rc == 2 and "the cpu backend gives no query" in err and err.count("\n") == 1
    assert not missing.exists()


# -- mistakes ---------------------------------------------------------------------------------

def test_input_mistakes(capsys, tmp_path, small_osmnl, osmnl):
    base, ref = small_osmnl
    rc, _, err = _run(capsys, "--osmnl-dir", tmp_path / "nope", "--pred-dir", tmp_path)
    assert rc == 2 and "pass --osmnl-dir DIR" in err
    rc, _, err = _run(capsys, "--osmnl-dir", base, "--gold-ref", ref, "--languages", "de,xx", "--pred-dir", tmp_path)
    assert rc == 2 and "has no dev.xx.nl and dev.xx.query; choose --languages from de,ja" in err
    # line i of every language is line i of the reference gold
    rc, _, err = _run(capsys, "--osmnl-dir", osmnl, "--gold-ref", ref, "--languages", "en", "--pred-dir", tmp_path)
    assert rc == 2 and "has 1000 lines but the reference gold has 8" in err and err.count("\n") == 1
    rc, _, err = _run(capsys, "--osmnl-dir", base, "--gold-ref", tmp_path / "gone.query", "--pred-dir", tmp_path)
    assert rc == 2 and "pass an existing file to --gold-ref" in err
    (base / "dev.ja.nl").write_bytes("Cafés\n".encode("latin-1") * 8)
    rc, _, err = _run(capsys, "--osmnl-dir", base, "--gold-ref", ref, "--languages", "ja", "--pred-dir", tmp_path)
    assert rc == 2 and "dev.ja.nl is not UTF-8 text" in err
    _write(base / "dev.ja.query", [])
    rc, _, err = _run(capsys, "--osmnl-dir", base, "--gold-ref", ref, "--languages", "ja", "--pred-dir", tmp_path)
    assert rc == 2 and "dev.ja.query is empty" in err
    _write(base / "dev.de.query", _lines(base / "dev.de.query", 7))
    rc, _, err = _run(capsys, "--osmnl-dir", base, "--gold-ref", ref, "--languages", "de", "--pred-dir", tmp_path)
    assert rc == 2 and "dev.de.nl has 8 lines but" in err and "has 7" in err


def test_prediction_folder_mistakes(capsys, tmp_path, small_osmnl):
    base, ref = small_osmnl
    preds = tmp_path / "preds"
    _write(preds / "dev.de.pred", ["node;out;"] * 8)
    argv = ["--osmnl-dir", base, "--gold-ref", ref, "--pred-dir", preds]
    rc, _, err = _run(capsys, *argv, "--languages", "de,ja")
    assert rc == 2 and "dev.ja.pred does not exist" in err
    _write(preds / "dev.ja.pred", ["node;out;"] * 7)
    rc, _, err = _run(capsys, *argv, "--languages", "de,ja")
    assert rc == 2 and "has 7 predictions but dev.ja.nl has 8 examples" in err
    rc, _, err = _run(capsys, *argv, "--languages", "ja", "--limit", "8")
    assert rc == 2 and "fewer than --limit 8" in err
    (preds / "dev.ja.pred").write_bytes(b"\xffnode;out;\n" * 8)
    rc, _, err = _run(capsys, *argv, "--languages", "ja")
    assert rc == 2 and "not UTF-8" in err
    rc, _, err = _run(capsys, *argv, "--languages", "de", "--backend", "cpu")
    assert rc == 2 and "compiles nothing" in err
    rc, _, err = _run(capsys, *argv, "--languages", "de", "--out-dir", tmp_path / "o")
    assert rc == 2 and "compiles nothing" in err


@pytest.mark.parametrize("extra, message", [
    (["--languages", "de,,ja"], "codes separated by commas"),
    (["--languages", "de,de"], "names a language twice"),
    (["--option", "novalue"], "KEY=VALUE"),
    (["--languages", "orig,de"], "pass --original instead"),
])
def test_option_mistakes(capsys, tmp_path, small_osmnl, extra, message):
    base, ref = small_osmnl
    rc, _, err = _run(capsys, "--osmnl-dir", base, "--gold-ref", ref, "--out-dir", tmp_path / "o", *extra)
    assert rc == 2 and message in err and err.count("\n") == 1


def test_unwritable_outputs_are_said_before_any_work(capsys, tmp_path, small_osmnl):
    base, ref = small_osmnl
    (tmp_path / "file").write_text("a user's file")
    argv = ["--osmnl-dir", base, "--gold-ref", ref, "--languages", "de"]
    rc, _, err = _run(capsys, *argv, "--out-dir", tmp_path / "file")
    assert rc == 2 and "is a file; give a directory to --out-dir" in err
    rc, _, err = _run(capsys, *argv, "--out-dir", tmp_path / "file" / "sub")
    assert rc == 2 and "--out-dir:" in err and "not a directory" in err
    rc, _, err = _run(capsys, *argv, "--out-dir", tmp_path / "o", "--json", tmp_path)
    assert rc == 2 and "is a directory; give a file name for --json" in err
    rc, _, err = _run(capsys, *argv, "--out-dir", tmp_path / "o", "--json", tmp_path / "file" / "t.json")
    assert rc == 2 and "--json:" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "osmnl", "ref.query"]


def test_listed_in_help(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "eval-languages" in out and "eval-requests" in out


# -- geoql eval-requests: the user-request benchmark -------------------------------------------

def _requests(capsys, *argv):
    rc = main(["eval-requests", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def _id_answer(row) -> str:
    target = row.facts.want[0]
    return f"{target.types[0]}(id:{','.join(map(str, target.ids))});out {' '.join(row.facts.output)};"


def test_requests_scores_answers_per_class_and_language(capsys, tmp_path):
    """--pred scores a file without compiling: the table, the misses, the JSON and the misses file."""
    from geoql.eval.userbench import load_rows
    rows = [r for r in load_rows("dev") if r.cls == "ids"]
    answers = tmp_path / "answers.jsonl"
    wrong = rows[0].id  # every type instead of the asked one
    answers.write_text("".join(json.dumps({"id": r.id, "query": _id_answer(r).replace(r.facts.want[0].types[0], "nwr", 1)
                                           if r.id == wrong else _id_answer(r)}) + "\n" for r in rows), encoding="utf-8")
    out_json, misses = tmp_path / "r.json", tmp_path / "misses.jsonl"
    rc, out, err = _requests(capsys, "--split", "dev", "--classes", "ids", "--pred", answers, "--json", out_json,
                             "--misses", misses)
    assert rc == 0, err
    n = len(rows)
    assert f"all               {n:>6}  {n - 1:>5}" in out
    assert "ids" in out and f"{wrong} [ids]" in out and "types:" in out
    figures = json.loads(out_json.read_text(encoding="utf-8"))
    assert (figures["n"], figures["ok"], figures["by_fact"]) == (n, n - 1, {"types": 1})
    assert figures["by_class"]["ids"]["ok"] == n - 1 and figures["classes"] == ["ids"]
    (miss,) = [json.loads(line) for line in misses.read_text(encoding="utf-8").splitlines()]
    assert miss["id"] == wrong and miss["facts"] == ["types"]


def test_requests_compiles_and_keeps_the_answers(capsys, tmp_path, cpu_args):
    out_dir = tmp_path / "runs"
    argv = ["--split", "all", "--limit", "2", "--out-dir", out_dir, *cpu_args, "--answers", tmp_path / "a.jsonl"]
    rc, out, err = _requests(capsys, *argv)
    assert rc == 0, err
    assert "4 rows; backend cpu" in out and "compiled 4 now, 0 kept from before" in out
    assert len(_lines(out_dir / "userbench.dev.pred")) == 2 and len(_lines(out_dir / "userbench.test.pred")) == 2
    answers = [json.loads(line) for line in _lines(tmp_path / "a.jsonl")]
    assert len(answers) == 4 and all(a["query"] for a in answers)
    rc, again, _ = _requests(capsys, *argv)
    assert rc == 0 and "compiled 0 now, 4 kept from before" in again
    assert again.splitlines()[3:5] == out.splitlines()[3:5]
    # the kept answers score the same through --pred
    rc, scored, _ = _requests(capsys, "--split", "all", "--limit", "2", "--pred", tmp_path / "a.jsonl")
    assert rc == 0 and scored.splitlines()[3:5] == out.splitlines()[3:5]


def test_requests_same_as_compares_without_scoring(capsys, tmp_path, cpu_args):
    """--same-as: which answers changed since earlier ones, by id; nothing scored, no request shown."""
    out_dir, before = tmp_path / "runs", tmp_path / "a.jsonl"
    argv = ["--split", "dev", "--limit", "3", "--out-dir", out_dir, *cpu_args]
    rc, out, err = _requests(capsys, *argv, "--answers", before)
    assert rc == 0, err
    rc, same, err = _requests(capsys, *argv, "--same-as", before)
    assert rc == 0, err
    assert "0 of 3 answers differ" in same and "(not scored)" in same and "share" not in same
    rows = [json.loads(line) for line in _lines(before)]
    rows[1]["query"] = "node(1);out;"
    edited = tmp_path / "b.jsonl"
    edited.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    rc, changed, _ = _requests(capsys, *argv, "--same-as", edited)
    from geoql.eval.userbench import load_rows
    second = load_rows("dev")[1]
    assert rc == 0 and f"1 of 3 answers differ from {edited} (not scored): {rows[1]['id']}" in changed
    assert second.request not in changed and "share" not in changed


@pytest.mark.parametrize("extra, message", [
    (["--same-as", "a.jsonl", "--pred", "b.jsonl"], "without scoring"),
    (["--classes", "nope"], "--classes: unknown nope"),
    (["--languages", "xx"], "no row of the benchmark matches"),
    (["--pred", "missing.jsonl"], "does not exist"),
    (["--pred", "x.jsonl", "--backend", "cpu"], "compiles nothing"),
])
def test_requests_mistakes_are_one_line(capsys, extra, message):
    rc, _, err = _requests(capsys, "--split", "dev", *extra)
    assert rc == 2 and message in err and "Traceback" not in err


def test_requests_wrong_number_of_answers(capsys, tmp_path):
    preds = tmp_path / "a.pred"
    preds.write_text("node;out;\n", encoding="utf-8")
    rc, _, err = _requests(capsys, "--split", "dev", "--pred", preds)
    assert rc == 2 and "1 predictions but the benchmark split has" in err




def test_a_request_the_backend_fails_on_is_no_empty_line(tmp_path, small_osmnl):
    """Issue 42: a failed compile was written as an empty prediction, and the next run kept it."""
    from fakes.support import LookupBackend

    from geoql.app.compile import Compiler
    from geoql.app.eval_cli import STAMP, Language, compile_language
    from geoql.core.errors import UserError
    from geoql.eval.dataset import Example

    base, _ = small_osmnl
    nls = _lines(base / "dev.de.nl")
    lang = Language("de", [Example("de", i, nl, "", "") for i, nl in enumerate(nls)], 6)
    config = LanguagesConfig(osmnl_dir=str(base), batch_size=4, progress=False)
    table = {nl: f"node({i + 1});out;" for i, nl in enumerate(nls) if i != 4}  # the server fails on request 5
    kept = {"key": "k", "stamp": {}, "requests": {}}
    with pytest.raises(UserError, match=r"the lookup backend gives no query \(request 5 of de; the 4 before it are kept\)"):
        compile_language(lang, Compiler(LookupBackend(table)), tmp_path, kept, config)
    assert _lines(tmp_path / "dev.de.pred") == [f"node({i});out;" for i in range(1, 5)]
    table[nls[4]] = "node(5);out;"  # the server is back
    kept = json.loads((tmp_path / STAMP).read_text(encoding="utf-8"))
    lines, stats = compile_language(lang, Compiler(LookupBackend(table)), tmp_path, kept, config)
    assert lines == [f"node({i});out;" for i in range(1, 7)] and stats["kept"] == 4 and stats["compiled"] == 2
