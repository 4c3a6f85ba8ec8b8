"""scripts/ranker_headroom.py on the small real index: its readings measure what `geoql retrieval-eval` measures."""

from __future__ import annotations

import importlib.util

import pytest

from geoql.eval.dataset import load_split
from geoql.retrieval.embedding import run_single_threaded
from geoql.retrieval.evaluate import evaluate
from geoql.retrieval.ranker import training_groups
from geoql.retrieval.tags import TagRetriever
from testdata import REPO_ROOT

REQUESTS = ["Welche Apotheken gibt es in Berlin?", "Museen in Wien", "柏林有哪些药店？", "Spielplätze in Hamburg",
            "Cafés mit Außensitzplätzen in Heidelberg", "drinking water taps in Vienna"]


@pytest.fixture(scope="module")
def headroom():
    spec = importlib.util.spec_from_file_location("ranker_headroom", REPO_ROOT / "scripts" / "ranker_headroom.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def retriever(small_index_dir):
    r = TagRetriever.load(small_index_dir)
    assert r.ranker is not None and r.multilingual is not None  # the readings need both
    return r


@pytest.fixture(scope="module")
def dev(overpassnl_dir):
    return load_split("dev", overpassnl_dir)[: len(REQUESTS)]


def test_shipped_reading_is_retrieval_evals_recall(headroom, retriever, dev):
    from dataclasses import replace

    h = headroom.Headroom(retriever, REQUESTS, [ex.nl for ex in dev], [headroom.controlled_pairs(ex.query) for ex in dev], 10)
    hits = run_single_threaded(h.hits)
    report = evaluate(retriever, [replace(ex, nl=nl) for ex, nl in zip(dev, REQUESTS)], ks=(10,), progress=False, candidates=False)
    assert sum(hits.values()) / report.n_pairs == pytest.approx(report.recall[10])


def test_a_twin_that_is_the_request_reads_as_the_request(headroom, retriever, dev):
    """The twin reading differs from the plain one only in whose multilingual vector finds the neighbours."""
    golds = [headroom.controlled_pairs(ex.query) for ex in dev]
    h = headroom.Headroom(retriever, REQUESTS, REQUESTS, golds, 10)
    assert run_single_threaded(h.hits, twin=True) == run_single_threaded(h.hits)
    english = headroom.Headroom(retriever, REQUESTS, [ex.nl for ex in dev], golds, 10)
    assert run_single_threaded(english.hits, twin=True, rows=[5]) == run_single_threaded(english.hits, rows=[5])  # English twin of itself


def test_measure_gives_every_reading_for_every_language(headroom, retriever, dev):
    golds = [headroom.controlled_pairs(ex.query) for ex in dev]
    sets = {"de": headroom.Headroom(retriever, REQUESTS, [ex.nl for ex in dev], golds, 10)}
    groups, _ = run_single_threaded(training_groups, retriever, workers=1)  # any fitting groups stand in for the copies
    rows = headroom.measure(retriever, sets, groups)
    assert list(rows) == ["shipped", "refit, copies", "refit, copies + real", "English twin's e5"]
    assert all(set(figures) == {"de"} and 0.0 <= figures["de"] <= 1.0 for figures in rows.values())
    assert retriever.ranker is not None and rows["shipped"]["de"] == pytest.approx(
        sum(run_single_threaded(sets["de"].hits).values()) / sum(len(set(g)) for g in golds))


def test_bad_arguments_name_the_fix(headroom, small_index_dir, tmp_path, capsys):
    with pytest.raises(SystemExit):
        headroom.main(["--osmnl-dir", str(tmp_path), "--index-dir", str(small_index_dir), "--languages", "de"])
    assert "dev.en.nl" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        headroom.main(["--osmnl-dir", str(tmp_path), "--k", "0"])
    assert "--k must be at least 1" in capsys.readouterr().err
