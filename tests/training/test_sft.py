"""SFT on the tiny Qwen3: the loss goes down, the adapter and merged model load, checks run first."""

from __future__ import annotations

import json

import pytest

from training_fixtures import one_torch_thread, retrievers, tiny_model_dir  # noqa: F401 (fixtures)
from geoql.training.callbacks import StepTimeCallback, read_metrics
from geoql.training.config import ConfigError, default_configs_dir, load_recipe
from geoql.training.sft import load_model, run_sft

TINY = default_configs_dir() / "tiny-sft.yaml"


@pytest.fixture(scope="module")
def sft_run(tiny_model_dir, small_index_dir, retrievers, tmp_path_factory):
    out = tmp_path_factory.mktemp("sft") / "run"
    recipe = load_recipe("sft", TINY, [
        f"model={tiny_model_dir}", f"data.index_dir={small_index_dir}", f"train.output_dir={out}",
        "dev_eval.enabled=true", "dev_eval.subset_size=2", "dev_eval.at_start=true",
    ])
    return recipe, run_sft(recipe, retrievers=retrievers, progress=False)


def test_training_loss_goes_down(sft_run):
    recipe, result = sft_run
    assert result.steps == recipe.train.max_steps == 30
    losses = [e["loss"] for e in read_metrics(result.output_dir) if "loss" in e]
    assert len(losses) == 30 // recipe.train.logging_steps
    assert result.last_loss < result.first_loss
    assert min(losses[-2:]) < losses[0]


def test_loss_is_on_the_completion_only(sft_run, tiny_model_dir, tmp_path):
    from transformers import AutoTokenizer

    from geoql.training.sft import load_model, sft_trainer

    recipe, _ = sft_run
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    row = {"prompt": [{"role": "system", "content": "rules"}, {"role": "user", "content": "cafes in Bonn"}],
           "completion": [{"role": "assistant", "content": 'nwr["amenity"="cafe"];out;'}]}
    trainer = sft_trainer(recipe, [row], tok, load_model(str(tiny_model_dir), False), tmp_path, False)
    batch = trainer.data_collator([trainer.train_dataset[0]])
    ids, labels = batch["input_ids"][0].tolist(), batch["labels"][0].tolist()
    supervised = tok.decode([t for t, label in zip(ids, labels) if label != -100])
    # Only the query and the end-of-turn token are learned, never the prompt.
    assert supervised.startswith('nwr["amenity"="cafe"];out;') and "Bonn" not in supervised and "rules" not in supervised


