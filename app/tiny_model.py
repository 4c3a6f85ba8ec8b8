"""A tiny, randomly initialised Qwen3 chat model with a locally trained tokenizer.

It has the same architecture, special tokens and chat format as the real Qwen3
models, so every code path (transformers, PEFT/LoRA, vLLM, an OpenAI-compatible
server, training) can be exercised offline in seconds. Its answers are noise:
tests use it to check plumbing and grammar-constrained decoding, never quality.

    >>> import tempfile
    >>> from transformers import AutoTokenizer
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = build_tiny_model(d, texts=["node[amenity=cafe](area.a);out;"] * 10)
    ...     tok = AutoTokenizer.from_pretrained(path)
    ...     text = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False,
    ...                                    add_generation_prompt=True)
    >>> print(text)
    <|im_start|>user
    hi<|im_end|>
    <|im_start|>assistant
    <BLANKLINE>
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterable

from geoql.core.files import atomic_dir
from geoql.eval.dataset import load_split, resolve_data_dir

# Qwen2/Qwen3 special tokens (same strings, so templates and stop tokens match).
ENDOFTEXT = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIAL_TOKENS = [ENDOFTEXT, IM_START, IM_END]

# Qwen-style ChatML. The {% generation %} markers let trainers compute an
# assistant-only loss (transformers' return_assistant_tokens_mask).
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if message['role'] == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- generation %}{{- message['content'] + '<|im_end|>' }}{%- endgeneration %}"
    "{{- '\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

# Used when no texts are given and no dataset is configured: enough OverpassQL
# and English for BPE to learn the common pieces (all 256 bytes are always in
# the vocabulary, so any text still encodes).
_FALLBACK_TEXTS = [
    '[out:json][timeout:25];{{geocodeArea:"Vienna"}}->.searchArea;'
    '(node["amenity"="drinking_water"](area.searchArea);way["amenity"="drinking_water"](area.searchArea););'
    "out body;>;out skel qt;",
    '[out:json];area[name="Berlin"]->.a;nwr["shop"="bakery"](area.a);out center;',
    'node["tourism"="hotel"]({{bbox}});out;',
    '[out:xml][timeout:600];(way(uid:10074543)(newer:"{{date:1day}}"););out meta;',
    "Find all drinking water taps in Vienna. Show me cafes with outdoor seating in Heidelberg.",
    "You translate requests into OverpassQL queries for OpenStreetMap.",
]


# The tiny test model: Qwen3's architecture at a size that trains in seconds on a CPU.
TINY_SHAPE = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    max_position_embeddings=4096,
    tie_word_embeddings=True,
)

# The production model's architecture, from Qwen3-4B-Instruct-2507's config.json
# (4,022,468,096 parameters). benchmarks/bench_train_shape.py trains a random model
# of this shape to measure step time and GPU memory without downloading the weights.
QWEN3_4B_SHAPE = dict(
    hidden_size=2560,
    intermediate_size=9728,
    num_hidden_layers=36,
    num_attention_heads=32,
    num_key_value_heads=8,
    head_dim=128,
    vocab_size=151936,
    max_position_embeddings=262144,
    rope_theta=5_000_000.0,
    rms_norm_eps=1e-6,
    tie_word_embeddings=True,
)


def _default_texts() -> list[str]:
    """Dataset text when a dataset is configured, else a small built-in corpus."""
    try:
        data_dir = resolve_data_dir(download=False)
        examples = load_split("train", data_dir)
    except Exception:  # no dataset here: the tiny model does not need one
        return list(_FALLBACK_TEXTS)
    texts = []
    for ex in examples:
        texts.append(ex.nl)
        texts.append(ex.query)
    return texts


def train_tokenizer(texts: Iterable[str], vocab_size: int = 3000):
    """A byte-level BPE ``PreTrainedTokenizerFast`` with Qwen's special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(texts), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=IM_END,
        pad_token=ENDOFTEXT,
        unk_token=None,
        bos_token=None,
        additional_special_tokens=[IM_START],
        model_max_length=4096,
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_tiny_model(
    out_dir: str | os.PathLike,
    texts: Iterable[str] | None = None,
    *,
    vocab_size: int = 3000,
    seed: int = 0,
) -> Path:
    """Save a random tiny Qwen3ForCausalLM + tokenizer to ``out_dir``; return the path.

    ``AutoTokenizer.from_pretrained(path)`` and
    ``AutoModelForCausalLM.from_pretrained(path)`` load it offline. The directory
    is written atomically (built beside it, then renamed), so an interrupted
    build never leaves a half-written model behind.
    """
    tokenizer = train_tokenizer(texts if texts is not None else _default_texts(), vocab_size=vocab_size)
    return build_random_model(out_dir, tokenizer, TINY_SHAPE, seed=seed)


def build_random_model(
    out_dir: str | os.PathLike,
    tokenizer,
    shape: dict,
    *,
    seed: int = 0,
    device: str | None = None,
    dtype=None,
) -> Path:
    """Save a randomly initialised Qwen3ForCausalLM of ``shape`` with ``tokenizer``.

    The vocabulary is the larger of ``shape["vocab_size"]`` and the tokenizer's
    (Qwen's own embedding also has rows no token uses). ``device``/``dtype``
    build it there, e.g. ``"cuda"`` and ``torch.bfloat16`` for a 4B-parameter
    shape that would take minutes to initialise on a CPU. Written atomically.
    """
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    out = Path(out_dir)
    if out.exists() and any(out.iterdir()) and not (out / "config.json").is_file():
        raise FileExistsError(f"{out} is not empty and holds no model: choose an empty or new directory")
    config = Qwen3Config(
        **{**shape, "vocab_size": max(shape.get("vocab_size", 0), len(tokenizer))},
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.convert_tokens_to_ids(IM_END),
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    with torch.device(device or "cpu"):
        model = Qwen3ForCausalLM(config)
    if dtype is not None:
        model = model.to(dtype)
    model.generation_config = GenerationConfig(
        eos_token_id=[tokenizer.convert_tokens_to_ids(IM_END), tokenizer.convert_tokens_to_ids(ENDOFTEXT)],
        pad_token_id=tokenizer.pad_token_id,
        do_sample=False,
    )

    def write(staging: Path) -> None:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)

    return atomic_dir(out, write)
