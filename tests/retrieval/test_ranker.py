"""The learned tag ranker: fitted leave-one-out on a real small index, stored as readable JSON."""

from __future__ import annotations

import json
import shutil

import pytest
from fixtures_index import reseal

from geoql.retrieval import RetrievalConfig, TagHit, TagRetriever
from geoql.retrieval.ranker import (
    FEATURES,
    RANKER_JSON,
    CascadeRanker,
    LinearRanker,
    best_controlled,
    candidate_features,
    fit_ranker,
    glossed_copies,
    pairwise_expansion,
    same_query_groups,
    tag_quality,
    write_ranker,
)


@pytest.fixture(scope="module")
def index_copy(small_index_dir, tmp_path_factory):
    """A private copy of the small index, so that writing ranker.json does not touch other tests."""
    out = tmp_path_factory.mktemp("ranker") / "index"
    shutil.copytree(small_index_dir, out)
    (out / RANKER_JSON).unlink(missing_ok=True)
    return reseal(out).parent


@pytest.fixture(scope="module")
def fitted(index_copy):
    linear = TagRetriever.load(index_copy, RetrievalConfig(fusion="linear"))
    ranker = fit_ranker(linear, every=2, glossed=True, min_copies=1)  # the small index has ~130 copies
    write_ranker(ranker, index_copy)
    reseal(index_copy)  # as `geoql index fit-ranker` lists the new file in the manifest
    return ranker


N = len(FEATURES)


def test_fit_is_deterministic_and_readable(fitted, index_copy):
    linear = TagRetriever.load(index_copy, RetrievalConfig(fusion="linear"))
    again = fit_ranker(linear, every=2, glossed=True, min_copies=1)
    copies = glossed_copies(linear, every=2)  # what the glossed cascade was fitted on: copies read as not English
    assert fitted.glossed.meta["trained_on"]["copies"] == len(copies) and not any(linear.is_english(t) for _, t in copies)
    assert fit_ranker(linear, every=2, glossed=True).glossed is None  # too few copies for a cascade of their own
    for mine, theirs in ((again.stage1, fitted.stage1), (again.stage2, fitted.stage2),
                         (again.glossed.stage1, fitted.glossed.stage1), (again.glossed.stage2, fitted.glossed.stage2)):
        assert list(mine.coef) == pytest.approx(list(theirs.coef), abs=1e-6)
        assert mine.intercept == pytest.approx(theirs.intercept, abs=1e-6)
    data = json.loads((index_copy / RANKER_JSON).read_text())
    assert data["format"] == 7 and data["features"] == list(FEATURES) and N == 36
    for cascade in (data, data["glossed"]):
        assert len(cascade["stage1"]["coef"]) == N and len(cascade["stage2"]["coef"]) == N + N * (N + 1) // 2
        assert cascade["stage2"]["rerank"] == 25 and len(cascade["stage2"]["mean"]) == len(cascade["stage2"]["scale"]) == N
    info = data["trained_on"]
    assert info["split"] == "train" and "same gold query" in info["leave_one_out"]
    assert 0 < info["reranked_positives"] <= info["positives"] < info["candidates"]
    # evidence from the nearest requests must count for a tag, free-text keys against it
    coef = dict(zip(FEATURES, fitted.stage1.coef))
    assert coef["frac5"] > 0 and coef["free_text"] < 0
    # English requests have no lexical matches in another language: their cascade gives them no weight;
    # the glossed one, fitted on code-switched copies, counts a tag's name in the request's language for it
    assert coef["lexical_rel"] == coef["lexical_rr"] == 0.0
    glossed = data["glossed"]["trained_on"]
    assert glossed["copies"] > 0 and "code-switched" in glossed["what"] and len(glossed["guessed_languages"]) >= 3
    assert dict(zip(FEATURES, fitted.glossed.stage1.coef))["lexical_rel"] > 0
    assert CascadeRanker.load(index_copy / RANKER_JSON).to_json() == data


