"""QL serialisers: AST -> one-line compact QL (``dump``) and the converter's QL dumps."""

from __future__ import annotations

import re
from typing import Optional

from . import ast as A
from .errors import SerializationError
from .lower import format_double
from .tokens import decode_string


_NON_ASCII_RANGE = re.compile(r"\[[^\]]*(?:[^\x00-\x7f]-|-[^\x00-\x7f\]])")


def _value(text: str) -> str:
    """A quoted value, except a turbo placeholder written bare (``{{user}}``)."""
    if text.startswith("{{") and text.endswith("}}") and "\"" not in text:
        return text
    return quote(text)


def _braced(st) -> bool:
    """Statements that end with their own closing brace (no ";" after them)."""
    return isinstance(st, A.Block) and st.keyword not in ("timeline", "local")


def quote(value: str) -> str:
    """A QL string literal, escaped so that the parser reads back ``value``."""
    body = (value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
            .replace("\t", "\\t"))
    return '"' + body + '"'


class Dumper:
    """One ``_dump_<NodeClass>`` per AST node class; unknown classes raise at once."""

    def dump(self, node) -> str:
        method = getattr(self, "_dump_" + type(node).__name__, None)
        if method is None:
            raise SerializationError(f"cannot dump AST node {type(node).__name__}")
        return method(node)

    # ---------------------------------------------------------------- script
    def _dump_Script(self, script: A.Script) -> str:
        settings = script.settings
        if self.converter:
            # The converter prints the settings in the order of their XML attributes.
            order = {"bbox": 0, "maxsize": 1, "out": 2, "timeout": 3, "date": 4}

            def rank(s: A.Setting) -> int:
                if s.key == "out" and s.value not in ("xml", "json", "csv", "custom", "popup"):
                    return 6  # an unknown output format is printed last
                return order.get(s.key, 5)
            settings = sorted(settings, key=rank)
        statements = list(script.statements)
        lead = ""
        while statements and isinstance(statements[0], A.Placeholder) and statements[0].definition:
            lead += self.dump(statements.pop(0))  # "{{x=...}}[timeout:..];" keeps its place
        head = "".join(self.dump(s) for s in settings)
        parts = [lead + head + ";"] if script.settings else ([lead] if lead else [])
        for st in statements:
            text = self.dump(st)
            if isinstance(st, A.Placeholder) and st.definition:
                parts.append(" " + text)  # the dataset writes "...; {{bbox=...}}"
            else:
                parts.append(text if _braced(st) else text + ";")
        return "".join(parts)

    def _dump_Setting(self, s: A.Setting) -> str:
        if s.key == "out" and s.config is not None:
            return f"[out:{s.value}{s.config}]"
        if s.key in ("date", "diff", "adiff"):
            value = quote(s.value)
            if s.extra is not None:
                value += "," + quote(s.extra)
            return f"[{s.key}:{value}]"
        return f"[{s.key}:{s.value}]"

    # ------------------------------------------------------------ statements
    @staticmethod
    def _into(into: str) -> str:
        return "" if into == "_" else "->." + into

    def _from(self, set_name: Optional[str]) -> str:
        if set_name is None or (self.converter and set_name == "_"):
            return ""
        return "." + set_name + " "

    def __init__(self, converter: bool = False):
        # converter=True: reproduce --dump-compact-ql (its canonical order and quirks).
        self.converter = converter

    def _body(self, body: list) -> str:
        return "".join(self.dump(st) + ("" if _braced(st) else ";") for st in body)

    def _dump_Union_(self, st: A.Union_) -> str:
        return "(" + self._body(st.body) + ")" + self._into(st.into)

    def _dump_Difference(self, st: A.Difference) -> str:
        first, rest = st.body[:1], st.body[1:]
        tail = self._body(rest)
        # "-." would read back as one token (a number), so dump() keeps them apart
        minus = "- " if tail.startswith(".") and not self.converter else "-"
        return "(" + self._body(first) + minus + tail + ")" + self._into(st.into)

    def _dump_Item(self, st: A.Item) -> str:
        return "." + st.set + self._into(st.into)

    def _dump_Placeholder(self, st: A.Placeholder) -> str:
        return st.text + self._into(st.into)

    def _dump_Recurse(self, st: A.Recurse) -> str:
        return self._from(st.set) + st.kind + self._into(st.into)

    def _dump_Out(self, st: A.Out) -> str:
        words = ["out"] + (_canonical_out(st.options) if self.converter else list(st.options))
        text = " ".join(words)
        if st.bbox is not None:
            text += "(" + ",".join(st.bbox) + ")"
        return self._from(st.set) + text

    def _dump_IsIn(self, st: A.IsIn) -> str:
        coords = f"({st.lat},{st.lon})" if st.lat is not None else ""
        return self._from(st.set) + "is_in" + coords + self._into(st.into)

    def _dump_MapToArea(self, st: A.MapToArea) -> str:
        return self._from(st.set) + "map_to_area" + self._into(st.into)

    def _dump_Make(self, st: A.Make) -> str:
        text = self._from(st.set) + st.keyword + " " + st.type
        if st.assignments:
            text += " " + ",".join(expr_to_ql(e, self.converter) for e in st.assignments)
        return text + self._into(st.into)

    def _dump_Block(self, st: A.Block) -> str:
        text = st.keyword
        if st.set is not None:
            text += "." + st.set
        text += self._into(st.into)
        if st.keyword == "local":
            return "local" + (" " + st.arg.token if st.arg is not None else "") + self._into(st.into)
        if st.arg is not None:
            text += "(" + expr_to_ql(st.arg, self.converter) + ")"
        if st.keyword == "timeline":
            return text
        if self.converter and st.keyword == "if":
            # --dump-compact-ql ends each statement of an if branch with ";;"
            text += "{" + "".join(self.dump(b) + ("" if _braced(b) else ";;")
                                  for b in st.body) + "}"
        else:
            text += "{" + self._body(st.body) + "}"
        if st.else_body is not None:
            text += "else{" + self._body(st.else_body) + "}"
        return text

    def _dump_Query(self, st: A.Query) -> str:
        sets = [f for f in st.filters if isinstance(f, A.SetFilter) and f.prefix]
        tags = [f for f in st.filters if isinstance(f, (A.Tag, A.SetFilter)) and not any(f is x for x in sets)]
        others = [f for f in st.filters if not isinstance(f, (A.Tag, A.SetFilter))]
        qtype = st.type
        if self.converter and qtype == "nw":
            qtype = "nwr"  # what --dump-compact-ql of 0.7.62 prints for nw
        return qtype + "".join(self.dump(f) for f in sets + tags + others) + self._into(st.into)

    # --------------------------------------------------------------- filters
    def _dump_SetFilter(self, f: A.SetFilter) -> str:
        return "." + f.name

    def _dump_Tag(self, f: A.Tag) -> str:
        key = ("~" if f.key_regex else "") + quote(f.key)
        if f.op == "exists":
            return f"[{key}]"
        if f.op == "not_exists":
            return f'[{key}!~".*"]' if self.converter else f"[!{key}]"
        if self.converter and f.op in ("~", "!~") and _NON_ASCII_RANGE.search(f.value):
            # Overpass' byte-wise regex cannot hold such a range; the dump drops the value.
            return f"[{key}]"
        return f"[{key}{f.op}{quote(f.value)}{',i' if f.case_insensitive else ''}]"

    def _dump_BBox(self, f: A.BBox) -> str:
        return f"({f.south},{f.west},{f.north},{f.east})"

    def _dump_PlaceholderFilter(self, f: A.PlaceholderFilter) -> str:
        return f"({f.text})"

    def _dump_Ids(self, f: A.Ids) -> str:
        return "(" + ("" if f.short else "id:") + ",".join(f.ids) + ")"

    def _dump_Around(self, f: A.Around) -> str:
        head = "around" + ("." + f.set if f.set is not None else "")
        values = [f.radius] + f.coords
        if self.converter:
            values = [format_double(v) for v in values]
        return "(" + head + ":" + ",".join(values) + ")"

    def _dump_AreaFilter(self, f: A.AreaFilter) -> str:
        return ("(area" + ("." + f.set if f.set is not None else "")
                + (":" + f.ref if f.ref is not None else "") + ")")

    def _dump_Pivot(self, f: A.Pivot) -> str:
        return "(pivot" + ("." + f.set if f.set is not None else "") + ")"

    def _dump_Poly(self, f: A.Poly) -> str:
        return "(poly:" + quote(f.bounds) + ")"

    def _dump_User(self, f: A.User) -> str:
        return "(user:" + ",".join(_value(n) for n in f.names) + ")"

    def _dump_Uid(self, f: A.Uid) -> str:
        return "(uid:" + ",".join(f.uids) + ")"

    def _dump_Newer(self, f: A.Newer) -> str:
        return "(newer:" + quote(f.date) + ")"

    def _dump_Changed(self, f: A.Changed) -> str:
        if f.since is None:
            return "(changed)"
        until = f.until if f.until is not None else (f.since if self.converter else None)
        dates = [quote(f.since)] + ([quote(until)] if until is not None else [])
        return "(changed:" + ",".join(dates) + ")"

    def _dump_RecurseFilter(self, f: A.RecurseFilter) -> str:
        text = "(" + f.kind + ("." + f.set if f.set is not None else "")
        if f.role is not None:
            text += ":" + (f.role if f.kind == "w" else quote(f.role))
        return text + ")"

    def _dump_IfFilter(self, f: A.IfFilter) -> str:
        return "(if:" + (expr_to_ql(f.expr, self.converter) if f.expr is not None else "") + ")"


