"""Recipes: the shipped YAML files load, and bad settings fail with a message naming the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from geoql.core.errors import GeoqlError
from geoql.training.config import (
    MIN_COMPLETION_TOKENS,
    ConfigError,
    GRPORecipe,
    SFTRecipe,
    default_configs_dir,
    describe,
    load_recipe,
)

CONFIGS = sorted(default_configs_dir().glob("*.yaml"))


def _kind(path: Path) -> str:
    import yaml

    return yaml.safe_load(path.read_text())["kind"]


def test_recipes_are_shipped():
    names = {p.name for p in CONFIGS}
    assert {"qwen3-4b-sft-lora-r64.yaml", "qwen3-4b-sft-full.yaml", "qwen3-4b-grpo.yaml"} <= names


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_shipped_recipe_loads(path):
    recipe = load_recipe(_kind(path), path)
    assert isinstance(recipe, (SFTRecipe, GRPORecipe))
    if isinstance(recipe, GRPORecipe) and path.name.startswith("qwen3"):
        # The published run used one seed; ours must be able to tell a gain from noise.
        assert len(recipe.seeds) >= 3
        assert recipe.max_completion_length >= MIN_COMPLETION_TOKENS
        assert recipe.mask_truncated_completions


@pytest.mark.parametrize(
    "kind, override, fix",
    [
        ("grpo", "rewards={kvs: 1.0, tagss: 1.0}", "use names from: kvs, tree, chrf"),
        ("sft", "lora.r=0", "rank must be >= 1"),
        ("grpo", "lora.r=0", "rank must be >= 1"),
        ("grpo", "max_completion_length=192", "set it to >= 384"),
        ("grpo", "mask_truncated_completions=false", "must be true"),
        ("grpo", "num_generations=3", "not a multiple of num_generations"),
        ("grpo", "rewards={execution: 1.0}", "needs overpass_url"),
        ("grpo", "temperature=0", "temperature must be > 0"),
        ("grpo", "seeds=[]", "at least one seed"),
        ("sft", "data.dataset_dir=/nonexistent/geoql-data", "geoql train data --out"),
        ("sft", "lora.rank=8", "valid keys under lora: alpha, dropout, enabled, r, target_modules"),
        ("sft", "train.learning_rate=0", "learning_rate must be > 0"),
        ("sft", "dev_eval.max_new_tokens=192", ">= 384"),
        ("sft", "train.max_steps=abc", "must be a number"),
        ("sft", "train.gradient_checkpointing=maybe", "true or false"),
        ("sft", "train.max_train_minutes=0", "max_train_minutes must be > 0"),
    ],
)
def test_bad_setting_names_the_fix(kind, override, fix):
    with pytest.raises(ConfigError) as info:
        load_recipe(kind, None, [override])
    assert fix in str(info.value)


def test_config_errors_are_geoql_errors():
    # Every CLI maps a GeoqlError to one line and exit code 2; ValueError stays for callers that catch it.
    assert issubclass(ConfigError, GeoqlError) and issubclass(ConfigError, ValueError)


def test_missing_file_and_wrong_kind(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_recipe("sft", tmp_path / "nope.yaml")
    grpo = default_configs_dir() / "qwen3-4b-grpo.yaml"
    with pytest.raises(ConfigError, match="geoql train grpo --config"):
        load_recipe("sft", grpo)
    broken = tmp_path / "broken.yaml"
    broken.write_text("train: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_recipe("sft", broken)


def test_partial_section_keeps_kind_defaults():
    # A GRPO recipe that only sets max_steps keeps GRPO's learning rate, not SFT's.
    recipe = load_recipe("grpo", None, ["train.max_steps=7"])
    assert recipe.train.max_steps == 7
    assert recipe.train.learning_rate == GRPORecipe().train.learning_rate != SFTRecipe().train.learning_rate


def test_describe_lists_every_setting_with_help():
    text = describe(GRPORecipe)
    for name in ("max_completion_length", "early_stop:", "max_frac_reward_zero_std", "pass_rate_filter:"):
        assert name in text
    assert "  # \n" not in text  # every field has help text


def test_training_prompt_context_matches_inference_defaults():
    # The training prompt must be the inference prompt: same number of tags and examples.
    from geoql.app.config import CompileConfig
    from geoql.training.config import DataConfig

    assert (DataConfig().k_tags, DataConfig().k_examples) == (CompileConfig().k_tags, CompileConfig().k_examples)
    for name in ("qwen3-4b-sft-lora-r64.yaml", "qwen3-4b-sft-full.yaml", "qwen3-4b-grpo.yaml"):
        path = default_configs_dir() / name
        data = load_recipe(_kind(path), path).data
        assert (data.k_tags, data.k_examples) == (CompileConfig().k_tags, CompileConfig().k_examples), name
