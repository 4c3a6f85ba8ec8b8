"""The OverpassQL grammar for constrained decoding, in the formats decoders want.

``grammar.lark`` (beside this file) is the single source. From it:

- :func:`lark_grammar` — the Lark text, for llguidance (the transformers
  backend, vLLM's ``guidance`` structured-output backend);
- :func:`gbnf_grammar` — the same language as GBNF/EBNF for xgrammar (vLLM's
  default structured-output backend), with ``%ignore`` whitespace made explicit;
- :func:`accepts` — a reference recogniser (Lark's Earley parser);
- :func:`sample` — random strings of the language, for tests that check that
  whatever the grammar accepts, ``overpassql.parse`` accepts too.

>>> accepts('node["amenity"="cafe"]({{bbox}});out;')
True
>>> accepts('node["amenity"="cafe"]({{bbox}});out')   # truncated
False
>>> gbnf_grammar().splitlines()[0]
'root ::= ws start'
"""

from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

try:  # Python >= 3.11
    import re._parser as _sre_parse  # type: ignore[import-not-found]
    import re._constants as _sre_c  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sre_c  # type: ignore[no-redef]
    import sre_parse as _sre_parse  # type: ignore[no-redef]

GRAMMAR_PATH = Path(__file__).with_name("grammar.lark")


class GrammarFileError(ValueError):
    """grammar.lark uses syntax outside the subset this module converts."""


# ---------------------------------------------------------------- the model
@dataclass
class Lit:
    text: str


@dataclass
class Regex:
    pattern: str


@dataclass
class Ref:
    name: str


@dataclass
class Seq:
    items: list


@dataclass
class Alt:
    options: list


@dataclass
class Repeat:
    item: object
    min: int
    max: int | None  # None: unbounded


@dataclass
class Grammar:
    """Rules (lower-case names) and terminals (upper-case) as expression trees."""

    rules: dict[str, object] = field(default_factory=dict)
    terminals: dict[str, object] = field(default_factory=dict)
    ignore: str | None = None  # name of the %ignore'd terminal

    def definition(self, name: str):
        return self.terminals[name] if name.isupper() else self.rules[name]


