"""The evaluation report's failure analysis (the rest of eval/report.py runs through tests/eval/test_cli.py)."""

from __future__ import annotations

from geoql.eval.metrics import get_scorer
from geoql.eval.report import format_analysis, parse_failures

PREDICTIONS = [
    '{{geocodeArea:"Bonn"}}->.a;nwr["amenity"="cafe"](area.a);out;',  # fine
    '[out:json];{{geocodeArea:"Bonn"}}->.a;nwr["amenity"="cafe"](area.a);',  # runs and returns nothing
    'nwr["name"="Way; out"]({{bbox}});',  # "out" only inside a name: returns nothing too
    'nwr["amenity"="cafe"]({{bbx}});out;',  # a parse error, not counted twice
    "",
]


def test_parse_failures_count_queries_that_return_nothing():
    failures = parse_failures(PREDICTIONS, get_scorer())
    assert failures["no_output"] == 2
    assert failures["converter_errors"] == 1 and failures["empty"] == 1  # neither counts as returning nothing


def test_the_analysis_says_how_many_return_nothing():
    scorer = get_scorer()
    scores = scorer.score_many(PREDICTIONS, [PREDICTIONS[0]] * len(PREDICTIONS), progress=False)
    text = format_analysis(scores, parse_failures(PREDICTIONS, scorer))
    assert "valid but without an output statement (they return nothing): 2" in text