_NO_ARG_WITH_EMPTY = {"version", "user", "uid", "timestamp", "changeset", "geom"}
_OUT_MODES = ("ids", "skel", "body", "tags", "meta", "quirks", "count")


def _canonical_out(options: list[str]) -> list[str]:
    mode = geom = order = limit = None
    for opt in options:
        if opt in _OUT_MODES:
            mode = opt
        elif opt in ("geom", "bb", "center"):
            geom = opt
        elif opt in ("qt", "asc"):
            order = opt
        elif opt[:1].isdigit():
            limit = opt
    words = [mode] if mode not in (None, "body") else []
    words += ["noids"] if "noids" in options else []
    words += ["qt"] if order == "qt" else []
    words += [limit] if limit else []
    words += [geom] if geom else []
    return words


_PRIO = {",": 1, "=": 2, "?": 3, ":": 4, "||": 5, "&&": 6, "==": 7, "!=": 7, "<": 8, "<=": 8,
         ">": 8, ">=": 8, "+": 10, "-": 10, "*": 11, "/": 11, "%": 11, ".": 12, "!": 13}


def _comma_operands(e: A.Expr) -> list:
    if e is not None and e.token == ",":
        return _comma_operands(e.lhs) + _comma_operands(e.rhs)
    return [e]


def _converter_expr(e: Optional[A.Expr]) -> str:
    """An evaluator as --dump-compact-ql prints it: its own parentheses, double quotes."""
    if e is None:
        return ""
    while e.token == "(" and e.lhs is None and e.rhs is not None:
        e = e.rhs
    tok = e.token
    # Shapes Overpass cannot turn into an evaluator print as their bare token.
    if tok == "!" and e.lhs is not None:
        return "!"
    if tok == "[" and (e.lhs is None or e.lhs.token != "t"):
        return "["
    if tok in ("(", "[", "{"):
        close = {"(": ")", "[": "]", "{": "}"}[tok]
        if tok == "[" and e.lhs is not None and e.lhs.token == "t":
            return "t[" + '"' + _converter_expr(e.rhs) + '"' + "]"
        inner = _converter_expr(e.rhs)
        if tok == "(" and e.lhs is not None and e.rhs is not None and e.rhs.token == ",":
            # the converter prints function arguments without separators
            inner = "".join(_converter_expr(a) for a in _comma_operands(e.rhs))
        if tok == "(" and e.lhs is not None:
            name = e.lhs.token
            if e.rhs is None and name in _NO_ARG_WITH_EMPTY:
                inner = '""'
            elif name == "count" and inner == "nodes":
                inner = "node"
        return _converter_expr(e.lhs) + tok + inner + close
    if e.lhs is None and e.rhs is None:
        if tok[:1] in ("'", '"'):
            return quote(decode_string(tok))
        return tok
    if tok == "=" and e.lhs is not None:
        key = e.lhs
        if key.token == "::":
            name = "" if key.rhs is None or key.rhs.token != "geom" else "geom"
            return "::" + name + "=" + _converter_expr(e.rhs)
        text = key.token
        if text[:1] in ("'", '"'):
            text = decode_string(text)
        return text + "=" + _converter_expr(e.rhs)
    prio = _PRIO.get(tok, 14)

    def side(child: Optional[A.Expr], right: bool) -> str:
        text = _converter_expr(child)
        if child is None:
            return text
        c = child
        while c.token == "(" and c.lhs is None and c.rhs is not None:
            c = c.rhs
        cprio = _PRIO.get(c.token, 99) if (c.lhs is not None or c.rhs is not None) \
            and c.token not in ("(", "[", "{") else 99
        if cprio < prio or (right and cprio == prio and tok not in ("?", ":")):
            return "(" + text + ")"
        return text

    return side(e.lhs, False) + tok + side(e.rhs, True)


