"""Training recipes: dataclasses loaded from YAML, checked before any model loads.

Every field carries ``help`` metadata (``geoql train sft --explain`` prints it) and
every check in ``__post_init__`` raises :class:`ConfigError` with a message that
names the fix, so a bad recipe fails in a second instead of after the model has
loaded onto a GPU.
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from geoql.core.errors import ConfigError
from geoql.retrieval.config import K_EXAMPLES, K_TAGS
from geoql.training.rewards import REWARDS

# Names of the reward functions a recipe may weight (their registry is training/rewards.py).
REWARD_NAMES = tuple(REWARDS)

# The published Qwen3-4B GRPO run lost every parse failure to a 192-token cap; the
# longest gold query is ~555 characters, which Qwen's tokenizer turns into < 384 tokens.
MIN_COMPLETION_TOKENS = 384


def _help(text: str, default=dataclasses.MISSING, factory=dataclasses.MISSING):
    if factory is not dataclasses.MISSING:
        return field(default_factory=factory, metadata={"help": text})
    return field(default=default, metadata={"help": text})


@dataclass
class DataConfig:
    data_dir: str | None = _help(
        "OverpassNL directory; empty means --data-dir / $GEOQL_DATA_DIR / the user cache.", None
    )
    index_dir: str | None = _help("Retrieval index directory; empty means retrieval.default_index_dir().", None)
    dataset_dir: str | None = _help(
        "A directory written by `geoql train data --out DIR`; when set, training reads it instead of "
        "rebuilding the prompts.",
        None,
    )
    k_tags: int = _help("Tag candidates in each prompt (default: retrieval.K_TAGS, as at inference).", K_TAGS)
    k_examples: int = _help("Retrieved training examples in each prompt (default: retrieval.K_EXAMPLES, as at inference).",
                            K_EXAMPLES)
    seed: int = _help("Seed for shuffling and subsampling; the same seed gives the same files.", 0)
    limit: int | None = _help("Use only this many training examples (smoke tests); empty = all 6,352.", None)
    tag_grounding: bool = _help("Add auxiliary tag-grounding examples (request -> its OSM tags).", False)
    tag_grounding_fraction: float = _help("Tag-grounding examples as a fraction of the training examples.", 0.25)
    comments: bool = _help("Add the OverpassNL code comments as auxiliary (comment -> query) examples.", False)
    comments_max: int | None = _help("At most this many comment examples; empty = all that pass the filters.", 2000)
    comments_min_ratio: float = _help("Keep comments whose comment_content_ratio is at least this.", 0.8)

    def __post_init__(self):
        if self.k_tags < 0 or self.k_examples < 0:
            raise ConfigError(f"data.k_tags and data.k_examples must be >= 0; set them to the inference values "
                              f"({K_TAGS} and {K_EXAMPLES})")
        if self.limit is not None and self.limit < 1:
            raise ConfigError("data.limit must be >= 1; remove it to use the whole training split")
        if not 0.0 < self.tag_grounding_fraction <= 1.0:
            raise ConfigError("data.tag_grounding_fraction must be in (0, 1]; try 0.25")
        if self.comments_max is not None and self.comments_max < 1:
            raise ConfigError("data.comments_max must be >= 1; remove it to keep every comment example")
        if self.dataset_dir is not None and not (Path(self.dataset_dir) / "stats.json").is_file():
            raise ConfigError(
                f"data.dataset_dir {self.dataset_dir} holds no dataset; run `geoql train data --out "
                f"{self.dataset_dir}` first or remove data.dataset_dir"
            )


@dataclass
class LoraConfig:
    enabled: bool = _help("Train a LoRA adapter (true) or all weights (false: full fine-tuning).", True)
    r: int = _help("LoRA rank.", 64)
    alpha: int = _help("LoRA alpha (scaling = alpha / r).", 128)
    dropout: float = _help("LoRA dropout.", 0.05)
    target_modules: list[str] = _help(
        "Module names that get adapters; vLLM --lora-modules supports the attention and MLP projections.",
        factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    )

    def __post_init__(self):
        if self.r < 1:
            raise ConfigError(f"lora.r is {self.r}; the rank must be >= 1 (64 is the recipe), or set lora.enabled: false for full fine-tuning")
        if self.alpha < 1:
            raise ConfigError("lora.alpha must be >= 1; the recipes use 2 * r")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError("lora.dropout must be in [0, 1); try 0.05")
        if not self.target_modules:
            raise ConfigError("lora.target_modules is empty; list e.g. q_proj, k_proj, v_proj, o_proj")


@dataclass
class TrainConfig:
    output_dir: str = _help("Where checkpoints, logs, the adapter and the merged model go.", "runs/sft")
    learning_rate: float = _help("Peak learning rate.", 1e-4)
    num_train_epochs: float = _help("Epochs over the training set (ignored when max_steps > 0).", 2.0)
    max_steps: int = _help("Stop after this many optimizer steps; -1 = run the epochs.", -1)
    per_device_train_batch_size: int = _help("Sequences per device and micro-step.", 8)
    gradient_accumulation_steps: int = _help("Micro-steps per optimizer step.", 2)
    warmup_ratio: float = _help("Fraction of steps with a linear warm-up.", 0.03)
    lr_scheduler_type: str = _help("Transformers scheduler name.", "cosine")
    weight_decay: float = _help("AdamW weight decay.", 0.0)
    max_grad_norm: float = _help("Gradient clipping.", 1.0)
    bf16: bool | None = _help("bfloat16 mixed precision; empty = on when a CUDA GPU is present, off on CPU.", None)
    gradient_checkpointing: bool = _help("Recompute activations to save memory (slower).", True)
    logging_steps: int = _help("Log every N optimizer steps.", 10)
    save_steps: int = _help("Save (and, with dev_eval, evaluate) a checkpoint every N steps.", 200)
    save_total_limit: int | None = _help("Keep at most this many checkpoints.", 3)
    seed: int = _help("Training seed.", 0)
    report_to: list[str] = _help("Loggers (e.g. tensorboard, wandb); empty list = only the JSONL log.", factory=list)
    max_length: int = _help("SFT: longest prompt + completion in tokens; longer rows are an error, not silently cut.", 3072)
    max_train_minutes: float | None = _help(
        "Stop training after this many minutes of train() (then save, score and export as at max_steps); "
        "empty = no time limit. For CPU runs sized by the clock.", None)

    def __post_init__(self):
        if self.learning_rate <= 0:
            raise ConfigError("train.learning_rate must be > 0; the recipes use 1e-4 (LoRA) / 1e-5 (full) / 1e-6 (GRPO)")
        if self.per_device_train_batch_size < 1 or self.gradient_accumulation_steps < 1:
            raise ConfigError("train.per_device_train_batch_size and gradient_accumulation_steps must be >= 1")
        if self.max_steps == 0 or self.max_steps < -1:
            raise ConfigError("train.max_steps must be -1 (use num_train_epochs) or >= 1")
        if self.max_steps == -1 and self.num_train_epochs <= 0:
            raise ConfigError("train.num_train_epochs must be > 0 when train.max_steps is -1")
        if self.logging_steps < 1 or self.save_steps < 1:
            raise ConfigError("train.logging_steps and train.save_steps must be >= 1")
        if not 0.0 <= self.warmup_ratio < 1.0:
            raise ConfigError("train.warmup_ratio must be in [0, 1); try 0.03")
        if self.max_length < 64:
            raise ConfigError("train.max_length is below 64 tokens; a prompt alone is longer — use 3072")
        if self.max_train_minutes is not None and self.max_train_minutes <= 0:
            raise ConfigError("train.max_train_minutes must be > 0; leave it empty for no time limit")


@dataclass
class DevEvalConfig:
    enabled: bool = _help("Score checkpoints on dev with the exact OQS through app.compile's generation path.", True)
    subset_size: int | None = _help("Dev examples scored per evaluation (a fixed, seeded subset); empty = all 1,000.", 200)
    every_steps: int | None = _help("GRPO: evaluate every N steps; SFT: empty = at every checkpoint save.", None)
    at_start: bool = _help("Also score the starting model at step 0 (before any update), as the baseline of the run.", False)
    temperatures: list[float] = _help(
        "Decoding temperatures to evaluate; 0 = greedy. GRPO adds its training temperature automatically.",
        factory=lambda: [0.0],
    )
    max_new_tokens: int = _help("Token budget for each dev query (>= 384: the gold maximum).", 512)
    grammar: bool = _help("Grammar-constrained decoding, as compile() does by default.", True)
    batch_size: int = _help("Dev requests generated together.", 16)
    seed: int = _help("Seed that picks the dev subset and samples at temperature > 0.", 0)

    def __post_init__(self):
        if self.subset_size is not None and self.subset_size < 1:
            raise ConfigError("dev_eval.subset_size must be >= 1; remove it to score the whole dev split")
        if self.every_steps is not None and self.every_steps < 1:
            raise ConfigError("dev_eval.every_steps must be >= 1; remove it to evaluate at each save")
        if any(t < 0 for t in self.temperatures):
            raise ConfigError("dev_eval.temperatures must be >= 0 (0 = greedy)")
        if self.max_new_tokens < MIN_COMPLETION_TOKENS:
            raise ConfigError(
                f"dev_eval.max_new_tokens is {self.max_new_tokens}; set it to >= {MIN_COMPLETION_TOKENS} so long gold queries fit"
            )
        if self.batch_size < 1:
            raise ConfigError("dev_eval.batch_size must be >= 1")


@dataclass
class SFTRecipe:
    model: str = _help("Base model: a Hugging Face id or a local directory.", "Qwen/Qwen3-4B-Instruct-2507")
    data: DataConfig = _help("Training data.", factory=DataConfig)
    lora: LoraConfig = _help("LoRA settings (lora.enabled: false = full fine-tuning).", factory=LoraConfig)
    train: TrainConfig = _help("Optimizer and trainer settings.", factory=TrainConfig)
    dev_eval: DevEvalConfig = _help("Dev evaluation of checkpoints.", factory=DevEvalConfig)
    export_merged: bool = _help("Also write <output_dir>/merged: the adapter folded into the base weights.", True)
    attn_implementation: str | None = _help("e.g. sdpa or flash_attention_2; empty = transformers' default.", None)

    def __post_init__(self):
        if not self.model:
            raise ConfigError("model is empty; set it to a Hugging Face id such as Qwen/Qwen3-4B-Instruct-2507")


@dataclass
class EarlyStopConfig:
    enabled: bool = _help("Stop when the group reward variance (the GRPO learning signal) collapses.", True)
    max_frac_reward_zero_std: float = _help(
        "Stop when this fraction of prompt groups has identical rewards (no advantage) ...", 0.5
    )
    min_reward_std: float = _help("... or when the reward std falls below this.", 0.02)
    patience: int = _help("... for this many consecutive logging steps.", 3)
    min_steps: int = _help("Never stop before this step (warm-up noise).", 0)

    def __post_init__(self):
        if not 0.0 < self.max_frac_reward_zero_std <= 1.0:
            raise ConfigError("early_stop.max_frac_reward_zero_std must be in (0, 1]; the recipe uses 0.5")
        if self.min_reward_std < 0:
            raise ConfigError("early_stop.min_reward_std must be >= 0")
        if self.patience < 1:
            raise ConfigError("early_stop.patience must be >= 1 logging step")
        if self.min_steps < 0:
            raise ConfigError("early_stop.min_steps must be >= 0")


@dataclass
class PassRateFilterConfig:
    enabled: bool = _help("Keep only prompts where the starting model's sampled rewards vary.", False)
    samples: int = _help("Completions sampled per prompt at the training temperature.", 8)
    min_mean_oqs: float = _help("Drop prompts the model already fails on (mean OQS below this) ...", 0.05)
    max_mean_oqs: float = _help("... and prompts it has mastered (mean OQS above this).", 0.95)
    min_std: float = _help("Drop prompts whose sampled OQS has a smaller std (no learning signal).", 0.01)
    cache_file: str | None = _help("Where the per-prompt scores are kept; empty = <output_dir>/pass_rates.jsonl.", None)

    def __post_init__(self):
        if self.samples < 2:
            raise ConfigError("pass_rate_filter.samples must be >= 2 to measure variance; try 8")
        if not 0.0 <= self.min_mean_oqs < self.max_mean_oqs <= 1.0:
            raise ConfigError("pass_rate_filter needs 0 <= min_mean_oqs < max_mean_oqs <= 1; try 0.05 and 0.95")


@dataclass
class GRPORecipe:
    model: str = _help("Starting policy: the SFT run's merged model directory (or a Hugging Face id).", "runs/sft-lora-r64/merged")
    data: DataConfig = _help("Training prompts.", factory=DataConfig)
    lora: LoraConfig = _help("LoRA on top of the starting policy (lora.enabled: false = all weights).", factory=LoraConfig)
    train: TrainConfig = _help(
        "Optimizer and trainer settings.",
        factory=lambda: TrainConfig(output_dir="runs/grpo", learning_rate=1e-6, max_steps=300, per_device_train_batch_size=8,
                                    gradient_accumulation_steps=4, logging_steps=5, save_steps=50),
    )
    dev_eval: DevEvalConfig = _help("Dev evaluation every N steps, greedy and at the training temperature.", factory=DevEvalConfig)
    rewards: dict[str, float] = _help(
        f"Reward name -> weight; names: {', '.join(REWARD_NAMES)}.",
        factory=lambda: {"kvs": 1.0, "tree": 1.0, "chrf": 0.5, "validity": 0.5, "length": 0.1},
    )
    num_generations: int = _help("Completions per prompt (the GRPO group).", 8)
    max_completion_length: int = _help(f"Token cap per completion; must be >= {MIN_COMPLETION_TOKENS} and >= the longest gold query.", 512)
    mask_truncated_completions: bool = _help("Exclude truncated completions from the loss (required: true).", True)
    temperature: float = _help("Rollout temperature; dev is also scored at this temperature to see the gap to greedy.", 0.7)
    top_p: float = _help("Nucleus sampling for rollouts.", 1.0)
    beta: float = _help("KL coefficient against the starting policy (0 = no reference model).", 0.02)
    loss_type: str = _help("TRL loss: dapo, dr_grpo, grpo, bnpo, ...", "dapo")
    scale_rewards: str = _help("group, batch or none.", "group")
    use_vllm: bool = _help("Generate rollouts with vLLM (colocate mode) when it is installed.", False)
    vllm_gpu_memory_utilization: float = _help("Share of GPU memory vLLM may take in colocate mode.", 0.35)
    vllm_max_model_length: int = _help(
        "Context vLLM reserves per sequence (prompt + completion); Qwen3's 256k default does not fit beside training.", 4096
    )
    seeds: list[int] = _help("One run per seed; report mean and spread over them (>= 3 to tell a gain from noise).", factory=lambda: [0, 1, 2])
    overpass_url: str | None = _help("Overpass API endpoint for the execution reward; empty = the reward returns None.", None)
    overpass_cache_dir: str | None = _help("Cache of Overpass answers (shared across runs).", None)
    nominatim_url: str | None = _help(
        "Nominatim /search endpoint for {{geocodeArea:...}} in the execution reward; empty = the public one "
        "(1 request/s; answers are cached).",
        None,
    )
    early_stop: EarlyStopConfig = _help("Stop when the learning signal collapses.", factory=EarlyStopConfig)
    pass_rate_filter: PassRateFilterConfig = _help("Prompt filter by the starting model's pass rate.", factory=PassRateFilterConfig)
    attn_implementation: str | None = _help("e.g. sdpa or flash_attention_2; empty = transformers' default.", None)

    def __post_init__(self):
        if not self.model:
            raise ConfigError("model is empty; set it to the SFT run's merged directory, e.g. runs/sft-lora-r64/merged")
        unknown = sorted(set(self.rewards) - set(REWARD_NAMES))
        if unknown:
            raise ConfigError(f"unknown reward {', '.join(unknown)} in rewards; use names from: {', '.join(REWARD_NAMES)}")
        if not self.rewards or not any(w != 0 for w in self.rewards.values()):
            raise ConfigError("rewards is empty or all weights are 0; give e.g. kvs: 1.0, tree: 1.0")
        if "execution" in self.rewards and not self.overpass_url:
            raise ConfigError("the execution reward needs overpass_url (an Overpass API endpoint); set it or drop execution from rewards")
        if self.max_completion_length < MIN_COMPLETION_TOKENS:
            raise ConfigError(
                f"max_completion_length is {self.max_completion_length}; set it to >= {MIN_COMPLETION_TOKENS} "
                "(a 192-token cap caused every parse failure of the published GRPO run)"
            )
        if not self.mask_truncated_completions:
            raise ConfigError("mask_truncated_completions must be true: a truncated query is not a wrong answer to learn from")
        if self.num_generations < 2:
            raise ConfigError("num_generations must be >= 2 (GRPO compares completions within a group); try 8")
        effective = self.train.per_device_train_batch_size * self.train.gradient_accumulation_steps
        if effective % self.num_generations:
            raise ConfigError(
                f"per_device_train_batch_size * gradient_accumulation_steps = {effective} is not a multiple of "
                f"num_generations = {self.num_generations}; change one of them"
            )
        if self.temperature <= 0:
            raise ConfigError("temperature must be > 0 for rollouts (greedy groups have no variance); try 0.7")
        if self.vllm_max_model_length < self.max_completion_length + 512:
            raise ConfigError(
                f"vllm_max_model_length {self.vllm_max_model_length} leaves no room for a prompt next to "
                f"max_completion_length {self.max_completion_length}; use 4096"
            )
        if not self.seeds:
            raise ConfigError("seeds is empty; give at least one seed (the recipe uses [0, 1, 2])")
        if len(set(self.seeds)) != len(self.seeds):
            raise ConfigError("seeds has duplicates; each seed is one run")
        if self.scale_rewards not in ("group", "batch", "none"):
            raise ConfigError("scale_rewards must be group, batch or none")


RECIPES = {"sft": SFTRecipe, "grpo": GRPORecipe}


def _coerce(value, tp, where: str):
    """Turn a YAML value into the annotated type, naming the field on mismatch."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ConfigError(f"{where} must be a mapping of {tp.__name__} fields")
        return from_dict(tp, value, where)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _coerce(value, inner[0], where)
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{where} must be a list")
        return [_coerce(v, args[0], f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where} must be a mapping")
        return {str(k): _coerce(v, args[1], f"{where}.{k}") for k, v in value.items()}
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{where} must be true or false, not {value!r}")
    if tp in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            try:
                value = tp(value)
            except (TypeError, ValueError):
                raise ConfigError(f"{where} must be a number, not {value!r}") from None
        if tp is int and isinstance(value, float) and not value.is_integer():
            raise ConfigError(f"{where} must be a whole number, not {value!r}")
        return tp(value)
    if tp is str:
        if value is None:
            raise ConfigError(f"{where} must be a string")
        return str(value)
    return value


def from_dict(cls, values: dict, where: str = ""):
    """Build dataclass ``cls`` from a mapping; unknown keys are an error that lists the known ones."""
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - known)
    prefix = f"{where}." if where else ""
    if unknown:
        raise ConfigError(
            f"unknown setting {prefix}{unknown[0]}; valid keys{' under ' + where if where else ''}: {', '.join(sorted(known))}"
        )
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name not in values:
            continue
        value = values[f.name]
        if dataclasses.is_dataclass(hints[f.name]) and isinstance(value, dict) and f.default_factory is not dataclasses.MISSING:
            # A partial section keeps the recipe kind's own defaults (GRPO's train
            # section differs from SFT's) for the keys it does not mention.
            base = {k.name: getattr(f.default_factory(), k.name) for k in dataclasses.fields(hints[f.name])}
            base.update(value)
            value = {k: (dataclasses.asdict(v) if dataclasses.is_dataclass(v) else v) for k, v in base.items()}
        kwargs[f.name] = _coerce(value, hints[f.name], f"{prefix}{f.name}")
    return cls(**kwargs)


