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
_PIECES = [
    ("space", r"\s+"),
    ("comment", r"//[^\n]*\n?|/\*[\s\S]*?(?:\*/|\Z)"),
    ("string", r'"(?:[^"\\]|\\[\s\S]?)*"?' + "|'(?:[^'\\\\]|\\\\[\\s\\S]?)*'?"),
    ("word", r"[A-Za-z_][A-Za-z0-9_]*"),
    ("number", r"-?\d+(?:\.\d*)?|-\.\d*"),
    ("op", _TWO_CHAR),
    ("char", r"[\s\S]"),
]
_PLAIN = re.compile("|".join(f"(?P<{name}>{rx})" for name, rx in _PIECES))
_TURBO = re.compile(r"(?P<placeholder>\{\{[\s\S]*?\}\})|" + _PLAIN.pattern)


@dataclass(frozen=True, slots=True)
class Token:
    text: str
    kind: str  # string, word, number, op, char, placeholder
    line: int
    column: int
    pos: int


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer("\n", text)]


def tokenize(text: str, *, turbo: bool = False) -> list[Token]:
    """Split ``text`` into tokens; never raises (any character is a token)."""
    starts = _line_starts(text)
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