def expr_to_ql(e: Optional[A.Expr], converter: bool = False) -> str:
    """An operator tree back to compact text (brackets written by the user are nodes)."""
    if converter:
        return _converter_expr(e)
    if e is None:
        return ""
    if e.token in ("(", "[", "{"):
        close = {"(": ")", "[": "]", "{": "}"}[e.token]
        inner = expr_to_ql(e.rhs, converter)
        if converter and e.token == "[" and e.lhs is not None and e.lhs.token == "t":
            inner = '"' + inner + '"'  # the converter doubles the quotes of t["key"]
        if converter and e.token == "(" and e.lhs is not None and e.lhs.token == "count" \
                and e.rhs is not None and e.rhs.token == "nodes":
            inner = "node"
        if (converter and e.token == "(" and e.rhs is None and e.lhs is not None
                and e.lhs.token in _NO_ARG_WITH_EMPTY):
            inner = '""'
        return expr_to_ql(e.lhs, converter) + e.token + inner + close
    if e.lhs is None and e.rhs is None:
        return e.token
    if converter and e.token == "=" and e.lhs is not None and e.lhs.token[:1] == '"':
        return e.lhs.token[1:-1] + "=" + expr_to_ql(e.rhs, converter)
    return expr_to_ql(e.lhs, converter) + e.token + expr_to_ql(e.rhs, converter)


