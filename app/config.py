"""Compile settings: which backend, how to decode, how much context.

A YAML file holds the same fields (``geoql compile --config FILE``)::

    backend: openai
    backend_options: {base_url: "http://127.0.0.1:8000/v1", model: geoql}
    n: 8
    temperature: 0.7

>>> CompileConfig(n=4, temperature=0.7).strategy
'mbr'
>>> CompileConfig(n=0)
Traceback (most recent call last):
...
geoql.core.errors.ConfigError: n must be >= 1 (got 0): ask for at least one candidate
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path

from geoql.app.backends import DEFAULT_BACKEND, canonical_name
from geoql.app.backends.base import DEFAULT_MAX_NEW_TOKENS
from geoql.core.errors import ConfigError
from geoql.retrieval.config import K_EXAMPLES, K_TAGS

# 10 kB requests are legitimate input to reject politely, not to feed a model.
MAX_REQUEST_CHARS = 2000


@dataclass
class CompileConfig:
    backend: str = field(default=DEFAULT_BACKEND, metadata={"help": "cpu (the CPU default), transformers, openai or vllm"})
    backend_options: dict = field(default_factory=dict, metadata={"help": "options passed to the backend (model, adapter, base_url, ...)"})
    n: int = field(default=1, metadata={"help": "candidates to sample; >1 picks by minimum Bayes risk"})
    temperature: float | None = field(default=None, metadata={"help": "sampling temperature; default 0 (greedy) for n=1, 0.7 for n>1"})
    top_p: float = field(default=1.0, metadata={"help": "nucleus sampling mass"})
    max_new_tokens: int = field(default=DEFAULT_MAX_NEW_TOKENS, metadata={"help": "token budget per candidate (gold queries reach 541 characters)"})
    grammar: bool = field(default=True, metadata={"help": "constrain decoding with the OverpassQL grammar"})
    repair: bool = field(default=True, metadata={"help": "close cut-off queries with the grammar's shortest valid ending"})
    mbr: bool = field(default=True, metadata={"help": "choose among candidates by expected OQS (else: first valid)"})
    k_tags: int = field(default=K_TAGS, metadata={"help": "retrieved tags in the prompt"})
    k_examples: int = field(default=K_EXAMPLES, metadata={"help": "retrieved training examples in the prompt"})
    index_dir: str | None = field(default=None, metadata={
        "help": "tag index directory, for the prompt and the CPU backend (default: retrieval.default_index_dir())"})
    seed: int | None = field(default=0, metadata={"help": "random seed for sampling (None: nondeterministic)"})
    max_request_chars: int = field(default=MAX_REQUEST_CHARS, metadata={"help": "longer requests are refused with an error"})

    def __post_init__(self) -> None:
        if not isinstance(self.backend, str) or not self.backend:
            raise ConfigError("backend must be a name: cpu, transformers, openai or vllm")
        self.backend = canonical_name(self.backend)
        if not isinstance(self.backend_options, dict):
            raise ConfigError("backend_options must be a mapping, e.g. {model: ./runs/sft}")
        if int(self.n) < 1:
            raise ConfigError(f"n must be >= 1 (got {self.n}): ask for at least one candidate")
        self.n = int(self.n)
        if self.temperature is not None and float(self.temperature) < 0:
            raise ConfigError(f"temperature must be >= 0 (got {self.temperature}): use 0 for greedy decoding")
        if not 0 < float(self.top_p) <= 1:
            raise ConfigError(f"top_p must be in (0, 1] (got {self.top_p}): use 1.0 to disable nucleus sampling")
        if int(self.max_new_tokens) < 16:
            raise ConfigError(f"max_new_tokens must be >= 16 (got {self.max_new_tokens}): queries need about 384")
        if int(self.k_tags) < 0 or int(self.k_examples) < 0:
            raise ConfigError("k_tags and k_examples must be >= 0 (0 leaves them out of the prompt)")
        if int(self.max_request_chars) < 1:
            raise ConfigError("max_request_chars must be >= 1")

    @property
    def effective_temperature(self) -> float:
        if self.temperature is not None:
            return float(self.temperature)
        return 0.0 if self.n == 1 else 0.7

    @property
    def strategy(self) -> str:
        return "mbr" if self.n > 1 and self.mbr else ("sample" if self.n > 1 else "greedy")

    def replace(self, **changes) -> "CompileConfig":
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        unknown = set(changes) - set(values)
        if unknown:
            raise ConfigError(f"unknown compile option(s) {', '.join(sorted(unknown))}: known are {', '.join(sorted(values))}")
        values.update(changes)
        values["backend_options"] = dict(values["backend_options"])
        return CompileConfig(**values)


def load_config(path: str | os.PathLike) -> CompileConfig:
    """Read a YAML config file; unknown keys are an error that names them."""
    import yaml

    p = Path(path).expanduser()
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise ConfigError(f"config file {p} not found: check the path") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {p} is not valid YAML: {exc}".splitlines()[0]) from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {p} must hold a mapping of options (backend: ..., n: ...)")
    known = {f.name for f in fields(CompileConfig)}
    unknown = set(data) - known
    if unknown:
        raise ConfigError(f"config file {p}: unknown option(s) {', '.join(sorted(unknown))}; known are {', '.join(sorted(known))}")
    return CompileConfig(**data)
