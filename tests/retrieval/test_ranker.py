"""The learned tag ranker: fitted leave-one-out on a real small index, stored as readable JSON."""

from __future__ import annotations

import json
import shutil

import pytest

from retrieval import RetrievalConfig, TagHit, TagRetriever
from retrieval.ranker import FEATURES, RANKER_JSON, LinearRanker, candidate_features, fit_ranker, write_ranker


@pytest.fixture(scope="module")
def index_copy(small_index_dir, tmp_path_factory):
    """A private copy of the small index, so that writing ranker.json does not touch other tests."""
    out = tmp_path_factory.mktemp("ranker") / "index"
    shutil.copytree(small_index_dir, out)
    (out / RANKER_JSON).unlink(missing_ok=True)
    return out


@pytest.fixture(scope="module")
def fitted(index_copy):
    linear = TagRetriever.load(index_copy, RetrievalConfig(fusion="linear"))
    ranker = fit_ranker(linear, every=2)
    write_ranker(ranker, index_copy)
    return ranker


def test_fit_is_deterministic_and_readable(fitted, index_copy):
    again = fit_ranker(TagRetriever.load(index_copy, RetrievalConfig(fusion="linear")), every=2)
    assert again.coef == pytest.approx(fitted.coef, abs=1e-6) and again.intercept == pytest.approx(fitted.intercept, abs=1e-6)
    data = json.loads((index_copy / RANKER_JSON).read_text())
    assert data["features"] == list(FEATURES) and len(data["coef"]) == len(FEATURES)
    assert data["trained_on"]["split"] == "train" and data["trained_on"]["leave_one_out"] is True
    # evidence from the nearest requests and from names must count for a tag, free-text keys against it
    coef = dict(zip(FEATURES, fitted.coef))
    assert coef["frac5"] > 0 and coef["free_text"] < 0
    assert data["format"] == 2 and len(FEATURES) == 25


def test_learned_retriever_uses_the_ranker(fitted, index_copy):
    learned = TagRetriever.load(index_copy)
    assert learned.ranker is not None and learned.ranker.coef == pytest.approx(fitted.coef, abs=1e-5)
    assert TagRetriever.load(index_copy, RetrievalConfig(fusion="linear")).ranker is None
    for nl, tag in [("beekeeper", "craft=beekeeper"), ("post box", "amenity=post_box"), ("bakeries in Lyon", "shop=bakery")]:
        hits = learned.search(nl, 10)
        assert tag in [h.tag for h in hits[:3]], [h.tag for h in hits]
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert all(0.0 <= h.score <= 1.0 for h in hits) and len({h.tag for h in hits}) == len(hits)


def test_free_text_cap(fitted, index_copy):
    nl = "cafes with a name and opening hours in Heidelberg"
    capped = TagRetriever.load(index_copy, RetrievalConfig(max_free_text=0)).search(nl, 10)
    assert capped and all(h.value != "*" for h in capped)
    uncapped = TagRetriever.load(index_copy).search(nl, 10)
    assert any(h.value == "*" for h in uncapped)


def test_learned_leave_one_out(fitted, index_copy):
    learned = TagRetriever.load(index_copy)
    ex = next(e for e in learned.examples.examples if e.tags)
    hits = learned.search(ex.nl, 50, exclude=[ex.index])
    assert all(ex.nl not in h.why for h in hits)


@pytest.mark.parametrize("nl", ["", "?!…", None, "x" * 10_000, "東京のカフェ", "مقهى في القاهرة", "🚲🚲 bike shop"])
def test_learned_bad_input_gives_a_list(fitted, index_copy, nl):
    hits = TagRetriever.load(index_copy).search(nl, 10)
    assert isinstance(hits, list) and all(isinstance(h, TagHit) for h in hits) and len(hits) <= 10


def test_stale_ranker_falls_back_to_linear(index_copy, tmp_path):
    other = tmp_path / "index"
    shutil.copytree(index_copy, other)
    (other / RANKER_JSON).write_text(json.dumps({"format": 1, "features": ["dense"], "coef": [1.0], "intercept": 0.0}))
    with pytest.warns(UserWarning, match="fit-ranker"):
        retriever = TagRetriever.load(other)
    assert retriever.ranker is None and retriever.search("post box", 3)[0].tag == "amenity=post_box"


def test_features_follow_the_evidence():
    docs = [{"key": "amenity", "value": "cafe", "names": ["Cafe"]}, {"key": "name", "value": "*"},
            {"key": "shop", "value": "bakery", "names": ["Bakery"], "terms": ["bread shop"]}]
    evidence = {"dense": {0: 0.9, 2: 0.3}, "bm25": {0: 1.0}, "tokens": {"bread", "shop", "cafe"}}
    neighbours = [(0, 0.8), (1, 0.5)]
    used = {0: (0, 1), 1: (2,)}
    candidates, rows = candidate_features(docs, [0.5, 1.0, 0.2], evidence, neighbours, used.__getitem__, {0: 3, 2: 1}, [0])
    assert candidates == [0, 1, 2]
    f = {doc: dict(zip(FEATURES, row)) for doc, row in zip(candidates, rows)}
    assert f[0]["dense"] == 0.9 and f[0]["bm25"] == 1.0 and f[0]["top1"] == 1.0 and f[2]["top1"] == 0.0
    assert f[0]["frac5"] == pytest.approx(0.2) and f[2]["max_cos"] == 0.5
    assert f[1]["free_text"] == 1.0 and f[0]["free_text"] == 0.0
    assert f[0]["log_train_count"] == pytest.approx(__import__("math").log1p(2))  # the excluded request's own use is removed
    # word matches: the value "cafe" is in the request; for the bakery only its key and a synonym are
    assert f[0]["value_words"] == 1.0 and f[2]["value_words"] == 0.0 and f[2]["key_words"] == 1.0
    assert f[2]["name_in_request"] == 1.0 and f[1]["name_in_request"] == 0.0
    # relative columns: the request's best candidate per source is 1
    assert f[0]["dense_rel"] == 1.0 and f[2]["dense_rel"] == pytest.approx(0.3 / 0.9) and f[1]["dense_rel"] == 0.0
    assert f[0]["max_cos_rel"] == 1.0 and f[2]["max_cos_rel"] == pytest.approx(0.5 / 0.8)
    with pytest.raises(ValueError, match="fit-ranker"):
        LinearRanker([1.0], 0.0, ["dense"])