def test_cascade_reranks_only_the_best_controlled_candidates():
    import numpy as np

    width = N + N * (N + 1) // 2
    stage1 = LinearRanker([1.0] + [0.0] * (N - 1), 0.0)  # orders by the first feature
    stage2 = LinearRanker([0.0] + [-1.0] + [0.0] * (width - 2), 0.0)  # prefers a low second feature
    ranker = CascadeRanker(stage1, stage2, np.zeros(N), np.ones(N), rerank=2)
    rows = np.zeros((4, N))
    rows[:, 0] = [3.0, 2.0, 1.0, 5.0]
    rows[:, 1] = [1.0, 0.0, -9.0, 0.0]
    rows[3, FEATURES.index("free_text")] = 1.0  # never re-ranked, however high its stage-1 logit
    scores = ranker.score(rows.tolist())
    # rows 0 and 1 are the two best controlled; stage 2 puts 1 before 0; rows 2 and 3 stay below both
    assert best_controlled(rows, rows[:, 0], 2).tolist() == [0, 1]
    assert scores[1] == 0.0 and scores[0] == -1.0 and scores[2] == scores[3] == pytest.approx(-1.001)
    assert ranker.score([]) == []
    with pytest.raises(ValueError, match="fit-ranker"):
        CascadeRanker(stage1, LinearRanker([0.0] * 3, 0.0), np.zeros(N), np.ones(N))


def test_pairwise_expansion_and_query_groups():
    import numpy as np

    assert pairwise_expansion(np.array([[2.0, 3.0, 0.5]])).tolist() == [[2.0, 3.0, 0.5, 4.0, 6.0, 1.0, 9.0, 1.5, 0.25]]

    class Ex:
        def __init__(self, index, query):
            self.index, self.query = index, query

    groups = same_query_groups([Ex(0, "node[a=b]; out;"), Ex(1, "node[a=c]; out;"), Ex(2, "node[a=b];\n  out;")])
    assert groups == {0: (0, 2), 2: (0, 2), 1: (1,)}


def test_learned_retriever_uses_the_ranker(fitted, index_copy):
    learned = TagRetriever.load(index_copy)
    assert learned.ranker is not None and learned.ranker.stage2.coef == pytest.approx(fitted.stage2.coef, abs=1e-5)
    assert TagRetriever.load(index_copy, RetrievalConfig(fusion="linear")).ranker is None
    for nl, tag in [("beekeeper", "craft=beekeeper"), ("post box", "amenity=post_box"), ("bakeries in Lyon", "shop=bakery")]:
        hits = learned.search(nl, 10)
        assert tag in [h.tag for h in hits[:3]], [h.tag for h in hits]
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert all(0.0 <= h.score <= 1.0 for h in hits) and len({h.tag for h in hits}) == len(hits)


def test_glossed_requests_take_the_glossed_cascade(fitted, index_copy):
    learned = TagRetriever.load(index_copy)
    assert learned.ranker.for_request(True) is learned.ranker.glossed is not None
    assert learned.ranker.for_request(False) is learned.ranker
    for nl, tag in [("Bäckereien in Lyon", "shop=bakery"), ("Briefkästen im aktuellen Kartenausschnitt", "amenity=post_box")]:
        assert tag in [h.tag for h in learned.search(nl, 3)], [h.tag for h in learned.search(nl, 10)]


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
    (other / RANKER_JSON).write_text(json.dumps({"format": 2, "features": ["dense"], "coef": [1.0], "intercept": 0.0}))
    reseal(other)  # an old ranker listed as it is (unlisted, the index would be refused as damaged)
    with pytest.warns(UserWarning, match="fit-ranker"):
        retriever = TagRetriever.load(other)
    assert retriever.ranker is None and retriever.search("post box", 3)[0].tag == "amenity=post_box"


