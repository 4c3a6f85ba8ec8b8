"""Candidate features: one named column each, computed on a real pool."""

from __future__ import annotations

import numpy as np
import pytest

from geoql.app.cpu.candidates import Candidate
from geoql.app.cpu.features import FEATURE_NAMES, pool_features
from geoql.app.cpu.lexicon import TagLexicon
from geoql.nl.english import read_english

LEX = TagLexicon.fit(["cafes in Bonn", "cafes in Rome", "bars in Rome", "bars in Oslo"],
                     ['node["amenity"="cafe"];out;'] * 2 + ['node["amenity"="bar"];out;'] * 2)


def _pool():
    return [
        Candidate('{{geocodeArea:"Bonn"}}->.a;node["amenity"="cafe"](area.a);out count;', 0, 0, 0.8, "cafes in Bonn",
                  ("area",), votes=1.4),
        Candidate('node["amenity"="bar"]({{bbox}});out;', 1, 1, 0.6, "bars in Rome", (), votes=0.6),
    ]


def col(name):
    return FEATURE_NAMES.index(name)


def test_a_feature_row_must_name_every_column_once():
    from geoql.app.cpu.features import BASE_FEATURES, _vector

    row = {name: float(i) for i, name in enumerate(BASE_FEATURES)}
    assert _vector(row) == [float(i) for i in range(len(BASE_FEATURES))]
    with pytest.raises(ValueError, match=r"missing \['rank'\], extra \['colour'\]"):
        _vector({**{k: v for k, v in row.items() if k != "rank"}, "colour": 1.0})


def test_shape_and_columns():
    f = pool_features(read_english("How many cafes in Bonn?"), _pool(), LEX)
    assert f.shape == (2, len(FEATURE_NAMES)) and f.dtype == np.float32
    assert f[0, col("rank")] == 0 and f[1, col("rank")] == 1
    assert np.isclose(f[:, col("vote_share")].sum(), 1.0)
    assert f[0, col("request_count")] == 1 and f[0, col("query_count")] == 1 and f[1, col("query_count")] == 0
    assert f[0, col("query_area")] == 1 and f[1, col("query_bbox")] == 1
    assert f[0, col("tag_support_mean")] > f[1, col("tag_support_mean")]  # "cafes" supports amenity=cafe
    assert f[0, col("edits")] == 1
    assert f[0, col("place_match")] == 1 and f[1, col("place_match")] == -1  # Bonn named / no place at all
    other = pool_features(read_english("How many cafes in Rome?"), _pool(), LEX)
    assert other[0, col("place_match")] == 0


def test_tags_the_request_calls_for_and_pool_relative_columns():
    f = pool_features(read_english("cafes in Bonn"), _pool(), LEX)
    assert f[0, col("wanted_missing")] == 0 and f[1, col("wanted_missing")] == 1  # the bar query lacks amenity=cafe
    assert f[1, col("wanted_missing_support")] >= 0.5
    assert f[0, col("similarity_below_best")] == 0 and f[1, col("similarity_below_best")] < 0
    assert np.isclose(f[:, col("votes_below_mean")].sum(), 0.0)
    assert (f[:, col("pool_size")] == 2).all()
    added = Candidate('node["amenity"="cafe"]["wifi"];out;', 0, 0, 0.8, "cafes", ("tags", "add_tags"))
    g = pool_features(read_english("cafes with wifi"), _pool() + [added], LEX)
    assert g[2, col("added_tags")] == 1 and g[0, col("added_tags")] == 0 and g[2, col("dropped_tags")] == 0


def test_rare_words_weigh_more():
    lex = TagLexicon.fit(["castles in Bonn", "cafes in Bonn", "cafes in Rome", "cafes in Oslo"],
                         ['node["historic"="castle"];out;'] + ['node["amenity"="cafe"];out;'] * 3, min_count=1)
    assert lex.idf("castle") > lex.idf("cafe") and lex.idf("never_seen") >= lex.idf("castle")
    pool = [Candidate('node["historic"="castle"];out;', 0, 0, 0.5, "castles in Bonn"),
            Candidate('node["amenity"="cafe"]["wifi"];out;', 1, 1, 0.5, "cafes in Bonn"),
            Candidate('node["natural"="spring"];out;', 2, 2, 0.4, "springs")]
    f = pool_features(read_english("castles and cafes"), pool, lex)
    assert f[0, col("idf_recall")] > f[1, col("idf_recall")]  # "castle" is the rarer shared word
    assert f[1, col("key_support_mean")] == 0 and f[0, col("key_support_mean")] == -1  # wifi: no word asks for it
    assert f[0, col("unexplained_tags")] == 0 and f[1, col("unexplained_tags")] == 0
    assert f[2, col("unexplained_tags")] == 1  # no word of the request asks for natural=spring


