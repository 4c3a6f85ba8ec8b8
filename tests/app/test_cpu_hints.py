"""Tag hints from a real small index (real FAISS, real embedding model): features, training, loading."""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np
import pytest

from geoql.app.cpu.features import BASE_FEATURES, FEATURE_NAMES
from geoql.app.cpu.hints import TagHints
from geoql.app.cpu.model import CpuModel, ModelMissingError
from geoql.app.cpu.train import CpuTrainConfig, train
from geoql.eval.dataset import load_split
from geoql.eval.metrics import same_query_key

HINT_COLUMNS = [FEATURE_NAMES.index(n) for n in BASE_FEATURES if n.startswith("hint_") and n != "hint_tags"]


@pytest.fixture(scope="module")
def hints(small_index_dir):
    return TagHints.load(small_index_dir)


@pytest.fixture(scope="module")
def hinted_model(hinted_cpu_model):
    return hinted_cpu_model


def test_hints_are_controlled_tags_best_first(hints):
    found = hints("beekeepers in Germany")
    assert found and list(found.values()) == sorted(found.values(), reverse=True)
    assert "craft=beekeeper" in list(found)[:3]
    assert not any(t.endswith("=*") or t.startswith("name") for t in found)
    assert hints("") == {} and hints("!!!") == {}


def test_training_hints_leave_the_gold_query_out(hints):
    """A training request's hints come as for an unseen query: every request with its gold query is left out."""
    seen = []

    class Spy(TagHints):
        def __call__(self, nl, exclude=()):
            seen.append(tuple(exclude))
            return {}

    spy = Spy(hints.retriever)
    train_split = load_split("train")
    assert same_query_key(train_split[5].query) == same_query_key(train_split[322].query)  # two requests, one query
    spy.for_training(train_split[322].query, train_split[322].nl)
    spy.for_training(train_split[7].query, train_split[7].nl)
    spy.for_training("[out:json];node[amenity=nowhere];out;", "a request the index does not hold")
    assert seen == [(5,), (7,), ()]  # the small index holds the first 300 training requests


def test_model_trained_with_hints_uses_them(hinted_model, tmp_path, small_index_dir):
    assert hinted_model.config.tag_hints and hinted_model.index_fingerprint
    _, cands, feats = hinted_model.pool("beekeepers in Berlin")
    assert (feats[:, HINT_COLUMNS] != -1).any()
    hinted_model.save(tmp_path)
    loaded = CpuModel.load(tmp_path, index_dir=small_index_dir)
    assert loaded.hints is not None
    assert loaded.compile("beekeepers in Berlin") == hinted_model.compile("beekeepers in Berlin")


def test_model_trained_with_hints_needs_its_index(hinted_model, tmp_path):
    hinted_model.save(tmp_path)
    with pytest.raises(ModelMissingError, match="geoql index build"):
        CpuModel.load(tmp_path, index_dir=tmp_path / "no-index")


def test_without_an_index_auto_trains_without_hints(tmp_path):
    pairs = load_split("train")[:200]
    model = train([e.nl for e in pairs], [e.query for e in pairs],
                  CpuTrainConfig(k=5, limit=20, max_iter=5, index_dir=str(tmp_path / "none")), progress=False)
    assert not model.config.tag_hints and model.index_fingerprint == ""
    _, _, feats = model.pool("cafes in Bonn")
    assert np.all(feats[:, HINT_COLUMNS] == -1)
    with pytest.raises(ValueError, match="tag index is not usable"):
        train([e.nl for e in pairs], [e.query for e in pairs],
              CpuTrainConfig(k=5, limit=20, max_iter=5, tag_hints="on", index_dir=str(tmp_path / "none")), progress=False)


