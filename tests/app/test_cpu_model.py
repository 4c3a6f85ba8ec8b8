"""The CPU model: compile, save/load, and what happens when the file is missing or bad."""

from __future__ import annotations

import json
import os
import pickle
import sys
from dataclasses import replace

import numpy as np
import pytest

import overpassql
from geoql.app.cpu.lite import TreeEnsemble
from geoql.app.cpu.model import (FALLBACK_QUERY, MANIFEST, MODEL_JSON, NEIGHBOURS_NPZ, OLD_PICKLE, SELECTOR_NPZ, CpuConfig,
                                 CpuModel, ModelMissingError, learn_aliases)
from geoql.eval.dataset import load_split


@pytest.fixture(scope="module")
def model(small_cpu_model):
    return small_cpu_model


@pytest.mark.parametrize("example", load_split("dev")[:25], ids=lambda e: f"dev{e.index}")
def test_every_answer_parses(model, example):
    (query,) = model.compile(example.nl)
    overpassql.parse(query)


def test_n_best_are_distinct(model):
    queries = model.compile("Cafes in Bonn", n=4)
    assert 1 < len(queries) <= 4 and len(set(queries)) == len(queries)


def test_place_of_the_request_reaches_the_query(model):
    query = model.compile("Restaurants in Timbuktu")[0]
    assert "Timbuktu" in query


def test_nothing_parseable_falls_back():
    broken = CpuModel.fit_retrieval(["cafes in Bonn", "bars in Bonn"], ['node["amenity"="cafe"', "way[;"])
    assert broken.compile("cafes in Rome") == [FALLBACK_QUERY]
    overpassql.parse(FALLBACK_QUERY)


def test_save_and_load_round_trip(model, tmp_path):
    model.save(tmp_path)
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    assert manifest["train_size"] == 300 and sorted(manifest["files"]) == [MODEL_JSON, NEIGHBOURS_NPZ, SELECTOR_NPZ]
    loaded = CpuModel.load(tmp_path)
    assert isinstance(loaded.selector, TreeEnsemble)
    for nl in ["benches in Paris", "Cafes in Bonn", "How many pharmacies in Rome?", "", "Кафе в Москве"]:
        assert loaded.compile(nl, n=3) == model.compile(nl, n=3), nl
    assert loaded.neighbours.vectorizer.vocabulary_ == model.neighbours.vectorizer.vocabulary_
    assert np.array_equal(loaded.neighbours.matrix.data, model.neighbours.matrix.data)
    assert loaded.lexicon == model.lexicon and loaded.config == model.config and loaded.places == model.places
    assert loaded.place_spellings() == model.place_spellings()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary files left
    assert not [p for p in tmp_path.parent.iterdir() if p.name.startswith(f".{tmp_path.name}.")]


def test_missing_model_names_the_command(tmp_path):
    with pytest.raises(ModelMissingError, match="geoql cpu train"):
        CpuModel.load(tmp_path / "nothing")


def _flip(path, at=None):
    """One flipped bit in the middle of ``path``, written in place as a disk or an editor would."""
    data = bytearray(path.read_bytes())
    at = len(data) // 2 if at is None else at
    data[at] ^= 0x10
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("name", [MODEL_JSON, NEIGHBOURS_NPZ, SELECTOR_NPZ])
def test_a_flipped_byte_in_any_file_is_a_clear_error(model, tmp_path, name):
    model.save(tmp_path)
    _flip(tmp_path / name)
    with pytest.raises(ModelMissingError, match=f"does not match its manifest \\({name}.*geoql cpu train"):
        CpuModel.load(tmp_path)


def test_a_flipped_byte_is_caught_even_with_the_old_modification_time(model, tmp_path):
    """The digests are remembered against size, mtime, ctime and inode: resetting mtime moves ctime."""
    model.save(tmp_path)
    CpuModel.load(tmp_path)  # its digests are remembered now
    path = tmp_path / NEIGHBOURS_NPZ
    before = path.stat()
    _flip(path, at=before.st_size - 100)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_mtime_ns == before.st_mtime_ns and path.stat().st_size == before.st_size
    with pytest.raises(ModelMissingError, match="does not match its manifest"):
        CpuModel.load(tmp_path)


def test_an_edited_setting_in_the_manifest_is_caught(model, tmp_path):
    model.save(tmp_path)
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    manifest["config"]["k"] = manifest["config"]["k"] + 1  # still valid JSON, still a valid setting
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ModelMissingError, match="does not match its own checksum"):
        CpuModel.load(tmp_path)
    (tmp_path / MANIFEST).write_text("{not json")
    with pytest.raises(ModelMissingError, match="unreadable"):
        CpuModel.load(tmp_path)


