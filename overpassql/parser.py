"""Parser: tokens -> AST, recovering from errors the way osm3s_query does.

Overpass never stops at the first error: it reports it, skips tokens up to a
synchronising token (``clear_until_after``) and goes on, and ``--dump-xml`` still
prints what it built. The official metric scores that partial output, so this
parser reproduces the same recovery, message texts and line numbers.
"""

from __future__ import annotations

import re
import sys
import threading
from bisect import bisect_right
from contextlib import contextmanager
from functools import lru_cache
from typing import Optional

from . import ast as A
from .criteria import make_criterion, static_checks
from .errors import Diagnostic, ParseError
from .evaluators import check_expr
from .tokens import decode_string, end_line, kind_of, line_starts, scan

QUERY_TYPES = {"node", "way", "relation", "area", "nwr", "nw", "wr", "nr", "derived"}
MAX_DEPTH = 1024  # osm3s: "Nesting of statements is limited to 1023 levels"
BLOCK_KEYWORDS = {"foreach", "for", "complete", "retro", "if", "compare", "timeline", "local"}
_PRIORITY = {",": 1, "=": 2, "?": 3, ":": 4, "||": 5, "&&": 6, "==": 7, "!=": 7, "<": 8,
             "<=": 8, ">": 8, ">=": 8, "+": 10, "-": 10, "*": 11, "/": 11, "%": 11, ".": 12,
             "->": 12, "!": 13, "::": 15}


# Statements nest up to 1023 levels (Overpass' own limit); a few Python frames each.
RECURSION_LIMIT = 20000


_limit_lock = threading.Lock()
_limit_users = 0
_limit_saved = 0


@contextmanager
def deep_recursion():
    """Raise the recursion limit while parsing and converting; reference-counted, so concurrent
    threads (the UI serves requests from a pool) never lower it under each other."""
    global _limit_users, _limit_saved
    with _limit_lock:
        if _limit_users == 0:
            _limit_saved = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_limit_saved, RECURSION_LIMIT))
        _limit_users += 1
    try:
        yield
    finally:
        with _limit_lock:
            _limit_users -= 1
            if _limit_users == 0:
                sys.setrecursionlimit(_limit_saved)


_DEFINITION = re.compile(r"\{\{[^}:]+?=[\s\S]*\}\}")


def _json_escape(text: str) -> str:
    return (text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
            .replace("\t", "\\t"))


class _Abort(Exception):
    """Overpass stops parsing and prints no output at all."""


def _bare_word(tree: Optional[A.Expr]) -> str:
    if tree is None or tree.lhs is not None or tree.rhs is not None:
        return ""
    tok = tree.token
    if tok[:1].isascii() and (tok[:1].isalpha() or tok[:1] == "_"):
        return tok
    return ""


def comma_items(tree: A.Expr | None) -> list[A.Expr]:
    """The items of a comma list as the parser reads it (`a, b, c` is `((a, b), c)`), in source order."""
    items = []
    while tree is not None and tree.token == "," and tree.lhs is not None:
        if tree.rhs is not None:
            items.append(tree.rhs)
        tree = tree.lhs
    if tree is not None:
        items.append(tree)
    return items[::-1]