def test_backend_with_a_hinted_model(hinted_model, tmp_path, small_index_dir):
    from geoql.app.backends import get_backend
    from geoql.app.backends.base import BackendError, GenerationRequest

    hinted_model.save(tmp_path)
    backend = get_backend("cpu", model_dir=tmp_path, index_dir=small_index_dir)
    request = GenerationRequest(backend.read("beekeepers in Berlin"))
    (query,) = backend.generate(request).texts
    assert query == hinted_model.compile("beekeepers in Berlin")[0]
    lost = get_backend("cpu", model_dir=tmp_path, index_dir=tmp_path / "gone", train_if_missing=False)
    with pytest.raises(BackendError, match="geoql index build"):
        lost.generate(request)


def test_ensure_index_keeps_an_index_and_survives_a_failed_build(small_index_dir, tmp_path, monkeypatch, capsys):
    import geoql.app.cpu.train as cpu_train
    from geoql.app.cpu.train import ensure_index

    assert ensure_index(small_index_dir)

    def offline(config):
        raise OSError("registry.npmjs.org unreachable")

    monkeypatch.setattr(cpu_train, "build_index", offline)
    assert not ensure_index(tmp_path / "new")
    assert "training without tag hints" in capsys.readouterr().err


def test_compile_shows_the_hints_and_neighbours_it_used(hinted_model, tmp_path, small_index_dir):
    from geoql.app import Compiler
    from geoql.app.backends.cpu import CpuBackend

    hinted_model.save(tmp_path)
    backend = CpuBackend(tmp_path, index_dir=small_index_dir, train_if_missing=False)
    searches = []

    class Counting(TagHints):
        def hits(self, request, exclude=()):
            searches.append(request.nl)  # the request as compile() read it
            return super().hits(request, exclude)

    backend.model.hints = Counting(backend.model.hints.retriever)
    search_neighbours = backend.model.neighbours.search

    def counting_neighbours(nl, *args, **kwargs):
        searches.append(("neighbours", nl))
        return search_neighbours(nl, *args, **kwargs)

    backend.model.neighbours.search = counting_neighbours
    comp = Compiler(backend).compile("beekeepers in Berlin")
    assert comp.valid and comp.query == hinted_model.compile("beekeepers in Berlin")[0]
    assert "craft=beekeeper" in [t.tag for t in comp.tags]
    assert len(comp.examples) == hinted_model.config.k
    assert [e.index for e in comp.examples] == [n.index for n in hinted_model.neighbours.search("beekeepers in Berlin", 5)]
    # each retrieved once, for showing and for using
    assert sorted(searches, key=str) == [("neighbours", "beekeepers in Berlin"), "beekeepers in Berlin"]


def test_neighbours_of_a_request_in_a_glossary_language_are_found_by_its_english(hinted_model, glossed_index_dir):
    """The nearest training requests of "Welche Honigmacher gibt es?" are those of its English, "beekeeper"."""
    import copy

    model = copy.copy(hinted_model)
    model.hints = TagHints.load(glossed_index_dir)
    german = "Welche Honigmacher gibt es?"
    assert model.neighbour_text(german).startswith("beekeeper")
    assert model.neighbour_text("beekeepers in Bonn") == "beekeepers in Bonn"  # English: as it is
    assert [n.index for n in model.retrieve(german).neighbours] == [n.index for n in model.neighbours.search(
        model.neighbour_text(german), model.config.k)]
    model.hints = hinted_model.hints
    assert model.neighbour_text(german) == german  # the index without a glossary: the request itself


@pytest.mark.parametrize("gloss_words", [True, False])
def test_a_request_read_through_a_glossary_gives_its_english_words(hinted_model, glossed_index_dir, gloss_words):
    """With ``gloss_words`` the lexicon and the word features read "beekeeper" in "Welche Honigmacher gibt es in Bonn?";
    the place stays out, as in English requests."""
    model = copy.copy(hinted_model)
    model.hints = TagHints.load(glossed_index_dir)
    config = replace(model.config, gloss_words=gloss_words)
    info, cands, _ = model.pool("Welche Honigmacher gibt es in Bonn?", config=config)
    assert ("beekeeper" in info.stems) is gloss_words and "bonn" not in info.stems and cands
    english, _, _ = model.pool("beekeepers in Bonn", config=config)
    assert english.stems == {"beekeeper"}  # an English request reads its own words either way


