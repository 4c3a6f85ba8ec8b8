"""GRPO on the tiny Qwen3: every reward wired and logged, guards, early stopping, seeds."""

from __future__ import annotations

import json

import pytest

from fakes.fixtures import fake_nominatim, fake_overpass  # noqa: F401 (fixtures)
from fakes.servers import json_reply
from training_fixtures import one_torch_thread, retrievers, tiny_model_dir, tiny_overrides  # noqa: F401 (fixtures)
from geoql.osm.nominatim import Nominatim
from geoql.training.callbacks import STOP_FILE, read_metrics
from geoql.training.config import ConfigError, default_configs_dir, load_recipe
from geoql.training.grpo import check_completion_cap, pass_rate_filter, run_grpo
from geoql.training.rewards import overpass_element_ids

TINY = default_configs_dir() / "tiny-grpo.yaml"


def _element_ids(overpass, nominatim, tmp_path):
    geocoder = Nominatim(url=nominatim.url, cache_dir=str(tmp_path), min_interval_s=0, max_retries=0)
    return overpass_element_ids(overpass.url, cache_dir=str(tmp_path), max_retries=0, geocoder=geocoder)


def test_grpo_runs_with_every_reward_logged_separately(tiny_overrides, retrievers, fake_overpass, fake_nominatim, tmp_path):
    fake_overpass.add('"amenity"', json_reply("heidelberg_cafes.json"))
    recipe = load_recipe("grpo", TINY, tiny_overrides + [
        "rewards={kvs: 1.0, tree: 1.0, chrf: 0.5, validity: 0.5, length: 0.1, execution: 0.5}",
        f"overpass_url={fake_overpass.url}",
        "dev_eval.enabled=true", "dev_eval.every_steps=2", "dev_eval.subset_size=1",
        "early_stop.enabled=false",
    ])
    result = run_grpo(recipe, retrievers=retrievers, progress=False,
                      element_ids=_element_ids(fake_overpass, fake_nominatim, tmp_path))
    (run,) = result.runs
    assert run.steps == 2
    logs = read_metrics(run.output_dir)
    for name in ("kvs", "tree", "chrf", "validity", "length", "execution"):
        assert any(f"rewards/{name}_reward/mean" in e for e in logs), name
        assert name + "_reward" in run.reward_means
    assert any("frac_reward_zero_std" in e and "reward_std" in e for e in logs)
    # The execution reward really went through the Overpass client over HTTP.
    assert fake_overpass.queries()
    # Dev OQS greedy and at the rollout temperature, through the compile path.
    last = run.dev_eval[-1]
    assert "dev/oqs@greedy" in last and f"dev/oqs@t{recipe.temperature:g}" in last
    assert result.dev_summary["dev/oqs@greedy"]["values"] == [last["dev/oqs@greedy"]]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["kind"] == "grpo" and summary["result"]["runs"][0]["seed"] == 0
    assert (tmp_path / "run" / "seed0" / "adapter" / "adapter_config.json").is_file()


def test_early_stopping_ends_a_run_without_reward_variance(tiny_overrides, retrievers):
    # The random model never writes a valid query: validity is 0 for every completion,
    # so every group has zero reward variance and there is nothing to learn from.
    recipe = load_recipe("grpo", TINY, tiny_overrides + [
        "rewards={validity: 1.0}", "train.max_steps=8", "early_stop.patience=2",
        "dev_eval.enabled=false",
    ])
    result = run_grpo(recipe, retrievers=retrievers, progress=False)
    (run,) = result.runs
    assert run.steps == 2 < recipe.train.max_steps
    assert "frac_reward_zero_std" in run.stopped_early or "reward_std" in run.stopped_early
    stop = json.loads((tmp_path_of(run) / STOP_FILE).read_text())
    assert stop["step"] == 2


def tmp_path_of(run):
    from pathlib import Path

    return Path(run.output_dir)


