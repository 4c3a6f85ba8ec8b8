"""Training data: the inference prompt, leave-one-out retrieval, auxiliary sets, atomic files."""

from __future__ import annotations

import json

import pytest

from training_fixtures import one_torch_thread, retrievers  # noqa: F401 (fixtures)
from geoql.training.config import DataConfig
from geoql.training.data import (
    GRPO_FILE,
    SFT_FILE,
    STATS_FILE,
    build_rows,
    read_dataset,
    write_dataset,
)


@pytest.fixture(scope="module")
def small_cfg(small_index_dir):
    return DataConfig(index_dir=str(small_index_dir), k_tags=3, k_examples=2, limit=40, seed=0)


@pytest.fixture(scope="module")
def built(small_cfg, retrievers):
    return build_rows(small_cfg, retrievers, progress=False)


def test_prompt_is_the_inference_prompt_with_leave_one_out(built, small_cfg, retrievers):
    from geoql import retrieval
    from geoql.eval.dataset import load_split
    from geoql.eval.metrics import normalize_for_em

    sft, grpo, stats = built
    train = load_split("train")
    assert len(grpo) == small_cfg.limit and stats.rows == {"main": small_cfg.limit}
    assert stats.self_retrieved == 0
    for row in grpo[:10]:
        ex = train[row["index"]]
        assert row["gold"] == ex.query and row["nl"] == ex.nl
        # Leave-one-out: the request and its exact twins in the training split are excluded.
        twins = tuple(e.index for e in train if normalize_for_em(e.query) == normalize_for_em(ex.query))
        assert ex.index in twins
        tags = retrievers.tags.search(ex.nl, small_cfg.k_tags, exclude=twins)
        examples = retrievers.examples.search(ex.nl, small_cfg.k_examples, exclude=twins)
        assert row["prompt"] == retrieval.build_prompt(ex.nl, tags, examples)
        assert " ".join(ex.query.split()) not in row["prompt"][-1]["content"]  # never its own answer
    for row in sft:
        assert row["completion"] == [{"role": "assistant", "content": row["gold"]}]


def test_leave_one_out_matters(small_cfg, retrievers):
    # Where the retriever would return the request itself, the training prompt does not.
    from geoql.eval.dataset import load_split
    from geoql.training.data import leave_out, prompt_for, queries_by_form

    train = load_split("train")
    groups = queries_by_form(train)
    hits = 0
    for ex in train[:30]:  # the small index holds the first training examples
        top = retrievers.examples.search(ex.nl, 1)
        if top and top[0].index == ex.index:
            hits += 1
        exclude = leave_out(ex, groups)
        _, _, examples = prompt_for(ex.nl, retrievers, small_cfg, exclude=exclude)
        assert not {e.index for e in examples} & set(exclude)
        assert all(e.query != ex.query for e in examples)
    assert hits > 0, "without leave-one-out some requests retrieve themselves"


def test_deterministic_given_seed(small_cfg, retrievers, built):
    again = build_rows(small_cfg, retrievers, progress=False)
    assert again[0] == built[0] and again[1] == built[1]
    other = build_rows(DataConfig(**{**small_cfg.__dict__, "seed": 1}), retrievers, progress=False)
    assert [r["index"] for r in other[1]] != [r["index"] for r in built[1]]


def test_auxiliary_sets(small_index_dir, retrievers):
    from geoql.eval.dataset import load_split
    from geoql.eval.metrics import normalize_for_em

    cfg = DataConfig(index_dir=str(small_index_dir), k_tags=3, k_examples=1, limit=20,
                     tag_grounding=True, tag_grounding_fraction=0.5, comments=True, comments_max=15)
    sft, grpo, stats = build_rows(cfg, retrievers, progress=False)
    kinds = {r["kind"] for r in sft}
    assert kinds == {"main", "tags", "comments"} and len(grpo) == 20
    assert stats.rows["comments"] == 15 and 0 < stats.rows["tags"] <= 10
    for row in sft:
        if row["kind"] == "tags":
            answer = row["completion"][0]["content"].splitlines()
            assert answer and all(line.split("=")[0] in row["gold"] for line in answer)
            assert "Which OpenStreetMap tags" in row["prompt"][-1]["content"]
    # Comment rows never carry a dev or test gold query (they exist in the raw comments).
    eval_golds = {normalize_for_em(e.query) for s in ("dev", "test") for e in load_split(s)}
    assert stats.comments_dropped_eval_leak > 0
    assert not any(normalize_for_em(r["gold"]) in eval_golds for r in sft if r["kind"] == "comments")


def test_write_read_roundtrip_and_atomic_replace(tmp_path, built, small_cfg):
    sft, grpo, stats = built
    out = write_dataset(tmp_path / "data", sft, grpo, stats, small_cfg)
    assert {p.name for p in out.iterdir()} == {SFT_FILE, GRPO_FILE, STATS_FILE}
    sft2, grpo2, payload = read_dataset(out)
    assert sft2 == sft and grpo2 == grpo and payload["stats"]["grpo_rows"] == len(grpo)
    assert payload["stats"]["gold_chars_max"] == max(len(r["gold"]) for r in grpo)
    before = (out / SFT_FILE).read_bytes()
    with pytest.raises(TypeError):  # a failure midway ...
        write_dataset(out, sft + [{"bad": object()}], grpo, stats, small_cfg)
    assert (out / SFT_FILE).read_bytes() == before  # ... leaves the previous dataset intact
    assert [p.name for p in tmp_path.iterdir()] == ["data"]  # and no staging debris
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="choose an empty or new directory"):
        write_dataset(foreign, sft, grpo, stats, small_cfg)


def test_cli_data(tmp_path, small_index_dir, capsys):
    from geoql.app.cli import main

    out = tmp_path / "d"
    assert main(["train", "data", "--out", str(out), "--index-dir", str(small_index_dir),
                 "--set", "limit=8", "--set", "k_examples=1"]) == 0
    assert "8 GRPO prompts" in capsys.readouterr().out
    stats = json.loads((out / STATS_FILE).read_text())
    assert stats["config"]["limit"] == 8 and stats["stats"]["self_retrieved"] == 0
    assert main(["train", "data", "--out", str(out), "--set", "k_tags=-1"]) == 2
    assert "k_tags" in capsys.readouterr().err


def test_prompts_without_retrieval_need_no_index(tmp_path):
    # k_tags = k_examples = 0: the bare request prompt, buildable where no index exists
    # (a GPU machine without the npm registry, benchmarks/gpu_train_smoke.sh NO_INDEX=1).
    cfg = DataConfig(index_dir=str(tmp_path / "no-index"), k_tags=0, k_examples=0, limit=5)
    sft, grpo, stats = build_rows(cfg, progress=False)
    assert len(sft) == len(grpo) == 5 and stats.gold_tag_recall == 0.0
    from geoql.retrieval import build_prompt

    assert all(row["prompt"] == build_prompt(row["nl"], [], []) for row in sft)