def test_features_follow_the_evidence():
    docs = [{"key": "amenity", "value": "cafe", "names": ["Cafe"]}, {"key": "name", "value": "*"},
            {"key": "shop", "value": "bakery", "names": ["Bakery"], "terms": ["bread shop"]},
            {"key": "outdoor_seating", "value": "yes", "names": ["Outdoor Seating"]},
            {"key": "outdoor_seating", "value": "no"}]
    evidence = {"dense": {0: 0.9, 2: 0.3, 3: 0.5, 4: 0.5}, "bm25": {0: 1.0}, "tokens": {"bread", "shop", "cafe", "outdoor", "seating"}}
    neighbours = [(0, 0.8), (1, 0.5)]
    used = {0: (0, 1), 1: (2,)}
    candidates, rows = candidate_features(docs, [0.5, 1.0, 0.2, 0.1, 0.1], evidence, neighbours, used.__getitem__, {0: 3, 2: 1}, [0])
    assert candidates == [0, 1, 2, 3, 4]
    f = {doc: dict(zip(FEATURES, row)) for doc, row in zip(candidates, rows)}
    assert f[0]["dense"] == 0.9 and f[0]["bm25"] == 1.0 and f[0]["top1"] == 1.0 and f[2]["top1"] == 0.0
    assert f[0]["frac5"] == pytest.approx(0.2) and f[2]["max_cos"] == 0.5
    assert f[1]["free_text"] == 1.0 and f[0]["free_text"] == 0.0
    assert f[0]["log_train_count"] == pytest.approx(__import__("math").log1p(2))  # the excluded request's own use is removed
    # word matches: the value "cafe" is in the request; for the bakery only its key and a synonym are;
    # outdoor_seating=yes means what its key says; outdoor_seating=no needs a negation too
    assert f[0]["meaning_words"] == 1.0 and f[2]["meaning_words"] == 0.0 and f[2]["key_words"] == 1.0
    assert f[3]["meaning_words"] == 1.0 == f[3]["key_words"] and f[4]["meaning_words"] == pytest.approx(2 / 3)
    _, negated = candidate_features(docs, [0.5, 1.0, 0.2, 0.1, 0.1], {**evidence, "tokens": {"cafe", "without", "outdoor", "seating"}},
                                    neighbours, used.__getitem__, {0: 3, 2: 1}, [0])
    assert dict(zip(FEATURES, negated[4]))["meaning_words"] == 1.0
    assert f[2]["name_in_request"] == 1.0 and f[1]["name_in_request"] == 0.0
    # relative columns: the request's best candidate per source is 1
    assert f[0]["dense_rel"] == 1.0 and f[2]["dense_rel"] == pytest.approx(0.3 / 0.9) and f[1]["dense_rel"] == 0.0
    assert f[0]["max_cos_rel"] == 1.0 and f[2]["max_cos_rel"] == pytest.approx(0.5 / 0.8)
    with pytest.raises(ValueError, match="fit-ranker"):
        CascadeRanker(LinearRanker([1.0], 0.0), LinearRanker([1.0], 0.0), [0.0], [1.0], 25, ["dense"])


def test_lexical_matches_are_candidates_with_their_standing():
    """A request that is not English brings its lexical matches (a tag's name in the request's language):
    each is a candidate, scored against the request's best match and by its place in the lexicon's list."""
    from geoql.retrieval.lexicon import LexicalMatch

    docs = [{"key": "amenity", "value": "pharmacy", "names": ["Pharmacy"]}, {"key": "shop", "value": "chemist", "names": ["Drugstore"]}]
    lexical = {1: LexicalMatch(1, 6.0, "Drogerie", "de"), 0: LexicalMatch(0, 3.0, "Apotheke", "de")}
    evidence = {"dense": {0: 0.4}, "bm25": {}, "tokens": {"drogerie"}, "lexical": lexical}
    candidates, rows = candidate_features(docs, [0.5, 0.5], evidence, [], lambda row: (), {})
    f = {doc: dict(zip(FEATURES, row)) for doc, row in zip(candidates, rows)}
    assert candidates == [0, 1] and f[1]["in_dense"] == 0.0  # only the lexicon found the chemist
    assert f[1]["lexical_rel"] == 1.0 and f[1]["lexical_rr"] == 1.0
    assert f[0]["lexical_rel"] == 0.5 and f[0]["lexical_rr"] == 0.5
    _, english = candidate_features(docs, [0.5, 0.5], {**evidence, "lexical": {}}, [], lambda row: (), {})
    assert all(dict(zip(FEATURES, row))["lexical_rel"] == 0.0 for row in english)


def test_multilingual_neighbours_are_candidates_with_their_votes():
    """The nearest training requests by the multilingual embedding (``evidence["e5"]``) bring their tags in as
    candidates, which neither the gloss nor the English neighbours found, with votes by cosine and rank."""
    docs = [{"key": "amenity", "value": "pharmacy", "names": ["Pharmacy"]}, {"key": "shop", "value": "chemist"},
            {"key": "healthcare", "value": "pharmacy"}]
    used = {0: (0, 2), 1: (1,), 2: (0,)}
    evidence = {"dense": {1: 0.3}, "bm25": {}, "tokens": set(), "e5": [(0, 0.9), (2, 0.8), (1, 0.5)]}
    candidates, rows = candidate_features(docs, [0.5, 0.5, 0.5], evidence, [], used.__getitem__, {})
    f = {doc: dict(zip(FEATURES, row)) for doc, row in zip(candidates, rows)}
    assert candidates == [0, 1, 2] and f[0]["in_dense"] == 0.0  # only the multilingual neighbours found the pharmacy
    assert f[0]["e5_votes"] == pytest.approx((0.81 + 0.64) / 20) and f[0]["e5_votes_rel"] == 1.0
    assert f[0]["e5_frac5"] == pytest.approx(2 / 5) and f[0]["e5_frac20"] == pytest.approx(2 / 20)
    assert f[0]["e5_top1"] == f[2]["e5_top1"] == 1.0 and f[1]["e5_top1"] == 0.0
    assert f[2]["e5_max_cos"] == 0.9 and f[1]["e5_max_cos"] == 0.5
    assert f[1]["e5_votes_rel"] == pytest.approx(0.25 / 1.45)
    # without multilingual vectors (no "e5"), the columns are 0 and only the other sources bring candidates
    plain, rows = candidate_features(docs, [0.5, 0.5, 0.5], {**evidence, "e5": []}, [], used.__getitem__, {})
    assert plain == [1] and all(dict(zip(FEATURES, rows[0]))[name] == 0.0 for name in FEATURES if name.startswith("e5_"))


