"""The tiny Qwen3 model: loads offline, Qwen special tokens and chat format."""

from __future__ import annotations

import pytest


def test_loads_offline_with_qwen_tokens(tiny_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    assert type(model).__name__ == "Qwen3ForCausalLM"
    assert model.config.hidden_size == 64 and model.config.num_hidden_layers == 2
    assert 2000 <= len(tok) <= 4000  # trained on the dataset text
    for special in ("<|im_start|>", "<|im_end|>", "<|endoftext|>"):
        assert len(tok.encode(special, add_special_tokens=False)) == 1
    assert tok.eos_token == "<|im_end|>"
    text = '[out:json];node["name"="Wien"];out;'
    assert tok.decode(tok.encode(text, add_special_tokens=False)) == text
    assert tok.decode(tok.encode("東京 Москва", add_special_tokens=False)) == "東京 Москва"  # byte-level


def test_chat_template_marks_the_assistant_turn(tiny_model_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    msgs = [{"role": "user", "content": "cafes"}, {"role": "assistant", "content": "node;"}]
    out = tok.apply_chat_template(msgs, return_dict=True, return_assistant_tokens_mask=True)
    marked = [i for i, m in zip(out["input_ids"], out["assistant_masks"]) if m]
    assert tok.decode(marked) == "node;<|im_end|>"


def test_refuses_to_overwrite_a_foreign_directory(tmp_path):
    from app.tiny_model import build_tiny_model

    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="empty or new directory"):
        build_tiny_model(tmp_path, texts=["node;out;"])
    assert (tmp_path / "notes.txt").read_text() == "mine"
