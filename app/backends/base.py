"""The one interface every model backend implements.

A backend turns a :class:`GenerationRequest` (the request as ``compile()`` read it,
``geoql.nl.Request``, the chat prompt built by ``retrieval.build_prompt`` and the decoding
options) into a :class:`Generation`: raw candidate texts and what it used to make them (the tags
and training requests it worked from, and what the confidence may rest on). Everything after
that (extraction of the query from the text, validation with our parser, choosing among
candidates, the checks and the confidence) happens in ``app.compile`` and ``app.decoding``, the
same for all backends: ``compile()`` never asks which backend answered.

To add a backend: subclass :class:`Backend`, implement :meth:`Backend.generate`,
and register it in ``app/backends/__init__.py``.

>>> from geoql.nl import read_request
>>> req = GenerationRequest(read_request("cafes in Bonn"), messages=[{"role": "user", "content": "cafes in Bonn"}])
>>> req.nl, req.n, req.max_new_tokens
('cafes in Bonn', 1, 512)
>>> req.generation(["node;out;"]).texts
('node;out;',)
>>> GenerationRequest(messages=[], n=0)
Traceback (most recent call last):
...
geoql.core.errors.ConfigError: n must be >= 1 (got 0): ask for at least one candidate
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from geoql.core.errors import ConfigError, GeoqlError
from geoql.nl.request import Knowledge, Request

# Gold queries reach 541 characters; with a byte-level tokenizer that is well
# over 384 tokens only for exotic text, so 512 leaves room without truncating.
DEFAULT_MAX_NEW_TOKENS = 512


class BackendError(GeoqlError):
    """A backend could not produce candidates (missing model, server down, ...).

    The message names the fix; ``compile()`` turns it into ``Compilation.errors``.
    """


@dataclass(frozen=True)
class GenerationRequest:
    """Everything a backend may use to produce candidates for one request (input only).

    ``request`` is the request as ``compile()`` read it (``None``: a prompt alone, as GRPO's
    rollouts sample). ``messages`` is the chat prompt (list of ``{"role", "content"}``); ``tags``
    and ``examples`` are the retrieval results it was built from (empty for a backend without a
    prompt, such as the CPU default, which retrieves by itself and says so in its
    :class:`Generation`). ``grammar`` is a Lark grammar text to constrain decoding, or ``None``.
    """

    request: Request | None = None
    messages: list[dict[str, str]] = field(default_factory=list)
    tags: Sequence[Any] = ()
    examples: Sequence[Any] = ()
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

    @property
    def nl(self) -> str:
        """The request's words, as given ("" for a prompt alone)."""
        return self.request.nl if self.request is not None else ""

    def generation(self, texts: Sequence[str]) -> "Generation":
        """A prompted backend's result: ``texts``, made from this prompt's tags and examples."""
        return Generation(tuple(texts), tags=tuple(self.tags), examples=tuple(self.examples))


@dataclass(frozen=True)
class Evidence:
    """What the confidence (``geoql.app.confidence.assess``) may rest on beyond the answer.

    ``calibrated``: the answer is one the packaged calibration was fitted on (the CPU default's:
    its examples are its TF-IDF neighbours), so the calibrator turns its signals into an expected
    OQS; otherwise the confidence is the samples' agreement. ``word_tags``: word -> tag ->
    P(tag | word), the words the backend ties to tags (the CPU default's lexicon), which cover a
    request's words. ``calibrator_dir``: a folder whose ``confidence.json`` takes the place of the
    packaged calibration (the CPU model's).
    """

    calibrated: bool = False
    word_tags: Mapping[str, Mapping[str, float]] | None = None
    calibrator_dir: Path | None = None


NO_EVIDENCE = Evidence()


@dataclass(frozen=True)
class Generation:
    """What a backend made for one request: candidate texts (at least one; chatter and code fences
    allowed, ``app.decoding`` extracts the query) and what it used: the tag hits and training
    requests it worked from (shown as ``Compilation.tags`` / ``examples``) and the
    :class:`Evidence` for the confidence."""

    texts: tuple[str, ...]
    tags: tuple[Any, ...] = ()
    examples: tuple[Any, ...] = ()
    evidence: Evidence = NO_EVIDENCE


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
    #: backend retrieves by itself (and says what it used in its Generation) and sets this False.
    needs_prompt: ClassVar[bool] = True
    #: ``CompileConfig`` fields the backend also reads: ``Compiler`` passes them to
    #: the constructor unless ``backend_options`` sets them (the CPU backend: ``index_dir``).
    compile_options: ClassVar[tuple[str, ...]] = ()
    #: Processes a batch run (``geoql compile --split/--requests``) starts when ``--workers`` is not
    #: given: 1 for a model that fills an accelerator or a server that batches by itself; None for
    #: one per core (the CPU default: one request is one core's work).
    batch_workers: ClassVar[int | None] = 1
    #: True when ``generate`` may run in several threads at once (the demo then compiles
    #: independent requests side by side; else it takes them one at a time).
    thread_safe: ClassVar[bool] = False

    @abstractmethod
    def generate(self, request: GenerationRequest) -> Generation:
        """Candidate texts for ``request`` (at least one) and what made them (:class:`Generation`);
        a prompted backend returns ``request.generation(texts)``."""

    def generate_batch(self, requests: list[GenerationRequest]) -> list[Generation]:
        """Candidates for many requests; backends that batch natively override this."""
        return [self.generate(r) for r in requests]

    def knowledge(self) -> Knowledge | None:
        """What the backend knows of words beyond the cue tables, for reading a request
        (``geoql.nl.read_request``): the CPU default's place names and its index's tag names.
        ``None`` (the default): nothing of its own; ``compile()`` then reads with its retriever's.
        May load the backend's model (and raise :class:`BackendError` like ``generate``)."""
        return None

    def describe(self) -> str:
        """A short human-readable description (model path, server URL, ...)."""
        return self.name

    def close(self) -> None:
        """Release model memory / connections. Safe to call twice."""
