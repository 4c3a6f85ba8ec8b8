"""``compile(nl)``: a request in words -> one OverpassQL query, checked.

Pipeline: check the request -> read it once (``geoql.nl.read_request``, with what the
backend knows of words: ``Backend.knowledge``) -> retrieve tags and examples
(``retrieval.prompt_context``) -> build the prompt (``retrieval.build_prompt``)
-> the backend produces a ``Generation``: candidate texts (grammar-constrained where it can)
and what it used -> extract, validate and choose (``app.decoding``) -> the check of every part
(``geoql.eval.license.unlicensed_parts``, with the tag evidence the ``Generation`` names) and the
confidence (``app.confidence.assess``). A backend without
a prompt (the CPU default) skips the retrieval and the prompt: it retrieves by itself, once,
and says in its ``Generation`` what it used. Every step takes the one ``Request``; none asks
which backend answered. Nothing inside raises to the caller: problems end up in
``Compilation.errors`` with a message that says what to do.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import unicodedata
from dataclasses import dataclass, field, fields
from typing import Any, Iterable

from geoql.app import confidence as confidence_mod
from geoql.app.backends import DEFAULT_BACKEND, backend_class, get_backend
from geoql.app.backends.base import Backend, BackendError, Generation, GenerationRequest
from geoql.app.compose import prefer_composed
from geoql.app.config import CompileConfig
from geoql.app.decoding import Candidate, choose, make_candidates
from geoql.app.run import RunResult, run_query
from geoql.core.errors import ConfigError
from geoql.eval.faithfulness import train_place_aliases
from geoql.eval.license import Part, TagEvidence, unlicensed_parts
from geoql.nl.lexicon import Lexicon
from geoql.nl.request import Knowledge, Request, read_request
from geoql.retrieval import TagRetriever, build_prompt, prompt_context
from overpassql.grammar import lark_grammar

# CompileConfig fields that choose what a Compiler loads (with ``backend``): fixed when it is made.
LOAD_FIELDS = ("backend_options", "index_dir")


@dataclass
class Compilation:
    """The result of compiling one request."""

    nl: str
    query: str = ""  # one line, the dataset's format ("" when nothing usable came out)
    valid: bool = False  # our parser accepts ``query``
    errors: list[str] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    tags: list[Any] = field(default_factory=list)
    examples: list[Any] = field(default_factory=list)
    backend: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # The parts of ``query`` that nothing in the request licenses (tag filters, areas, arounds, set names,
    # settings, outputs, names, ids, users, dates, numbers): geoql.eval.license.Part, whatever the backend.
    unlicensed: list[Part] = field(default_factory=list)
    # How sure the answer is (geoql.app.confidence): the expected OQS (0..1; the CPU default,
    # calibrated on OverpassNL dev), the samples' MBR agreement (a language model with n > 1),
    # or None (a single sample; no query).
    confidence: float | None = None
    # The request's content words that no part of the query covers (folded, in request order).
    uncovered: list[str] = field(default_factory=list)
    # Similarity of the nearest training request (the CPU default's TF-IDF cosine; None for
    # other backends) and whether it is below the threshold chosen on dev.
    nearest: float | None = None
    far: bool | None = None
    # The request does not look like one about places or map features at all.
    off_topic: bool = False
    # The CPU default's confidence is below the warning threshold chosen on dev.
    low_confidence: bool = False
    # The query has no ``out`` statement: it runs and returns nothing (any backend).
    no_output: bool = False
    # One sentence per doubt (off topic, low confidence, unlicensed parts, uncovered words, far, no output): shown by
    # the CLI and the demo.
    doubts: list[str] = field(default_factory=list)
    # The request as it was read, once (geoql.nl.Request): what every step took. None when it could
    # not be read (not text, empty). Not in as_dict: the reading is the request's, not the answer's.
    request: Request | None = field(default=None, repr=False, compare=False)
    # No answer because something other than the request failed (the backend could not start or raised,
    # the prompt or the checks raised): asking again may answer it. A batch run records such a line as
    # failed and retries it, instead of keeping an empty line as the request's answer.
    failed: bool = False

    @property
    def status(self) -> str:
        """One line for a status bar: "Compiled." only when nothing is in doubt."""
        if not self.query:
            return "Not compiled: " + ("; ".join(self.errors) or "no query")
        if self.off_topic:
            return "Not a request about places: the query is a guess. Name what to find and where, e.g. 'cafes in Bonn'."
        sure = "" if self.confidence is None else f" (confidence {self.confidence:.2f})"
        if not self.valid:
            return f"Compiled, but the query does not parse{sure}."
        if self.low_confidence:
            return f"Compiled, low confidence{sure}: check the query before relying on it."
        if self.unlicensed or self.uncovered or self.far or self.no_output:
            return f"Compiled{sure}, with doubts: " + "; ".join(d for d in self.doubts if not d.startswith("low confidence")) + "."
        return f"Compiled{sure}."

    def run(self, **options) -> RunResult:
        """Run ``query`` on Overpass: ``geoql.app.run.run_query`` (``bbox=``, ``endpoint=``,
        ``client=``, ``on_wait=``...), with the demo's and ``geoql run``'s messages; never raises."""
        if not self.query:
            return RunResult("", str(options.get("endpoint") or ""), kind="syntax",
                             message="There is no query to run: " + ("; ".join(self.errors) or "nothing was compiled") + ".")
        return run_query(self.query, **options)

    def as_dict(self) -> dict:
        def plain(x):
            if hasattr(x, "__dataclass_fields__"):
                return {f.name: getattr(x, f.name) for f in fields(x)}
            return x

        return {"nl": self.nl, "query": self.query, "valid": self.valid, "errors": list(self.errors),
                "candidates": [c.as_dict() for c in self.candidates],
                "tags": [plain(t) for t in self.tags], "examples": [plain(e) for e in self.examples],
                "backend": self.backend, "timings": dict(self.timings), "warnings": list(self.warnings),
                "unlicensed": [plain(p) for p in self.unlicensed], "confidence": self.confidence,
                "uncovered": list(self.uncovered), "nearest": self.nearest, "far": self.far,
                "off_topic": self.off_topic, "low_confidence": self.low_confidence,
                "no_output": self.no_output, "doubts": list(self.doubts), "failed": self.failed,
                "status": self.status}


def _split_options(options: dict) -> tuple[dict, dict]:
    """Compile settings vs. backend options (model=, base_url=, ...)."""
    known = {f.name for f in fields(CompileConfig)}
    return ({k: v for k, v in options.items() if k in known},
            {k: v for k, v in options.items() if k not in known})


def backend_options(config: CompileConfig) -> dict:
    """The options ``config``'s backend is made with: ``backend_options``, plus the compile
    settings the backend also reads (``Backend.compile_options``, e.g. the CPU backend's
    ``index_dir``) where set and not given there."""
    shared = {name: getattr(config, name) for name in backend_class(config.backend).compile_options
              if getattr(config, name) is not None}
    return {**shared, **config.backend_options}


def check_request(nl: Any, max_chars: int) -> str | None:
    """A message for a request that cannot be compiled, else None."""
    if not isinstance(nl, str):
        return f"the request must be text, got {type(nl).__name__}"
    if not nl.strip():
        return "empty request: describe what to find, e.g. 'drinking water taps in Vienna'"
    if any("\ud800" <= ch <= "\udfff" for ch in nl):
        # Lone surrogates: bytes that were not UTF-8, e.g. a command line in another encoding
        # (Python keeps them as U+DC80..U+DCFF); no text library downstream can encode them.
        return ("the request has bytes that are not UTF-8 text (lone surrogates): "
                "pass it as UTF-8, e.g. set your terminal or file to UTF-8")
    # Punctuation alone asks for nothing, and any answer would be a guess; symbols
    # such as emoji (category S) may name a thing, so they still compile.
    if all(unicodedata.category(ch)[0] in "PZC" for ch in nl):
        return "the request has no words, only punctuation: describe what to find, e.g. 'drinking water taps in Vienna'"
    if len(nl) > max_chars:
        return f"request too long ({len(nl)} characters; at most {max_chars}): shorten it to one request"
    return None


class Compiler:
    """Keeps a backend and the retrieval index loaded between requests.

    ``backend``, ``backend_options`` and ``index_dir`` choose what it loads and
    are fixed when it is made; the other :class:`CompileConfig` fields may change
    per call.

    >>> Compiler("nope").compile("cafes").errors
    ["unknown backend 'nope': choose one of cpu, openai, transformers, vllm"]
    """

    def __init__(self, backend: str | Backend | None = None, *, config: CompileConfig | None = None, **options):
        settings, extra = _split_options(options)
        config = config or CompileConfig()
        if isinstance(backend, str):
            settings["backend"] = backend
        if extra:
            settings["backend_options"] = {**settings.get("backend_options", config.backend_options), **extra}
        self.config = config.replace(**settings) if settings else config
        self._backend: Backend | None = backend if isinstance(backend, Backend) else None
        self._retriever: TagRetriever | None = None
        self._retrieval_warning: str | None = None
        self._aliases: dict | None = None
        self._lexicon: Lexicon | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ parts
    @property
    def backend_name(self) -> str:
        return self._backend.name if self._backend is not None else self.config.backend

    def backend(self) -> Backend:
        with self._lock:
            if self._backend is None:
                self._backend = get_backend(self.config.backend, **backend_options(self.config))
            return self._backend

    def _load_retriever(self) -> TagRetriever | None:
        if self._retriever is None and self._retrieval_warning is None:
            try:
                self._retriever = TagRetriever.load(self.config.index_dir)
            except Exception as exc:  # missing index, missing extra: prompt without context
                self._retrieval_warning = f"no retrieval context ({str(exc).splitlines()[0]})"
        return self._retriever

    def place_aliases(self) -> dict:
        """Other spellings of places, learned once from the OverpassNL train split on this
        machine (``{}`` without it); they license a place in ``Compilation.unlicensed``."""
        if self._aliases is None:
            self._aliases = train_place_aliases()
        return self._aliases

    def _context_retriever(self, backend: Backend, config: CompileConfig) -> TagRetriever | None:
        """The retriever of the prompt's context: for a backend with a prompt whose config asks for tags
        or examples (None: no context, or no index)."""
        if not backend.needs_prompt or (config.k_tags == 0 and config.k_examples == 0):
            return None
        return self._load_retriever()

    def knowledge(self, backend: Backend, config: CompileConfig | None = None) -> Knowledge:
        """What a request is read with: the backend's knowledge of words (``Backend.knowledge``), else
        the tag names of the prompt's retriever, else the cue tables alone; with the feature lexicon
        (``geoql.nl.lexicon``) whatever the backend, so every reading carries the tags it names
        (``Feature.tags``: what composition builds on)."""
        known = backend.knowledge()
        if known is None:
            retriever = self._context_retriever(backend, config or self.config)
            known = retriever.knowledge if retriever is not None else Knowledge()
        if self._lexicon is None:
            self._lexicon = Lexicon.default()  # loaded once per Compiler; its tables load on first use
        return dataclasses.replace(known, lexicon=self._lexicon)

    def context(self, request: Request | str, config: CompileConfig | None = None) -> tuple[list, list, list[str]]:
        """Tags and examples for the prompt (empty, with a warning, when the index is missing)."""
        config = config or self.config
        if config.k_tags == 0 and config.k_examples == 0:
            return [], [], []
        retriever = self._load_retriever()
        if retriever is None:
            return [], [], [self._retrieval_warning or "no retrieval context"]
        tags, examples = prompt_context(request, retriever, k_tags=config.k_tags, k_examples=config.k_examples)
        return tags, examples, []

    def _request(self, request: Request, backend: Backend, config: CompileConfig) -> tuple[GenerationRequest, list[str]]:
        tags, examples, warnings = ([], [], [])
        messages: list[dict] = []
        if backend.needs_prompt:  # else the backend retrieves by itself and says what it used
            tags, examples, warnings = self.context(request, config)
            messages = build_prompt(request.nl, tags, examples)
        grammar = lark_grammar() if config.grammar and backend.supports_grammar else None
        req = GenerationRequest(request, messages=messages, tags=tuple(tags), examples=tuple(examples), n=config.n,
                                temperature=config.effective_temperature, top_p=config.top_p,
                                max_new_tokens=config.max_new_tokens, grammar=grammar, seed=config.seed)
        return req, warnings

    def _finish(self, comp: Compilation, generation: Generation, config: CompileConfig) -> Compilation:
        t0 = time.perf_counter()
        comp.candidates = make_candidates(list(generation.texts), repair=config.repair)
        best = choose(comp.candidates, mbr=config.mbr and config.n > 1)
        # A fully read request is answered by its composition, whatever the backend (geoql.app.compose).
        best = prefer_composed(comp.request, comp.candidates, best)
        if best is None or not best.query:
            comp.errors.append("the backend returned no query")
        else:
            comp.query, comp.valid = best.query, best.valid
            if not best.valid:
                comp.errors.extend(best.errors)
        comp.timings["decode_s"] = time.perf_counter() - t0
        if comp.query:
            aliases = self.place_aliases()
            t0 = time.perf_counter()
            # What the backend says it answered from licenses tags: its tag hits, the words its lexicon ties to tags.
            evidence = TagEvidence.of(comp.request, hits=generation.tags, word_tags=generation.evidence.word_tags)
            comp.unlicensed = unlicensed_parts(comp.request, comp.query, aliases=aliases, evidence=evidence)
            comp.timings["licence_s"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            try:
                self._assess(comp, generation, aliases)
            except Exception as exc:  # the query stands without its confidence
                comp.warnings.append(f"no confidence for this answer: {type(exc).__name__}: {exc}")
            comp.timings["confidence_s"] = time.perf_counter() - t0
        return comp

    def _assess(self, comp: Compilation, generation: Generation, aliases: dict) -> None:
        """Confidence, uncovered words, distance and topicality (``geoql.app.confidence``), from what the
        backend's ``Generation`` says it rests on (``Evidence``)."""
        evidence = generation.evidence
        found = confidence_mod.assess(comp.request, comp.query, hits=comp.tags, examples=comp.examples,
                                      unlicensed=comp.unlicensed,
                                      # the samples' agreement: a composed query is no sample
                                      candidates=[c for c in comp.candidates if c.source == "backend"],
                                      calibrated=evidence.calibrated, word_tags=evidence.word_tags, aliases=aliases,
                                      calibrator=confidence_mod.load_calibrator(evidence.calibrator_dir))
        comp.confidence, comp.uncovered, comp.nearest = found.confidence, found.uncovered, found.nearest
        comp.far, comp.off_topic, comp.doubts = found.far, found.off_topic, found.warnings
        comp.low_confidence, comp.no_output = found.low_confidence, found.no_output

    # ---------------------------------------------------------------- compile
    def compile(self, nl: str, **options) -> Compilation:
        """Compile one request; never raises (see ``Compilation.errors``)."""
        return self.compile_batch([nl], **options)[0]

    def compile_batch(self, nls: Iterable[str], *, progress: bool = False, batch_size: int = 16,
                      **options) -> list[Compilation]:
        """Compile many requests; backends that batch (vLLM, transformers) get them together."""
        nls = list(nls)
        try:
            fixed = [name for name in ("backend", *LOAD_FIELDS) if name in options and options[name] != getattr(self.config, name)]
            if fixed:
                raise ConfigError(f"{', '.join(fixed)} cannot change between requests of one Compiler: "
                                 f"make one with them, e.g. Compiler({fixed[0]}=...), or pass them to compile()")
            config = self.config.replace(**options) if options else self.config
        except ValueError as exc:
            return [Compilation(nl=nl if isinstance(nl, str) else "", errors=[str(exc)], backend=self.backend_name)
                    for nl in nls]
        results: list[Compilation] = []
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=len(nls), desc=f"compile ({config.backend})", unit="q")
        try:
            for start in range(0, len(nls), max(1, batch_size)):
                results.extend(self._compile_chunk(nls[start:start + batch_size], config))
                if bar is not None:
                    bar.update(len(nls[start:start + batch_size]))
        finally:
            if bar is not None:
                bar.close()
        return results

    def _compile_chunk(self, nls: list, config: CompileConfig) -> list[Compilation]:
        t_start = time.perf_counter()
        comps = [Compilation(nl=nl if isinstance(nl, str) else "", backend=self.backend_name) for nl in nls]
        try:
            backend = self.backend()
        except BackendError as exc:
            for c in comps:
                c.errors.append(str(exc))
                c.failed = True
            return comps
        except Exception as exc:  # a broken install must not crash the caller
            for c in comps:
                c.errors.append(f"cannot start backend {self.backend_name!r}: {type(exc).__name__}: {exc}")
                c.failed = True
            return comps
        pending: list[tuple[Compilation, GenerationRequest]] = []
        todo = []
        for comp, nl in zip(comps, nls):
            problem = check_request(nl, config.max_request_chars)
            if problem:
                comp.errors.append(problem)
            else:
                todo.append((comp, nl))
        if not todo:
            return comps
        try:
            knowledge = self.knowledge(backend, config)
        except BackendError as exc:  # the CPU default's model could not be loaded (or trained)
            for comp, _ in todo:
                comp.errors.append(str(exc))
                comp.failed = True
            return comps
        except Exception as exc:
            for comp, _ in todo:
                comp.errors.append(f"backend {backend.name} failed: {type(exc).__name__}: {exc}")
                comp.failed = True
            return comps
        for comp, nl in todo:
            t0 = time.perf_counter()
            comp.request = read_request(nl.strip(), knowledge)  # the one reading: every step below takes it
            comp.timings["read_s"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            try:
                req, warnings = self._request(comp.request, backend, config)
            except Exception as exc:
                comp.errors.append(f"cannot build the prompt: {type(exc).__name__}: {exc}")
                comp.failed = True
                continue
            comp.warnings = warnings
            comp.timings["retrieval_s"] = time.perf_counter() - t0
            pending.append((comp, req))
        if not pending:
            return comps
        t0 = time.perf_counter()
        try:
            outputs = backend.generate_batch([r for _, r in pending])
        except Exception:
            # One bad request must not sink the batch: retry them one by one.
            outputs = []
            for _, req in pending:
                try:
                    outputs.append(backend.generate(req))
                except BackendError as exc:
                    outputs.append(exc)
                except Exception as exc:
                    outputs.append(BackendError(f"backend {backend.name} failed: {type(exc).__name__}: {exc}"))
        gen_s = (time.perf_counter() - t0) / len(pending)
        for (comp, req), generation in zip(pending, outputs):
            comp.timings["generate_s"] = gen_s
            if isinstance(generation, Exception):
                comp.tags, comp.examples = list(req.tags), list(req.examples)
                comp.errors.append(str(generation))
                comp.failed = True
                continue
            comp.tags, comp.examples = list(generation.tags), list(generation.examples)  # what the backend used
            try:
                self._finish(comp, generation, config)
            except Exception as exc:
                comp.errors.append(f"cannot check the output: {type(exc).__name__}: {exc}")
                comp.failed = True
        total = time.perf_counter() - t_start
        for comp in comps:
            comp.timings["total_s"] = total / len(comps)
        return comps

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()


_COMPILERS: dict[tuple, Compiler] = {}
_COMPILERS_LOCK = threading.Lock()


def compile(nl: str, *, backend: str | None = None, n: int = 1, **options) -> Compilation:  # noqa: A001
    """Compile one request with a cached :class:`Compiler` (model and index stay loaded).

    ``options`` are :class:`app.config.CompileConfig` fields (temperature,
    grammar, max_new_tokens, index_dir, ...) or backend options (model, adapter,
    base_url, ...). ``index_dir`` reaches the CPU backend and, for a language
    model, the prompt's retrieval.

    >>> compile("   ").errors
    ["empty request: describe what to find, e.g. 'drinking water taps in Vienna'"]
    """
    settings, extra = _split_options(options)
    # What the Compiler loads comes with it (and keys the cache); the rest is per request.
    loads = {**{name: settings.pop(name) for name in LOAD_FIELDS if name in settings}, **extra}
    key = (backend or DEFAULT_BACKEND, tuple(sorted((k, repr(v)) for k, v in loads.items())))
    with _COMPILERS_LOCK:
        compiler = _COMPILERS.get(key)
        if compiler is None:
            if len(_COMPILERS) >= 4:
                _COMPILERS.pop(next(iter(_COMPILERS))).close()
            compiler = Compiler(backend, **loads)
            _COMPILERS[key] = compiler
    return compiler.compile(nl, n=n, **settings)