def to_dict(recipe) -> dict:
    return dataclasses.asdict(recipe)


def _apply_override(values: dict, assignment: str) -> None:
    if "=" not in assignment:
        raise ConfigError(f"--set {assignment!r} needs the form key.sub=value, e.g. train.max_steps=10")
    key, raw = assignment.split("=", 1)
    parts = key.strip().split(".")
    node = values
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"--set {key}: {part} is not a section")
    node[parts[-1]] = yaml.safe_load(raw) if raw.strip() else None


def load_recipe(kind: str, path: str | os.PathLike | None = None, overrides: list[str] | tuple = ()):
    """Read a YAML recipe of ``kind`` ("sft" or "grpo"), apply ``key=value`` overrides, validate.

    >>> load_recipe("grpo", overrides=["rewards={kvs: 1.0, taggs: 1.0}"])
    Traceback (most recent call last):
    ...
    geoql.core.errors.ConfigError: unknown reward taggs in rewards; use names from: kvs, tree, chrf, validity, length, execution
    """
    if kind not in RECIPES:
        raise ConfigError(f"unknown recipe kind {kind!r}; use one of {', '.join(RECIPES)}")
    values: dict = {}
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"config file {p} not found; pick one of training/configs/*.yaml")
        try:
            loaded = yaml.safe_load(p.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise ConfigError(f"{p} is not valid YAML ({str(exc).splitlines()[0]}); fix the syntax") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"{p} must hold a mapping of settings at the top level")
        declared = loaded.pop("kind", kind)
        if declared != kind:
            raise ConfigError(f"{p} is a {declared} recipe; run `geoql train {declared} --config {p}`")
        values = loaded
    for assignment in overrides:
        _apply_override(values, assignment)
    return from_dict(RECIPES[kind], values)


def describe(cls, indent: str = "") -> str:
    """Every setting with its default and help text (for ``--explain``)."""
    lines = []
    for f in dataclasses.fields(cls):
        tp = typing.get_type_hints(cls)[f.name]
        if dataclasses.is_dataclass(tp):
            lines.append(f"{indent}{f.name}:  # {f.metadata.get('help', '')}")
            lines.append(describe(tp, indent + "  "))
            continue
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        lines.append(f"{indent}{f.name}: {default!r}  # {f.metadata.get('help', '')}")
    return "\n".join(lines)


def default_configs_dir() -> Path:
    return Path(__file__).resolve().parent / "configs"