def test_adapter_and_merged_model_load(sft_run):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    recipe, result = sft_run
    adapter = json.loads(open(f"{result.adapter_dir}/adapter_config.json").read())
    assert adapter["r"] == recipe.lora.r and adapter["peft_type"] == "LORA"
    # vLLM's --lora-modules supports these target modules and reads safetensors.
    assert set(adapter["target_modules"]) <= {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
    assert not adapter.get("modules_to_save")
    assert (result.adapter_dir and __import__("pathlib").Path(result.adapter_dir, "adapter_model.safetensors").is_file())
    tok = AutoTokenizer.from_pretrained(result.merged_dir)
    ids = tok("way[\"highway\"];out;", return_tensors="pt")["input_ids"]
    merged = AutoModelForCausalLM.from_pretrained(result.merged_dir)
    base = AutoModelForCausalLM.from_pretrained(recipe.model)
    with_adapter = PeftModel.from_pretrained(base, result.adapter_dir)
    with torch.no_grad():
        a = merged(input_ids=ids).logits
        b = with_adapter(input_ids=ids).logits
    assert torch.allclose(a, b, atol=1e-4)  # merged == base + adapter


def test_transformers_backend_loads_the_adapter(sft_run):
    from geoql.app.backends import GenerationRequest, get_backend
    from geoql.retrieval import build_prompt

    recipe, result = sft_run
    backend = get_backend("transformers", model=recipe.model, adapter=result.adapter_dir)
    try:
        nl = "cafes in Bonn"
        texts = backend.generate(GenerationRequest(messages=build_prompt(nl, [], []), max_new_tokens=16)).texts
    finally:
        backend.close()
    assert texts and all(isinstance(t, str) for t in texts)


def test_dev_eval_through_the_compile_path(sft_run):
    recipe, result = sft_run
    assert result.dev_eval and result.dev_eval[-1]["step"] == 30
    # dev_eval.at_start: the untrained starting point, the baseline of the run's own log.
    assert result.dev_eval[0]["step"] == 0 and "dev/oqs@greedy" in result.dev_eval[0]
    entry = result.dev_eval[-1]
    assert entry["dev/n"] == 2 and 0.0 <= entry["dev/oqs@greedy"] <= 100.0
    # compile() decodes with the OverpassQL grammar by default: every dev query parses.
    assert entry["dev/valid@greedy"] == 100.0
    summary = json.loads(open(f"{result.output_dir}/summary.json").read())
    assert summary["result"]["dev_eval"] == result.dev_eval


def test_an_existing_run_is_not_overwritten(sft_run):
    recipe, result = sft_run
    with pytest.raises(ConfigError, match="--resume to continue it, --overwrite to replace it"):
        run_sft(recipe, progress=False)


def test_checks_run_before_the_model_loads(tiny_model_dir, small_index_dir, retrievers, tmp_path):
    base = [f"model={tiny_model_dir}", f"data.index_dir={small_index_dir}", f"train.output_dir={tmp_path / 'r'}",
            "data.limit=5"]
    with pytest.raises(ConfigError, match="raise train.max_length to >="):
        run_sft(load_recipe("sft", TINY, base + ["train.max_length=64"]), retrievers=retrievers, progress=False)
    with pytest.raises(ConfigError, match="lora.target_modules qkv do not exist"):
        run_sft(load_recipe("sft", TINY, base + ["lora.target_modules=[qkv]"]), retrievers=retrievers, progress=False)
    with pytest.raises(ConfigError, match="no bf16-capable GPU"):
        run_sft(load_recipe("sft", TINY, base + ["train.bf16=true"]), retrievers=retrievers, progress=False)
    with pytest.raises(ConfigError, match="cannot load the tokenizer"):
        run_sft(load_recipe("sft", TINY, base + [f"model={tmp_path / 'no-model'}"]), retrievers=retrievers, progress=False)


def test_trains_from_a_written_dataset(tiny_model_dir, small_index_dir, retrievers, tmp_path):
    from geoql.training.config import DataConfig
    from geoql.training.data import build_rows, write_dataset

    cfg = DataConfig(index_dir=str(small_index_dir), k_tags=2, k_examples=1, limit=8)
    written = write_dataset(tmp_path / "data", *build_rows(cfg, retrievers, progress=False), cfg)
    recipe = load_recipe("sft", TINY, [
        f"model={tiny_model_dir}", f"data.dataset_dir={written}", f"train.output_dir={tmp_path / 'run'}",
        "train.max_steps=2", "dev_eval.enabled=false", "export_merged=false",
    ])
    timer = StepTimeCallback()
    result = run_sft(recipe, progress=False, extra_callbacks=[timer])  # no retrievers: the prompts are in the files
    assert result.steps == 2 and result.data_stats["grpo_rows"] == 8
    assert result.merged_dir is None and result.adapter_dir
    assert len(timer.seconds) == 2 and all(s > 0 for s in timer.seconds)
    assert timer.steady_median() == timer.steady_mean() == timer.seconds[1]


def test_an_interrupted_run_resumes_from_its_checkpoint(tiny_model_dir, small_index_dir, retrievers, tmp_path):
    from transformers import TrainerCallback

    class CrashAtStep3(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 3:
                raise KeyboardInterrupt  # the user pressed Ctrl-C (or the machine went away)

    overrides = [f"model={tiny_model_dir}", f"data.index_dir={small_index_dir}", f"train.output_dir={tmp_path / 'run'}",
                 "data.limit=16", "train.max_steps=4", "train.save_steps=2", "train.logging_steps=1",
                 "dev_eval.enabled=false", "export_merged=false"]
    recipe = load_recipe("sft", TINY, overrides)
    with pytest.raises(KeyboardInterrupt):
        run_sft(recipe, retrievers=retrievers, progress=False, extra_callbacks=[CrashAtStep3()])
    assert (tmp_path / "run" / "checkpoint-2").is_dir() and not (tmp_path / "run" / "summary.json").exists()
    with pytest.raises(ConfigError, match="--resume"):
        run_sft(recipe, retrievers=retrievers, progress=False)
    result = run_sft(recipe, retrievers=retrievers, progress=False, resume=True)
    assert result.steps == 4
    steps = [e["step"] for e in read_metrics(result.output_dir) if "loss" in e]
    assert steps[:2] == [1, 2] and steps[-2:] == [3, 4]  # steps 3-4 came from checkpoint-2


def test_full_fine_tuning_exports_a_plain_model(tiny_model_dir, small_index_dir, retrievers, tmp_path):
    from transformers import AutoModelForCausalLM

    recipe = load_recipe("sft", TINY, [
        f"model={tiny_model_dir}", f"data.index_dir={small_index_dir}", f"train.output_dir={tmp_path / 'run'}",
        "data.limit=8", "lora.enabled=false", "train.max_steps=2", "train.learning_rate=1e-3",
        "dev_eval.enabled=true", "dev_eval.subset_size=1",
    ])
    result = run_sft(recipe, retrievers=retrievers, progress=False)
    assert result.adapter_dir is None and result.merged_dir
    # Dev evaluation loaded the full weights (no adapter) through the compile path.
    assert result.dev_eval[-1]["dev/valid@greedy"] == 100.0
    trained = AutoModelForCausalLM.from_pretrained(result.merged_dir)
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    changed = [n for (n, a), (_, b) in zip(trained.named_parameters(), base.named_parameters()) if not a.equal(b)]
    assert changed  # every weight was trainable, and some moved


@pytest.mark.parametrize("full_fine_tuning, dtype", [(False, "torch.bfloat16"), (True, "torch.float32")])
def test_bf16_training_keeps_fp32_master_weights_when_all_weights_train(tiny_model_dir, full_fine_tuning, dtype):
    # LoRA trains an fp32 adapter over a frozen bf16 base; full fine-tuning updates the
    # weights themselves, whose AdamW steps at lr 1e-5 would round away in bf16.
    model = load_model(str(tiny_model_dir), True, full_fine_tuning=full_fine_tuning)
    assert {str(p.dtype) for p in model.parameters()} == {dtype}


# ---------------------------------------------------------------- the real model (SmolLM2-135M)


@pytest.mark.real_model
def test_real_model_learns_from_a_few_steps_and_its_adapter_serves(tmp_path):
    # The registered GGUF name goes straight into the recipe: geoql.app.models resolves it.
    # Prompts without retrieval (no index): the same 2 requests for 4 steps - the loss on
    # the gold queries must fall on real weights with the real tokenizer and chat template.
    from real_model import REAL_MODEL, persistent_model_cache
    from geoql.app.backends.base import GenerationRequest
    from geoql.app.backends.transformers_backend import TransformersBackend
    from geoql.app.decoding import make_candidates
    from geoql.app.models import MODEL_CACHE_ENV
    from geoql.retrieval import build_prompt
    from overpassql.grammar import lark_grammar
    import os

    os.environ[MODEL_CACHE_ENV] = persistent_model_cache()
    recipe = load_recipe("sft", TINY, [
        f"model={REAL_MODEL}", f"train.output_dir={tmp_path / 'run'}", "data.k_tags=0", "data.k_examples=0",
        "data.limit=2", "train.max_steps=4", "train.per_device_train_batch_size=2", "train.learning_rate=1.0e-3",
        "train.logging_steps=1", "train.save_steps=100", "train.max_length=1024", "export_merged=false",
        "lora.r=8", "lora.alpha=16",
    ])
    result = run_sft(recipe, progress=False)
    losses = [e["loss"] for e in read_metrics(result.output_dir) if "loss" in e]
    assert len(losses) == 4 and losses[-1] < losses[0], losses
    backend = TransformersBackend(REAL_MODEL, adapter=result.adapter_dir, device="cpu", dtype="float32")
    out = backend.generate(GenerationRequest(messages=build_prompt("cafes in Bonn"),
                                             max_new_tokens=48, temperature=0.0, grammar=lark_grammar())).texts
    assert make_candidates(out)[0].valid, out
    assert REAL_MODEL in backend.describe() and "adapter" in backend.describe()
