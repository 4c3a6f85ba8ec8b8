"""Evaluator trees (``if:``, ``make``, ``convert``, ``for``, ``retro``) -> eval-* elements."""

from __future__ import annotations

from typing import Optional

from . import ast as A
from .lower import Element, split_commas
from .parser import decode_string

BINARY = {"==": "eval-equal", "!=": "eval-not-equal", "<": "eval-less", "<=": "eval-less-equal",
          ">": "eval-greater", ">=": "eval-greater-equal", "&&": "eval-and", "||": "eval-or",
          "+": "eval-plus", "-": "eval-minus", "*": "eval-times", "/": "eval-divided-by"}
# Functions without an input set: name -> element.
ELEMENT_FUNCS = {"id": "eval-id", "type": "eval-type", "version": "eval-version",
                 "timestamp": "eval-timestamp", "changeset": "eval-changeset", "uid": "eval-uid",
                 "user": "eval-user", "length": "eval-length", "is_closed": "eval-is-closed",
                 "geom": "eval-geometry", "keys": "eval-all-keys", "center": "eval-center",
                 "trace": "eval-trace", "hull": "eval-hull", "lat": "eval-lat", "lon": "eval-lon",
                 "number": "eval-number", "is_number": "eval-is-number", "suffix": "eval-suffix",
                 "date": "eval-date", "is_date": "eval-is-date", "lrs_in": "eval-lrs-in",
                 "lrs_isect": "eval-lrs-isect", "lrs_union": "eval-lrs-union",
                 "lrs_min": "eval-lrs-min", "lrs_max": "eval-lrs-max", "abs": "eval-abs",
                 "gcat": "eval-gcat", "is_in": "eval-is-in", "pt": "eval-point",
                 "lstr": "eval-linestring", "poly": "eval-polygon", "debug": "eval-debug",
                 "per_member": "eval-per-member", "per_vertex": "eval-per-vertex",
                 "pos": "eval-pos", "mtype": "eval-mtype", "ref": "eval-ref", "role": "eval-role",
                 "angle": "eval-angle", "min": "eval-min", "max": "eval-max", "sum": "eval-sum",
                 "set": "eval-set", "u": "eval-union"}
SET_FUNCS = {"min", "max", "sum", "set", "u", "count"}
PROP_COUNT = {"count_tags": "tags", "count_members": "members",
              "count_distinct_members": "distinct_members", "count_by_role": "by_role",
              "count_distinct_by_role": "distinct_by_role"}


def lower_expr(lw, node: Optional[A.Expr]) -> Optional[Element]:
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
            return lower_expr(lw, node.rhs)
        return _call(lw, node.lhs.token, node.rhs, "_")
    if tok == "[" and node.lhs is not None and node.lhs.token == "t":
        return Element("eval-value", [], _kids(lw, [node.rhs]), src=node)
    if tok == "." and node.lhs is not None and node.rhs is not None:
        target = node.rhs
        if target.token == "(" and target.lhs is not None:
            return _call(lw, target.lhs.token, target.rhs, node.lhs.token)
        return Element("eval-set-key", [("from", node.lhs.token), ("key", target.token)], src=node)
    if tok == "!" and node.lhs is None:
        return Element("eval-not", [], _kids(lw, [node.rhs]), src=node)
    if tok == "-" and node.lhs is None:
        return Element("eval-negate", [], _kids(lw, [node.rhs]), src=node)
    if tok == "?" and node.rhs is not None and node.rhs.token == ":":
        return Element("eval-ternary", [], _kids(lw, [node.lhs, node.rhs.lhs, node.rhs.rhs]),
                       src=node)
    if tok in BINARY:
        return Element(BINARY[tok], [], _kids(lw, [node.lhs, node.rhs]), src=node)
    return None


def _kids(lw, nodes) -> list[Element]:
    out = []
    for n in nodes:
        el = lower_expr(lw, n)
        if el is not None:
            out.append(el)
    return out


def _call(lw, name: str, args_node: Optional[A.Expr], from_set: str) -> Optional[Element]:
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
        return Element(ELEMENT_FUNCS[name], [("from", from_set)], _kids(lw, args))
    if name in ELEMENT_FUNCS:
        return Element(ELEMENT_FUNCS[name], [], _kids(lw, args))
    return None


def lower_assignment(lw, node: A.Expr, keyword: str) -> Optional[Element]:
    if node.token == "=" and node.lhs is not None:
        key = node.lhs
        value = _kids(lw, [node.rhs])
        if key.token == "::":
            keytype = "geometry" if key.rhs is not None and key.rhs.token == "geom" else "generic"
            return Element("set-prop", [("keytype", keytype)], value, src=node)
        if key.token == "!" and key.rhs is not None:
            return Element("set-prop", [("keytype", "tag"), ("k", decode_string(key.rhs.token))],
                           src=node)
        return Element("set-prop", [("keytype", "tag"), ("k", decode_string(key.token))], value,
                       src=node)
    return None


KNOWN_FUNCTIONS = set(ELEMENT_FUNCS) | set(PROP_COUNT) | {"is_tag", "count", "t"}


def check_expr(parser, node: Optional[A.Expr]) -> bool:
    """Report what Overpass reports when it builds evaluators; True if ``node`` is usable."""
    if node is None:
        return False
    tok = node.token
    if tok == "(" and node.lhs is not None:
        name = node.lhs.token
        if name[:1].isalpha() and name not in KNOWN_FUNCTIONS:
            parser.error(f'Function "{name}" not known', node.line)
            return False
        return True
    if tok in BINARY and not (tok == "-" and node.lhs is None):
        left = check_expr(parser, node.lhs)
        if not left:
            parser.error(f'Operator "{tok}" needs a left-hand-side argument', node.line)
        right = check_expr(parser, node.rhs)
        if not right:
            parser.error(f'Operator "{tok}" needs a right-hand-side argument', node.line)
        return left and right
    if tok in ("!", "-") and node.lhs is None:
        return check_expr(parser, node.rhs)
    return True
