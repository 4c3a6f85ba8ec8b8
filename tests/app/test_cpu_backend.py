"""The ``cpu`` backend (the CPU default) through the backend registry, on a real small trained model."""

from __future__ import annotations

import pytest

import overpassql
from geoql.app.backends import get_backend
from geoql.app.backends.base import BackendError, GenerationRequest
from geoql.eval.dataset import load_split
from geoql.nl import read_request


@pytest.fixture(scope="module")
def model_dir(small_cpu_model_dir):
    return small_cpu_model_dir


def _request(nl: str, n: int = 1) -> GenerationRequest:
    return GenerationRequest(read_request(nl), n=n)


@pytest.mark.parametrize("example", load_split("dev")[:20], ids=lambda e: f"dev{e.index}")
def test_answers_parse(model_dir, example):
    backend = get_backend("cpu", model_dir=model_dir)
    (query,) = backend.generate(_request(example.nl)).texts
    overpassql.parse(query)


def test_is_the_default_and_needs_no_prompt(model_dir):
    backend = get_backend(None, model_dir=model_dir)
    assert backend.name == "cpu" and not backend.needs_prompt
    assert str(model_dir) in backend.describe()


def test_old_name_retrieval_still_works_and_says_the_new_one(model_dir):
    from geoql.app import Compiler
    from geoql.app.backends.cpu import CpuBackend

    with pytest.warns(FutureWarning, match="'retrieval' is now called 'cpu'"):
        assert isinstance(get_backend("retrieval", model_dir=model_dir), CpuBackend)
    with pytest.warns(FutureWarning, match="now called 'cpu'"):
        comp = Compiler("retrieval", model_dir=model_dir).compile("cafes in Bonn")
    assert comp.valid and comp.backend == "cpu"


def test_generate_hands_back_what_it_retrieved(model_dir):
    backend = get_backend("cpu", model_dir=model_dir)
    request = _request("Pharmacies in Lyon")
    generation = backend.generate(request)
    nearest = backend.model.neighbours.search("Pharmacies in Lyon", backend.model.config.k)
    assert [e.index for e in generation.examples] == [nb.index for nb in nearest]
    assert generation.tags == () and request.tags == ()  # this model has no tag index; the request stays as it was
    # what the confidence rests on: the calibrated CPU default, its lexicon and its model folder
    assert generation.evidence.calibrated and generation.evidence.word_tags is backend.model.lexicon.word_tag
    assert generation.evidence.calibrator_dir == model_dir


def test_a_request_read_with_the_model_s_knowledge_finds_its_lower_case_places(model_dir):
    backend = get_backend("cpu", model_dir=model_dir)
    place = next(p for p in backend.model.places if p.isalpha())  # a place name of the training queries, folded
    request = backend.read(f"restaurants in {place}")
    assert request.english.area == place and backend.knowledge().places is backend.model.places
    assert read_request(f"restaurants in {place}").english.area is None  # the cue tables alone do not know it


def test_n_candidates_and_determinism(model_dir):
    backend = get_backend("cpu", model_dir=model_dir)
    first = backend.generate(_request("Pharmacies in Lyon", n=3)).texts
    assert 1 <= len(first) <= 3 and first == backend.generate(_request("Pharmacies in Lyon", n=3)).texts


def test_options_switch_edits_and_selection(model_dir):
    plain = get_backend("cpu", model_dir=model_dir, edits="none", select="false", faithful="off", compose="false")
    edited = get_backend("cpu", model_dir=model_dir)
    nl = "Restaurants in Timbuktu"
    assert "Timbuktu" in edited.generate(_request(nl)).texts[0]
    assert "Timbuktu" not in plain.generate(_request(nl)).texts[0]


def test_without_edits_the_answer_still_names_only_the_request_place(model_dir):
    # The faithfulness guard is no edit: a neighbour's other place is repaired even with edits off.
    plain = get_backend("cpu", model_dir=model_dir, edits="none", select="false", compose="false")
    (query,) = plain.generate(_request("Restaurants in Timbuktu")).texts
    assert "Timbuktu" in query or "{{bbox}}" in query


def test_missing_model_without_training_names_the_command(tmp_path):
    backend = get_backend("cpu", model_dir=tmp_path, train_if_missing=False)
    with pytest.raises(BackendError, match="geoql cpu train"):
        backend.generate(_request("cafes in Bonn")).texts


