"""A local Hugging Face model (optionally + a PEFT LoRA adapter), CPU or GPU.

Decoding is constrained by the OverpassQL grammar through llguidance: at every
step a token mask allows only continuations the grammar accepts. A grammar
alone cannot stop a model from running out of tokens mid-query (the failure
that cost the best open 4B model its points), so when the token budget is
nearly spent the processor switches to *closing*: it forces the shortest
grammar-valid ending it can find (close the string, the bracket, the
statement) and then end-of-sequence. With a grammar, every output parses.
"""

from __future__ import annotations

import threading
import weakref
from pathlib import Path
from typing import ClassVar

from geoql.app.backends.base import Backend, BackendError, Generation, GenerationRequest
from geoql.app.models import resolve_model
from geoql.core.errors import GeoqlError
from geoql.app.tiny_model import train_tokenizer
from overpassql.grammar import gbnf_grammar, lark_grammar, llguidance_grammar

# Characters tried, in this order, when closing a query under a short budget:
# closers first, then what statements need; one letter and one digit stand
# for names and numbers in the first pass, the whole alphabet in the second.
_CLOSERS = list("\"')]};.[({>=,:~- ") + ["a", "0"]
# T and Z: timestamps (yyyy-mm-ddThh:mm:ssZ) are the only place upper case is required.
_ALL_CHARS = _CLOSERS + [c for c in "abcdefghijklmnopqrstuvwxyz0123456789_TZ" if c not in _CLOSERS]
# UTF-8 continuation bytes that complete any lead byte (E0 needs >= A0, F0 >= 90).
_CONTINUATION_BYTES = (b"\x80", b"\x90", b"\xa0")


def to_llguidance_grammar(grammar: str) -> str:
    """llguidance's grammar spec for a Lark or GBNF text."""
    import llguidance

    # Our own grammar, whether it came as Lark or (over HTTP) as GBNF, goes to
    # llguidance in its Lark form: llguidance's GBNF reader trips over some
    # character classes of the generated GBNF.
    if grammar in (lark_grammar(), gbnf_grammar()):
        grammar = llguidance_grammar()
    fmt = "gbnf" if "::=" in grammar else "lark"
    return llguidance.grammar_from(fmt, grammar)


# Per tokenizer (weakly held): llguidance's tokenizer, the checked grammar specs and the
# closing tables. Building them walks the whole vocabulary: about 10 s for a real
# 49k-token BPE on a busy CPU, which every generate call would otherwise pay again.
_TABLES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_TABLES_LOCK = threading.Lock()


def _single_char_tokens(tokenizer) -> dict[str, int]:
    """Token ids that decode to exactly one of the closing characters."""
    found: dict[str, int] = {}
    for tok, idx in tokenizer.get_vocab().items():
        text = tokenizer.convert_tokens_to_string([tok])
        if len(text) == 1 and text in _ALL_CHARS and text not in found:
            found[text] = idx
    return found


def _tokenizer_tables(tokenizer, grammar: str):
    """``(ll_tokenizer, spec, single-character tokens, continuation-byte tokens, blank-line tokens)``,
    cached per tokenizer."""
    import llguidance
    import llguidance.hf

    with _TABLES_LOCK:
        try:
            entry = _TABLES.get(tokenizer)
        except TypeError:  # not weakly referenceable: no cache
            entry = None
        if entry is None:
            ll_tokenizer = llguidance.hf.from_tokenizer(tokenizer)
            # A sampled token can stop inside a multi-byte character; continuation
            # bytes let the closer finish it before it closes quotes and brackets.
            cont = [t for t in range(ll_tokenizer.vocab_size)
                    if ll_tokenizer.decode_bytes([t]) in _CONTINUATION_BYTES]
            # Tokens that are only whitespace with a blank line in it: the separator of few-shot examples.
            blank = frozenset(t for t in range(ll_tokenizer.vocab_size)
                              if (b := ll_tokenizer.decode_bytes([t])).count(b"\n") >= 2 and not b.strip())
            entry = {"ll": ll_tokenizer, "single": _single_char_tokens(tokenizer), "cont": cont, "blank": blank,
                     "specs": {}}
            try:
                _TABLES[tokenizer] = entry
            except TypeError:
                pass
        spec = entry["specs"].get(grammar)
        if spec is None:
            spec = to_llguidance_grammar(grammar)
            is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(spec, entry["ll"])
            if is_error:
                raise BackendError(f"grammar rejected by llguidance: {messages}")
            entry["specs"][grammar] = spec
    return entry["ll"], spec, entry["single"], entry["cont"], entry["blank"]


