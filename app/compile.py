"""``compile(nl)``: a request in words -> one OverpassQL query, checked.

Pipeline: check the request -> retrieve tags and examples -> build the prompt
(``retrieval.build_prompt``) -> the backend produces candidate texts
(grammar-constrained where it can) -> extract, validate and choose
(``app.decoding``). Nothing inside raises to the caller: problems end up in
``Compilation.errors`` with a message that says what to do.
"""

from __future__ import annotations

import threading
import time
import unicodedata
from dataclasses import dataclass, field, fields
from typing import Any, Iterable

from geoql.app.backends.base import Backend, BackendError, GenerationRequest
from geoql.app.config import CompileConfig
from geoql.app.decoding import Candidate, choose, make_candidates


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

    def as_dict(self) -> dict:
        def plain(x):
            if hasattr(x, "__dataclass_fields__"):
                return {f.name: getattr(x, f.name) for f in fields(x)}
            return x

        return {"nl": self.nl, "query": self.query, "valid": self.valid, "errors": list(self.errors),
                "candidates": [c.as_dict() for c in self.candidates],
                "tags": [plain(t) for t in self.tags], "examples": [plain(e) for e in self.examples],
                "backend": self.backend, "timings": dict(self.timings), "warnings": list(self.warnings)}


def _split_options(options: dict) -> tuple[dict, dict]:
    """Compile settings vs. backend options (model=, base_url=, ...)."""
    known = {f.name for f in fields(CompileConfig)}
    return ({k: v for k, v in options.items() if k in known},
            {k: v for k, v in options.items() if k not in known})


def check_request(nl: Any, max_chars: int) -> str | None:
    """A message for a request that cannot be compiled, else None."""
    if not isinstance(nl, str):
        return f"the request must be text, got {type(nl).__name__}"
    if not nl.strip():
        return "empty request: describe what to find, e.g. 'drinking water taps in Vienna'"
    # Punctuation alone asks for nothing, and any answer would be a guess; symbols
    # such as emoji (category S) may name a thing, so they still compile.
    if all(unicodedata.category(ch)[0] in "PZC" for ch in nl):
        return "the request has no words, only punctuation: describe what to find, e.g. 'drinking water taps in Vienna'"
    if len(nl) > max_chars:
        return f"request too long ({len(nl)} characters; at most {max_chars}): shorten it to one request"
    return None