def test_completion_cap_below_longest_gold_fails_before_training(tiny_model_dir):
    from transformers import AutoTokenizer

    from geoql.eval.dataset import load_split

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    golds = [e.query for e in load_split("train")]
    longest = check_completion_cap(tokenizer, golds, 4096)
    with pytest.raises(ConfigError, match=f"set max_completion_length >= {longest}"):
        check_completion_cap(tokenizer, golds, longest - 1)


def test_bad_configs_fail_before_the_model_loads(tiny_overrides, tmp_path):
    with pytest.raises(ConfigError, match="use names from"):
        load_recipe("grpo", TINY, tiny_overrides + ["rewards={kvs: 1, exec: 1}"])
    recipe = load_recipe("grpo", TINY, tiny_overrides + ["data.data_dir=" + str(tmp_path / "missing")])
    with pytest.raises(ConfigError, match="OverpassNL not found"):
        run_grpo(recipe, progress=False)
    recipe = load_recipe("grpo", TINY, tiny_overrides + ["data.index_dir=" + str(tmp_path / "noindex")])
    with pytest.raises(ConfigError, match="index"):
        run_grpo(recipe, progress=False)


def test_pass_rate_filter_keeps_the_varying_band(tmp_path):
    from geoql.eval.dataset import load_split
    from geoql.training.config import PassRateFilterConfig

    train = load_split("train")[:3]
    rows = [{"index": e.index, "gold": e.query, "prompt": [{"role": "user", "content": str(e.index)}]} for e in train]
    answers = {
        0: [train[0].query] * 4,  # always right: mastered, no signal
        1: ["", "", "x", ""],  # always wrong: no signal
        2: [train[2].query, "", train[2].query, ""],  # sometimes right: keep
    }
    def sample(prompts, n):  # scripted answers per prompt; the real sampler is tested below
        return [answers[int(messages[0]["content"])][:n] for messages in prompts]

    cfg = PassRateFilterConfig(enabled=True, samples=4)
    kept, records = pass_rate_filter(rows, sample, cfg, tmp_path / "rates.jsonl", batch_size=2, progress=False)
    assert [r["index"] for r in kept] == [2]
    assert records[0]["mean"] == 1.0 and records[1]["std"] < 0.05
    # A rerun reads the cached scores instead of sampling again.
    kept2, _ = pass_rate_filter(rows, lambda m, n: pytest.fail("sampled again"), cfg, tmp_path / "rates.jsonl",
                                progress=False)
    assert kept2 == kept
    # Scores of another model (another cache key) are not reused.
    again = []
    pass_rate_filter(rows, lambda prompts, n: again.extend(prompts) or sample(prompts, n), cfg,
                     tmp_path / "rates.jsonl", cache_key="other-model", progress=False)
    assert len(again) == 3


def test_pass_rate_filter_with_the_model(tiny_overrides, retrievers, tmp_path):
    recipe = load_recipe("grpo", TINY, tiny_overrides + [
        "data.limit=4", "train.max_steps=1", "dev_eval.enabled=false", "early_stop.enabled=false",
        "pass_rate_filter={enabled: true, samples: 2, min_mean_oqs: 0.0, max_mean_oqs: 1.0, min_std: 0.0}",
    ])
    result = run_grpo(recipe, retrievers=retrievers, progress=False)
    assert result.prompts == 4 and result.prompts_filtered_out == 0
    rates = [json.loads(line) for line in (tmp_path / "run" / "pass_rates.jsonl").read_text().splitlines()]
    assert len(rates) == 4 and all(r["samples"] == 2 and 0.0 <= r["mean"] <= 1.0 for r in rates)
    strict = load_recipe("grpo", TINY, tiny_overrides + [
        "data.limit=4", "train.output_dir=" + str(tmp_path / "strict"),
        f"pass_rate_filter={{enabled: true, samples: 2, min_mean_oqs: 0.9, cache_file: {tmp_path / 'run' / 'pass_rates.jsonl'}}}",
    ])
    with pytest.raises(ConfigError, match="pass-rate filter kept 0 of 4 prompts"):
        run_grpo(strict, retrievers=retrievers, progress=False)