def test_left_out_requests_leave_no_trace():
    """A request left out while fitting must look unseen: no tag that only it brought in, no own use in
    the popularity prior (dev requests have neither)."""
    import math

    docs = [{"key": "amenity", "value": "cafe", "names": ["Cafe"], "sources": ["id-tagging-schema@7.2.0", "overpassnl-train"]},
            {"key": "cuisine", "value": "brunch", "sources": ["overpassnl-train"]},
            {"key": "shop", "value": "bakery", "sources": ["overpassnl-train"]}]
    train_count = {0: 3, 1: 1, 2: 2}
    peak = 2.0
    popularity = [(math.log1p(3) + 0.5) / peak, math.log1p(1) / peak, math.log1p(2) / peak]
    evidence = {"dense": {0: 0.9, 1: 0.5, 2: 0.4}, "bm25": {}, "tokens": {"cafe"}}
    used = {0: (0, 1), 1: (2,)}
    unseen, rows = candidate_features(docs, popularity, evidence, [(1, 0.5)], used.__getitem__, train_count, (), None, peak)
    assert unseen == [0, 1, 2]
    left_out, rows = candidate_features(docs, popularity, evidence, [(1, 0.5)], used.__getitem__, train_count, [0, 1], None, peak)
    assert left_out == [0, 2]  # cuisine=brunch exists only because of the left-out request
    f = {doc: dict(zip(FEATURES, row)) for doc, row in zip(left_out, rows)}
    assert f[0]["popularity"] == pytest.approx((math.log1p(2) + 0.5) / peak)
    assert f[0]["log_train_count"] == pytest.approx(math.log1p(2)) and f[2]["popularity"] == pytest.approx(popularity[2])
    assert f[0]["in_schema"] == 1.0 and f[2]["in_schema"] == 0.0


@pytest.mark.parametrize("doc, quality", [
    ({"key": "highway", "value": "seccondary", "sources": ["overpassnl-train"], "likely_typo_of": "highway=secondary"}, (0.0, 0.0, 1.0)),
    ({"key": "amenity", "value": "bench", "sources": ["id-tagging-schema@7.2.0:deprecated"]}, (0.0, 0.0, 0.0)),
    ({"key": "amenity", "value": "bench", "sources": ["id-tagging-schema@7.2.0:deprecated", "id-tagging-schema@7.2.0"]}, (1.0, 0.0, 0.0)),
    ({"key": "(ref|ref:[Aa]uzsa)", "value": "644", "sources": ["overpassnl-train"]}, (0.0, 1.0, 0.0)),
    ({"key": "cycleway", "value": "track=*", "sources": ["overpassnl-train"]}, (0.0, 1.0, 0.0)),
    ({"key": "amenity", "value": "school|kindegarten", "sources": ["overpassnl-train"]}, (0.0, 1.0, 0.0)),
    ({"key": "admin_level", "value": "[]", "sources": ["overpassnl-train"]}, (0.0, 1.0, 0.0)),
    ({"key": "climbing:grade:uiaa", "value": "4+", "sources": ["id-tagging-schema@7.2.0"]}, (1.0, 0.0, 0.0)),
    ({"key": "Rua C", "value": "*", "sources": ["overpassnl-train"]}, (0.0, 1.0, 0.0)),
    ({"key": "ISO3166-1", "value": "*", "sources": ["overpassnl-train"]}, (0.0, 0.0, 0.0)),
    ({"key": "name", "value": "*", "sources": ["id-tagging-schema@7.2.0"]}, (1.0, 0.0, 0.0)),
])
def test_tag_quality_features(doc, quality):
    assert tag_quality(doc) == quality
    row = candidate_features([doc], [0.5], {"dense": {0: 0.5}, "bm25": {}}, [], lambda r: (), {})[1][0]
    f = dict(zip(FEATURES, row))
    assert (f["in_schema"], f["malformed"], f["likely_typo"]) == quality
