"""Fetching id-tagging-schema: the npm registry protocol, integrity, caching."""

from __future__ import annotations

import json

import pytest

from fixtures_index import FakeNpmRegistry, schema_tarball, sri_sha512
from geoql.index.schema import SchemaError, check_integrity, fetch_tarball, load_schema, metadata_url, read_schema


def test_metadata_url_escapes_the_scope():
    assert metadata_url("https://registry.npmjs.org/", "7.2.0") == "https://registry.npmjs.org/@openstreetmap%2Fid-tagging-schema/7.2.0"


def test_integrity_check():
    check_integrity(b"abc", sri_sha512(b"abc"))
    with pytest.raises(SchemaError, match="integrity"):
        check_integrity(b"abd", sri_sha512(b"abc"))
    with pytest.raises(SchemaError, match="unsupported"):
        check_integrity(b"abc", "md5-xyz")


def test_fetch_verifies_and_caches(tmp_path):
    with FakeNpmRegistry() as registry:
        data, dist = fetch_tarball(registry.url, "7.2.0", tmp_path)
        assert len(registry.requests) == 2  # metadata, then tarball
        assert dist["integrity"] == sri_sha512(data)
    # registry gone: the verified cache serves the second build
    again, _ = fetch_tarball("http://127.0.0.1:9", "7.2.0", tmp_path, timeout=2)
    assert again == data


def test_corrupt_cache_is_refetched(tmp_path):
    with FakeNpmRegistry() as registry:
        fetch_tarball(registry.url, "7.2.0", tmp_path)
        cached = tmp_path / "id-tagging-schema-7.2.0.tgz"
        cached.write_bytes(b"garbage")
        data, _ = fetch_tarball(registry.url, "7.2.0", tmp_path)
        assert data == registry.tarball and cached.read_bytes() == data
        assert len(registry.requests) == 4


def test_tampered_download_is_rejected_and_not_cached(tmp_path):
    with FakeNpmRegistry(integrity=sri_sha512(b"the real thing")) as registry:
        with pytest.raises(SchemaError, match="integrity"):
            fetch_tarball(registry.url, "7.2.0", tmp_path)
    assert not (tmp_path / "id-tagging-schema-7.2.0.tgz").exists()


def test_unreachable_registry_names_the_fix(tmp_path):
    with pytest.raises(SchemaError, match="--registry"):
        fetch_tarball("http://127.0.0.1:9", "7.2.0", tmp_path, timeout=2)


def test_unknown_version_is_a_clear_error(tmp_path):
    with FakeNpmRegistry() as registry, pytest.raises(SchemaError, match="could not fetch"):
        fetch_tarball(registry.url, "0.0.1", tmp_path)


def test_reads_the_dist_files(tmp_path):
    with FakeNpmRegistry() as registry:
        schema = load_schema(registry.url, "7.2.0", tmp_path)
    assert schema.presets["craft/beekeeper"]["tags"] == {"craft": "beekeeper"}
    assert "post box" in schema.translations["presets"]["amenity/post_box"]["terms"]
    assert schema.fields["cuisine"]["key"] == "cuisine"
    assert isinstance(schema.deprecated, list) and schema.taginfo["tags"]


def test_tarball_without_a_dist_file_is_rejected():
    data = schema_tarball(drop=("deprecated.json",))
    with pytest.raises(SchemaError, match="deprecated.json"):
        read_schema(data, {"integrity": sri_sha512(data)}, "7.2.0")


def test_translations_without_presets_are_rejected(tmp_path):
    import shutil

    from fixtures_index import SUBSET_DIR

    broken = tmp_path / "subset"
    shutil.copytree(SUBSET_DIR, broken)
    (broken / "translations" / "en.json").write_text(json.dumps({"en": {}}))
    data = schema_tarball(broken)
    with pytest.raises(SchemaError, match="en.presets"):
        read_schema(data, {}, "7.2.0")


def test_every_translation_file_is_kept_unparsed(tmp_path):
    data = schema_tarball()
    schema = read_schema(data, {"integrity": sri_sha512(data)}, "7.2.0")
    assert set(schema.languages) == {"en", "de", "fr", "ru", "zh-CN", "yue", "ja", "ko"}
    assert all(isinstance(raw, bytes) for raw in schema.translation_files.values())
    assert schema.translation("de")["presets"]["amenity/pharmacy"]["name"] == "Apotheke"
    assert schema.translation("zh-CN")["presets"]["tourism/museum"]["name"] == "博物馆"
    assert schema.translation("xx") == {}


def test_a_broken_translation_file_names_itself(tmp_path):
    import shutil

    from fixtures_index import SUBSET_DIR

    broken = tmp_path / "subset"
    shutil.copytree(SUBSET_DIR, broken)
    (broken / "translations" / "de.json").write_text("{not json")
    data = schema_tarball(broken)
    schema = read_schema(data, {}, "7.2.0")
    with pytest.raises(SchemaError, match="de.json"):
        schema.translation("de")
