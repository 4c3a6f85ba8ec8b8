"""Encoder tuning: the pairs it learns from, that it learns, and the index it leaves (out-of-fold ranker)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from eval.dataset import load_split
from fixtures_index import build_small_index
from index.documents import ExampleDocument, TagDocument
from index.tune import Pair, TuneSettings, query_half, training_pairs, tune_encoder
from retrieval import TagRetriever
from retrieval import artifacts as A
from retrieval.gold import controlled_pairs
from retrieval.ranker import query_key


@pytest.fixture(scope="module")
def train(overpassnl_dir):
    return [ExampleDocument(e.index, e.nl, e.query, []) for e in load_split("train", overpassnl_dir)[:400]]


def test_pairs_are_gold_tags_and_same_tag_requests(train):
    from collections import Counter

    common = Counter(t for e in train for t in controlled_pairs(e.query)).most_common(2)
    (named, _), (unnamed, _) = common
    key, _, value = named.partition("=")
    docs = [TagDocument(named, key, value, names=["Some Name"], terms=["a synonym"])]
    pairs = training_pairs(train, docs)
    by_nl = {}
    for ex in train:
        by_nl.setdefault(ex.nl, []).append(ex)
    tag_pairs = [p for p in pairs if not p.label.startswith("same tags: ")]
    request_pairs = [p for p in pairs if p.label.startswith("same tags: ")]
    assert len(tag_pairs) == sum(len(controlled_pairs(e.query)) for e in train)
    assert all(any(p.label in controlled_pairs(e.query) for e in by_nl[p.anchor]) for p in tag_pairs)
    # a tag with a document is named by its tag text; one without falls back to its words
    assert {p.positive for p in tag_pairs if p.label == named} == {f"{key.replace('_', ' ')} {value.replace('_', ' ')}: Some Name; a synonym"}
    ukey, _, uvalue = unnamed.partition("=")
    assert {p.positive for p in tag_pairs if p.label == unnamed} == {f"{ukey.replace('_', ' ')} {uvalue.replace('_', ' ')}"}
    assert request_pairs  # same controlled tags, another gold query: another way to ask for the same thing
    for p in request_pairs:  # (a request text can stand for several examples: one of them must fit)
        assert any(sorted(controlled_pairs(a.query)) == sorted(controlled_pairs(b.query)) and query_key(a.query) != query_key(b.query)
                   for a in by_nl[p.anchor] for b in by_nl[p.positive])
    assert training_pairs(train, docs, seed=0) == pairs  # deterministic


def test_halves_split_by_query(train):
    halves = [query_half(e.query) for e in train]
    assert 0.3 < sum(halves) / len(halves) < 0.7
    assert query_half("node[amenity=cafe];\nout;") == query_half("node[amenity=cafe]; out;")


def test_tuning_pulls_requests_towards_their_positives(tmp_path):
    pairs = [Pair("benches in the park", "amenity bench: Bench; seat", "amenity=bench"),
             Pair("where can I post a letter", "amenity post box: Mailbox; letter box", "amenity=post_box"),
             Pair("beekeepers near me", "craft beekeeper: Beekeeper; apiary", "craft=beekeeper"),
             Pair("places to drink coffee", "amenity cafe: Cafe; coffee shop", "amenity=cafe")]
    from sentence_transformers import SentenceTransformer

    from retrieval.embedding import resolve_model

    def matched(model):
        a = model.encode([p.anchor for p in pairs], normalize_embeddings=True)
        b = model.encode([p.positive for p in pairs], normalize_embeddings=True)
        sims = a @ b.T
        return float(np.mean(np.diag(sims)) - np.mean(sims[~np.eye(len(pairs), dtype=bool)]))

    before = matched(SentenceTransformer(resolve_model("all-MiniLM-L6-v2"), device="cpu"))
    out = tmp_path / "tuned"
    stats = tune_encoder("all-MiniLM-L6-v2", pairs, out, TuneSettings(epochs=4, batch_size=4, learning_rate=1e-4), progress=False)
    assert stats["steps"] == 4 and stats["pairs"] == 4 and stats["base_model"] == "all-MiniLM-L6-v2"
    after = matched(SentenceTransformer(str(out), device="cpu"))
    assert after > before + 0.2  # (0.45 -> 0.89 here) each request now stands out against the other requests' positives


def test_tuning_without_pairs_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="no training pairs"):
        tune_encoder("all-MiniLM-L6-v2", [], tmp_path / "x", progress=False)
    assert not (tmp_path / "x").exists()


def test_tuned_index_keeps_its_encoder_and_fits_the_ranker_out_of_fold(tmp_path, overpassnl_dir):
    out = build_small_index(tmp_path / "idx", overpassnl_dir, tmp_path / "cache", train_limit=120,
                            tune_encoder=True, tune_batch_size=16)
    embedding = json.loads((out / A.MANIFEST).read_text())["embedding"]
    assert embedding["model"] == "all-MiniLM-L6-v2" and embedding["encoder_dir"] == A.TUNED_ENCODER_DIR
    assert embedding["tuned"]["steps"] > 0 and embedding["tuned"]["batch_size"] == 16
    assert (out / A.TUNED_ENCODER_DIR).is_dir() and not list(out.glob(".fold-*"))  # the fold copies are gone
    ranker = json.loads((out / "ranker.json").read_text())
    assert ranker["trained_on"]["features"].startswith("out of fold")
    assert ranker["trained_on"]["requests"] == 120  # every request, each scored by the other half's encoder
    # The index finds its encoder wherever it is moved to.
    moved = shutil.move(str(out), str(tmp_path / "elsewhere"))
    retriever = TagRetriever.load(moved)
    assert retriever.examples.encoder.name == str(tmp_path / "elsewhere" / A.TUNED_ENCODER_DIR)
    assert retriever.ranker is not None
    assert "craft=beekeeper" in [h.tag for h in retriever.search("beekeepers in the current view", 5)]
    # a tuned index without its encoder folder is incomplete, and says how to fix it
    shutil.rmtree(tmp_path / "elsewhere" / A.TUNED_ENCODER_DIR)
    with pytest.raises(A.IndexMissingError, match="missing encoder"):
        TagRetriever.load(moved)
