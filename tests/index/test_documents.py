"""Sources → tag documents: what each source contributes, merged per tag."""

from __future__ import annotations

import pytest

from testdata import reference_rows
from geoql.eval.dataset import Example
from fixtures_index import schema_tarball, sri_sha512
from geoql.index.documents import TagCollection, add_schema, add_training, edit_distance, mark_likely_typos
from geoql.index.schema import read_schema
from geoql.retrieval.gold import controlled_pairs


@pytest.fixture(scope="module")
def schema():
    data = schema_tarball()
    return read_schema(data, {"integrity": sri_sha512(data)}, "7.2.0")


@pytest.fixture(scope="module")
def schema_tags(schema):
    tags = TagCollection()
    add_schema(tags, schema)
    return tags


def test_preset_names_terms_and_geometry(schema_tags):
    post_box = schema_tags.docs["amenity=post_box"]
    assert post_box.names[0] == "Mail Drop Box"
    assert "post box" in post_box.terms and "pillar box" in post_box.terms
    assert set(post_box.geometry) >= {"point", "vertex"}
    assert post_box.sources == ["id-tagging-schema@7.2.0"]
    assert post_box.description  # from taginfo.json, with its 🄿 marks removed
    assert "🄿" not in post_box.description


def test_multi_tag_presets_name_every_tag(schema_tags):
    assert "Parking Ticket Vending Machine" in schema_tags.docs["vending=parking_tickets"].names


def test_field_options_name_their_key(schema_tags):
    assert "Pizza (cuisine)" in schema_tags.docs["cuisine=pizza"].names
    assert schema_tags.docs["cuisine=pizza"].schema_refs >= 1


def test_free_text_keys_become_key_star(schema_tags):
    tags = TagCollection()
    assert tags.get("name", "Luigi", "test").tag == "name=*"
    assert tags.get("addr:street", "Hauptstraße", "test").tag == "addr:street=*"
    assert tags.get("amenity", None, "test").tag == "amenity=*"
    assert tags.get("", "x", "test") is None and tags.get("a\nb", "x", "test") is None


def test_deprecated_tags_point_to_their_replacement(schema, schema_tags):
    row = next(r for r in schema.deprecated if len(r.get("old", {})) == 1 and "*" not in str(r))
    (key, value), = row["old"].items()
    doc = schema_tags.docs[f"{key}={value}"]
    assert doc.replaced_by and any(s.endswith(":deprecated") for s in doc.sources)


def test_preset_filter_limits_the_schema(schema):
    tags = TagCollection()
    add_schema(tags, schema, preset_filter=lambda pid, _p: pid == "craft/beekeeper")
    assert "craft=beekeeper" in tags.docs and "amenity=post_box" not in tags.docs


TRAIN_ROWS = [r for r in reference_rows("gold_reference.jsonl") if r["split"] == "train"][:600:15]


@pytest.mark.parametrize("row", TRAIN_ROWS, ids=lambda r: f"train{r['index']}")
def test_training_examples_carry_their_gold_tags(row):
    tags = TagCollection()
    docs = add_training(tags, [Example("train", row["index"], "some request", row["query"], "")])
    assert set(controlled_pairs(row["query"])) <= set(docs[0].tags)
    for pair in controlled_pairs(row["query"]):
        assert tags.docs[pair].train_count == 1 and tags.docs[pair].phrases == ["some request"]


def test_dev_and_test_never_enter_the_index():
    with pytest.raises(ValueError, match="only the training split"):
        add_training(TagCollection(), [Example("dev", 0, "x", "node[amenity=cafe];out;", "")])


def test_sources_merge_into_one_document(schema):
    tags = TagCollection()
    add_schema(tags, schema)
    add_training(tags, [Example("train", 7, "post boxes in Bonn", '[out:json];node["amenity"="post_box"];out;', "")])
    doc = tags.docs["amenity=post_box"]
    assert doc.sources == ["id-tagging-schema@7.2.0", "overpassnl-train"]
    assert doc.train_count == 1 and doc.names[0] == "Mail Drop Box" and doc.popularity > 0


def test_multi_combo_prefix_options_are_yes_tags(schema_tags):
    """iD's multiCombo over a key prefix sets `prefix+option=yes` per option (fuel: + octane_80)."""
    octane = schema_tags.docs["fuel:octane_80=yes"]
    assert octane.names == ["Gasoline (80 Octane) (fuel)"] and octane.sources == ["id-tagging-schema@7.2.0"]
    assert "fuel:e85=yes" in schema_tags.docs and not any(t.startswith("fuel:=") or t == "fuel:=*" for t in schema_tags.docs)