class _Planted:
    """A pickle that runs code when it is loaded: what anyone who can write the model directory could plant."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_planted_pickle_is_never_loaded(tmp_path):
    marker = tmp_path / "the-pickle-ran"
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / OLD_PICKLE).write_bytes(pickle.dumps(_Planted(marker)))
    pickle.loads((model_dir / OLD_PICKLE).read_bytes())  # the test's own proof that it would run
    assert marker.exists()
    marker.unlink()
    for manifest in (None, {"format_version": 1, "feature_names": ["rank"], "config": {}}):
        if manifest is not None:  # an old model directory: format 1, the pickle beside its manifest
            (model_dir / MANIFEST).write_text(json.dumps(manifest))
        with pytest.raises(ModelMissingError, match=r"pickle.*no\s+longer loads.*geoql cpu train --out"):
            CpuModel.load(model_dir)
        assert not marker.exists()


def test_saving_replaces_an_old_pickle(model, tmp_path):
    (tmp_path / OLD_PICKLE).write_bytes(b"an older GeoQL's model")
    (tmp_path / MANIFEST).write_text(json.dumps({"format_version": 1}))
    model.save(tmp_path)
    assert not (tmp_path / OLD_PICKLE).exists() and CpuModel.load(tmp_path).compile("Cafes in Bonn")


def test_a_directory_of_other_files_is_not_overwritten(model, tmp_path):
    (tmp_path / "thesis.tex").write_text("mine")
    with pytest.raises(ValueError, match="no part of a GeoQL CPU model.*thesis.tex"):
        model.save(tmp_path)
    assert (tmp_path / "thesis.tex").read_text() == "mine"


def test_failed_save_keeps_the_old_model(model, tmp_path, monkeypatch):
    model.save(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", boom)
    with pytest.raises(OSError):
        model.save(tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    assert not [p for p in tmp_path.parent.iterdir() if p.name.startswith(f".{tmp_path.name}.")]
    monkeypatch.undo()
    assert CpuModel.load(tmp_path).compile("Cafes in Bonn") == model.compile("Cafes in Bonn")


def test_loading_imports_no_scikit_learn(model, tmp_path):
    import subprocess

    model.save(tmp_path)
    code = (f"import sys; from geoql.app.cpu.model import CpuModel; m = CpuModel.load({str(tmp_path)!r}); "
            "print(m.compile('Cafes in Bonn')[0]); print(sorted({n.split('.')[0] for n in sys.modules} & {'sklearn', 'scipy'}))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    query, heavy = result.stdout.strip().splitlines()
    assert query == model.compile("Cafes in Bonn")[0] and heavy == "[]"


def test_config_checks():
    with pytest.raises(ValueError, match="k must be between 1 and 100"):
        CpuConfig(k=0)
    with pytest.raises(ValueError, match="unknown edit group"):
        CpuConfig(edits="area,colour")


def test_aliases_from_the_training_split():
    train_split = load_split("train")
    aliases = learn_aliases([e.nl for e in train_split], [e.query for e in train_split])
    assert aliases.get("Germany") == "Deutschland"


@pytest.mark.parametrize("nl", ["How many restaurants are there in Timbuktu?", "Count of benches in Oslo"])
def test_counting_request_gets_a_count(model, nl):
    query = model.compile(nl)[0]
    assert "out count" in query
    overpassql.parse(query)


def test_count_rule_overrides_the_selector(model):
    class Listing:  # a selector that always prefers the listing version
        def predict(self, features):
            from geoql.app.cpu.features import FEATURE_NAMES

            return -features[:, FEATURE_NAMES.index("query_count")]

    listing = CpuModel(model.train_nls, model.train_queries, model.neighbours, model.lexicon, model.aliases,
                       selector=Listing(), config=model.config, places=model.places)
    assert "out count" in listing.compile("How many cafes in Bonn")[0]
    assert "out count" not in listing.compile("cafes in Bonn")[0]
    # with the output edits switched off (ablation rows), the selector decides alone
    assert "out count" not in listing.compile("How many cafes in Bonn", config=CpuConfig(edits="area,tags"))[0]


def test_lower_case_place_reaches_the_query(model):
    assert model.places  # learned from the training queries
    name = next(n for n in model.places if n.isalpha() and len(n) > 4)
    assert f'"{name}"' in model.compile(f"restaurants in {name}")[0]


def _older(model, dropped) -> CpuModel:
    """The model as one whose selector was trained before the features ``dropped`` existed (no trees: the
    configuration is what is checked)."""
    return replace(model, feature_names=tuple(n for n in model.feature_names if not dropped(n)), selector=None)


def test_a_model_trained_before_example_picks_runs_without_them(model, tmp_path):
    """A selector that never saw candidates from the index's example search is not offered any."""
    model.save(tmp_path)
    assert CpuModel.load(tmp_path).config.example_k == model.config.example_k == 5
    _older(model, lambda n: n in ("example_pick", "dense_similarity")).save(tmp_path)
    old = CpuModel.load(tmp_path)
    assert old.config.example_k == 0 and old.compile("Cafes in Bonn")


def test_a_model_trained_before_multilingual_picks_runs_without_them(model, tmp_path):
    model.save(tmp_path)
    assert CpuModel.load(tmp_path).config.e5_k == model.config.e5_k == 5
    _older(model, lambda n: n.startswith("e5_")).save(tmp_path)
    old = CpuModel.load(tmp_path)
    assert old.config.e5_k == 0 and old.config.example_k == 5 and old.compile("Cafes in Bonn")


