"""The openai backend against a real OpenAI-compatible HTTP server on 127.0.0.1
serving the tiny model (tests/app/openai_server.py)."""

from __future__ import annotations

import socket

import pytest

from geoql.app.backends import get_backend
from geoql.app.backends.base import BackendError, GenerationRequest
from geoql.app.decoding import make_candidates
from overpassql.grammar import lark_grammar
from real_model import FEW_SHOT, real_backend, real_model_dir  # noqa: F401 (fixtures)
from tests.app.openai_server import ChatServer


def _req(n=1, temperature=0.0, grammar=True, max_new_tokens=48):
    return GenerationRequest(messages=[{"role": "user", "content": "cafes in Bonn"}], n=n,
                             temperature=temperature, max_new_tokens=max_new_tokens,
                             grammar=lark_grammar() if grammar else None, seed=3)


def test_grammar_reaches_the_server_and_outputs_parse(tiny_backend):
    with ChatServer(tiny_backend) as server:
        backend = get_backend("openai", base_url=server.base_url)  # model found via /v1/models
        texts = backend.generate(_req(n=3, temperature=1.0)).texts
        body = server.requests[-1]
    assert len(texts) == 3
    assert all(c.valid for c in make_candidates(texts))
    assert body["model"] == "tiny" and body["n"] == 3 and body["max_tokens"] == 48 and body["seed"] == 3
    assert "root ::= " in body["structured_outputs"]["grammar"]  # GBNF, what vLLM's xgrammar reads


def test_server_without_structured_outputs_is_retried_without_grammar(tiny_backend):
    with ChatServer(tiny_backend, accept_structured_outputs=False) as server:
        backend = get_backend("openai", base_url=server.base_url, model="tiny")
        texts = backend.generate(_req(max_new_tokens=16)).texts
        second = backend.generate(_req(max_new_tokens=16)).texts
        bodies = list(server.requests)
    assert len(texts) == 1 and len(second) == 1
    assert "structured_outputs" in bodies[0] and "structured_outputs" not in bodies[1]
    assert len(bodies) == 3  # refused once, then remembered


def test_api_key_and_environment(tiny_backend, monkeypatch):
    with ChatServer(tiny_backend) as server:
        monkeypatch.setenv("GEOQL_OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("GEOQL_OPENAI_API_KEY", "sk-test")
        backend = get_backend("openai")
        assert backend._headers()["Authorization"] == "Bearer sk-test"
        assert backend.generate(_req(grammar=False, max_new_tokens=8)).texts


def test_unknown_model_and_unreachable_server_are_clear_errors(tiny_backend):
    with ChatServer(tiny_backend) as server:
        with pytest.raises(BackendError, match="HTTP 404"):
            get_backend("openai", base_url=server.base_url, model="other").generate(_req())
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(BackendError, match="cannot reach"):
        get_backend("openai", base_url=f"http://127.0.0.1:{port}/v1", model="m", timeout=5).generate(_req())


def test_missing_base_url_names_the_fix(monkeypatch):
    monkeypatch.delenv("GEOQL_OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(BackendError, match="GEOQL_OPENAI_BASE_URL"):
        get_backend("openai")


@pytest.mark.real_model
def test_real_model_served_with_structured_outputs(real_backend):
    # The whole HTTP path with a real tokenizer: GBNF in the request, llguidance in the
    # server, the chat template on the server side, extraction on ours.
    with ChatServer(real_backend, "geoql") as server:
        backend = get_backend("openai", base_url=server.base_url)
        texts = backend.generate(GenerationRequest(messages=FEW_SHOT, n=1, temperature=0.0,
                                                   max_new_tokens=96, grammar=lark_grammar())).texts
        body = server.requests[-1]
    assert "root ::= " in body["structured_outputs"]["grammar"]
    cand = make_candidates(texts)[0]
    assert cand.valid, (texts, cand.errors)