class Parser:
    """One method ``_parse_<rule>`` per grammar rule; state is a token cursor."""

    def __init__(self, text: str, *, turbo: bool = True, converter: bool = False):
        if converter:
            # The reference converter got the query followed by two newlines; they
            # show up inside unterminated strings and in end-of-input line numbers.
            text = text + "\n\n"
        self.text = text
        self.turbo = turbo
        self.converter = converter
        self.texts, self.starts = scan(text, turbo=turbo)
        self.n = len(self.texts)
        self.i = 0
        self.good = self.n > 0
        self.cur = self.texts[0] if self.n else ""
        self.errors: list[Diagnostic] = []
        self.eof_line = end_line(text)
        self._line_starts: Optional[list[int]] = None

    # ------------------------------------------------------------ cursor helpers
    def advance(self) -> None:
        # Past the end Overpass keeps looking at the last token it read (cur stays).
        if self.i < self.n:
            self.i += 1
            if self.i < self.n:
                self.cur = self.texts[self.i]
            else:
                self.good = False

    @property
    def kind(self) -> str:
        return kind_of(self.cur, self.turbo) if self.good else ""

    def _position(self) -> tuple[int, int]:
        if not self.good:
            return self.eof_line, 1
        if self.eof_line == 1:  # one-line query: only the column needs computing
            return 1, self.starts[self.i] + 1
        if self._line_starts is None:
            self._line_starts = line_starts(self.text)
        pos = self.starts[self.i]
        line = bisect_right(self._line_starts, pos)
        return line, pos - self._line_starts[line - 1] + 1

    @property
    def line(self) -> int:
        return self._position()[0]

    @property
    def column(self) -> int:
        return self._position()[1]

    def error(self, message: str, line: Optional[int] = None, kind: str = "parse") -> None:
        here_line, here_column = self._position()
        self.errors.append(Diagnostic(here_line if line is None else line,
                                      here_column if line is None else 1, message, kind))

    def text_token(self, what: str) -> str:
        tok = self.cur
        kind = self.kind
        if self.good and tok and (kind in ("string", "placeholder") or tok[0].isascii() and (
                tok[0].isalnum() or tok[0] == "_")
                or (tok[0] == "-" and len(tok) > 1 and tok[1].isdigit())):
            self.advance()
            return decode_string(tok) if kind == "string" else tok
        self.error(f"{what} expected - '{tok}' found.")
        return ""

    def ident_token(self, what: str) -> str:
        tok = self.cur
        if self.good and tok and tok[0].isascii() and (tok[0].isalpha() or tok[0] == "_"):
            self.advance()
            return tok
        self.error(f"{what} expected - '{tok}' found.")
        return ""

    def clear_until_after(self, *targets: str, after: bool = True) -> None:
        if self.cur not in targets:
            quoted = [f"'{t}'" for t in targets]
            if len(quoted) == 1:
                expected = quoted[0] + " expected"
            elif len(quoted) == 2:
                expected = f"{quoted[0]} or {quoted[1]} expected"
            else:
                expected = ", ".join(quoted[:-1]) + ", or " + quoted[-1] + "  expected"
            self.error(f"{expected} - '{self.cur}' found.")
            self.advance()
        while self.good and self.cur not in targets:
            self.advance()
        if not self.good:
            self.error("Unexpected end of input.")
        elif after:
            self.advance()

    def probe_into(self) -> str:
        if self.good and self.cur == "->":
            self.advance()
            self.clear_until_after(".")
            if self.good:
                return self.ident_token("Variable")
        return "_"

    def probe_from(self) -> Optional[str]:
        if self.good and self.cur == ".":
            self.advance()
            if self.good:
                return self.ident_token("Variable")
        return None

    # ------------------------------------------------------------------- script
    def parse(self) -> A.Script:
        with deep_recursion():
            return self._parse_script()

    def _parse_script(self) -> A.Script:
        script = A.Script()
        try:
            self._parse_script_into(script)
        except _Abort:
            script.aborted = True
        except RecursionError:  # only reachable when the interpreter's stack is tiny
            self.error("Nesting too deep to parse")
        script.errors = self.errors
        return script

    def _parse_script_into(self, script: A.Script) -> None:
        # overpass-turbo shortcut definitions may come before the settings
        while self.turbo and self.good and self.kind == "placeholder" \
                and _DEFINITION.fullmatch(self.cur):
            script.statements.append(self._parse_placeholder())
        while self.good and self.cur == "[":
            setting = self._parse_setting()
            if setting is not None:
                script.settings.append(setting)
        if script.settings:
            self.clear_until_after(";")
        while self.good:
            stmt = self._parse_statement(0)
            if stmt is not None:
                script.statements.append(stmt)
            self._end_statement(stmt)

    def _end_statement(self, stmt) -> None:
        # Blocks end with their closing brace, turbo definitions stand alone; a ';'
        # after them is optional.
        if (isinstance(stmt, A.Block) and stmt.keyword not in ("timeline", "local")) or (
                isinstance(stmt, A.Placeholder) and stmt.definition):
            if self.good and self.cur == ";":
                self.advance()
            return
        self.clear_until_after(";")

    def _parse_setting(self) -> Optional[A.Setting]:
        line = self.line
        self.advance()
        key = self.ident_token("Keyword")
        self.clear_until_after(":")
        value = self.text_token("Value")
        setting = A.Setting(key, value, line=line)
        if key == "out":
            if value == "csv":
                setting.config = self._parse_csv_config()
            elif value not in ("xml", "json", "custom", "popup"):
                self.error(f"Unknown output format: {value}")
            self.clear_until_after("]")
        elif key in ("diff", "adiff"):
            self.clear_until_after(",", "]", after=False)
            if self.cur == ",":
                self.advance()
                setting.extra = self.text_token("Value")
                self.clear_until_after("]")
            else:
                self.advance()
        elif key == "bbox" and self.turbo and value.startswith("{{"):
            self.clear_until_after("]")
        elif key == "bbox":
            self.clear_until_after(",", "]", after=False)
            for last in (False, False, True):
                if self.cur != ",":
                    break
                self.advance()
                setting.value += "," + self.text_token("Value")
                if last:
                    self.clear_until_after("]")
                else:
                    self.clear_until_after(",", "]", after=False)
        elif key in ("timeout", "maxsize"):
            # Overpass keeps every token up to the "]" as part of the value.
            while self.good and self.cur != "]":
                setting.value += " " + self.cur
                self.advance()
            self.clear_until_after("]")
        else:
            self.clear_until_after("]")
        return setting

    def _parse_csv_config(self) -> str:
        """``csv(field,...[;header[;separator]])`` -> the config text Overpass dumps."""
        fields: list[str] = []
        header = separator = None
        start = self.i
        self.clear_until_after("(")
        while self.good:
            if self.cur == "::":
                self.advance()
                fields.append("::" + self.text_token("Keyword"))
            else:
                text = self.text_token("CSV format specification")
                # The dumped config re-escapes the field like a JSON string.
                fields.append('"' + _json_escape(text) + '"')
            self.clear_until_after(",", ";", ")", after=False)
            if self.cur != ",":
                break
            self.advance()
        if self.good and self.cur == ";":
            self.advance()
            header = self.text_token("true or false")
            self.clear_until_after(";", ")", after=False)
            if self.good and self.cur == ";":
                self.advance()
                separator = _json_escape(self.text_token("Separator"))
        self.clear_until_after(")")
        if not self.converter:
            # parse() keeps the field list as written, so dump() gives it back unchanged
            return "".join(self.texts[start:self.i])
        config = "(" + ",".join(fields)
        if header in ("true", "false"):
            config += ";" + header
            if separator is not None:
                config += ';"' + separator + '"'
        return config + ")"

    # --------------------------------------------------------------- statements
    def _parse_statement(self, depth: int):
        if not self.good:
            return None
        if depth >= MAX_DEPTH:
            self.error("Nesting of statements is limited to 1023 levels")
            return None
        tok = self.cur
        if self.turbo and self.kind == "placeholder":
            return self._parse_placeholder()
        if tok == "(":
            return self._parse_union(depth)
        if tok in BLOCK_KEYWORDS:
            return self._parse_block(depth)
        set_name = None
        if tok == ".":
            self.advance()
            if self.good:
                set_name = self.cur
                self.advance()
        tok = self.cur
        if self.good:
            if tok == "out":
                return self._parse_out(set_name)
            if tok in ("make", "convert"):
                return self._parse_make(set_name)
            if tok in ("<", "<<", ">", ">>"):
                return self._parse_recurse(set_name)
            if tok == "is_in":
                return self._parse_is_in(set_name)
            if tok == "map_to_area":
                return self._parse_map_to_area(set_name)
        qtype = ""
        if set_name is None:
            qtype = "relation" if tok == "rel" else tok
            if qtype not in QUERY_TYPES:
                self.error(f'Unknown type "{tok}"')
            self.advance()
            if self.good and self.cur == ".":
                self.advance()
                if self.good:
                    set_name = self.cur
                    self.advance()
        return self._parse_query(qtype, set_name)

    def _parse_placeholder(self) -> A.Placeholder:
        line = self.line
        text = self.cur
        self.advance()
        if _DEFINITION.fullmatch(text):
            return A.Placeholder(text, line=line, definition=True)
        return A.Placeholder(text, self.probe_into(), line=line)

    def _collect_body(self, depth: int, open_: str, close: str) -> list:
        body = []
        self.clear_until_after(open_)
        while self.good and self.cur != close:
            stmt = self._parse_statement(depth + 1)
            if stmt is not None:
                body.append(stmt)
            self._end_statement(stmt)
        if self.good:
            self.advance()
        return body

    def _parse_union(self, depth: int):
        line = self.line
        body: list = []
        is_difference = False
        self.clear_until_after("(")
        count = 0
        while self.good and self.cur != ")":
            stmt = self._parse_statement(depth + 1)
            if stmt is not None:
                body.append(stmt)
            self._end_statement(stmt)
            count += 1
            if count == 1 and self.good and self.cur == "-":
                is_difference = True
                self.advance()
            elif count == 2 and is_difference and self.cur != ")":
                self.error("difference always requires two operands")
                self.clear_until_after(")", after=False)
        if self.good:
            self.advance()
        into = self.probe_into()
        cls = A.Difference if is_difference else A.Union_
        return cls(body, into, line=line)

    def _parse_block(self, depth: int) -> A.Block:
        line = self.line
        keyword = self.cur
        self.advance()
        block = A.Block(keyword, line=line)
        if keyword in ("foreach", "for", "complete", "compare"):
            block.set = self.probe_from()
            block.into = self.probe_into()
        if keyword in ("for", "retro", "if", "compare", "timeline") or (
                keyword == "complete" and self.cur == "("):
            if self.cur == "(":
                self.advance()
                block.arg = self._parse_expr_tree(parenthesis_expected=True)
                bare = _bare_word(block.arg)
                if bare:
                    # Overpass cannot build the block's evaluator and stops printing.
                    self.error(f'Put quotation marks around "{bare}" if it should be a '
                               "constant and not a tag evaluation.", line)
                    self.error(f'Token "{bare}" has not been recognized as statement', line)
                self.clear_until_after(")")
                if bare:
                    raise _Abort
            else:
                self.clear_until_after("(")
        if keyword in ("timeline", "local"):
            if keyword == "local" and self.good and self.kind == "word":
                block.arg = A.Expr(self.cur, line=self.line)  # local ll / local lll
                self.advance()
            block.into = self.probe_into()
            return block
        if self.cur == "(":
            block.body = self._collect_body(depth, "(", ")")
        else:
            block.body = self._collect_body(depth, "{", "}")
        if keyword == "if" and self.good and self.cur == "else":
            self.advance()
            block.else_body = self._collect_body(depth, "{", "}")
        return block

    def _parse_out(self, set_name: Optional[str]) -> A.Out:
        line = self.line
        self.advance()
        out = A.Out(set=set_name, line=line)
        while self.good and self.cur != ";":
            tok = self.cur
            if tok == "(" and self.turbo and self.i + 1 < self.n and \
                    kind_of(self.texts[self.i + 1], True) == "placeholder":
                self.advance()
                out.bbox = (self.cur,)
                self.advance()
                self.clear_until_after(")", after=False)
            elif tok == "(":
                self.advance()
                s = self.text_token("Number")
                self.clear_until_after(",")
                w = self.text_token("Number")
                self.clear_until_after(",")
                n = self.text_token("Number")
                self.clear_until_after(",")
                e = self.text_token("Number")
                self.clear_until_after(")", after=False)
                out.bbox = (s, w, n, e)
            else:
                out.options.append(tok)
                if tok not in OUT_OPTIONS and not tok[:1].isdigit():
                    self.error(f'Invalid parameter for print: "{tok}"')
            self.advance()
        return out

    def _parse_make(self, set_name: Optional[str]) -> A.Make:
        line = self.line
        keyword = self.cur
        self.advance()
        make = A.Make(keyword, set=set_name, line=line)
        if self.cur != ";":
            make.type = self.ident_token("Element class name")
        while self.good and self.cur not in (";", "->"):
            if self.cur == ",":
                self.advance()
            if self.good:
                tree = self._parse_expr_tree(parenthesis_expected=False)
                if tree is not None:
                    make.assignments.append(tree)
                    for item in comma_items(tree):
                        if item.token == "=" and item.lhs is None:
                            self.error("To set a property it must have a name to the left of "
                                       "the equal sign", line)
                            self.error('"=" cannot be used as unary operator', line)
        make.into = self.probe_into()
        return make

    def _parse_recurse(self, set_name: Optional[str]) -> A.Recurse:
        line = self.line
        kind = self.cur
        self.advance()
        return A.Recurse(kind, set_name, self.probe_into(), line=line)

    def _parse_is_in(self, set_name: Optional[str]) -> A.IsIn:
        line = self.line
        self.advance()
        stmt = A.IsIn(set=set_name, line=line)
        if self.cur == "(":
            self.advance()
            stmt.lat = self.text_token("Number")
            self.clear_until_after(",", ")", after=False)
            if self.cur == ",":
                self.advance()
                stmt.lon = self.text_token("Number")
                self.clear_until_after(")", after=False)
            self.advance()
        stmt.into = self.probe_into()
        return stmt

    def _parse_map_to_area(self, set_name: Optional[str]) -> A.MapToArea:
        line = self.line
        self.advance()
        return A.MapToArea(set_name, self.probe_into(), line=line)

    # ------------------------------------------------------------------- query
    def _parse_query(self, qtype: str, set_name: Optional[str]):
        line = self.line
        filters: list = []
        if set_name is not None:
            filters.append(A.SetFilter(set_name, prefix=True, line=line))
        while self.good and self.cur in ("[", "(", "."):
            if self.cur == "[":
                tag = self._parse_tag()
                if tag is not None:
                    filters.append(tag)
            elif self.cur == "(":
                flt = self._parse_clause(qtype)
                if flt is not None:
                    filters.append(flt)
            else:
                fline = self.line
                name = self.probe_from()
                filters.append(A.SetFilter(name if name is not None else "_", line=fline))
        into = self.probe_into()
        if not filters or (set_name is not None and len(filters) == 1 and qtype == ""):
            if set_name is not None:
                if qtype == "":
                    return A.Item(set_name, into, line=line)
                return A.Query(qtype, filters, into, line=line)
            self.error("An empty query is not allowed")
            return None
        return A.Query(qtype, filters, into, line=line)

    def _parse_tag(self) -> Optional[A.Tag]:
        self.advance()
        key_regex = self.cur == "~"
        if key_regex:
            self.advance()
        if self.cur == "!":
            self.advance()
            key = self.text_token("Key")
            self.clear_until_after("]")
            return A.Tag(key, "", "not_exists", line=self.line)
        key = self.text_token("Key")
        self.clear_until_after("!", "~", "=", "!=", "]", after=False)
        straight = True
        if self.cur == "!":
            straight = False
            self.advance()
            self.clear_until_after("~", "=", "]", after=False)
        if self.cur == "]":
            if key_regex:
                self.error("A regular expression for a key can only be combined with a "
                           "regular expression as value criterion")
            tag = A.Tag(key, "", "exists" if straight else "not_exists", line=self.line)
            self.advance()
            return tag
        if self.cur in ("=", "!="):
            if key_regex:
                self.error("A regular expression for a key can only be combined with a "
                           "regular expression as value criterion")
            straight = self.cur == "="
            self.advance()
            if self.good and self.cur == "]":
                self.advance()
                return None
            line = self.line
            value = self.text_token("Value")
            tag = A.Tag(key, value, "=" if straight else "!=", line=line) if value != "" else None
            self.clear_until_after("]")
            return tag
        # "~"
        self.advance()
        line = self.line
        value = self.text_token("Value")
        tag = A.Tag(key, value, "~" if straight else "!~", key_regex=key_regex, line=line)
        self.clear_until_after(",", "]", after=False)
        if self.cur == ",":
            tag.case_insensitive = True
            self.advance()
            self.clear_until_after("i")
            self.clear_until_after("]", after=False)
        self.advance()
        return tag

    def _parse_clause(self, qtype: str):
        self.advance()
        if not self.good:
            self.error("':' or '.' expected.")
            return None
        line = self.line
        if self.cur == "if":
            self.advance()
            expr = None
            if self.cur == ":":
                self.advance()
                expr = self._parse_expr_tree(parenthesis_expected=True)
            self.clear_until_after(")")
            if expr is not None:
                try:
                    check_expr(self, expr)
                except RecursionError:
                    self.error("Expression nested too deeply", line)
            return A.IfFilter(expr, line=line)
        tree = self._parse_expr_tree(parenthesis_expected=True)
        self.clear_until_after(")")
        flt = make_criterion(self, tree, qtype, line)
        if flt is not None:
            static_checks(self, flt, qtype, line)
        return flt

    # ------------------------------------------------------------- expressions
    def _parse_expr_tree(self, *, parenthesis_expected: bool) -> Optional[A.Expr]:
        """Overpass' operator-precedence tree builder (stops at ``;``, ``->`` or an
        unmatched closing bracket)."""
        root = A.Expr("")
        stack: list[A.Expr] = [root]
        while self.good and self.cur not in (";", "->"):
            tok = self.cur
            line = self.line
            if tok in ("(", "[", "{"):
                node = A.Expr(tok, lhs=stack[-1].rhs, line=line)
                stack[-1].rhs = node
                stack.append(node)
            elif tok in (")", "]", "}"):
                pos = len(stack) - 1
                while pos >= 0 and stack[pos].token not in ("(", "[", "{"):
                    pos -= 1
                if pos < 0:
                    if parenthesis_expected:
                        return root.rhs
                    self.error(f"Unmatched {tok}")
                else:
                    del stack[pos:]
            else:
                prio = _PRIORITY.get(tok, 0)
                unary_minus = False
                if len(tok) >= 2 and tok[0] == "-" and stack[-1].rhs is not None:
                    prio, unary_minus = 10, True
                if prio > 0:
                    pos = len(stack) - 1
                    while pos > 0 and _PRIORITY.get(stack[pos].token, 0) >= prio:
                        pos -= 1
                    del stack[pos + 1:]
                    node = A.Expr("-" if unary_minus else tok, lhs=stack[-1].rhs, line=line)
                    stack[-1].rhs = node
                    stack.append(node)
                    if unary_minus:
                        node.rhs = A.Expr(tok[1:], line=line)
                elif stack[-1].rhs is None:
                    stack[-1].rhs = A.Expr(tok, line=line)
                else:
                    self.error(f'Operator expected, but "{tok}"found.')
            self.advance()
        pos = len(stack) - 1
        while pos >= 0 and stack[pos].token not in ("(", "[", "{"):
            pos -= 1
        if pos > 0:
            self.error(f"Left {stack[pos].token} not closed.")
        return root.rhs


