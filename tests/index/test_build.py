"""The artifact directory: contents, manifest, atomic replacement, loading in a new process."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fixtures_index import FakeNpmRegistry, build_small_index
from geoql.index.build import tag_bm25_tokens, tag_surfaces
from geoql.index.config import IndexConfig
from geoql.index.documents import TagDocument
from geoql.index.schema import SchemaError
from geoql.retrieval import artifacts as A


def test_manifest_records_sources_model_and_counts(small_index_dir):
    manifest = json.loads((small_index_dir / A.MANIFEST).read_text())
    assert manifest["format_version"] == A.FORMAT_VERSION
    schema = manifest["sources"]["id-tagging-schema"]
    assert schema["version"] == "7.2.0" and schema["integrity"].startswith("sha512-")
    assert manifest["sources"]["overpassnl-train"] == {**manifest["sources"]["overpassnl-train"], "split": "train", "examples": 300}
    assert manifest["sources"]["taginfo"]["status"] == "disabled"
    assert manifest["embedding"]["model"] == "all-MiniLM-L6-v2" and manifest["embedding"]["dim"] == 384
    counts = manifest["counts"]
    assert counts["examples"] == 300
    assert counts["tags"] == sum(1 for _ in open(small_index_dir / A.TAGS_JSONL))
    assert counts["tag_surfaces"] == sum(1 for _ in open(small_index_dir / A.TAG_SURFACES_JSONL))
    assert manifest["build_seconds"] > 0
    for name in A.REQUIRED_FILES:
        assert (small_index_dir / name).exists(), name


def test_dense_indexes_match_records(small_index_dir):
    import faiss

    surfaces = faiss.read_index(str(small_index_dir / A.TAG_SURFACES_FAISS))
    examples = faiss.read_index(str(small_index_dir / A.EXAMPLES_FAISS))
    assert surfaces.ntotal == json.loads((small_index_dir / A.MANIFEST).read_text())["counts"]["tag_surfaces"]
    assert examples.ntotal == 300 and examples.d == 384


def test_artifacts_load_in_a_new_process(small_index_dir):
    code = (
        "import sys; from retrieval import TagRetriever; r = TagRetriever.load(sys.argv[1]); "
        "print(r.search('beekeepers in the current view', 3)[0].tag)"
    )
    done = subprocess.run([sys.executable, "-c", code, str(small_index_dir)], capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "craft=beekeeper"


def test_failed_build_keeps_previous_index(tmp_path, overpassnl_dir):
    out = tmp_path / "index"
    out.mkdir()
    (out / "manifest.json").write_text('{"user": "keep me"}')
    with FakeNpmRegistry(integrity="sha512-" + "A" * 86 + "==") as registry:  # every download fails the check
        config = IndexConfig(out_dir=out, data_dir=overpassnl_dir, cache_dir=tmp_path / "cache", registry=registry.url,
                             train_limit=5, taginfo=False, glossaries=(), progress=True)
        from geoql.index.build import build_index

        with pytest.raises(SchemaError, match="integrity") as failure:
            build_index(config)
    assert json.loads((out / "manifest.json").read_text()) == {"user": "keep me"}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging left behind
    from tqdm import tqdm

    assert failure.traceback  # the failed frame is still alive, yet its progress bar was closed
    assert [bar.desc for bar in list(tqdm._instances)].count("index build") == 0


def test_rebuild_replaces_index_atomically(tmp_path, overpassnl_dir):
    out = build_small_index(tmp_path / "index", overpassnl_dir, tmp_path / "cache", train_limit=20)
    first = json.loads((out / A.MANIFEST).read_text())["built_at"]
    out = build_small_index(tmp_path / "index", overpassnl_dir, tmp_path / "cache", train_limit=10)
    manifest = json.loads((out / A.MANIFEST).read_text())
    assert manifest["counts"]["examples"] == 10 and manifest["built_at"] >= first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "index"]


def test_surfaces_and_lexical_document_of_a_tag():
    doc = TagDocument(tag="amenity=post_box", key="amenity", value="post_box", names=["Mail Drop Box"],
                      terms=["post box", "Post Box", "mailbox"], phrases=["post boxes in Bonn"])
    assert tag_surfaces(doc) == [("name", "Mail Drop Box"), ("term", "post box"), ("term", "mailbox"),
                                 ("tag", "amenity post box"), ("phrase", "post boxes in Bonn")]
    tokens = tag_bm25_tokens(doc)
    assert {"mail", "drop", "box", "post", "mailbox", "amenity"} <= set(tokens)
    assert "bonn" not in tokens  # training phrases stay out of BM25


def test_manifest_lists_languages_and_the_lexicon(small_index_dir):
    from geoql.retrieval.lexicon import Lexicon

    manifest = json.loads((small_index_dir / A.MANIFEST).read_text())
    assert manifest["languages"][0] == "en" and set(manifest["languages"]) == {"en", "de", "fr", "ru", "zh-CN", "yue", "ja", "ko"}
    lexicon = Lexicon.load(small_index_dir / A.TAG_LEXICON)
    assert manifest["counts"]["lexicon_surfaces"] == len(lexicon) and set(lexicon.langs) == set(manifest["languages"])
    docs = [json.loads(line) for line in open(small_index_dir / A.TAGS_JSONL, encoding="utf-8")]
    museum = next(d for d in docs if d["tag"] == "tourism=museum")
    assert "博物馆" in museum["names_by_lang"]["zh-CN"]  # the shape app.explain reads


def test_lexicon_surfaces_fold_duplicates():
    from geoql.index.build import lexicon_surfaces

    doc = TagDocument(tag="amenity=cafe", key="amenity", value="cafe", names=["Cafe"], terms=["coffee"],
                      names_by_lang={"de": ["Café"], "ja": ["カフェ"]}, terms_by_lang={"de": ["Kaffeehaus", "coffee"]})
    assert lexicon_surfaces(doc) == [("en", "Cafe"), ("en", "coffee"), ("ja", "カフェ"), ("de", "Kaffeehaus")]


def test_reused_embeddings_are_the_same_vectors(small_index_dir, tmp_path, overpassnl_dir):
    import faiss

    from geoql.index.build import build_index

    with FakeNpmRegistry() as registry:
        out = build_index(IndexConfig(out_dir=tmp_path / "again", data_dir=overpassnl_dir, cache_dir=tmp_path / "cache",
                                      registry=registry.url, train_limit=300, taginfo=False, glossaries=(), progress=False,
                                      fit_ranker=False, reuse_embeddings=small_index_dir))
    for name in (A.EXAMPLES_FAISS, A.TAG_SURFACES_FAISS):
        old, new = (faiss.read_index(str(d / name)) for d in (small_index_dir, out))
        assert (old.reconstruct_n(0, old.ntotal) == new.reconstruct_n(0, new.ntotal)).all()


def test_reuse_needs_an_index_of_the_same_model(tmp_path, overpassnl_dir):
    from geoql.core.errors import ConfigError
    from geoql.index.build import build_index

    with FakeNpmRegistry() as registry, pytest.raises(ConfigError, match="--reuse-embeddings"):
        build_index(IndexConfig(out_dir=tmp_path / "x", data_dir=overpassnl_dir, cache_dir=tmp_path / "cache",
                                registry=registry.url, train_limit=5, taginfo=False, glossaries=(), progress=False,
                                reuse_embeddings=tmp_path / "no-index"))


def test_a_dictionary_that_cannot_be_fetched_leaves_the_build_going(tmp_path, overpassnl_dir):
    """No Debian mirror: the index is built, and its manifest says which glossary is missing and why."""
    from geoql.index.build import build_index

    with FakeNpmRegistry() as registry:
        out = build_index(IndexConfig(out_dir=tmp_path / "index", data_dir=overpassnl_dir, cache_dir=tmp_path / "cache",
                                      registry=registry.url, train_limit=5, taginfo=False, glossaries=("fr",),
                                      debian_mirror="http://127.0.0.1:9", glossary_timeout=5, fit_ranker=False,
                                      progress=False))
    manifest = json.loads((out / A.MANIFEST).read_text())
    assert manifest["sources"]["glossaries"]["fr"]["status"].startswith("skipped: cannot fetch http://127.0.0.1:9/pool/main/f/")
    assert manifest["glossary_languages"] == [] and not list(out.glob(A.GLOSSARY_PREFIX + "*"))