def test_example_picks_join_the_pool_leave_one_out(hinted_model):
    """``example_k`` adds the tag index's nearest training requests that the character n-grams missed, marked
    ``example_pick``; a training request's excluded twins never come back that way, and every candidate
    made from an example gets that example's embedding cosine (a composed-only one: -1)."""
    config = replace(hinted_model.config, example_k=0, e5_k=0)  # e5 picks would take the places example picks leave
    nl = "What shops sell flowers in the province of Forlì-Cesena?"
    _, plain, _ = hinted_model.pool(nl, config=config)
    _, cands, feats = hinted_model.pool(nl, config=replace(config, example_k=5))
    new = {c.source for c in cands} - {c.source for c in plain}
    assert not any(c.example_pick for c in plain) and new
    assert all(c.example_pick for c in cands if c.source in new)
    dense = feats[:, FEATURE_NAMES.index("dense_similarity")]
    assert all((d == -1.0) == (c.source < 0) for c, d in zip(cands, dense))
    assert all(-1.0 <= d <= 1.0 for d in dense) and max(dense) > 0.3
    twins = new
    _, left, _ = hinted_model.pool(nl, config=replace(config, example_k=5), exclude=frozenset(twins))
    assert twins.isdisjoint({c.source for c in left})


def test_multilingual_picks_meet_a_request_in_any_script(hinted_model):
    """``e5_k`` adds the training requests nearest under the multilingual embedding, read as written: a Korean
    request (no Korean glossary in the small index, so no example picks) still gets neighbours, marked
    ``e5_pick``, and every candidate made from an example gets that example's e5 cosine (composed: -1)."""
    korean = "현재 화면 영역에 어떤 우체국들이 있습니까?"  # post offices in the current view
    config = replace(hinted_model.config, e5_k=0)
    _, plain, plain_feats = hinted_model.pool(korean, config=config)
    assert not any(c.e5_pick for c in plain)
    _, cands, feats = hinted_model.pool(korean, config=replace(config, e5_k=5))
    new = {c.source for c in cands} - {c.source for c in plain}
    assert new and all(c.e5_pick for c in cands if c.source in new)
    e5 = feats[:, FEATURE_NAMES.index("e5_cosine")]
    assert all((d == -1.0) == (c.source < 0) for c, d in zip(cands, e5))
    assert max(e5) > 0.8  # e5's cosines are compressed: unrelated requests score 0.75-0.82
    assert feats[:, FEATURE_NAMES.index("e5_pick")].sum() == sum(c.e5_pick for c in cands)
    # What e5-small reads best across scripts is the request's shape: its nearest training requests ask about the
    # current view ("city in current view"), whose queries search {{bbox}}, as this request's must.
    multilingual = hinted_model.hints.retriever.multilingual
    nearest = [i for i, _ in multilingual.search(multilingual.vector(korean), 3)]
    assert all("{{bbox}}" in hinted_model.train_queries[i] for i in nearest)
    _, left, _ = hinted_model.pool(korean, config=replace(config, e5_k=5), exclude=frozenset(new))
    assert new.isdisjoint({c.source for c in left})


def test_no_example_picks_where_the_embedding_cannot_read_the_request(hinted_model):
    """The small index has no Korean glossary, so a Korean request's neighbour text stays in Hangul, which the English
    sentence embedding reads as noise: no example picks and no embedding cosine there; an English request gets both."""
    korean = "현재 화면 영역에 어떤 우체국들이 있습니까?"
    assert hinted_model.neighbour_text(korean) == korean
    _, cands, feats = hinted_model.pool(korean, config=hinted_model.config)
    assert cands and not any(c.example_pick for c in cands)
    assert set(feats[:, FEATURE_NAMES.index("dense_similarity")].tolist()) == {-1.0}
    _, cands, feats = hinted_model.pool("post offices in the current view", config=hinted_model.config)
    assert any(c.example_pick for c in cands) and feats[:, FEATURE_NAMES.index("dense_similarity")].max() > 0
