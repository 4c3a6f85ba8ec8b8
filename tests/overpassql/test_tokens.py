"""Tokenizer: the token boundaries Overpass uses, and how it unquotes strings."""

from __future__ import annotations

import pytest

from overpassql.tokens import blank_opaque, decode_string, end_line, tokenize


@pytest.mark.parametrize("text, expected", [
    ('node["a"="b"];', ["node", "[", '"a"', "=", '"b"', "]", ";"]),
    ("way(-0.5,1.2,-.3,4)", ["way", "(", "-0.5", ",", "1.2", ",", "-.3", ",", "4", ")"]),
    ("a->.b::c==d!=e||f&&g<<h>>i<=j>=k", ["a", "->", ".", "b", "::", "c", "==", "d", "!=", "e",
                                          "||", "f", "&&", "g", "<<", "h", ">>", "i", "<=", "j",
                                          ">=", "k"]),
    ("node /* c */ // line\n;", ["node", ";"]),
    ("'it\\'s' \"x\\\"y\"", ["'it\\'s'", '"x\\"y"']),
    ('node["open', ["node", "[", '"open']),  # an unterminated string runs to the end
])
def test_token_texts(text, expected):
    assert [t.text for t in tokenize(text)] == expected


def test_line_and_column():
    toks = tokenize('node\n  ["a"];')
    assert [(t.text, t.line, t.column) for t in toks][:3] == [("node", 1, 1), ("[", 2, 3),
                                                               ('"a"', 2, 4)]


def test_placeholders_are_single_tokens_only_in_turbo_mode():
    text = '{{geocodeArea:"Köln"}}->.a;'
    assert tokenize(text, turbo=True)[0].text == '{{geocodeArea:"Köln"}}'
    assert tokenize(text)[0].text == "{"


def test_end_line_counts_lines():
    assert end_line("a\nb") == 2


@pytest.mark.parametrize("text", ["", "\x00\x00", "é€😀", "\\", "'" * 7])
def test_any_text_tokenizes(text):
    assert "".join(t.text for t in tokenize(text)) == text.replace(" ", "")


@pytest.mark.parametrize("token, text", [
    ('"a\\"b"', 'a"b'), ("'x\\ny'", "x\ny"), ('"\\u00e9"', "é"), ('"tab\\t"', "tab\t"),
    ("plain", "plain"), ('"', ""),
])
def test_decode_string(token, text):
    assert decode_string(token) == text


@pytest.mark.parametrize("text, expected", [
    ('node["name"="a;out"];out;', "node[ = ];out;"),
    ("node(1); // out;\nout;", "node(1);  out;"),
    ('node["a"="/* x"]; /* "b" */ out;', "node[ = ];   out;"),  # a string hides a comment mark and a comment a quote
    ("node['it\\'s'];", "node[ ];"),
    ('node["open', "node[ "),  # an unterminated string runs to the end, as in the tokenizer
])
def test_blank_opaque_leaves_only_the_querys_own_text(text, expected):
    assert blank_opaque(text) == expected