def test_check_fields_give_yes_and_no(schema_tags):
    assert "Bench" in schema_tags.docs["bench=yes"].names
    assert schema_tags.docs["bench=no"].names == ["no Bench"]


def _train_tags(*queries: str) -> TagCollection:
    tags = TagCollection()
    add_training(tags, [Example("train", i, f"request {i}", q, "") for i, q in enumerate(queries)])
    return tags


def test_training_slips_are_marked_as_likely_typos(schema):
    tags = TagCollection()
    add_schema(tags, schema)
    roads = ['[out:json];way["highway"="secondary"];out;'] * 6
    add_training(tags, [Example("train", i, f"request {i}", q, "") for i, q in enumerate(roads + [
        '[out:json];way["highway"="seccondary"];out;',  # one slip: a clearly more used value one edit away
        '[out:json];way["highway"="primaray"];out;',  # no "primary" in this index: nothing to be a slip of
        '[out:json];relation["admin_level"="6"];out;',  # digits: 6 and 8 are different levels, never slips
        '[out:json];relation["admin_level"="8"];relation["admin_level"="8"];out;',
        '[out:json];node["post_box"="Yes"];out;',  # too short to judge
    ])])
    docs = sorted(tags.docs.values(), key=lambda d: d.tag)
    assert mark_likely_typos(docs) == 1
    marked = {d.tag: d.likely_typo_of for d in docs if d.likely_typo_of}
    assert marked == {"highway=seccondary": "highway=secondary"}
    assert tags.docs["highway=seccondary"].to_json()["likely_typo_of"] == "highway=secondary"


def test_a_case_slip_is_a_typo_but_schema_tags_never_are():
    tags = _train_tags(*['[out:json];way["building"="house"];out;'] * 5, '[out:json];way["building"="House"];out;',
                       *['[out:json];way["amenity"="theatre"];out;'] * 5)
    tags.get("amenity", "theater", "id-tagging-schema@7.2.0")  # a spelling the schema itself uses stays
    tags.docs["amenity=theater"].train_count = 0
    docs = list(tags.docs.values())
    mark_likely_typos(docs)
    assert tags.docs["building=House"].likely_typo_of == "building=house" and not tags.docs["amenity=theater"].likely_typo_of


@pytest.mark.parametrize("a, b, distance", [
    ("secondary", "secondary", 0), ("seccondary", "secondary", 1), ("priamry", "primary", 1), ("famrland", "farmland", 1),
    ("teritary", "tertiary", 1), ("residental", "residential", 1), ("trail", "track", 2), ("abc", "abcdefgh", 3), ("", "ab", 2),
])
def test_edit_distance(a, b, distance):
    assert edit_distance(a, b) == distance == edit_distance(b, a)


@pytest.mark.parametrize("tag,lang,name", [
    ("amenity=pharmacy", "de", "Apotheke"),
    ("amenity=pharmacy", "fr", "Pharmacie"),
    ("amenity=pharmacy", "ru", "Аптека"),
    ("amenity=pharmacy", "ko", "약국"),
    ("tourism=museum", "zh-CN", "博物馆"),
    ("tourism=museum", "yue", "博物館"),
    ("tourism=museum", "ja", "博物館・美術館"),
    ("shop=bakery", "de", "Bäckerei"),
])
def test_translated_names_by_language(schema_tags, tag, lang, name):
    assert name in schema_tags.docs[tag].names_by_lang[lang]


def test_translations_keep_english_fields_as_they_are(schema_tags):
    pharmacy = schema_tags.docs["amenity=pharmacy"]
    assert pharmacy.names[0] == "Pharmacy Counter" and "en" not in pharmacy.names_by_lang
    assert "apotheke" in pharmacy.terms_by_lang["de"]


def test_translated_field_options_name_their_field(schema_tags):
    assert "Pizza (Küche)" in schema_tags.docs["cuisine=pizza"].names_by_lang["de"]


def test_translations_only_name_tags_english_brought_in(schema, schema_tags):
    from geoql.index.documents import add_translations

    before = set(schema_tags.docs)
    languages = add_translations(schema_tags, schema)
    assert set(schema_tags.docs) == before
    assert set(languages) == {"de", "fr", "ru", "zh-CN", "yue", "ja", "ko"}


def test_tag_documents_carry_names_by_lang_in_json(schema_tags):
    data = schema_tags.docs["amenity=cafe"].to_json()
    assert isinstance(data["names_by_lang"], dict) and all(isinstance(v, list) for v in data["names_by_lang"].values())
    assert data["names_by_lang"]["de"][0] == "Café"
