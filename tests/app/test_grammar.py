"""overpassql/grammar.lark: accepts what our parser accepts, nothing it rejects,
and compiles in the constrained decoders (xgrammar via GBNF, llguidance via Lark)."""

from __future__ import annotations

import random

import pytest

from geoql.app.decoding import validate
from overpassql import grammar as G
from tests.conftest import reference_rows


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


@pytest.fixture(scope="module")
def xgr_accepts(tokenizer):
    import xgrammar as xgr

    compiled = xgr.GrammarCompiler(xgr.TokenizerInfo.from_huggingface(tokenizer)).compile_grammar(G.gbnf_grammar())

    def accepts(text: str) -> bool:
        m = xgr.GrammarMatcher(compiled)
        return m.accept_string(text) and m.accept_token(tokenizer.eos_token_id)

    return accepts


@pytest.fixture(scope="module")
def llg_accepts(tokenizer):
    import llguidance
    import llguidance.hf

    from geoql.app.backends.transformers_backend import to_llguidance_grammar

    start = llguidance.LLMatcher(llguidance.hf.from_tokenizer(tokenizer), to_llguidance_grammar(G.lark_grammar()))
    assert not start.is_error(), start.get_error()

    def accepts(text: str) -> bool:
        m = start.deep_copy()
        ids = tokenizer.encode(text, add_special_tokens=False)
        return m.try_consume_tokens(ids) == len(ids) and m.is_accepting()

    return accepts


@pytest.fixture(scope="module")
def valid_gold():
    return [r["query"] for r in reference_rows("gold_reference.jsonl") if not validate(r["query"])]


def test_most_gold_queries_are_valid(valid_gold):
    # 8,259 of 8,352 gold queries parse cleanly for the reference converter.
    assert len(valid_gold) >= 8200


def test_xgrammar_accepts_every_valid_gold_query(valid_gold, xgr_accepts):
    rejected = [q for q in valid_gold if not xgr_accepts(q)]
    assert rejected == []


def test_llguidance_accepts_every_valid_gold_query(valid_gold, llg_accepts):
    rejected = [q for q in valid_gold if not llg_accepts(q)]
    assert rejected == []


def test_lark_reference_parser_agrees_on_a_sample(valid_gold):
    sample = random.Random(0).sample(valid_gold, 150)
    assert [q for q in sample if not G.accepts(q)] == []


@pytest.mark.parametrize("name", ["gold_reference.jsonl", "conformance.jsonl"])
def test_everything_accepted_from_reference_files_parses(name, xgr_accepts, llg_accepts):
    # conformance.jsonl: truncated, mutated and alternative queries, half invalid.
    queries = [r["query"] for r in reference_rows(name)]
    accepted_invalid = [q for q in queries if (xgr_accepts(q) or llg_accepts(q)) and validate(q)]
    assert accepted_invalid == []
    assert any(validate(q) for q in queries)  # the files do hold queries to reject


def test_random_strings_of_the_grammar_parse(xgr_accepts, llg_accepts):
    rng = random.Random(1)
    samples = [G.sample(rng) for _ in range(1500)]
    assert all(xgr_accepts(s) for s in samples[:300])  # the sampler really samples the language
    assert all(llg_accepts(s) for s in samples[:300])
    failing = [s for s in samples if validate(s)]
    assert failing == []


def _mutations(query: str, rng: random.Random):
    i = rng.randrange(len(query))
    yield query[:i]  # truncation
    yield query[:i] + query[i + 1:]  # a character deleted
    yield query[:i] + rng.choice("\"';()[]{}.-:~!= ") + query[i:]  # a character inserted
    j = rng.randrange(len(query))
    yield query[:i] + query[j] + query[i + 1:]  # a character replaced


def test_mutated_gold_queries_accepted_only_when_they_parse(valid_gold, xgr_accepts):
    rng = random.Random(2)
    accepted_invalid = []
    for q in rng.sample(valid_gold, 800):
        for m in _mutations(q, rng):
            if xgr_accepts(m) and validate(m):
                accepted_invalid.append(m)
    assert accepted_invalid == []


def test_grammar_has_no_left_recursion():
    g = G.grammar_model()

    def first_refs(expr) -> set[str]:
        if isinstance(expr, G.Ref):
            return {expr.name}
        if isinstance(expr, G.Alt):
            return set().union(*(first_refs(o) for o in expr.options))
        if isinstance(expr, G.Repeat):
            return first_refs(expr.item)
        if isinstance(expr, G.Seq):
            out: set[str] = set()
            for item in expr.items:
                out |= first_refs(item)
                if not (isinstance(item, G.Repeat) and item.min == 0):
                    break
            return out
        return set()

    for name in g.rules:
        seen, stack = set(), list(first_refs(g.rules[name]))
        while stack:
            ref = stack.pop()
            assert ref != name, f"rule {name} is left-recursive"
            if ref in g.rules and ref not in seen:
                seen.add(ref)
                stack.extend(first_refs(g.rules[ref]))


def test_gbnf_has_every_rule_and_xgrammar_compiles_it(tokenizer):
    import xgrammar as xgr

    text = G.gbnf_grammar()
    for name in G.grammar_model().rules:
        assert f"\n{name.replace('_', '-')} ::= " in "\n" + text
    compiled = xgr.GrammarCompiler(xgr.TokenizerInfo.from_huggingface(tokenizer)).compile_grammar(text)
    assert compiled.memory_size_bytes > 0


def test_llguidance_compiles_the_lark_grammar(tokenizer):
    import llguidance
    import llguidance.hf

    from geoql.app.backends.transformers_backend import to_llguidance_grammar

    for source in (G.lark_grammar(), G.gbnf_grammar()):  # GBNF arrives over HTTP
        spec = to_llguidance_grammar(source)
        is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(
            spec, llguidance.hf.from_tokenizer(tokenizer))
        assert not is_error, messages


def test_unsupported_grammar_syntax_is_reported():
    with pytest.raises(G.GrammarFileError, match="flags"):
        G.parse_grammar_text('start: /a/i\n')
    with pytest.raises(G.GrammarFileError, match="start"):
        G.parse_grammar_text('other: "a"\n')