def test_empty_pool():
    assert pool_features(read_english("x"), [], LEX).shape == (0, len(FEATURE_NAMES))



class _OrderedSet(set):
    """A set that iterates in a chosen order, as two processes with different PYTHONHASHSEED would."""

    reverse = False

    def __iter__(self):
        return iter(sorted(set.__iter__(self), reverse=self.reverse))

    def __and__(self, other):
        return type(self)(set.__and__(self, other))


def test_idf_share_does_not_depend_on_set_order():
    """`geoql cpu train` must make the same model in every process: no float sum in hash order."""
    from geoql.app.cpu.features import _idf_share

    lex = TagLexicon(word_idf={"a": 0.1, "b": 0.2, "c": 0.3, "d": 1e-17, "e": 0.7})
    results = set()
    for reverse in (False, True):
        cls = type("S", (_OrderedSet,), {"reverse": reverse})
        results.add(_idf_share(cls("abcde"), cls("abc"), lex))
    assert len(results) == 1


def test_hint_columns():
    hints = {"amenity=cafe": 0.9, "outdoor_seating=yes": 0.6, "amenity=bar": 0.2}
    f = pool_features(read_english("cafes with outdoor seating in Bonn"), _pool(), LEX, hints=hints)
    assert f[0, col("hint_top")] == pytest.approx(0.9)
    assert f[0, col("hint_top_in")] == 1 and f[1, col("hint_top_in")] == 0 and f[1, col("hint_top_key_in")] == 1
    assert f[0, col("hint_support_mean")] == pytest.approx(0.9) and f[1, col("hint_support_mean")] == pytest.approx(0.2)
    assert f[0, col("hint_missing")] == pytest.approx(0.6) and f[1, col("hint_missing")] == pytest.approx(1.5)
    assert f[0, col("hint_covered")] == pytest.approx(0.9 / 1.5)
    assert f[0, col("hint_support_mean_below_best")] == 0 and f[1, col("hint_support_mean_below_best")] < 0
    without = pool_features(read_english("cafes with outdoor seating in Bonn"), _pool(), LEX)
    assert (without[:, [col(n) for n in FEATURE_NAMES if n.startswith("hint_") and n != "hint_tags"
                        and not n.endswith(("_best", "_mean"))]] == -1).all()


def _pairwise_consensus(sets, weights, agree):
    """The consensus columns as first written: one pair at a time."""
    out = []
    for i in range(len(sets)):
        others = [j for j in range(len(sets)) if j != i]
        out.append(float(np.dot(weights[others], [agree(sets[i], sets[j]) for j in others]) / weights[others].sum())
                   if others else 1.0)
    return out


def test_consensus_columns_equal_the_pairwise_definition_bit_for_bit():
    """Computed with one matrix product per pool, the consensus columns are exactly what the pairwise
    Dice (character 4-grams) and Jaccard (tags) give, so a model trained on either reads the other."""
    from geoql.app.cpu.features import _char_grams, _consensus, _jaccard
    from geoql.app.cpu.lexicon import tag_names
    from geoql.eval.dataset import load_split

    def dice(a, b):
        total = len(a) + len(b)
        return 2 * len(a & b) / total if total else 1.0

    queries = [e.query for e in load_split("dev")[:40]] + ["", "out;"]
    weights = np.random.default_rng(0).random(len(queries)) + 1e-6
    grams, tags = [_char_grams(q) for q in queries], [tag_names(q) for q in queries]
    assert _consensus(grams, weights, dice=True).tolist() == _pairwise_consensus(grams, weights, dice)
    assert _consensus(tags, weights, dice=False).tolist() == _pairwise_consensus(tags, weights, _jaccard)
    assert _consensus([set()], np.ones(1), dice=True).tolist() == [1.0]