class Compiler:
    """Keeps a backend and the retrieval index loaded between requests.

    >>> Compiler("nope").compile("cafes").errors
    ["unknown backend 'nope': choose one of openai, retrieval, transformers, vllm"]
    """

    def __init__(self, backend: str | Backend | None = None, *, config: CompileConfig | None = None, **options):
        settings, backend_options = _split_options(options)
        config = config or CompileConfig()
        if isinstance(backend, str):
            settings["backend"] = backend
        if backend_options:
            settings["backend_options"] = {**config.backend_options, **backend_options}
        self.config = config.replace(**settings) if settings else config
        self._backend: Backend | None = backend if isinstance(backend, Backend) else None
        self._backend_error: str | None = None
        self._retrievers = None
        self._retrieval_warning: str | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ parts
    @property
    def backend_name(self) -> str:
        return self._backend.name if self._backend is not None else self.config.backend

    def backend(self) -> Backend:
        with self._lock:
            if self._backend is None:
                from geoql.app.backends import get_backend

                self._backend = get_backend(self.config.backend, **self.config.backend_options)
            return self._backend

    def _load_retrievers(self):
        if self._retrievers is None and self._retrieval_warning is None:
            try:
                from geoql.retrieval import TagRetriever

                tags = TagRetriever.load(self.config.index_dir)
                # The tag retriever already holds a loaded example retriever: share it.
                self._retrievers = (tags, tags.examples)
            except Exception as exc:  # missing index, missing extra: prompt without context
                self._retrieval_warning = f"no retrieval context ({str(exc).splitlines()[0]})"
        return self._retrievers

    def context(self, nl: str) -> tuple[list, list, list[str]]:
        """Tags and examples for the prompt (empty, with a warning, when the index is missing)."""
        if self.config.k_tags == 0 and self.config.k_examples == 0:
            return [], [], []
        retrievers = self._load_retrievers()
        if retrievers is None:
            return [], [], [self._retrieval_warning or "no retrieval context"]
        tags_r, ex_r = retrievers
        tags = tags_r.search(nl, k=self.config.k_tags) if self.config.k_tags else []
        examples = ex_r.search(nl, k=self.config.k_examples) if self.config.k_examples else []
        return list(tags), list(examples), []

    def _request(self, nl: str, backend: Backend, config: CompileConfig) -> tuple[GenerationRequest, list[str]]:
        tags, examples, warnings = ([], [], [])
        messages: list[dict] = []
        if backend.needs_prompt:
            from geoql.retrieval import build_prompt

            tags, examples, warnings = self.context(nl)
            messages = build_prompt(nl, tags, examples)
        else:
            try:  # what the backend looks at by itself (the CPU default: tag hints, neighbours), shown to users
                tags, examples = backend.context(nl)
            except BackendError:
                pass  # generate() reports the problem with its fix
        grammar = None
        if config.grammar and backend.supports_grammar:
            from overpassql.grammar import lark_grammar

            grammar = lark_grammar()
        req = GenerationRequest(nl=nl, messages=messages, tags=tags, examples=examples, n=config.n,
                                temperature=config.effective_temperature, top_p=config.top_p,
                                max_new_tokens=config.max_new_tokens, grammar=grammar, seed=config.seed)
        return req, warnings

    def _finish(self, comp: Compilation, texts: list[str], config: CompileConfig) -> Compilation:
        t0 = time.perf_counter()
        comp.candidates = make_candidates(texts, repair=config.repair)
        best = choose(comp.candidates, mbr=config.mbr and config.n > 1)
        if best is None or not best.query:
            comp.errors.append("the backend returned no query")
        else:
            comp.query, comp.valid = best.query, best.valid
            if not best.valid:
                comp.errors.extend(best.errors)
        comp.timings["decode_s"] = time.perf_counter() - t0
        return comp

    # ---------------------------------------------------------------- compile
    def compile(self, nl: str, **options) -> Compilation:
        """Compile one request; never raises (see ``Compilation.errors``)."""
        return self.compile_batch([nl], **options)[0]

    def compile_batch(self, nls: Iterable[str], *, progress: bool = False, batch_size: int = 16,
                      **options) -> list[Compilation]:
        """Compile many requests; backends that batch (vLLM, transformers) get them together."""
        nls = list(nls)
        try:
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
            return comps
        except Exception as exc:  # a broken install must not crash the caller
            for c in comps:
                c.errors.append(f"cannot start backend {self.backend_name!r}: {type(exc).__name__}: {exc}")
            return comps
        pending: list[tuple[Compilation, GenerationRequest]] = []
        for comp, nl in zip(comps, nls):
            problem = check_request(nl, config.max_request_chars)
            if problem:
                comp.errors.append(problem)
                continue
            t0 = time.perf_counter()
            try:
                req, warnings = self._request(nl.strip(), backend, config)
            except Exception as exc:
                comp.errors.append(f"cannot build the prompt: {type(exc).__name__}: {exc}")
                continue
            comp.tags, comp.examples, comp.warnings = req.tags, req.examples, warnings
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
        for (comp, _), texts in zip(pending, outputs):
            comp.timings["generate_s"] = gen_s
            if isinstance(texts, Exception):
                comp.errors.append(str(texts))
                continue
            try:
                self._finish(comp, list(texts), config)
            except Exception as exc:
                comp.errors.append(f"cannot check the output: {type(exc).__name__}: {exc}")
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
    grammar, max_new_tokens, ...) or backend options (model, adapter,
    base_url, ...).

    >>> compile("   ").errors
    ["empty request: describe what to find, e.g. 'drinking water taps in Vienna'"]
    """
    settings, backend_options = _split_options(options)
    key = (backend or CompileConfig().backend, tuple(sorted((k, repr(v)) for k, v in backend_options.items())))
    with _COMPILERS_LOCK:
        compiler = _COMPILERS.get(key)
        if compiler is None:
            if len(_COMPILERS) >= 4:
                _COMPILERS.pop(next(iter(_COMPILERS))).close()
            compiler = Compiler(backend, **backend_options)
            _COMPILERS[key] = compiler
    return compiler.compile(nl, n=n, **settings)
