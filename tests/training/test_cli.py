"""``geoql train ...``: argument parsing, recipe checks, user errors as one line (exit 2)."""

from __future__ import annotations

import pytest

from geoql.app.cli import main
from geoql.training.config import default_configs_dir

CONFIGS = default_configs_dir()


@pytest.mark.parametrize("recipe, kind", [("qwen3-4b-sft-lora-r64.yaml", "sft"), ("qwen3-4b-sft-full.yaml", "sft"),
                                          ("qwen3-4b-grpo.yaml", "grpo"), ("tiny-sft.yaml", "sft"),
                                          ("tiny-grpo.yaml", "grpo")])
def test_check_valid_recipes(recipe, kind, capsys):
    assert main(["train", kind, "--config", str(CONFIGS / recipe), "--check"]) == 0
    assert "valid" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["train", "grpo", "--config", str(CONFIGS / "qwen3-4b-grpo.yaml"), "--set", "rewards={kvs: 1, bleu: 1}", "--check"],
         "unknown reward bleu in rewards; use names from"),
        (["train", "sft", "--config", str(CONFIGS / "qwen3-4b-sft-lora-r64.yaml"), "--set", "lora.r=0", "--check"],
         "rank must be >= 1"),
        (["train", "grpo", "--config", str(CONFIGS / "qwen3-4b-grpo.yaml"), "--set", "max_completion_length=192"],
         "set it to >= 384"),
        (["train", "sft", "--config", str(CONFIGS / "qwen3-4b-grpo.yaml")], "run `geoql train grpo --config"),
        (["train", "sft", "--config", "no/such.yaml"], "pick one of training/configs/*.yaml"),
        (["train", "sft", "--set", "train.max_steps"], "needs the form key.sub=value"),
        (["train", "sft", "--config", str(CONFIGS / "tiny-sft.yaml"), "--set", "data.data_dir=/nonexistent/overpassnl",
          "--set", "model=also-missing"], "OverpassNL not found"),
    ],
)
def test_user_errors_are_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_explain_and_help(capsys):
    assert main(["train", "grpo", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "max_frac_reward_zero_std" in out and "# Stop when" in out
    assert main(["train"]) == 2
    assert "check-rewards" in capsys.readouterr().out
