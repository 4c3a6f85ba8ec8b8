"""geoql.eval.metrics against the official scores and against the metric definitions.

The metric core is checked with the converter output recorded from the real
Overpass API (reference/*.jsonl), so a converter bug cannot hide a metric bug;
a separate test runs the same 1,000 cases through the default converter
(``overpassql.to_xml``) end to end.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from sacrebleu.metrics import CHRF

from geoql.eval import metrics
from geoql.eval.metrics import EMPTY_SCRIPT_XML, Scorer, Scores
from testdata import data_dir, reference_rows

OFFICIAL_CORPUS = {"oqs": 54.2869, "kvs": 41.6644, "tree": 61.0197, "chrf": 60.1767, "em": 0.1}
KNN_ROWS = reference_rows("knn_dev.official_scores.jsonl")


def _recorded_xml() -> dict[str, str]:
    table = {}
    for name in ("gold_reference.jsonl", "conformance.jsonl"):
        for row in reference_rows(name):
            table[row["query"]] = row["xml"]
    return table


RECORDED = _recorded_xml()


def _dev_golds() -> list[str]:
    return (data_dir() / "dataset.dev.query").read_text(encoding="utf-8").split("\n")[:1000]


DEV_GOLDS = _dev_golds()


@pytest.fixture(scope="module")
def recorded_scorer() -> Scorer:
    return Scorer(xml_source=RECORDED.__getitem__)


def _assert_scores(got: Scores, row: dict) -> None:
    for name in ("oqs", "kvs", "tree", "chrf", "em"):
        assert getattr(got, name) == pytest.approx(row[name], abs=1e-9), name


@pytest.mark.parametrize("row", KNN_ROWS, ids=lambda r: f"knn{r['index']}")
def test_knn_example_matches_official_scores(recorded_scorer, row):
    _assert_scores(recorded_scorer.score(row["pred"], DEV_GOLDS[row["index"]]), row)


@pytest.mark.parametrize("row", KNN_ROWS, ids=lambda r: f"knn{r['index']}")
def test_knn_example_matches_official_scores_with_overpassql(row):
    _assert_scores(metrics.score(row["pred"], DEV_GOLDS[row["index"]]), row)


def test_knn_corpus_figures(recorded_scorer):
    preds = [row["pred"] for row in KNN_ROWS]
    figures = recorded_scorer.corpus(preds, DEV_GOLDS)
    assert figures["n"] == 1000
    for name, value in OFFICIAL_CORPUS.items():
        assert round(figures[name], 4) == value, name


def test_knn_pred_file_is_the_scored_predictions():
    lines = (data_dir() / "reference" / "knn_dev.pred").read_text(encoding="utf-8").split("\n")[:1000]
    assert [line.strip() for line in lines] == [row["pred"] for row in KNN_ROWS]


# -- chrF is sacrebleu's, bit for bit -------------------------------------------

_SACREBLEU = CHRF(CHRF.CHAR_ORDER, CHRF.WORD_ORDER, CHRF.BETA, lowercase=False, whitespace=False, eps_smoothing=False)
EDGE_PAIRS = [
    ("", ""),
    ("", "node;out;"),
    ("node;out;", ""),
    ("   ", "node;out;"),
    ("a", "a"),
    ("ab", "abcdefgh"),
    ('node["name"="Köln"];out;', 'node["name"="Koln"];out;'),
    ("aaaaaaa", "aaa"),
    ("x y\tz\n", "xyz"),
    ("ab" * 50, "ab" * 20),
    ("a\x002aa", "aaa\x002"),  # NUL cannot be confused with the repeat marker
    ("a\x002", "aa"),
]


def _conformance_pairs():
    golds = {}
    for row in reference_rows("gold_reference.jsonl"):
        golds[f"{row['split']}:{row['index']}"] = row["query"]
    return [(row["query"], golds[row["source"]]) for row in reference_rows("conformance.jsonl")]


CONFORMANCE_PAIRS = _conformance_pairs()


@pytest.mark.parametrize("pred,gold", EDGE_PAIRS)
def test_chrf_edge_cases_equal_sacrebleu(pred, gold):
    assert metrics.chrf(pred, gold) == _SACREBLEU.corpus_score([pred], [[gold]]).score / 100


def test_chrf_equals_sacrebleu_on_conformance_pairs():
    scorer = Scorer(xml_source=RECORDED.__getitem__)
    mismatches = [
        (p, g)
        for p, g in CONFORMANCE_PAIRS
        if scorer.chrf(p, g) != _SACREBLEU.corpus_score([p], [[g]]).score / 100
    ]
    assert not mismatches


# -- KVS and TreeS agree with a direct reading of the definitions -----------------

def _tree_of(xml_text: str) -> ET.Element:
    try:
        return ET.fromstring(xml_text)
    except ET.ParseError:
        return ET.fromstring(EMPTY_SCRIPT_XML)


def _spec_kvs(pred_xml: str, gold_xml: str) -> float:
    def items(root):
        found = set()
        for el in root.iter():
            k = el.get("regk") if "regk" in el.attrib else el.get("k")
            v = el.get("regv") if "regv" in el.attrib else el.get("v")
            found |= {x for x in (k, v) if x}
            if k and v:
                found.add((k, v))
        return found

    a, b = items(_tree_of(pred_xml)), items(_tree_of(gold_xml))
    if not a and not b:
        return 1.0
    return len(a & b) / max(len(a), len(b))


def _spec_tree(pred_xml: str, gold_xml: str) -> float:
    """Quadratic reading: each reference element is found if some predicted
    element has the same tag, attribute list (in order) and text, and the
    same subtree shape below it (tag, attribute set, children in order)."""
    dropped = {"into", "from", "timeout", "k", "v", "regk", "regv"}

    def strip(root):
        for el in root.iter():
            for name in dropped & set(el.attrib):
                del el.attrib[name]
        return root

    def same_shape(a, b):
        return (
            a.tag == b.tag
            and a.attrib == b.attrib
            and len(a) == len(b)
            and all(same_shape(x, y) for x, y in zip(a, b))
        )

    def label(el):
        return (el.tag, list(el.attrib.items()), el.text)

    ref = list(strip(_tree_of(gold_xml)).iter())
    out = list(strip(_tree_of(pred_xml)).iter())
    found = sum(1 for r in ref if any(label(o) == label(r) and same_shape(o, r) for o in out))
    return found / len(ref)


def test_kvs_and_tree_follow_the_definitions_on_conformance_pairs():
    scorer = Scorer(xml_source=RECORDED.__getitem__)
    checked = 0
    for pred, gold in CONFORMANCE_PAIRS:
        pred_xml, gold_xml = RECORDED[pred], RECORDED[gold]
        assert scorer.kvs(pred, gold) == pytest.approx(_spec_kvs(pred_xml, gold_xml), abs=1e-12), pred
        assert scorer.tree(pred, gold) == pytest.approx(_spec_tree(pred_xml, gold_xml), abs=1e-12), pred
        checked += 1
    assert checked == 1758


def test_unparsable_converter_output_scores_as_empty_script():
    broken = [row for row in reference_rows("conformance.jsonl") if not _parses(row["xml"])]
    assert broken, "the conformance set has converter outputs that are not XML"
    scorer = Scorer(xml_source=RECORDED.__getitem__)
    for row in broken:
        assert scorer.features(row["query"]).xml_ok is False
        assert scorer.features(row["query"]).n_elements == 1  # just <osm-script>


def _parses(text: str) -> bool:
    try:
        ET.fromstring(text)
    except ET.ParseError:
        return False
    return True


# -- small behaviours -----------------------------------------------------------------

@pytest.mark.parametrize(
    "pred,gold,expected",
    [
        ("[out:xml][timeout:25];node;out;", "[out:json][timeout:900];node;out;", 1.0),
        ("node;\nout;", "node; out;", 1.0),
        ("node;out;", "way;out;", 0.0),
        ("[out:csv(name)];node;out;", "[out:json];node;out;", 0.0),  # only [a-z]+ after out: is normalised
    ],
)
def test_exact_match_normalisation(pred, gold, expected):
    assert metrics.em(pred, gold) == expected


def test_conversions_are_cached_per_query_string():
    calls = []

    def source(query):
        calls.append(query)
        return RECORDED[query]

    scorer = Scorer(xml_source=source)
    a, b = KNN_ROWS[0]["pred"], DEV_GOLDS[0]
    first = scorer.score(a, b)
    for _ in range(5):
        assert scorer.score(a, b) == first
        assert scorer.score(b, a).oqs == pytest.approx(scorer.oqs(b, a))
    assert sorted(calls) == sorted({a, b})


def test_cache_is_bounded():
    scorer = Scorer(xml_source=RECORDED.__getitem__, cache_size=3)
    for row in KNN_ROWS[:10]:
        scorer.features(row["pred"])
    assert len(scorer._xml_cache) == 3


def test_identical_queries_score_one(recorded_scorer):
    for gold in DEV_GOLDS[:50]:
        s = recorded_scorer.score(gold, gold)
        assert (s.oqs, s.kvs, s.tree, s.chrf, s.em) == (1.0, 1.0, 1.0, 1.0, 1.0)


@pytest.mark.parametrize("bad", [None, 3, b"node;out;"])
def test_non_string_input_is_a_clear_error(bad):
    with pytest.raises(TypeError, match="must be str"):
        metrics.score(bad, "node;out;")


def test_mismatched_lengths_are_a_clear_error(recorded_scorer):
    with pytest.raises(ValueError, match="one prediction per reference"):
        recorded_scorer.score_many(["node;out;"], [])


@pytest.mark.parametrize(
    "option,match",
    [({"cache_size": 0}, "cache_size"), ({"ngram_cache_size": 0}, "cache_size"), ({"max_interned": 0}, "max_interned")],
)
def test_invalid_cache_sizes(option, match):
    with pytest.raises(ValueError, match=match):
        Scorer(**option)


def test_corpus_of_nothing_is_zero():
    assert metrics.aggregate([]) == {"oqs": 0.0, "kvs": 0.0, "tree": 0.0, "chrf": 0.0, "em": 0.0, "n": 0}


def test_scores_serialise():
    s = Scores(0.5, 0.25, 0.75, 0.5, 0.0)
    assert json.loads(json.dumps(s.as_dict())) == {"oqs": 0.5, "kvs": 0.25, "tree": 0.75, "chrf": 0.5, "em": 0.0}


def test_small_intern_table_starts_new_epochs_without_changing_scores():
    scorer = Scorer(xml_source=RECORDED.__getitem__, max_interned=40)
    for row in KNN_ROWS[:200]:
        _assert_scores(scorer.score(row["pred"], DEV_GOLDS[row["index"]]), row)
    assert scorer._epoch > 10


def test_clear_cache_keeps_scores():
    scorer = Scorer(xml_source=RECORDED.__getitem__)
    row = KNN_ROWS[1]
    before = scorer.score(row["pred"], DEV_GOLDS[1])
    scorer.features(row["pred"])
    scorer.clear_cache()
    assert scorer.score(row["pred"], DEV_GOLDS[1]) == before


@pytest.mark.parametrize(
    "pred",
    ["", "   ", "(" * 3000, "{{", "node[" * 500, "\x00\x01", "node;out;" * 2000, "<osm-script/>", "🙂 café"],
    ids=["empty", "blank", "deep-parens", "open-placeholder", "open-brackets", "control", "long", "xml", "unicode"],
)
def test_garbage_predictions_get_valid_scores(pred):
    s = metrics.score(pred, DEV_GOLDS[0])
    for value in (s.oqs, s.kvs, s.tree, s.chrf, s.em):
        assert 0.0 <= value <= 1.0
    assert s.em == 0.0