def dump_script(script: A.Script) -> str:
    return Dumper().dump(script)


def element_to_ql(root, pretty: bool = False) -> str:
    """The converter's compact (or pretty) QL, rebuilt from the AST behind ``root``."""
    if root is None:
        return ""
    if pretty:
        return PrettyDumper().script(root.src)
    return Dumper(converter=True).dump(root.src)


def pretty_script(script: A.Script) -> str:
    """The script as the user wrote it (placeholders, ``nw``, option order kept), laid out
    like ``--dump-pretty-ql``; ``dump`` of its parse is ``dump(script)``."""
    return PrettyDumper(converter=False).script(script)


class PrettyDumper(Dumper):
    """--dump-pretty-ql: one clause a line, two spaces per level; closing brackets of
    groups and blocks start at column 0, as Overpass 0.7.62 prints them.

    ``converter=False`` keeps the script's own spelling (``dump``'s), placeholders included."""

    def __init__(self, converter: bool = True, width: int = 72):
        super().__init__(converter=converter)
        # Without the converter's layout, a query statement that fits in ``width`` stays on one line.
        self.width = width

    def script(self, script: A.Script) -> str:
        lines: list[str] = []
        statements = list(script.statements)
        # "{{x=...}}" definitions before the settings keep their place (see _dump_Script)
        while statements and isinstance(statements[0], A.Placeholder) and statements[0].definition:
            lines.append(self.dump(statements.pop(0)))
        if script.settings:
            compact = Dumper(converter=self.converter)
            head = compact.dump(A.Script(settings=script.settings))
            if self.converter:
                lines += [s + "]" for s in head[:-1].split("]") if s] + [";"]
            else:  # the settings a person reads as one line: "[out:json][timeout:25];"
                lines.append(head)
        for st in statements:
            if isinstance(st, A.Placeholder) and st.definition:
                lines.append(self.dump(st))  # a definition takes no ";"
                continue
            lines += self.statement(st, 0, ";")
        return "\n".join(lines)

    def statement(self, st, level: int, end: str) -> list[str]:
        pad = "  " * level
        if isinstance(st, A.Query):
            return self._query(st, pad, end)
        if isinstance(st, (A.Union_, A.Difference)):
            lines = [pad + "("]
            for k, child in enumerate(st.body):
                if isinstance(st, A.Difference) and k == 1:
                    lines.append(pad + "  -")
                lines += self.statement(child, level + 1, ";")
            return lines + [")" + self._into(st.into) + end]
        if isinstance(st, A.Make):
            head = pad + self._from(st.set) + st.keyword + " " + st.type
            items = [expr_to_ql(e, self.converter) for tree in st.assignments for e in _comma_operands(tree)]
            if not items:
                return [head + self._into(st.into) + end]
            body = [pad + "  " + item + "," for item in items]
            body[-1] = body[-1][:-1] + self._into(st.into) + end
            return [head] + body
        if _braced(st):
            return self._block(st, level, pad)
        return [pad + self.dump(st) + end]

    def _query(self, st: A.Query, pad: str, end: str) -> list[str]:
        sets = [f for f in st.filters if isinstance(f, A.SetFilter) and f.prefix]
        tags = [f for f in st.filters if isinstance(f, (A.Tag, A.SetFilter))
                and not any(f is x for x in sets)]
        others = [f for f in st.filters if not isinstance(f, (A.Tag, A.SetFilter))]
        qtype = "nwr" if st.type == "nw" and self.converter else st.type
        while tags and isinstance(tags[0], A.SetFilter):  # ".a.b" stays on the type's line
            sets.append(tags.pop(0))
        head = pad + qtype + "".join(self.dump(f) for f in sets)
        rest = [self.dump(f) for f in tags + others]
        one_line = head + "".join(rest) + self._into(st.into) + end
        if len(rest) <= 1 or (not self.converter and len(one_line) <= self.width):
            return [head + "".join(rest) + self._into(st.into) + end]
        lines = [head] + [pad + "  " + r for r in rest]
        if st.into != "_":
            lines.append(pad + "  " + self._into(st.into))
        lines[-1] += end
        return lines

    def _block(self, st: A.Block, level: int, pad: str) -> list[str]:
        kw = st.keyword
        head = kw + ("." + st.set if st.set is not None else "") + self._into(st.into)
        arg = "(" + expr_to_ql(st.arg, self.converter) + ")" if st.arg is not None else ""
        stmt_end = ";;" if kw == "if" and self.converter else ";"
        if kw in ("if", "retro"):
            lines = [pad + head + " " + arg, pad + "{"]
        else:
            lines = [pad + head + arg + "{"]
        for child in st.body:
            lines += self.statement(child, level + 1, stmt_end)
        # if/retro close at their own indent, the other blocks at column 0
        close = pad + "}" if kw in ("if", "retro") else "}"
        lines.append(close)
        if st.else_body is not None:
            lines += [pad + "else", pad + "{"]
            for child in st.else_body:
                lines += self.statement(child, level + 1, ";")
            lines.append(close)
        return lines