@pytest.mark.parametrize(
    ("options", "message"),
    [({"k": 0}, "k must be between 1 and 100"), ({"k": "ten"}, "whole number"),
     ({"edits": "colour"}, "unknown edit group"), ({"select": "maybe"}, "true or false"),
     ({"example_k": 21}, "example_k must be between 0 and 20"), ({"example_k": "five"}, "whole number"),
     ({"e5_k": -1}, "e5_k must be between 0 and 20"),
     ({"colour": 1}, "bad options")],
)
def test_bad_options_are_user_errors(options, message):
    with pytest.raises(BackendError, match=message):
        get_backend("cpu", **options)


@pytest.mark.parametrize("nl", ["", "   "])
def test_empty_request(model_dir, nl):
    with pytest.raises(BackendError, match="empty request"):
        get_backend("cpu", model_dir=model_dir).generate(_request(nl)).texts


@pytest.mark.parametrize("nl", ["???", "ä" * 500, "{{geocodeArea:x}} ]]]] ((", "1234567890"])
def test_odd_input_still_gives_a_valid_query(model_dir, nl):
    (query,) = get_backend("cpu", model_dir=model_dir).generate(_request(nl)).texts
    overpassql.parse(query)


def test_no_dataset_fails_once_per_compile_without_building_an_index(tmp_path, monkeypatch, capsys):
    """Without the dataset the first use says so at once: no index build, no second download per call."""
    import geoql.eval.dataset as eval_dataset
    from geoql.app import Compiler

    calls = []
    real_load_split = eval_dataset.load_split

    def counting_load_split(split, data_dir=None):
        calls.append(split)
        return real_load_split(split, data_dir)

    monkeypatch.setattr(eval_dataset, "load_split", counting_load_split)
    backend = get_backend("cpu", model_dir=tmp_path / "model", data_dir=tmp_path / "no-dataset",
                          index_dir=tmp_path / "index")
    comp = Compiler(backend).compile("cafes in Bonn")
    assert comp.query == "" and any("no-dataset does not exist" in e for e in comp.errors)
    assert calls == ["train"]  # the batch and the one-by-one retry share one attempt
    assert "building the tag index" not in capsys.readouterr().err
    assert not (tmp_path / "index").exists() and not (tmp_path / "model").exists()
    with pytest.raises(BackendError, match="cannot train the CPU model"):
        backend.generate(_request("cafes in Bonn")).texts
    assert calls == ["train"]
    monkeypatch.setattr(type(backend), "retry_training_after_s", 0.0)  # later, the next request tries again
    with pytest.raises(BackendError, match="cannot train the CPU model"):
        backend.generate(_request("cafes in Bonn")).texts
    assert calls == ["train", "train"]


def test_unwritable_model_dir_fails_before_building_the_index(tmp_path, capsys):
    from geoql.app import Compiler

    (tmp_path / "a-file").write_text("the user's file", encoding="utf-8")
    backend = get_backend("cpu", model_dir=tmp_path / "a-file" / "model", index_dir=tmp_path / "index")
    comp = Compiler(backend).compile("cafes in Bonn")
    assert comp.query == "" and any("cannot write to" in e and "a-file is not a directory" in e for e in comp.errors)
    assert "building the tag index" not in capsys.readouterr().err
    assert not (tmp_path / "index").exists()
    assert (tmp_path / "a-file").read_text(encoding="utf-8") == "the user's file"


def test_quick_start_answers_at_once_and_the_full_model_takes_over(tmp_path, small_index_dir, monkeypatch):
    """The demo's first start: a quick model answers while the full one trains on a thread, then takes over."""
    import threading

    from geoql.app.backends import cpu as cpu_backend
    from geoql.app.backends.cpu import CpuBackend
    from geoql.app.cpu import train as cpu_train

    small = {"k": 5, "max_iter": 10, "augment": ""}
    monkeypatch.setattr(cpu_backend, "QUICK_TRAINING", {**small, "limit": 20})
    monkeypatch.setattr(cpu_backend, "FULL_TRAINING", {**small, "limit": 40})
    release, real = threading.Event(), cpu_train.train_and_save

    def held(*args, **kwargs):  # the full training waits until the test has seen the quick model
        assert release.wait(300)
        return real(*args, **kwargs)

    monkeypatch.setattr(cpu_train, "train_and_save", held)
    model_dir = tmp_path / "model"
    backend = get_backend("cpu", model_dir=model_dir, index_dir=small_index_dir, quick_start=True)
    (query,) = backend.generate(_request("drinking water taps in Vienna")).texts
    overpassql.parse(query)
    assert backend.model.stats["train_requests"] == 20 and backend.quick_model and backend.upgrading
    assert "quick first model (20 training requests) while the full one trains" in backend.describe()
    assert not (model_dir / "model.pkl").exists()  # the quick model is never saved as the model

    release.set()
    assert backend.wait_for_full_model(600)
    assert backend.model.stats["train_requests"] == 40 and not backend.quick_model and not backend.upgrade_error
    assert "quick first model" not in backend.describe()
    (query,) = backend.generate(_request("drinking water taps in Vienna")).texts
    overpassql.parse(query)
    # saved: the next start loads it instead of training again
    again = CpuBackend(model_dir, index_dir=small_index_dir, train_if_missing=False)
    assert again.model.stats["train_requests"] == 40