# ------------------------------------------------------- reading grammar.lark
_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment>//[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"i?)
  | (?P<regex>/(?:[^/\\\n]|\\.)+/[imsx]*)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>[|()?*+])
    """,
    re.VERBOSE,
)
_HEADER_RE = re.compile(r"^\??([A-Za-z_][A-Za-z0-9_]*)\s*:(?!:)", re.MULTILINE)


def _tokens(text: str):
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if not m:
            raise GrammarFileError(f"grammar.lark: unsupported syntax near {text[pos:pos + 30]!r}")
        pos = m.end()
        kind = m.lastgroup
        if kind not in ("ws", "comment"):
            yield kind, m.group()


class _ExprParser:
    """alternatives := sequence ('|' sequence)*; sequence := (atom postfix?)*"""

    def __init__(self, tokens):
        self.tokens = list(tokens)
        self.pos = 0

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else (None, None)

    def parse(self):
        expr = self.alternatives()
        if self.pos != len(self.tokens):
            raise GrammarFileError(f"grammar.lark: unexpected {self.peek()[1]!r}")
        return expr

    def alternatives(self):
        options = [self.sequence()]
        while self.peek() == ("op", "|"):
            self.pos += 1
            options.append(self.sequence())
        return options[0] if len(options) == 1 else Alt(options)

    def sequence(self):
        items = []
        while True:
            kind, value = self.peek()
            if kind is None or (kind == "op" and value in "|)"):
                break
            items.append(self.postfix(self.atom()))
        return items[0] if len(items) == 1 else Seq(items)

    def atom(self):
        kind, value = self.peek()
        self.pos += 1
        if kind == "string":
            if value.endswith("i"):
                raise GrammarFileError("grammar.lark: case-insensitive literals are not supported")
            return Lit(ast.literal_eval(value))
        if kind == "regex":
            body, _, flags = value[1:].rpartition("/")
            if flags:
                raise GrammarFileError("grammar.lark: regex flags are not supported")
            return Regex(body)
        if kind == "name":
            return Ref(value)
        if (kind, value) == ("op", "("):
            inner = self.alternatives()
            if self.peek() != ("op", ")"):
                raise GrammarFileError("grammar.lark: missing ')'")
            self.pos += 1
            return inner
        raise GrammarFileError(f"grammar.lark: unexpected {value!r}")

    def postfix(self, item):
        kind, value = self.peek()
        if kind == "op" and value in "?*+":
            self.pos += 1
            return Repeat(item, 0 if value in "?*" else 1, 1 if value == "?" else None)
        return item


def parse_grammar_text(text: str) -> Grammar:
    """Read the Lark subset used by grammar.lark into a :class:`Grammar`."""
    grammar = Grammar()
    body_lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("%ignore"):
            grammar.ignore = stripped.split()[1]
            continue
        if stripped.startswith("%"):
            raise GrammarFileError(f"grammar.lark: unsupported directive {stripped!r}")
        body_lines.append(line)
    body = "\n".join(body_lines)
    headers = list(_HEADER_RE.finditer(body))
    for i, m in enumerate(headers):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(body)
        expr = _ExprParser(_tokens(body[m.end():end])).parse()
        target = grammar.terminals if m.group(1).isupper() else grammar.rules
        target[m.group(1)] = expr
    if "start" not in grammar.rules:
        raise GrammarFileError("grammar.lark: no 'start' rule")
    return grammar


@lru_cache(maxsize=None)
def lark_grammar() -> str:
    """The grammar as Lark text (what llguidance and Lark read)."""
    return GRAMMAR_PATH.read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def llguidance_grammar() -> str:
    """The Lark text as llguidance should read it.

    llguidance lexes greedily, as Overpass' own tokenizer does, so ``.a`` +
    ``out`` can never be read out of ``.aout`` there; the explicit
    ``INSET_WS`` terminal that character-level decoders need would instead
    make its lexer commit to ``.name `` and fail on ``.name;``.
    """
    return lark_grammar().replace("INSET_WS?", "inset?")


@lru_cache(maxsize=None)
def grammar_model() -> Grammar:
    return parse_grammar_text(lark_grammar())


# ------------------------------------------------------------------ GBNF
def _gbnf_name(name: str) -> str:
    if name == "start":
        return "start"
    return ("t-" + name.lower() if name.isupper() else name).replace("_", "-")


def _gbnf_char(code: int, in_class: bool) -> str:
    ch = chr(code)
    named = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\"}
    if ch in named:
        return named[ch]
    if in_class and ch in "]^[":
        return "\\" + ch
    if not in_class and ch == '"':
        return '\\"'
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02X}"
    return ch


_CATEGORY_CLASS = {
    "CATEGORY_DIGIT": "0-9",
    "CATEGORY_WORD": "a-zA-Z0-9_",
    "CATEGORY_SPACE": " \\t\\n\\r\\f\\v",
}


def _regex_to_gbnf(pattern: str) -> str:
    return _sre_to_gbnf(_sre_parse.parse(pattern))


def _sre_to_gbnf(subpattern) -> str:
    parts = []
    for op, av in subpattern:
        name = str(op)
        if name == "LITERAL":
            parts.append('"' + _gbnf_char(av, False) + '"')
        elif name == "NOT_LITERAL":
            parts.append("[^" + _gbnf_char(av, True) + "]")
        elif name == "ANY":
            parts.append("[^\\n]")
        elif name == "IN":
            negate = False
            body = []
            for iop, iav in av:
                iname = str(iop)
                if iname == "NEGATE":
                    negate = True
                elif iname == "LITERAL":
                    body.append(_gbnf_char(iav, True))
                elif iname == "RANGE":
                    body.append(_gbnf_char(iav[0], True) + "-" + _gbnf_char(iav[1], True))
                elif iname == "CATEGORY" and str(iav) in _CATEGORY_CLASS:
                    body.append(_CATEGORY_CLASS[str(iav)])
                else:
                    raise GrammarFileError(f"grammar.lark: regex class item {iname} not supported")
            # A literal "-" goes last, unescaped: not every GBNF reader knows "\-".
            dash = "-" in body
            body = [b for b in body if b != "-"] + (["-"] if dash else [])
            parts.append("[" + ("^" if negate else "") + "".join(body) + "]")
        elif name in ("MAX_REPEAT", "MIN_REPEAT"):
            lo, hi, sub = av
            inner = "(" + _sre_to_gbnf(sub) + ")"
            if (lo, hi) == (0, _sre_c.MAXREPEAT):
                parts.append(inner + "*")
            elif (lo, hi) == (1, _sre_c.MAXREPEAT):
                parts.append(inner + "+")
            elif (lo, hi) == (0, 1):
                parts.append(inner + "?")
            else:
                hi_text = "" if hi == _sre_c.MAXREPEAT else str(hi)
                parts.append(f"{inner}{{{lo},{hi_text}}}")
        elif name == "SUBPATTERN":
            parts.append("(" + _sre_to_gbnf(av[-1]) + ")")
        elif name == "BRANCH":
            parts.append("(" + " | ".join(_sre_to_gbnf(b) for b in av[1]) + ")")
        else:
            raise GrammarFileError(f"grammar.lark: regex operator {name} not supported")
    return " ".join(parts) if parts else '""'


def _expr_to_gbnf(expr, in_rule: bool) -> str:
    # In rules (not terminals) every token may be followed by ignored
    # whitespace, exactly what %ignore means; putting `ws` only *after* tokens
    # keeps the GBNF unambiguous.
    ws = " ws" if in_rule else ""
    if isinstance(expr, Lit):
        return '"' + "".join(_gbnf_char(ord(c), False) for c in expr.text) + '"' + ws
    if isinstance(expr, Regex):
        return "(" + _regex_to_gbnf(expr.pattern) + ")" + ws
    if isinstance(expr, Ref):
        return _gbnf_name(expr.name) + (ws if expr.name.isupper() else "")
    if isinstance(expr, Seq):
        return " ".join(_expr_to_gbnf(i, in_rule) for i in expr.items)
    if isinstance(expr, Alt):
        return "(" + " | ".join(_expr_to_gbnf(o, in_rule) for o in expr.options) + ")"
    if isinstance(expr, Repeat):
        suffix = {(0, 1): "?", (0, None): "*", (1, None): "+"}[(expr.min, expr.max)]
        return "(" + _expr_to_gbnf(expr.item, in_rule) + ")" + suffix
    raise TypeError(expr)


@lru_cache(maxsize=None)
def gbnf_grammar() -> str:
    """The grammar as GBNF (xgrammar's EBNF dialect; root rule ``root``)."""
    return _to_gbnf(grammar_model())


def lark_to_gbnf(text: str) -> str:
    """Convert another grammar written in the same Lark subset to GBNF."""
    return _to_gbnf(parse_grammar_text(text))


def _to_gbnf(g: Grammar) -> str:
    lines = ["root ::= ws start"]
    ignore = _gbnf_name(g.ignore) if g.ignore else None
    lines.append(f"ws ::= ({ignore})?" if ignore else 'ws ::= ""')
    for name, expr in g.rules.items():
        lines.append(f"{_gbnf_name(name)} ::= {_expr_to_gbnf(expr, True)}")
    for name, expr in g.terminals.items():
        lines.append(f"{_gbnf_name(name)} ::= {_expr_to_gbnf(expr, False)}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------- recognising
@lru_cache(maxsize=None)
def lark_parser():
    """Lark's Earley parser over the grammar (reference recogniser; slow)."""
    from lark import Lark

    return Lark(lark_grammar(), parser="earley", lexer="dynamic")


def accepts(text: str) -> bool:
    """Whether ``text`` is in the grammar's language (Lark Earley)."""
    from lark.exceptions import LarkError

    try:
        lark_parser().parse(text)
    except LarkError:
        return False
    return True


# ------------------------------------------------------------- sampling
_PRINTABLE = [chr(c) for c in range(0x20, 0x7F)] + ["é", "ß", "Ж", "東"]


def _sample_regex(sub, rng: random.Random, out: list[str]) -> None:
    for op, av in sub:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(av))
        elif name == "NOT_LITERAL":
            out.append(rng.choice([c for c in _PRINTABLE if c != chr(av)]))
        elif name == "ANY":
            out.append(rng.choice(_PRINTABLE))
        elif name == "IN":
            allowed = [c for c in _PRINTABLE if _class_matches(av, c)]
            out.append(rng.choice(allowed))
        elif name in ("MAX_REPEAT", "MIN_REPEAT"):
            lo, hi, inner = av
            hi = lo + 3 if hi == _sre_c.MAXREPEAT else hi
            for _ in range(rng.randint(lo, hi)):
                _sample_regex(inner, rng, out)
        elif name == "SUBPATTERN":
            _sample_regex(av[-1], rng, out)
        elif name == "BRANCH":
            _sample_regex(rng.choice(av[1]), rng, out)
        else:  # pragma: no cover - parse_grammar_text/gbnf already reject these
            raise GrammarFileError(name)


def _class_matches(items, ch: str) -> bool:
    negate = False
    hit = False
    for op, av in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            hit |= ord(ch) == av
        elif name == "RANGE":
            hit |= av[0] <= ord(ch) <= av[1]
        elif name == "CATEGORY":
            hit |= bool(re.fullmatch({"CATEGORY_DIGIT": r"\d", "CATEGORY_WORD": r"\w"}.get(str(av), r"\s"), ch))
    return hit != negate


def _min_depth(g: Grammar) -> dict[str, int]:
    """Shortest derivation depth of each rule, so sampling can always stop."""
    depth = {n: 0 for n in g.terminals}
    INF = 10**9

    def d(expr) -> int:
        if isinstance(expr, (Lit, Regex)):
            return 0
        if isinstance(expr, Ref):
            return depth.get(expr.name, INF)
        if isinstance(expr, Seq):
            return max((d(i) for i in expr.items), default=0)
        if isinstance(expr, Alt):
            return min(d(o) for o in expr.options)
        if isinstance(expr, Repeat):
            return 0 if expr.min == 0 else d(expr.item)
        raise TypeError(expr)

    changed = True
    while changed:
        changed = False
        for name, expr in g.rules.items():
            value = d(expr) + 1
            if value < depth.get(name, INF):
                depth[name] = value
                changed = True
    return depth


def sample(rng: random.Random | int | None = None, max_depth: int = 12) -> str:
    """A random string of the grammar's language (whitespace between tokens at random)."""
    rng = rng if isinstance(rng, random.Random) else random.Random(rng)
    g = grammar_model()
    depth_of = _min_depth(g)
    out: list[str] = []

    def min_d(expr) -> int:
        if isinstance(expr, Ref):
            return depth_of[expr.name]
        if isinstance(expr, Seq):
            return max((min_d(i) for i in expr.items), default=0)
        if isinstance(expr, Alt):
            return min(min_d(o) for o in expr.options)
        if isinstance(expr, Repeat):
            return 0 if expr.min == 0 else min_d(expr.item)
        return 0

    def emit(expr, budget: int, in_rule: bool) -> None:
        if isinstance(expr, Lit):
            out.append(expr.text)
        elif isinstance(expr, Regex):
            _sample_regex(_sre_parse.parse(expr.pattern), rng, out)
        elif isinstance(expr, Ref):
            is_terminal = expr.name.isupper()
            emit(g.definition(expr.name), budget - 1, not is_terminal)
            if is_terminal and in_rule:
                out.append(rng.choice(["", "", " "]))
            return
        elif isinstance(expr, Seq):
            for item in expr.items:
                emit(item, budget, in_rule)
            return
        elif isinstance(expr, Alt):
            fitting = [o for o in expr.options if min_d(o) <= budget] or [min(expr.options, key=min_d)]
            emit(rng.choice(fitting), budget, in_rule)
            return
        elif isinstance(expr, Repeat):
            hi = expr.max if expr.max is not None else expr.min + (2 if budget > 2 else 0)
            count = rng.randint(expr.min, hi) if budget > min_d(expr.item) else expr.min
            for _ in range(count):
                emit(expr.item, budget, in_rule)
            return
        if in_rule:
            out.append(rng.choice(["", "", " "]))

    emit(g.rules["start"], max_depth, True)
    return "".join(out).strip()
