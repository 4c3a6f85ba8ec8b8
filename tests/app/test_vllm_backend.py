"""What the vllm backend hands to vLLM: prompts, sampling and structured-output
parameters, the LoRA request. The vLLM objects themselves are built only where
vLLM is installed (GPU machines; see benchmarks/gpu_smoke.sh)."""

from __future__ import annotations

import importlib.util

import pytest

from geoql.app.backends import get_backend
from geoql.app.backends.base import BackendError, GenerationRequest
from overpassql.grammar import gbnf_grammar, lark_grammar

HAS_VLLM = importlib.util.find_spec("vllm") is not None
MESSAGES = [{"role": "system", "content": "s"}, {"role": "user", "content": "cafes in Bonn"}]


def _plan(**options):
    backend = get_backend("vllm", model="Qwen/Qwen3-4B", **options)
    reqs = [GenerationRequest(messages=MESSAGES, n=4, temperature=0.7, max_new_tokens=512,
                              grammar=lark_grammar(), seed=5),
            GenerationRequest(messages=MESSAGES, n=4, temperature=0.0, grammar=None, seed=None)]
    return backend.plan(reqs)


def test_plan_carries_prompts_sampling_and_grammar():
    plan = _plan()
    assert plan["messages"] == [MESSAGES, MESSAGES]
    sampled, greedy = plan["sampling"]
    assert sampled == {"n": 4, "temperature": 0.7, "top_p": 1.0, "max_tokens": 512, "seed": 5,
                       "structured_outputs": {"grammar": gbnf_grammar()}}
    assert greedy["n"] == 1 and greedy["temperature"] == 0.0 and "structured_outputs" not in greedy
    assert plan["lora"] is None and "enable_lora" not in plan["engine"]


def test_plan_with_adapter_enables_lora():
    plan = _plan(adapter="runs/sft/adapter", max_lora_rank=32)
    assert plan["lora"] == ("geoql", 1, "runs/sft/adapter")
    assert plan["engine"]["enable_lora"] is True and plan["engine"]["max_lora_rank"] == 32
    assert plan["engine"]["model"] == "Qwen/Qwen3-4B"


def test_model_is_required():
    with pytest.raises(BackendError, match="needs a model"):
        get_backend("vllm")


def test_vllm_objects_from_the_plan_or_the_extra_named():
    # One test for both machines, so that neither skips: with vLLM (GPU machines) the plan
    # becomes vLLM's objects; without it, generation names the extra to install.
    if not HAS_VLLM:
        backend = get_backend("vllm", model="Qwen/Qwen3-4B")
        with pytest.raises(BackendError, match=r"geoql\[vllm\]"):
            backend.generate(GenerationRequest(messages=MESSAGES))
        return
    from vllm.sampling_params import SamplingParams

    from geoql.app.backends.vllm_backend import VLLMBackend

    plan = _plan(adapter="runs/sft/adapter")
    params = VLLMBackend.sampling_params(plan["sampling"][0])
    assert isinstance(params, SamplingParams)
    assert params.n == 4 and params.max_tokens == 512
    assert params.structured_outputs.grammar == gbnf_grammar()
    lora = VLLMBackend.lora_request(plan["lora"])
    assert lora.lora_name == "geoql" and lora.lora_int_id == 1 and lora.lora_path == "runs/sft/adapter"
