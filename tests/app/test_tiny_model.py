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
    from geoql.app.tiny_model import build_tiny_model

    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="empty or new directory"):
        build_tiny_model(tmp_path, texts=["node;out;"])
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_qwen3_4b_shape_is_the_production_architecture():
    # Qwen3-4B-Instruct-2507 has 4,022,468,096 parameters (tied embeddings); a mistyped
    # dimension in the shape would make the training benchmark measure another model.
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from geoql.app.tiny_model import QWEN3_4B_SHAPE

    with torch.device("meta"):
        model = Qwen3ForCausalLM(Qwen3Config(**QWEN3_4B_SHAPE))
    assert sum(p.numel() for p in model.parameters()) == 4_022_468_096


def test_random_model_keeps_the_larger_vocabulary(tmp_path):
    # Qwen's embedding has more rows than its tokenizer has tokens; a shape's vocabulary
    # wins over a smaller local tokenizer, so the output layer costs what the real one does.
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from geoql.app.tiny_model import TINY_SHAPE, build_random_model, train_tokenizer

    tok = train_tokenizer(["node[amenity=cafe](area.a);out;", "cafes in Bonn"] * 20, vocab_size=300)
    path = build_random_model(tmp_path / "m", tok, {**TINY_SHAPE, "vocab_size": 5000})
    model = AutoModelForCausalLM.from_pretrained(path)
    assert model.config.vocab_size == 5000 > len(AutoTokenizer.from_pretrained(path))
    ids = AutoTokenizer.from_pretrained(path)("cafes", return_tensors="pt").input_ids
    assert model(ids).logits.shape[-1] == 5000
