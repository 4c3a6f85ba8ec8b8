"""Extraction, validation and the choice among candidates (app/decoding.py)."""

from __future__ import annotations

import pytest

from geoql.app.decoding import Candidate, choose, extract_query, make_candidates, mbr_scores, to_one_line, validate
from tests.conftest import reference_rows

GOLD = 'node["amenity"="drinking_water"](area.a);out;'


@pytest.mark.parametrize("text", [
    GOLD,
    f"```\n{GOLD}\n```",
    f"```overpassql\n{GOLD}\n```",
    f"Sure! Here is the query:\n\n```overpass\n{GOLD}\n```\n\nIt finds all taps.",
    f"Query: {GOLD}",
    f"{GOLD}\n\nThis query returns the drinking water taps.",
    'node["amenity"="drinking_water"]\n  (area.a);\nout;',
    'node["amenity"="drinking_water"](area.a); // taps\nout; /* print */',
])
def test_extraction_finds_the_query(text):
    assert extract_query(text) == GOLD


def test_extraction_keeps_a_truncated_query_for_the_parser_to_reject():
    truncated = '[out:json];node["amenity"="drinking_wat'
    assert extract_query(f"```\n{truncated}") == truncated  # unterminated fence
    assert validate(truncated)


@pytest.mark.parametrize("text", [
    '[out:json];node["amenity"="cafe"](50,7,51,8);out;\n\n<request>bus stops in Graz</request>\nnode;out;',
    '[out:json];\nnode["amenity"="cafe"](50,7,51,8);\nout;<request>',
])
def test_extraction_stops_where_the_model_starts_the_next_few_shot_example(text):
    # What a real base model (SmolLM2-135M) writes after THE prompt's examples without
    # the grammar: the answer, a blank line, then the next "<request>".
    assert extract_query(text) == '[out:json];node["amenity"="cafe"](50,7,51,8);out;'


def test_extraction_of_nothing():
    assert extract_query("") == "" and extract_query("   \n ") == ""
    assert validate("") == ["line 1: parse error: empty query"]


def test_comment_markers_inside_strings_survive():
    q = 'node["website"="http://example.org"];out;'
    assert extract_query(q) == q


def test_one_line_keeps_words_apart():
    assert to_one_line("out\nmeta;") == "out meta;"
    assert to_one_line("(\n  node[a];\n);") == "(node[a];);"


@pytest.mark.parametrize("row", reference_rows("gold_reference.jsonl")[:300:7], ids=lambda r: f"{r['split']}-{r['index']}")
def test_gold_queries_round_trip_through_extraction(row):
    # The model is trained to emit the dataset's one-line format; extraction must not change it.
    assert extract_query(row["query"]) == row["query"].strip()


def test_validate_reports_parser_errors():
    assert validate(GOLD) == []
    errors = validate('node["amenity"="cafe";out;')
    assert errors and "line 1" in errors[0]


def test_turbo_placeholders_are_valid_as_the_metric_sees_them():
    assert validate('[bbox:{{bbox}}];node["a"];out;') == []
    # A misspelt placeholder reaches the converter unreplaced: {{bbx}} is not a clause.
    assert validate('node["a"]({{bbx}});out;') == ["line 1: parse error: Unknown query clause"]


@pytest.mark.parametrize("index", range(0, 1758, 9), ids=lambda i: f"conf-{i}")
def test_valid_means_the_converter_prints_no_message(index):
    # Conformance rows: dataset queries, their neighbours and broken variants, with
    # what osm3s_query printed; Compilation.valid must agree with it.
    row = reference_rows("conformance.jsonl")[index]
    assert (validate(row["query"]) == []) == (row["stderr"] == "")


def test_identical_outputs_merge():
    cands = make_candidates([GOLD, f"```\n{GOLD}\n```", "node[a];out;"])
    assert [c.count for c in cands] == [2, 1]


def _oqs_stub_free():
    from geoql.eval.metrics import get_scorer

    return get_scorer().oqs


def test_mbr_picks_the_consensus_candidate():
    consensus = '[out:json];area["name"="Wien"]->.a;node["amenity"="drinking_water"](area.a);out;'
    near = '[out:json];area["name"="Wien"]->.a;nwr["amenity"="drinking_water"](area.a);out;'
    near2 = '[out:json];area["name"="Wien"]->.a;node["amenity"="drinking_water"](area.a);out center;'
    outlier = 'way["highway"="primary"]({{bbox}});out geom;'
    cands = make_candidates([outlier, near, consensus, near2])
    best = choose(cands, mbr=True, similarity=_oqs_stub_free())
    assert best.query == consensus
    scores = dict(zip([c.query for c in cands], mbr_scores(cands, _oqs_stub_free())))
    assert scores[outlier] < min(scores[consensus], scores[near], scores[near2])


def test_invalid_candidate_never_wins_over_a_valid_one():
    broken = '[out:json];node["amenity"="drinking_water"](area.a);out'  # truncated, 3 votes
    valid = 'way["highway"="primary"]({{bbox}});out geom;'
    cands = make_candidates([broken, broken, broken, valid])
    assert not cands[0].valid
    assert choose(cands, mbr=True).query == valid


def test_all_invalid_still_returns_the_best_guess():
    cands = make_candidates(['node["a"', 'node["a"', 'way('])
    best = choose(cands)
    assert best.query == 'node["a"' and not best.valid


def test_a_failing_similarity_does_not_sink_the_choice():
    def broken(a, b):
        raise RuntimeError("metric down")

    cands = [Candidate("node[a];out;", True), Candidate("way[a];out;", True)]
    assert choose(cands, similarity=broken).query == "node[a];out;"


# Gold queries the converter accepts (no stderr): only a query that parses can be cut and repaired.
@pytest.mark.parametrize("row", [r for r in reference_rows("gold_reference.jsonl") if not r["stderr"].strip()][::101],
                         ids=lambda r: f"{r['split']}-{r['index']}")
def test_cut_off_gold_queries_are_repaired_into_valid_ones(row):
    assert not validate(row["query"])
    cut = row["query"][: max(8, len(row["query"]) * 2 // 3)]
    cands = make_candidates([cut], repair=True)
    if not validate(cut):  # the cut happened to be valid already
        assert cands[0].query == cut and not cands[0].repaired
        return
    assert cands[0].valid and cands[0].repaired and cands[0].query.startswith(cut)


def test_repair_leaves_other_errors_alone():
    cands = make_candidates(["SELECT * FROM nodes;", 'node["a"]];out;'], repair=True)
    assert [c.valid for c in cands] == [False, False] and not any(c.repaired for c in cands)
    assert make_candidates(['node["a"'], repair=False)[0].valid is False