class _OpenDepth:
    """How many brackets of a query's prefix are still open (strings skipped), fed byte chunks.

    >>> d = _OpenDepth(); d.feed(b'((node["name"="a(b"](around:'); d.depth
    3
    >>> d.feed(b'5);'); d.depth
    2
    """

    _OPEN, _CLOSE = b"([{", b")]}"

    def __init__(self) -> None:
        self.depth = 0
        self.quote: int | None = None
        self.escaped = False

    def feed(self, chunk: bytes) -> None:
        for byte in chunk:
            if self.quote is not None:
                if self.escaped:
                    self.escaped = False
                elif byte == 0x5C:  # backslash
                    self.escaped = True
                elif byte == self.quote:
                    self.quote = None
            elif byte in b"\"'":
                self.quote = byte
            elif byte in self._OPEN:
                self.depth += 1
            elif byte in self._CLOSE:
                self.depth = max(0, self.depth - 1)


class GrammarConstraint:
    """Per-row llguidance matchers + budget-aware closing, as a HF logits processor.

    Closing starts when the tokens left fall to ``reserve`` plus two per open bracket.
    """

    def __init__(self, tokenizer, grammar: str, *, max_new_tokens: int, reserve: int = 48):
        self.ll_tokenizer, self.spec, single, cont, self.blank_lines = _tokenizer_tables(tokenizer, grammar)
        self.eos = self.ll_tokenizer.eos_token
        self.max_new_tokens = max_new_tokens
        self.reserve = min(reserve, max(1, max_new_tokens // 2))
        self.vocab = self.ll_tokenizer.vocab_size
        self.passes = [[single[c] for c in _CLOSERS if c in single] + cont,
                       [single[c] for c in _ALL_CHARS if c in single] + cont]
        # Letters, digits and spaces are fallbacks: tried only where no punctuation fits.
        self._alnum = {idx for c, idx in single.items() if c.isalnum() or c in " _"}
        self.matchers: list = []
        self.plans: list[list[int] | None] = []
        self.depths: list[_OpenDepth] = []
        self.prompt_len: int | None = None
        self.done: list[bool] = []

    def _closing_plan(self, matcher, limit: int) -> list[int] | None:
        """Tokens that bring ``matcher`` to an accepting state, shortest found first.

        Iterative deepening over single-character tokens (closers first):
        depth-first alone would wander into long names.
        """
        budget = [0]

        def allowed(chars: list[int]) -> tuple[int, ...]:
            return tuple(t for t in chars if matcher.validate_tokens([t]) == 1)

        def dfs(depth: int, cap: int, chars: list[int]) -> list[int] | None:
            if matcher.is_accepting():
                return []
            if depth >= cap or budget[0] <= 0:
                return None
            budget[0] -= 1
            here = allowed(chars)
            # Letters, digits and spaces only where no punctuation fits: they
            # would grow names and numbers instead of closing anything. Among
            # the rest, characters that change what may follow (a closing
            # quote or brace) go before ones that leave it as it is (more
            # text inside a string).
            punct = [t for t in here if t not in self._alnum] or list(here)
            ranked = []
            for rank, tid in enumerate(punct):
                matcher.consume_token(tid)
                same = allowed(chars) == here
                matcher.rollback(1)
                ranked.append((same, rank, tid))
            for _, _, tid in sorted(ranked):
                matcher.consume_token(tid)
                rest = dfs(depth + 1, cap, chars)
                matcher.rollback(1)
                if rest is not None:
                    return [tid] + rest
            return None

        for chars in self.passes:
            for cap in sorted({min(c, limit) for c in (4, 8, 16, 32, limit)}):
                budget[0] = 3000
                plan = dfs(0, cap, chars)
                if plan is not None:
                    return plan
        return None

    def __call__(self, input_ids, scores):
        import llguidance
        import llguidance.torch
        import numpy as np
        import torch

        batch = input_ids.shape[0]
        if self.prompt_len is None:
            self.prompt_len = input_ids.shape[1]
            self.matchers = [llguidance.LLMatcher(self.ll_tokenizer, self.spec) for _ in range(batch)]
            self.plans = [None] * batch
            self.depths = [_OpenDepth() for _ in range(batch)]
            self.done = [False] * batch
        else:
            for row in range(batch):
                if self.done[row]:
                    continue
                tid = int(input_ids[row, -1])
                if tid == self.eos or not self.matchers[row].consume_token(tid):
                    self.done[row] = True
                else:
                    self.depths[row].feed(self.ll_tokenizer.decode_bytes([tid]))
        generated = input_ids.shape[1] - self.prompt_len
        remaining = self.max_new_tokens - generated
        mask = llguidance.torch.allocate_token_bitmask(batch, self.vocab)
        forced: dict[int, int] = {}
        for row in range(batch):
            matcher = self.matchers[row]
            if self.done[row] or matcher.is_stopped():
                forced[row] = self.eos
                continue
            # Each open bracket costs about two tokens to close (a group needs ");"),
            # so a deeply nested query starts closing earlier; once started, it
            # follows its plan to the end.
            if self.plans[row] is not None or remaining <= self.reserve + 2 * self.depths[row].depth:
                if self.plans[row] is None:
                    self.plans[row] = self._closing_plan(matcher, max(1, remaining - 1)) or []
                plan = self.plans[row]
                if matcher.is_accepting():
                    forced[row] = self.eos
                elif plan:
                    forced[row] = plan.pop(0)
            llguidance.torch.fill_next_token_bitmask(matcher, mask, row)
        # Unpack the bit mask here: llguidance's own helper goes through
        # torch.compile, which costs seconds per call on a CPU.
        allowed = np.unpackbits(mask.numpy().view(np.uint8), axis=1, bitorder="little")[:, : self.vocab]
        # A complete query whose model wants to leave the language - prose, a code
        # fence, the "<request>" of a next few-shot example, a blank line - is finished:
        # that is how a real model says "done" after few-shot examples, which end with
        # a blank line, not with the end-of-turn token. Forcing a grammar token there
        # instead made it write statement after statement until the budget ran out.
        if self.eos < self.vocab:
            best = scores[:, : self.vocab].argmax(dim=-1).tolist()
            for row in range(batch):
                if row in forced or not self.matchers[row].is_accepting():
                    continue
                if best[row] != self.eos and (not allowed[row, best[row]] or best[row] in self.blank_lines):
                    forced[row] = self.eos
        blocked = torch.ones_like(scores, dtype=torch.bool)
        blocked[:, : self.vocab] = torch.from_numpy(allowed == 0).to(scores.device)
        scores = scores.masked_fill(blocked, -float("inf"))
        for row, tid in forced.items():
            scores[row, :] = -float("inf")
            scores[row, tid] = 0.0
        return scores


class TransformersBackend(Backend):
    """Options: ``model`` (directory, hub id, ``.gguf`` file or a registered name such as
    ``smollm2-135m``: :mod:`geoql.app.models`; required), ``adapter`` (PEFT
    directory), ``device`` ("cpu", "cuda", "auto"), ``dtype`` ("auto",
    "float32", "bfloat16", "float16"), ``batch_size`` (requests per forward pass)."""

    name: ClassVar[str] = "transformers"
    supports_grammar: ClassVar[bool] = True

    def __init__(self, model: str | Path | None = None, *, adapter: str | Path | None = None,
                 device: str = "auto", dtype: str = "auto", batch_size: int = 8):
        if not model:
            raise BackendError("the transformers backend needs a model: pass model=DIR (a Hugging Face "
                               "model directory or hub id), e.g. --option model=./runs/sft/merged")
        self.model_path = str(model)
        self.adapter = str(adapter) if adapter else None
        self.device = device
        self.dtype = dtype
        self.batch_size = int(batch_size)
        if self.batch_size < 1:
            raise BackendError("batch_size must be >= 1")
        self._model = None
        self._tokenizer = None
        self._lock = threading.Lock()

    def _load(self):
        with self._lock:
            if self._model is not None:
                return self._model, self._tokenizer
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

            device = self.device
            if device == "auto":
                device = "cuda" if torch.cuda.is_available() else "cpu"
            dtype = {"auto": "auto", "float32": torch.float32, "bfloat16": torch.bfloat16,
                     "float16": torch.float16}.get(self.dtype)
            if dtype is None:
                raise BackendError(f"unknown dtype {self.dtype!r}: use auto, float32, bfloat16 or float16")
            try:
                path = resolve_model(self.model_path)
                tokenizer = AutoTokenizer.from_pretrained(path)
                model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
            except GeoqlError as exc:
                raise BackendError(str(exc)) from None
            except (OSError, ValueError) as exc:
                raise BackendError(f"cannot load model {self.model_path!r}: {exc}".splitlines()[0]) from None
            if self.adapter:
                try:
                    from peft import PeftModel

                    model = PeftModel.from_pretrained(model, self.adapter)
                except (OSError, ValueError) as exc:
                    raise BackendError(f"cannot load adapter {self.adapter!r}: {exc}".splitlines()[0]) from None
            model.to(device)
            model.eval()
            if tokenizer.pad_token_id is None:
                tokenizer.pad_token = tokenizer.eos_token
            tokenizer.padding_side = "left"  # decoder-only batches pad on the left
            self._model, self._tokenizer = model, tokenizer
            return model, tokenizer

    @property
    def tokenizer(self):
        return self._load()[1]

    def generate(self, request: GenerationRequest) -> Generation:
        return self.generate_batch([request])[0]

    def generate_batch(self, requests: list[GenerationRequest]) -> list[Generation]:
        results: list[list[str]] = []
        # Requests in one forward pass must share decoding settings.
        for start in range(0, len(requests), self.batch_size):
            chunk = requests[start:start + self.batch_size]
            groups: dict[tuple, list[int]] = {}
            for i, r in enumerate(chunk):
                groups.setdefault((r.n, r.temperature, r.top_p, r.max_new_tokens, r.grammar, r.seed), []).append(i)
            chunk_out: list[list[str] | None] = [None] * len(chunk)
            for idxs in groups.values():
                outs = self._generate_group([chunk[i] for i in idxs])
                for i, out in zip(idxs, outs):
                    chunk_out[i] = out
            results.extend(chunk_out)  # type: ignore[arg-type]
        return [r.generation(texts) for r, texts in zip(requests, results)]

    def _generate_group(self, requests: list[GenerationRequest]) -> list[list[str]]:
        import torch
        from transformers import LogitsProcessorList

        model, tokenizer = self._load()
        first = requests[0]
        prompts = [tokenizer.apply_chat_template(r.messages, tokenize=False, add_generation_prompt=True)
                   for r in requests]
        enc = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
        kwargs = dict(max_new_tokens=first.max_new_tokens, num_return_sequences=first.n,
                      pad_token_id=tokenizer.pad_token_id)
        if first.greedy:
            kwargs.update(do_sample=False, num_return_sequences=1)
        else:
            kwargs.update(do_sample=True, temperature=first.temperature, top_p=first.top_p, top_k=0)
        if not first.grammar:
            # Without the grammar nothing ends a few-shot answer but the next example's
            # "<request>" (the prompt's own layout: geoql.retrieval.build_prompt); stop there
            # instead of writing more examples. Extraction drops the marker.
            kwargs.update(stop_strings=["<request>"], tokenizer=tokenizer)
        if first.grammar:
            kwargs["logits_processor"] = LogitsProcessorList(
                [GrammarConstraint(tokenizer, first.grammar, max_new_tokens=first.max_new_tokens)])
        if first.seed is not None:
            torch.manual_seed(first.seed)
        with torch.no_grad():
            out = model.generate(**enc, **kwargs)
        new = out[:, enc["input_ids"].shape[1]:]
        texts = tokenizer.batch_decode(new, skip_special_tokens=True)
        per = kwargs["num_return_sequences"]
        return [texts[i * per:(i + 1) * per] for i in range(len(requests))]

    def describe(self) -> str:
        return f"transformers ({self.model_path}{' + ' + self.adapter if self.adapter else ''})"

    def close(self) -> None:
        self._model = None
        self._tokenizer = None


_TEXT_CLOSER: list = []


def complete_truncated(text: str, limit: int = 64) -> str | None:
    """``text`` closed into a grammar-valid query, or None when it is no prefix of one.

    For outputs cut off by a token budget elsewhere (vLLM, OpenAI servers):
    the same closing search as during constrained decoding, over a small
    byte-level tokenizer, so any model's text can be repaired.

    >>> complete_truncated('node["amenity"="cafe"](around:100')
    'node["amenity"="cafe"](around:100);'
    >>> complete_truncated('SELECT * FROM nodes') is None
    True
    """
    import llguidance

    if not _TEXT_CLOSER:
        tok = train_tokenizer(["node;out;"], vocab_size=300)  # the 256 bytes, few merges
        _TEXT_CLOSER.append((tok, GrammarConstraint(tok, lark_grammar(), max_new_tokens=2 * limit + 2)))
    tok, closer = _TEXT_CLOSER[0]
    matcher = llguidance.LLMatcher(closer.ll_tokenizer, closer.spec)
    ids = tok.encode(text, add_special_tokens=False)
    if matcher.try_consume_tokens(ids) != len(ids):
        return None
    if matcher.is_accepting():
        return text
    plan = closer._closing_plan(matcher, limit)
    if plan is None:
        return None
    return tok.decode(ids + plan)
