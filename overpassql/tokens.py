"""Tokenizer: OverpassQL text -> tokens, splitting exactly where osm3s_query splits.

Overpass strips comments, folds whitespace, and then cuts words, numbers, quoted
strings (an unterminated string runs to the end of the input) and a few two-character
operators; everything else is a one-character token. With ``turbo=True`` an
overpass-turbo placeholder ``{{...}}`` is one token, so raw dataset queries parse.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

_TWO_CHAR = "::|==|!=|\\|\\||&&|<<|<=|>>|>=|->"
_COMMENT = r"//[^\n]*\n?|/\*[\s\S]*?(?:\*/|\Z)"
_STRING = r'"(?:[^"\\]|\\[\s\S]?)*"?' + "|'(?:[^'\\\\]|\\\\[\\s\\S]?)*'?"
_PIECES = [
    ("space", r"\s+"),
    ("comment", _COMMENT),
    ("string", _STRING),
    ("word", r"[A-Za-z_][A-Za-z0-9_]*"),
    ("number", r"-?\d+(?:\.\d*)?|-\.\d*"),
    ("op", _TWO_CHAR),
    ("char", r"[\s\S]"),
]
_PLAIN = re.compile("|".join(f"(?P<{name}>{rx})" for name, rx in _PIECES))
_TURBO = re.compile(r"(?P<placeholder>\{\{[\s\S]*?\}\})|" + _PLAIN.pattern)
# The parser's fast path: skip blanks and comments, capture one token.
_SKIP = r"(?:\s+|" + _COMMENT + r")*+"  # possessive: never give back
_TOKEN = "|".join(rx for name, rx in _PIECES if name not in ("space", "comment"))
_FAST_PLAIN = re.compile(_SKIP + "(" + _TOKEN + ")")
_FAST_TURBO = re.compile(_SKIP + r"(\{\{[\s\S]*?\}\}|" + _TOKEN + ")")
_OPAQUE = re.compile(_COMMENT + "|" + _STRING)


def blank_opaque(text: str) -> str:
    """``text`` with every comment and quoted string replaced by one blank: what is left is
    only the query's own words and operators (a quick textual check then cannot be fooled
    by a name such as ``"way; out"``). Scanned left to right like the tokenizer, so a quote
    inside a comment, or ``//`` inside a string, is read as Overpass reads it.

    >>> blank_opaque('node["name"="x; out"](1); /* out; */ out;')
    'node[ = ](1);   out;'
    """
    return _OPAQUE.sub(" ", text)


def scan(text: str, *, turbo: bool = False) -> tuple[list[str], list[int]]:
    """Token texts and start offsets (the parser's representation)."""
    match = (_FAST_TURBO if turbo else _FAST_PLAIN).match
    texts, starts = [], []
    pos = 0
    # match() at the previous end, never a search: trailing blanks/comments end the scan.
    m = match(text, pos)
    while m is not None:
        texts.append(m.group(1))
        starts.append(m.start(1))
        m = match(text, m.end())
    return texts, starts


def kind_of(tok: str, turbo: bool = False) -> str:
    c = tok[:1]
    if c in ("\"", "'"):
        return "string"
    if turbo and tok.startswith("{{") and tok.endswith("}}") and len(tok) >= 4:
        return "placeholder"
    if c.isdigit() or (c == "-" and len(tok) > 1 and tok != "->"):
        return "number"
    if c.isascii() and (c.isalpha() or c == "_"):
        return "word"
    return "op" if len(tok) == 2 else "char"


def decode_string(token: str) -> str:
    """Unquote a string token the way Overpass does (``\\n``, ``\\t``, ``\\uXXXX``)."""
    if not token or token[0] not in "\"'":
        return token
    body = token[1:-1] if len(token) > 1 else ""
    if "\\" not in body:
        return body
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            n = body[i + 1]
            if n == "n":
                out.append("\n")
            elif n == "t":
                out.append("\t")
            elif n == "u":
                j = i + 2
                while j < min(i + 6, len(body)) and body[j] in "0123456789abcdefABCDEF":
                    j += 1
                val = int(body[i + 2:j], 16) if j > i + 2 else 0
                if val >= 0x20:
                    out.append(chr(val))
                i = j
                continue
            else:
                out.append(n)
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer("\n", text)]


@dataclass(frozen=True, slots=True)
class Token:
    text: str
    kind: str  # string, word, number, op, char, placeholder
    line: int
    column: int
    pos: int


def tokenize(text: str, *, turbo: bool = False) -> list[Token]:
    """Split ``text`` into tokens; never raises (any character is a token)."""
    starts = line_starts(text)
    out: list[Token] = []
    rx = _TURBO if turbo else _PLAIN
    for m in rx.finditer(text):
        kind = m.lastgroup
        if kind in ("space", "comment"):
            continue
        pos = m.start()
        line = bisect_right(starts, pos)
        out.append(Token(m.group(), kind, line, pos - starts[line - 1] + 1, pos))
    return out


def end_line(text: str) -> int:
    """The line osm3s_query reports for 'Unexpected end of input'."""
    return text.count("\n") + 1
