"""The one interface every model backend implements.

A backend turns a prompt (chat messages built by ``retrieval.build_prompt``) plus
decoding options into raw candidate texts. Everything after that (extraction of
the query from the text, validation with our parser, choosing among candidates)
happens in ``app.decoding`` so that all backends are judged the same way.

To add a backend: subclass :class:`Backend`, implement :meth:`Backend.generate`,
and register it in ``app/backends/__init__.py``.

>>> req = GenerationRequest(nl="cafes in Bonn", messages=[{"role": "user", "content": "cafes in Bonn"}])
>>> req.n, req.max_new_tokens
(1, 512)
>>> GenerationRequest(nl="x", messages=[], n=0)
Traceback (most recent call last):
...
geoql.core.errors.ConfigError: n must be >= 1 (got 0): ask for at least one candidate
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from geoql.core.errors import ConfigError, GeoqlError

# Gold queries reach 541 characters; with a byte-level tokenizer that is well
# over 384 tokens only for exotic text, so 512 leaves room without truncating.
DEFAULT_MAX_NEW_TOKENS = 512


class BackendError(GeoqlError):
    """A backend could not produce candidates (missing model, server down, ...).

    The message names the fix; ``compile()`` turns it into ``Compilation.errors``.
    """


@dataclass
class GenerationRequest:
    """Everything a backend may use to produce candidates for one request.

    ``messages`` is the chat prompt (list of ``{"role", "content"}``). ``tags`` and
    ``examples`` are the retrieval results the prompt was built from; a backend
    without a prompt (the CPU default, ``cpu``) does its own retrieval in
    ``generate`` and puts what it found here, so that ``compile()`` can show it
    without searching a second time. ``grammar`` is a Lark grammar text to
    constrain decoding, or ``None``.
    """

    nl: str
    messages: list[dict[str, str]]
    tags: list[Any] = field(default_factory=list)
    examples: list[Any] = field(default_factory=list)
    n: int = 1
    temperature: float = 0.0
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    grammar: str | None = None
    seed: int | None = 0
    top_p: float = 1.0

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ConfigError(f"n must be >= 1 (got {self.n}): ask for at least one candidate")
        if self.temperature < 0:
            raise ConfigError(f"temperature must be >= 0 (got {self.temperature}): use 0 for greedy decoding")
        if self.max_new_tokens < 1:
            raise ConfigError(
                f"max_new_tokens must be >= 1 (got {self.max_new_tokens}): gold queries need about 384"
            )
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"top_p must be in (0, 1] (got {self.top_p}): use 1.0 to disable nucleus sampling")

    @property
    def greedy(self) -> bool:
        """Greedy decoding: temperature 0 (then ``n`` > 1 would repeat one text)."""
        return self.temperature == 0


class Backend(ABC):
    """Prompt messages + decoding options -> raw candidate texts.

    Implementations keep their model/index loaded between calls (``Compiler``
    holds one instance). ``generate`` returns between 1 and ``request.n`` texts;
    the texts may contain chatter or code fences (``app.decoding`` extracts the
    query). Raise :class:`BackendError` with a message naming the fix for
    anything the user can repair (missing model dir, unreachable server).
    """

    #: registry name, e.g. "transformers"
    name: ClassVar[str] = "base"
    #: True when the backend honours ``request.grammar`` (constrained decoding)
    supports_grammar: ClassVar[bool] = False
    #: True when the backend needs ``request.messages`` (an LLM); the CPU
    #: backend retrieves by itself, fills ``request.tags``/``examples`` and sets this False.
    needs_prompt: ClassVar[bool] = True
    #: ``CompileConfig`` fields the backend also reads: ``Compiler`` passes them to
    #: the constructor unless ``backend_options`` sets them (the CPU backend: ``index_dir``).
    compile_options: ClassVar[tuple[str, ...]] = ()
    #: True when ``generate`` may run in several threads at once (the demo then compiles
    #: independent requests side by side; else it takes them one at a time).
    thread_safe: ClassVar[bool] = False

    @abstractmethod
    def generate(self, request: GenerationRequest) -> list[str]:
        """Return candidate texts for ``request`` (at least one).

        A backend without a prompt also sets ``request.tags`` / ``request.examples``
        to what it retrieved (shown as ``Compilation.tags`` / ``examples``).
        """

    def generate_batch(self, requests: list[GenerationRequest]) -> list[list[str]]:
        """Candidates for many requests; backends that batch natively override this."""
        return [self.generate(r) for r in requests]

    def describe(self) -> str:
        """A short human-readable description (model path, server URL, ...)."""
        return self.name

    def close(self) -> None:
        """Release model memory / connections. Safe to call twice."""
