"""Lowering: AST -> the statement tree osm3s_query builds (what --dump-xml prints).

An :class:`Element` is one Overpass statement with its attributes in print order.
Both serialisers (XML in ``xml.py``, compact/pretty QL in ``ql.py``) read these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from . import ast as A
from .criteria import ZERO_DATE, poly_numbers, recurse_type, valid_timestamp
from .errors import Diagnostic, SerializationError
from .evaluators import BINARY, ELEMENT_FUNCS, PROP_COUNT, SET_FUNCS
from .tokens import decode_string

# Single-clause queries Overpass runs as the bare clause statement (no <query>).
_STANDALONE = {
    "Ids": {"node", "way", "relation"},
    "Around": {"node"},
    "BBox": {"node"},
    "Poly": {"node"},
}
_ARROWS = {">": "down", ">>": "down-rel", "<": "up", "<<": "up-rel"}
_STANDALONE_RECURSE = {"relation-node", "relation-way", "relation-relation", "way-node",
                       "relation-backwards", "way-relation", "node-way", "node-relation"}


@dataclass
class Element:
    tag: str
    attrs: list = field(default_factory=list)
    children: list = field(default_factory=list)
    src: object = None  # the AST node (QL dumps need source details)


def _sorted(**attrs) -> list:
    return sorted(attrs.items())


class Lowerer:
    def __init__(self):
        self.errors: list[Diagnostic] = []

    def lower(self, node) -> Element:
        method = getattr(self, "_lower_" + type(node).__name__, None)
        if method is None:
            raise SerializationError(f"cannot serialise AST node {type(node).__name__}")
        return method(node)

    # -------------------------------------------------------------------- script
    def _lower_Script(self, script: A.Script) -> Optional[Element]:
        if script.aborted:
            return None
        attrs: dict = {}
        for s in script.settings:
            key, value = s.key, s.value
            if key == "out":
                attrs["output"] = value
                if s.config is not None:
                    attrs["output-config"] = s.config
                elif value in ("xml", "json", "custom", "popup"):
                    attrs["output-config"] = ""
                continue
            if key == "maxsize":
                key = "element-limit"
            elif key in ("diff", "adiff"):
                if key == "adiff":
                    attrs["augmented"] = "deletions"
                if s.extra is not None:
                    attrs["date"] = s.extra
                key = "from"
            attrs[key] = value
        root = Element("osm-script", sorted(attrs.items()), src=script)
        root.children = [self.lower(st) for st in script.statements]
        return root

    # --------------------------------------------------------------- statements
    def _lower_Union_(self, st: A.Union_) -> Element:
        return Element("union", [("into", st.into)], [self.lower(s) for s in st.body], st)

    def _lower_Difference(self, st: A.Difference) -> Element:
        return Element("difference", [("into", st.into)], [self.lower(s) for s in st.body], st)

    def _lower_Item(self, st: A.Item) -> Element:
        return Element("item", [("from", st.set), ("into", st.into)], src=st)

    def _lower_Placeholder(self, st: A.Placeholder) -> Element:
        raise SerializationError(
            f"placeholder {st.text} must be replaced first: call replace_turbo_vars()")

    def _lower_Recurse(self, st: A.Recurse) -> Element:
        return Element("recurse", _sorted(**{"from": st.set or "_", "into": st.into,
                                             "type": _ARROWS[st.kind]}), src=st)

    def _lower_Out(self, st: A.Out) -> Element:
        mode, order, limit, geometry, ids = "body", "id", "", "skeleton", "yes"
        for opt in st.options:
            if opt in _MODES:
                mode = _MODES[opt]
            elif opt == "qt":
                order = "quadtile"
            elif opt == "asc":
                order = "id"
            elif opt in _GEOMS:
                geometry = _GEOMS[opt]
            elif opt == "noids":
                ids = "no"
            elif opt[:1].isdigit():
                limit = opt
        s = w = n = e = ""
        if st.bbox is not None:
            s, w, n, e = st.bbox
        return Element("print", _sorted(**{
            "e": e, "from": st.set or "_", "geometry": geometry, "ids": ids, "limit": limit,
            "mode": mode, "n": n, "order": order, "s": s, "w": w}), src=st)

    def _lower_IsIn(self, st: A.IsIn) -> Element:
        attrs = {"from": st.set or "_", "into": st.into, "lat": st.lat or "", "lon": st.lon or ""}
        return Element("coord-query", _sorted(**attrs), src=st)

    def _lower_MapToArea(self, st: A.MapToArea) -> Element:
        return Element("map-to-area", [("from", st.set or "_"), ("into", st.into)], src=st)

    def _lower_Make(self, st: A.Make) -> Element:
        attrs = {"into": st.into, "type": st.type}
        if st.set is not None:
            attrs["from"] = st.set
        el = Element(st.keyword, _sorted(**attrs), src=st)
        for tree in st.assignments:
            for item in split_commas(tree):
                lowered = lower_assignment(item)
                if lowered is not None:
                    el.children.append(lowered)
        return el

    def _lower_Block(self, st: A.Block) -> Element:
        kw = st.keyword
        if kw in ("foreach", "for"):
            el = Element(kw, [("from", st.set or "_"), ("into", st.into)], src=st)
        elif kw == "complete":
            maxnum = _leaf_text(st.arg) if st.arg is not None else ""
            el = Element(kw, [("from", st.set or "_"), ("into", st.into), ("maxnum", maxnum)], src=st)
        elif kw == "compare":
            el = Element(kw, [("from", st.set or "_"), ("into", st.into)], src=st)
        elif kw == "timeline":
            args = [_leaf_text(a) for a in split_commas(st.arg)] if st.arg is not None else []
            attrs = dict(zip(("type", "ref", "version"), args))
            return Element(kw, sorted(attrs.items()) + [("into", st.into)], src=st)
        elif kw == "local":
            attrs = [("type", st.arg.token)] if st.arg is not None else []
            return Element(kw, attrs + [("into", st.into)], src=st)
        else:
            el = Element(kw, [], src=st)
        if st.arg is not None and kw != "complete":
            lowered = lower_expr(st.arg)
            if lowered is not None:
                el.children.append(lowered)
        el.children.extend(self.lower(s) for s in st.body)
        if st.else_body is not None:
            # Overpass dumps "else" as a marker followed by the else branch.
            el.children.append(Element("else", []))
            el.children.extend(self.lower(s) for s in st.else_body)
        return el

    # -------------------------------------------------------------------- query
    def _lower_Query(self, st: A.Query) -> Element:
        qtype, into = st.type, st.into
        filters = st.filters
        # Overpass evaluates [tag] and .set clauses first, then the (...) clauses.
        sets = [f for f in filters if isinstance(f, A.SetFilter) and f.prefix]
        tags = [f for f in filters if isinstance(f, (A.Tag, A.SetFilter)) and not any(f is x for x in sets)]
        others = [f for f in filters if not isinstance(f, (A.Tag, A.SetFilter))]
        if len(filters) == 1 and not sets and not tags and not isinstance(filters[0], A.IfFilter):
            only = filters[0]
            clause = self._clause(only, qtype, into)
            if clause is not None and self._standalone(only, qtype, clause):
                return clause
            query = Element("query", [("into", into), ("type", qtype)], src=st)
            if clause is not None:
                query.children.append(clause)
            return query
        query = Element("query", [("into", into), ("type", qtype)], src=st)
        for f in sets:
            query.children.append(Element("item", [("from", f.name), ("into", "_")], src=f))
        for f in tags + others:
            if isinstance(f, A.IfFilter):
                flt = Element("filter", [], src=f)
                if f.expr is not None:
                    lowered = lower_expr(f.expr)
                    if lowered is not None:
                        flt.children.append(lowered)
                query.children.append(flt)
                continue
            clause = self._clause(f, qtype, "_" if len(filters) > 1 or sets else into)
            if clause is not None:
                query.children.append(clause)
        return query

    def _standalone(self, flt, qtype: str, clause: Element) -> bool:
        name = type(flt).__name__
        if name == "RecurseFilter":
            return dict(clause.attrs).get("type") in _STANDALONE_RECURSE | {"void"}
        return qtype in _STANDALONE.get(name, ())

    def _clause(self, f, qtype: str, into: str) -> Optional[Element]:
        def with_into(attrs: list) -> list:
            return attrs + ([("into", into)] if into != "_" else [])

        if isinstance(f, A.SetFilter):
            return Element("item", [("from", f.name), ("into", "_")], src=f)
        if isinstance(f, A.Tag):
            attrs = {}
            attrs["regk" if f.key_regex else "k"] = f.key
            if f.op in ("=", "!=", "exists"):
                attrs["v"] = f.value
            elif f.op == "not_exists":
                attrs["regv"] = ".*"
            else:
                attrs["regv"] = f.value
            attrs["modv"] = "not" if f.op in ("!=", "!~", "not_exists") else ""
            if f.case_insensitive:
                attrs["case"] = "ignore"
            return Element("has-kv", sorted(attrs.items()), src=f)
        if isinstance(f, A.BBox):
            return Element("bbox-query", with_into([("s", f.south), ("w", f.west),
                                                   ("n", f.north), ("e", f.east)]), src=f)
        if isinstance(f, A.Ids):
            attrs = [("type", qtype)]
            for k, ref in enumerate(sorted(f.ids, key=_id_order)):
                attrs.append(("ref" if k == 0 else f"ref_{k}", ref))
            return Element("id-query", with_into(attrs), src=f)
        if isinstance(f, A.Around):
            attrs = []
            if f.set is not None:
                attrs.append(("from", f.set))
            attrs.append(("radius", format_double(f.radius)))
            if len(f.coords) == 2:
                attrs += [("lat", format_double(f.coords[0])), ("lon", format_double(f.coords[1]))]
            elif f.coords:
                attrs.append(("polyline", ",".join(f.coords)))
            return Element("around", with_into(attrs), src=f)
        if isinstance(f, A.AreaFilter):
            attrs = []
            if f.set is not None and f.set != "_":
                attrs.append(("from", f.set))
            if f.ref is not None:
                attrs.append(("ref", f.ref))
            return Element("area-query", with_into(attrs), src=f)
        if isinstance(f, A.Pivot):
            attrs = [("from", f.set)] if f.set is not None and f.set != "_" else []
            return Element("pivot", with_into(attrs), src=f)
        if isinstance(f, A.Poly):
            return Element("polygon-query", with_into([("bounds", poly_bounds(f.bounds))]), src=f)
        if isinstance(f, A.User):
            return Element("user", with_into([("type", qtype)] + _numbered("name", f.names)), src=f)
        if isinstance(f, A.Uid):
            return Element("user", with_into([("type", qtype)] + _numbered("uid", f.uids)), src=f)
        if isinstance(f, A.Newer):
            return Element("newer", [("than", _date(f.date))], src=f)
        if isinstance(f, A.Changed):
            attrs = []
            if f.since is not None:
                since = _date(f.since)
                until = _date(f.until if f.until is not None else f.since)
                if f.since == "" and f.until is not None:
                    attrs = [("until", until)]
                elif (since, until) != (ZERO_DATE, ZERO_DATE):
                    attrs = [("since", since), ("until", until)]
            return Element("changed", with_into(attrs), src=f)
        if isinstance(f, A.RecurseFilter):
            attrs = []
            if f.set is not None and f.set != "_":
                attrs.append(("from", f.set))
            if f.kind in _ARROWS:
                attrs.append(("type", _ARROWS[f.kind]))
            else:
                rtype = recurse_type(f.kind, qtype)
                attrs.append(("type", rtype or "void"))
                if f.role is not None and rtype is not None:
                    if f.kind == "r" or qtype == "relation":
                        if f.role != "":
                            attrs.append(("role", f.role))
                        attrs.append(("role-restricted", "yes"))
                    elif f.kind == "w" or qtype == "way":
                        attrs.append(("pos", f.role))
            return Element("recurse", with_into(attrs), src=f)
        if isinstance(f, A.PlaceholderFilter):
            raise SerializationError(
                f"placeholder {f.text} must be replaced first: call replace_turbo_vars()")
        raise SerializationError(f"cannot serialise filter {type(f).__name__}")


def _date(value: str) -> str:
    return value[:20] if valid_timestamp(value) else ZERO_DATE


def _id_order(ref: str):
    # Overpass keeps ids in a sorted container.
    try:
        return (0, int(ref), ref)
    except ValueError:
        return (1, 0, ref)


def poly_values(bounds: str) -> list[str]:
    """The numbers of a poly string as Overpass prints them."""
    return [format_double(v) for v in poly_numbers(bounds)]


def poly_bounds(bounds: str) -> str:
    values = poly_values(bounds)
    pairs = [values[i] + " " + values[i + 1] for i in range(0, len(values) - 1, 2)]
    return "  ".join(pairs)


def format_double(text: str) -> str:
    """Overpass stores some numbers as doubles and prints them with C++ defaults."""
    try:
        value = float(text)
    except ValueError:
        return text
    return "%.14g" % value


def _numbered(name: str, values: list[str]) -> list:
    if len(values) == 1:
        return [(name, values[0])]
    return [(f"{name}_{k + 1}", v) for k, v in enumerate(values)]


def split_commas(tree: Optional[A.Expr]) -> list[A.Expr]:
    """The operands of a comma chain (`a, b, c` parses as `((a, b), c)`), in source order."""
    items = []
    while tree is not None and tree.token == "," and tree.lhs is not None and tree.rhs is not None:
        items.append(tree.rhs)
        tree = tree.lhs
    if tree is not None:
        items.append(tree)
    return items[::-1]


def _leaf_text(tree: Optional[A.Expr]) -> str:
    return decode_string(tree.token) if tree is not None else ""


# ------------------------------------------------------------------ evaluators
def lower_expr(node: Optional[A.Expr]) -> Optional[Element]:
    if node is None:
        return None
    tok = node.token
    if node.lhs is None and node.rhs is None:
        if tok == "::":
            return Element("eval-generic", [], src=node)
        if tok in BINARY or tok in ("!", "?", ":", ",", "=", "."):
            return None
        return Element("eval-fixed", [("v", decode_string(tok))], src=node)
    if tok == "(":
        if node.lhs is None:
            return lower_expr(node.rhs)
        return _call(node.lhs.token, node.rhs, "_")
    if tok == "[" and node.lhs is not None and node.lhs.token == "t":
        return Element("eval-value", [], _kids([node.rhs]), src=node)
    if tok == "." and node.lhs is not None and node.rhs is not None:
        target = node.rhs
        if target.token == "(" and target.lhs is not None:
            return _call(target.lhs.token, target.rhs, node.lhs.token)
        return Element("eval-set-key", [("from", node.lhs.token), ("key", target.token)], src=node)
    if tok == "!" and node.lhs is None:
        return Element("eval-not", [], _kids([node.rhs]), src=node)
    if tok == "-" and node.lhs is None:
        return Element("eval-negate", [], _kids([node.rhs]), src=node)
    if tok == "?" and node.rhs is not None and node.rhs.token == ":":
        return Element("eval-ternary", [], _kids([node.lhs, node.rhs.lhs, node.rhs.rhs]),
                       src=node)
    if tok in BINARY:
        return Element(BINARY[tok], [], _kids([node.lhs, node.rhs]), src=node)
    return None


def _kids(nodes) -> list[Element]:
    out = []
    for n in nodes:
        el = lower_expr(n)
        if el is not None:
            out.append(el)
    return out


def _call(name: str, args_node: Optional[A.Expr], from_set: str) -> Optional[Element]:
    args = split_commas(args_node)
    if name in PROP_COUNT:
        attrs = [("type", PROP_COUNT[name])]
        if args:
            attrs.append(("members_type" if name == "count_members" else "role",
                          decode_string(args[0].token)))
        return Element("eval-prop-count", attrs)
    if name == "is_tag":
        return Element("eval-is-tag", [("k", decode_string(args[0].token) if args else "")])
    if name == "count":
        kind = args[0].token if args else ""
        return Element("eval-set-count", [("from", from_set),
                                           ("type", "node" if kind == "nodes" else kind)])
    if name in SET_FUNCS:
        return Element(ELEMENT_FUNCS[name], [("from", from_set)], _kids(args))
    if name in ELEMENT_FUNCS:
        return Element(ELEMENT_FUNCS[name], [], _kids(args))
    return None


def lower_assignment(node: A.Expr) -> Optional[Element]:
    if node.token == "=" and node.lhs is not None:
        key = node.lhs
        value = _kids([node.rhs])
        if key.token == "::":
            keytype = "geometry" if key.rhs is not None and key.rhs.token == "geom" else "generic"
            return Element("set-prop", [("keytype", keytype)], value, src=node)
        if key.token == "!" and key.rhs is not None:
            return Element("set-prop", [("keytype", "tag"), ("k", decode_string(key.rhs.token))],
                           src=node)
        return Element("set-prop", [("keytype", "tag"), ("k", decode_string(key.token))], value,
                       src=node)
    return None


_MODES = {"ids": "ids_only", "tags": "tags", "skel": "skeleton", "body": "body", "meta": "meta",
          "quirks": "quirks", "count": "count"}
_GEOMS = {"geom": "full", "bb": "bounds", "center": "center"}


def lower(script: A.Script) -> tuple[Element, list[Diagnostic]]:
    lw = Lowerer()
    root = lw.lower(script)
    return root, lw.errors
