"""In-process vLLM (``vllm.LLM``), with an optional LoRA adapter and the grammar.

Needs the ``[vllm]`` extra and a GPU. The grammar goes in as GBNF through
``SamplingParams(structured_outputs=StructuredOutputsParams(grammar=...))``,
which vLLM's default structured-output backend (xgrammar) compiles; the
adapter as ``LoRARequest("geoql", 1, ADAPTER)`` on ``LLM.chat``.

:meth:`VLLMBackend.plan` computes everything passed to vLLM as plain data, so
it can be checked without vLLM installed.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import ClassVar

from geoql.app.backends.base import Backend, BackendError, Generation, GenerationRequest
from overpassql.grammar import gbnf_grammar, lark_grammar, lark_to_gbnf

LORA_NAME = "geoql"


class VLLMBackend(Backend):
    """Options: ``model`` (base model dir or hub id; required), ``adapter``
    (PEFT LoRA dir), ``max_lora_rank`` (default 64), ``gpu_memory_utilization``
    (default 0.85), ``max_model_len`` (default 4096), ``dtype`` (default auto),
    ``enforce_eager`` (default False)."""

    name: ClassVar[str] = "vllm"
    supports_grammar: ClassVar[bool] = True

    def __init__(self, model: str | Path | None = None, *, adapter: str | Path | None = None,
                 max_lora_rank: int = 64, gpu_memory_utilization: float = 0.85, max_model_len: int = 4096,
                 dtype: str = "auto", enforce_eager: bool = False):
        if not model:
            raise BackendError("the vllm backend needs a model: pass model=BASE (e.g. Qwen/Qwen3-4B) "
                               "and adapter=DIR for the fine-tuned LoRA")
        self.model_path = str(model)
        self.adapter = str(adapter) if adapter else None
        self.engine_kwargs = dict(model=self.model_path, dtype=dtype, max_model_len=int(max_model_len),
                                  gpu_memory_utilization=float(gpu_memory_utilization),
                                  enforce_eager=str(enforce_eager).lower() in ("1", "true", "yes"))
        if self.adapter:
            self.engine_kwargs.update(enable_lora=True, max_lora_rank=int(max_lora_rank))
        self._llm = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------ plain data
    def plan(self, requests: list[GenerationRequest]) -> dict:
        """What goes to vLLM: conversations, sampling kwargs (one per request), LoRA."""
        sampling = []
        for r in requests:
            kw = dict(n=1 if r.greedy else r.n, temperature=r.temperature, top_p=r.top_p,
                      max_tokens=r.max_new_tokens, seed=r.seed)
            if r.grammar:
                kw["structured_outputs"] = {"grammar": gbnf_grammar() if r.grammar == lark_grammar()
                                            else lark_to_gbnf(r.grammar)}
            sampling.append(kw)
        lora = (LORA_NAME, 1, self.adapter) if self.adapter else None
        return {"messages": [r.messages for r in requests], "sampling": sampling, "lora": lora,
                "engine": dict(self.engine_kwargs)}

    @staticmethod
    def sampling_params(kwargs: dict):
        """``vllm.SamplingParams`` from :meth:`plan`'s plain kwargs."""
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        kwargs = dict(kwargs)
        so = kwargs.pop("structured_outputs", None)
        if so is not None:
            kwargs["structured_outputs"] = StructuredOutputsParams(**so)
        return SamplingParams(**kwargs)

    @staticmethod
    def lora_request(lora: tuple | None):
        if lora is None:
            return None
        from vllm.lora.request import LoRARequest

        return LoRARequest(*lora)

    # ---------------------------------------------------------------- engine
    def _engine(self):
        with self._lock:
            if self._llm is None:
                try:
                    from vllm import LLM
                except ImportError:
                    raise BackendError("the vllm backend needs vLLM: pip install 'geoql[vllm]' (GPU machine)") from None
                self._llm = LLM(**self.engine_kwargs)
            return self._llm

    def generate(self, request: GenerationRequest) -> Generation:
        return self.generate_batch([request])[0]

    def generate_batch(self, requests: list[GenerationRequest]) -> list[Generation]:
        llm = self._engine()
        plan = self.plan(requests)
        params = [self.sampling_params(kw) for kw in plan["sampling"]]
        outputs = llm.chat(plan["messages"], params, lora_request=self.lora_request(plan["lora"]),
                           use_tqdm=False)
        return [r.generation([o.text for o in out.outputs]) for r, out in zip(requests, outputs)]

    def describe(self) -> str:
        return f"vllm ({self.model_path}{' + ' + self.adapter if self.adapter else ''})"

    def close(self) -> None:
        self._llm = None
