"""A backend that answers every request with one query, as a language model might (no model, no prompt)."""

from __future__ import annotations

from geoql.app.backends.base import Backend, Generation, GenerationRequest


class FixedBackend(Backend):
    name = "fixed"
    needs_prompt = False

    def __init__(self, query: str):
        self.query = query

    def generate(self, request: GenerationRequest) -> Generation:
        return Generation((self.query,))
