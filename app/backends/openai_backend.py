"""Any OpenAI-compatible chat server: ``vllm serve``, llama.cpp, SGLang, ...

Serve the fine-tuned adapter with, for example::

    vllm serve Qwen/Qwen3-4B --enable-lora --lora-modules geoql=./runs/sft/adapter

and compile with ``--backend openai --option model=geoql``. The grammar goes
to the server as vLLM's ``structured_outputs`` extra field (GBNF, which
vLLM's default xgrammar backend reads); servers that reject the field are
retried once without it (``grammar=auto``), and the output is still checked
by our parser.

Settings come from options, else the environment: ``base_url``
(``GEOQL_OPENAI_BASE_URL``, then ``OPENAI_BASE_URL``), ``model``
(``GEOQL_OPENAI_MODEL``), ``api_key`` (``GEOQL_OPENAI_API_KEY``, then
``OPENAI_API_KEY``; sent only when set).
"""

from __future__ import annotations

import os
from typing import ClassVar

from geoql.app.backends.base import Backend, BackendError, Generation, GenerationRequest
from overpassql.grammar import gbnf_grammar, lark_grammar, lark_to_gbnf


class OpenAIBackend(Backend):
    """Options: ``base_url``, ``model``, ``api_key``, ``timeout`` (seconds),
    ``grammar`` ("auto": send it, drop it if the server refuses; "always"; "never")."""

    name: ClassVar[str] = "openai"
    supports_grammar: ClassVar[bool] = True

    def __init__(self, base_url: str | None = None, *, model: str | None = None, api_key: str | None = None,
                 timeout: float = 120.0, grammar: str = "auto"):
        self.base_url = (base_url or os.environ.get("GEOQL_OPENAI_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
                         or "").rstrip("/")
        if not self.base_url:
            raise BackendError("the openai backend needs a server: pass base_url=http://HOST:PORT/v1 "
                               "or set GEOQL_OPENAI_BASE_URL")
        if not self.base_url.startswith(("http://", "https://")):
            raise BackendError(f"base_url must start with http:// or https:// (got {self.base_url!r})")
        self.model = model or os.environ.get("GEOQL_OPENAI_MODEL")
        self.api_key = api_key or os.environ.get("GEOQL_OPENAI_API_KEY") or os.environ.get("OPENAI_API_KEY")
        self.timeout = float(timeout)
        if grammar not in ("auto", "always", "never"):
            raise BackendError(f"grammar must be auto, always or never (got {grammar!r})")
        self.grammar_mode = grammar
        self._grammar_refused = False
        self._session = None

    def _http(self):
        if self._session is None:
            import requests

            self._session = requests.Session()
        return self._session

    def _headers(self) -> dict:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def _resolve_model(self) -> str:
        """The model name: configured, else the server's only model."""
        if self.model:
            return self.model
        data = self._get("/models")
        models = [m.get("id") for m in data.get("data", []) if isinstance(m, dict)]
        if len(models) != 1:
            raise BackendError(f"the server at {self.base_url} serves {len(models)} models "
                               f"({', '.join(map(str, models[:5]))}): choose one with model=NAME")
        self.model = models[0]
        return self.model

    def _get(self, path: str) -> dict:
        import requests

        try:
            resp = self._http().get(self.base_url + path, headers=self._headers(), timeout=self.timeout)
        except requests.RequestException as exc:
            raise BackendError(f"cannot reach {self.base_url}: {exc.__class__.__name__}; is the server running?") from None
        if resp.status_code != 200:
            raise BackendError(f"{self.base_url}{path} answered HTTP {resp.status_code}: {resp.text[:200]}")
        return resp.json()

    def payload(self, request: GenerationRequest, *, with_grammar: bool) -> dict:
        """The JSON body of the chat completion request."""
        body = {
            "model": self._resolve_model(),
            "messages": request.messages,
            "n": 1 if request.greedy else request.n,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "max_tokens": request.max_new_tokens,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        if with_grammar and request.grammar:
            gbnf = gbnf_grammar() if request.grammar == lark_grammar() else lark_to_gbnf(request.grammar)
            body["structured_outputs"] = {"grammar": gbnf}
        return body

    def generate(self, request: GenerationRequest) -> Generation:
        import requests

        with_grammar = bool(request.grammar) and self.grammar_mode != "never" and not self._grammar_refused
        body = self.payload(request, with_grammar=with_grammar)
        try:
            resp = self._http().post(self.base_url + "/chat/completions", json=body, headers=self._headers(),
                                     timeout=self.timeout)
            if resp.status_code == 400 and with_grammar and self.grammar_mode == "auto":
                # The server does not know structured_outputs: go on without it.
                self._grammar_refused = True
                body.pop("structured_outputs", None)
                resp = self._http().post(self.base_url + "/chat/completions", json=body,
                                         headers=self._headers(), timeout=self.timeout)
        except requests.RequestException as exc:
            raise BackendError(f"cannot reach {self.base_url}: {exc.__class__.__name__}; is the server running?") from None
        if resp.status_code != 200:
            raise BackendError(f"{self.base_url} answered HTTP {resp.status_code}: {resp.text[:300]}")
        try:
            choices = resp.json()["choices"]
            texts = [c["message"]["content"] or "" for c in choices]
        except (ValueError, KeyError, TypeError):
            raise BackendError(f"{self.base_url} sent a reply that is not a chat completion: {resp.text[:200]}") from None
        if not texts:
            raise BackendError(f"{self.base_url} returned no choices")
        return request.generation(texts)

    def describe(self) -> str:
        return f"openai ({self.base_url}, model {self.model or '?'})"

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None