OUT_OPTIONS = {"ids", "tags", "skel", "body", "meta", "quirks", "count", "qt", "asc", "geom",
               "bb", "center", "noids"}


CACHEABLE = 20000  # characters: longer texts are not kept (parse trees here, conversions in api.py)


@lru_cache(maxsize=1024)
def _parsed(text: str, turbo: bool) -> A.Script:
    # The CPU default parses the same few queries over and over for one request (a neighbour's query for
    # each kind of edit, a candidate for the faithfulness check and then for its repair): on OverpassNL
    # dev about 100 parses a request, 55 % of them of a text parsed shortly before. Never handed out
    # as it is (``parse`` clones it).
    return Parser(text, turbo=turbo).parse()


def parse(text: str, *, collect_errors: bool = False, turbo: bool = True) -> A.Script:
    """Parse OverpassQL into a :class:`Script`.

    Raises :class:`ParseError` on any diagnostic unless ``collect_errors`` is true, in
    which case the partial script (what Overpass itself would run) is returned with
    ``script.errors`` filled. ``turbo`` makes ``{{...}}`` placeholders single tokens.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse() needs a str, got {type(text).__name__}")
    if len(text) > CACHEABLE:
        script = Parser(text, turbo=turbo).parse()
    else:
        # Callers edit the trees they get, so each gets its own copy of the kept one.
        with deep_recursion():
            script = A.clone(_parsed(text, turbo))
    if script.errors and not collect_errors:
        raise ParseError(script.errors, script)
    return script