def test_quick_start_keeps_answering_when_the_full_training_fails(tmp_path, small_index_dir, hinted_cpu_model,
                                                                 monkeypatch):
    from geoql.app.cpu import train as cpu_train

    def no_room(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cpu_train, "train", lambda *args, **kwargs: hinted_cpu_model)  # the quick model, ready-made
    monkeypatch.setattr(cpu_train, "train_and_save", no_room)
    backend = get_backend("cpu", model_dir=tmp_path / "model", index_dir=small_index_dir, quick_start=True)
    assert backend.model is hinted_cpu_model
    assert backend.wait_for_full_model(60)
    assert backend.quick_model and "No space left on device" in backend.upgrade_error
    assert "the full one failed: OSError" in backend.describe()
    (query,) = backend.generate(_request("cafes in Bonn")).texts
    overpassql.parse(query)


def test_a_damaged_index_is_rebuilt_never_answered_from(tmp_path, small_index_dir, hinted_cpu_model_dir, overpassnl_dir,
                                                        monkeypatch, capsys):
    """A flipped byte in examples.faiss wrote empty lines, exit 0; in examples.e5.npy it turned tram stops into parking.
    Now the backend says which file is damaged, builds the index again, and answers as from the undamaged one."""
    import shutil
    import warnings

    from fixtures_index import build_small_index

    from geoql.app.cpu import train as cpu_train
    from geoql.app.cpu.model import CpuModel
    from geoql.retrieval import artifacts as A

    index, model_dir = tmp_path / "index", tmp_path / "model"
    shutil.copytree(small_index_dir, index)
    shutil.copytree(hinted_cpu_model_dir, model_dir)
    requests = ["tram stops in Zurich", "cafes in Bonn", "Museen in Stuttgart"]
    want = [CpuModel.load(model_dir, small_index_dir).compile(nl)[0] for nl in requests]
    for name in (A.EXAMPLES_FAISS, A.EXAMPLES_E5):
        data = bytearray((index / name).read_bytes())
        data[len(data) // 2: len(data) // 2 + 64] = bytes(b ^ 0xFF for b in data[len(data) // 2: len(data) // 2 + 64])
        (index / name).write_bytes(bytes(data))
    built = []

    def build(config):  # the real build, with the tests' registry instead of npm's
        built.append(config.out_dir)
        return build_small_index(config.out_dir, overpassnl_dir, tmp_path / "sources")

    monkeypatch.setattr(cpu_train, "build_index", build)
    backend = get_backend("cpu", model_dir=model_dir, index_dir=index)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = [backend.generate(_request(nl)).texts[0] for nl in requests]
    assert got == want and built == [index]
    # the index built again from the same sources is the same index to the model (another build time, same content)
    assert not [w for w in caught if "not the one the CPU model was trained with" in str(w.message)]
    err = capsys.readouterr().err
    assert f"does not match its manifest ({A.EXAMPLES_E5}, {A.EXAMPLES_FAISS}" in err and "building the tag index" in err


def test_compiles_from_many_threads_give_the_answers_of_one_thread(hinted_cpu_model_dir, small_index_dir):
    """The demo compiles independent requests side by side on the CPU default (Backend.thread_safe):
    with the tag index (its retriever, glossaries and encoders shared between threads) each answer
    is the one a single thread gives, whatever else runs at the same time."""
    import random
    from concurrent.futures import ThreadPoolExecutor

    from geoql.app import Compiler

    assert get_backend("cpu", model_dir=hinted_cpu_model_dir).thread_safe
    requests = [e.nl for e in load_split("dev")[:24]] + ["Museen in Stuttgart", "成都的博物馆", "bancs à Paris"]
    compiler = Compiler("cpu", model_dir=str(hinted_cpu_model_dir), index_dir=str(small_index_dir))
    alone = {nl: compiler.compile(nl).query for nl in requests}
    assert all(alone.values())
    work = requests * 4
    random.Random(7).shuffle(work)
    with ThreadPoolExecutor(max_workers=8) as pool:
        together = list(pool.map(lambda nl: (nl, compiler.compile(nl).query), work))
    assert [query for _, query in together] == [alone[nl] for nl, _ in together]
