"""QL serialisers: AST -> one-line compact QL (``dump``) and the converter's QL dumps."""

from __future__ import annotations

from typing import Optional

from . import ast as A
from .errors import SerializationError


def quote(value: str) -> str:
    """A QL string literal, escaped so that the parser reads back ``value``."""
    body = (value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
            .replace("\t", "\\t"))
    return '"' + body + '"'


def _maybe_placeholder(value: str) -> str:
    return value if value.startswith("{{") and value.endswith("}}") else quote(value)


class Dumper:
    """One ``_dump_<NodeClass>`` per AST node class; unknown classes raise at once."""

    def dump(self, node) -> str:
        method = getattr(self, "_dump_" + type(node).__name__, None)
        if method is None:
            raise SerializationError(f"cannot dump AST node {type(node).__name__}")
        return method(node)

    # ---------------------------------------------------------------- script
    def _dump_Script(self, script: A.Script) -> str:
        head = "".join(self.dump(s) for s in script.settings)
        parts = [head + ";"] if script.settings else []
        for st in script.statements:
            text = self.dump(st)
            parts.append(text if isinstance(st, A.Block) else text + ";")
        return "".join(parts)

    def _dump_Setting(self, s: A.Setting) -> str:
        if s.key == "out" and s.config is not None:
            return f"[out:{s.value}{s.config}]"
        if s.key in ("date", "diff", "adiff"):
            value = _maybe_placeholder(s.value)
            if s.extra is not None:
                value += "," + _maybe_placeholder(s.extra)
            return f"[{s.key}:{value}]"
        return f"[{s.key}:{s.value}]"

    # ------------------------------------------------------------ statements
    @staticmethod
    def _into(into: str) -> str:
        return "" if into == "_" else "->." + into

    @staticmethod
    def _from(set_name: Optional[str]) -> str:
        return "" if set_name is None else "." + set_name + " "

    def __init__(self, converter: bool = False):
        # converter=True: reproduce --dump-compact-ql (its canonical order and quirks).
        self.converter = converter

    def _body(self, body: list) -> str:
        return "".join(self.dump(st) + ("" if isinstance(st, A.Block) else ";") for st in body)

    def _dump_Union_(self, st: A.Union_) -> str:
        return "(" + self._body(st.body) + ")" + self._into(st.into)

    def _dump_Difference(self, st: A.Difference) -> str:
        first, rest = st.body[:1], st.body[1:]
        return ("(" + self._body(first) + "-" + self._body(rest) + ")" + self._into(st.into))

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
            text += ("" if self.converter else " ") + "(" + ",".join(st.bbox) + ")"
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
        if st.arg is not None:
            text += "(" + expr_to_ql(st.arg, self.converter) + ")"
        text += "{" + self._body(st.body) + "}"
        if st.else_body is not None:
            text += "else{" + self._body(st.else_body) + "}"
        return text

    def _dump_Query(self, st: A.Query) -> str:
        sets = [f for f in st.filters if isinstance(f, A.SetFilter) and f.prefix]
        tags = [f for f in st.filters if isinstance(f, (A.Tag, A.SetFilter)) and not any(f is x for x in sets)]
        others = [f for f in st.filters if not isinstance(f, (A.Tag, A.SetFilter))]
        return st.type + "".join(self.dump(f) for f in sets + tags + others) + self._into(st.into)

    # --------------------------------------------------------------- filters
    def _dump_SetFilter(self, f: A.SetFilter) -> str:
        return "." + f.name

    def _dump_Tag(self, f: A.Tag) -> str:
        key = ("~" if f.key_regex else "") + quote(f.key)
        if f.op == "exists":
            return f"[{key}]"
        if f.op == "not_exists":
            return f"[!{key}]"
        return f"[{key}{f.op}{quote(f.value)}{',i' if f.case_insensitive else ''}]"

    def _dump_BBox(self, f: A.BBox) -> str:
        return f"({f.south},{f.west},{f.north},{f.east})"

    def _dump_PlaceholderFilter(self, f: A.PlaceholderFilter) -> str:
        return f"({f.text})"

    def _dump_Ids(self, f: A.Ids) -> str:
        return "(" + ("" if f.short else "id:") + ",".join(f.ids) + ")"

    def _dump_Around(self, f: A.Around) -> str:
        head = "around" + ("." + f.set if f.set is not None else "")
        return "(" + head + ":" + ",".join([f.radius] + f.coords) + ")"

    def _dump_AreaFilter(self, f: A.AreaFilter) -> str:
        return ("(area" + ("." + f.set if f.set is not None else "")
                + (":" + f.ref if f.ref is not None else "") + ")")

    def _dump_Pivot(self, f: A.Pivot) -> str:
        return "(pivot" + ("." + f.set if f.set is not None else "") + ")"

    def _dump_Poly(self, f: A.Poly) -> str:
        return "(poly:" + quote(f.bounds) + ")"

    def _dump_User(self, f: A.User) -> str:
        return "(user:" + ",".join(quote(n) for n in f.names) + ")"

    def _dump_Uid(self, f: A.Uid) -> str:
        return "(uid:" + ",".join(f.uids) + ")"

    def _dump_Newer(self, f: A.Newer) -> str:
        return "(newer:" + quote(f.date) + ")"

    def _dump_Changed(self, f: A.Changed) -> str:
        if f.since is None:
            return "(changed)"
        dates = [quote(f.since)] + ([quote(f.until)] if f.until is not None else [])
        return "(changed:" + ",".join(dates) + ")"

    def _dump_RecurseFilter(self, f: A.RecurseFilter) -> str:
        text = "(" + f.kind + ("." + f.set if f.set is not None else "")
        if f.role is not None:
            text += ":" + (f.role if f.kind == "w" else quote(f.role))
        return text + ")"

    def _dump_IfFilter(self, f: A.IfFilter) -> str:
        return "(if:" + (expr_to_ql(f.expr, self.converter) if f.expr is not None else "") + ")"


_NO_ARG_WITH_EMPTY = {"version", "user", "uid", "timestamp", "changeset", "type", "id"}
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
    words += ["qt"] if order == "qt" else []
    words += [geom] if geom else []
    words += [limit] if limit else []
    return words


def expr_to_ql(e: Optional[A.Expr], converter: bool = False) -> str:
    """An operator tree back to compact text (brackets written by the user are nodes)."""
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
    """The converter's compact QL, rebuilt from the AST behind ``root``."""
    return Dumper(converter=True).dump(root.src)