def test_the_model_takes_the_reading_not_the_words(model):
    """compile() hands the model the Request: its place and evidence come from the reading's fields,
    not from reading the words again (the words still find the neighbours, by their letters)."""
    import dataclasses

    from geoql.nl.support import read_support

    request = model.read("Restaurants in Bonn")
    assert model.compile(request) == model.compile("Restaurants in Bonn")  # the words are read the same way
    moved = dataclasses.replace(request, english_with_frame=dataclasses.replace(request.english_with_frame, area="Timbuktu"),
                                support=read_support("Restaurants in Timbuktu"))
    (query,) = model.compile(moved)
    assert "Timbuktu" in query and "Bonn" not in query


# -- the final pick: the best-ranked licensed candidate (geoql.eval.license) ---------------------------

LEFTOVER = '[timeout:8000];{{geocodeArea:"Bonn"}}->.paris;nwr["amenity"="cafe"]["maxspeed"](area.paris);out;'
ANOTHER_PLACE = '{{geocodeArea:"Paris"}}->.a;nwr["amenity"="cafe"](area.a);out;'
CLEAN = '{{geocodeArea:"Bonn"}}->.searchArea;nwr["amenity"="cafe"](area.searchArea);out;'
AROUND = '{{geocodeArea:"Bonn"}}->.searchArea;nwr["amenity"="cafe"](around:700,50.7,7.1);out;'


def _pick(model, ranked, licensed="all", n=1, nl="cafes in Bonn"):
    from dataclasses import replace

    from geoql.app.cpu.model import Retrieved

    return model.pick(model.read(nl), ranked, n, replace(model.config, licensed=licensed), Retrieved([], hits=[]))


def test_the_pick_takes_the_leftovers_out_of_the_best_candidate(model):
    """A neighbour's extra filter, a set named after another city and an odd timeout go; the rest stays."""
    assert _pick(model, [LEFTOVER, CLEAN.replace("cafe", "bar")]) == [
        '[timeout:25];{{geocodeArea:"Bonn"}}->.searchArea;nwr["amenity"="cafe"](area.searchArea);out;']
    assert _pick(model, [LEFTOVER], licensed="off") == [LEFTOVER]


def test_the_pick_prefers_a_licensed_candidate_to_one_it_cannot_repair(model):
    # an around nobody asked for cannot be taken out: the next licensed candidate answers
    assert _pick(model, [AROUND, CLEAN]) == [CLEAN]
    assert _pick(model, [AROUND, CLEAN], licensed="core") == [CLEAN]
    assert _pick(model, [AROUND, CLEAN], licensed="tag,set") == [AROUND]  # only those kinds are weighed
    # none licensed: the best-ranked, as before; never a constant the request does not give (another place)
    assert _pick(model, [ANOTHER_PLACE, AROUND]) == [AROUND]
    assert _pick(model, [AROUND, CLEAN], n=2) == [CLEAN, AROUND]


@pytest.mark.parametrize("example", load_split("dev")[:40], ids=lambda e: f"dev{e.index}")
def test_no_answer_has_an_unlicensed_part_when_its_pool_has_a_licensed_candidate(model, example):
    from geoql.eval.license import TagEvidence, unlicensed_parts

    request = model.read(example.nl)
    found = model.retrieve(request)
    _, cands, feats = model.pool(request, neighbours=found.neighbours, hints=found.hints)
    evidence = TagEvidence.of(request, hits=found.hits or (), word_tags=model.lexicon.word_tag)

    def parts(query):
        return unlicensed_parts(request, query, aliases=model.place_spellings(), evidence=evidence)

    (answer,) = model.compile(request)
    if any(not parts(c.query) for c in cands):
        assert parts(answer) == [], answer


def test_the_licence_setting_is_checked():
    assert CpuConfig(licensed="tag,set").licensed_kinds == ("tag", "set")
    assert CpuConfig(licensed="off").licensed_kinds == ()
    with pytest.raises(ValueError, match="licensed must be all, core, off or kinds"):
        CpuConfig(licensed="tags")


@pytest.mark.parametrize("nl, kept", [("cafes in Bonn", False), ("Welche Cafés gibt es in Bonn?", True),
                                      ("Cafés à Bonn", True)])
def test_tag_filters_weigh_in_the_pick_only_where_the_check_reads_tags(model, nl, kept):
    """In English the extra filter goes; in another language the words cannot license a tag, so it stays
    (TAG_LICENCE_LANGUAGES), while a foreign set name still goes in every language."""
    extra = '{{geocodeArea:"Bonn"}}->.paris;nwr["amenity"="cafe"]["wheelchair"="yes"](area.paris);out;'
    (answer,) = _pick(model, [extra, CLEAN], nl=nl)
    assert ('["wheelchair"="yes"]' in answer) == kept and ".paris" not in answer
