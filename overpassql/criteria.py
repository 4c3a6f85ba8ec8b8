"""Query clauses in parentheses: Overpass parses ``(...)`` into an operator tree and
then asks each clause kind whether the tree is its shape; so does this module."""

from __future__ import annotations

from typing import Optional

from . import ast as A
from .parser import decode_string

RECURSE_FLAGS = {"r", "w", "bn", "bw", "br", "way_link", "way_cnt"}
RECURSE_ARROWS = {">", ">>", "<", "<<"}


def _flatten_commas(tree: A.Expr) -> list[A.Expr]:
    items = []
    while tree is not None and tree.token == "," and tree.lhs is not None and tree.rhs is not None:
        items.append(tree.rhs)
        tree = tree.lhs
    items.append(tree)
    return items[::-1]


def _leaf(node: Optional[A.Expr]) -> str:
    return decode_string(node.token) if node is not None else ""


def _is_number(tok: str) -> bool:
    return bool(tok) and (tok[0].isdigit() or (tok[0] == "-" and len(tok) > 1
                                                and (tok[1].isdigit() or tok[1] == ".")))


def _head(node: A.Expr) -> tuple[str, Optional[str]]:
    """``name`` or ``name.set`` -> (name, set)."""
    if node.token == "." and node.lhs is not None and node.rhs is not None:
        return node.lhs.token, node.rhs.token
    return node.token, None


def make_criterion(parser, tree: Optional[A.Expr], qtype: str, line: int):
    if tree is None:
        parser.error("Unknown query clause", line)
        return None
    items = _flatten_commas(tree)
    first = items[0]
    rest = [_leaf(x) for x in items[1:]]

    if first.token == ":" and first.lhs is not None:
        name, set_name = _head(first.lhs)
        value = _leaf(first.rhs)
        args = [value] + rest
        if name == "around":
            return A.Around(args[0], args[1:], set_name, line=line)
        if set_name is None:
            if name == "poly":
                return A.Poly(value, line=line)
            if name == "user":
                return A.User(args, line=line)
            if name == "uid":
                return A.Uid(args, line=line)
            if name == "id":
                return A.Ids(args, line=line)
            if name == "newer":
                return A.Newer(value, line=line)
            if name == "changed":
                return A.Changed(value, rest[0] if rest else None, line=line)
            if name == "area":
                return A.AreaFilter(None, value, line=line)
        if name in RECURSE_FLAGS:
            return A.RecurseFilter(name, set_name, ",".join(args), line=line)
    elif len(items) == 1:
        name, set_name = _head(first)
        if first.lhs is None and first.rhs is None or set_name is not None:
            tok = name
            if set_name is None and parser_is_placeholder(tok):
                return A.PlaceholderFilter(tok, line=line)
            if set_name is None and _is_number(tok):
                return A.Ids([tok], short=True, line=line)
            if tok == "area":
                return A.AreaFilter(set_name, None, line=line)
            if tok == "pivot":
                return A.Pivot(set_name, line=line)
            if tok in RECURSE_FLAGS or tok in RECURSE_ARROWS:
                return A.RecurseFilter(tok, set_name, None, line=line)
            if tok == "changed" and set_name is None:
                return A.Changed(None, None, line=line)
        elif first.token in RECURSE_ARROWS and first.lhs is None and first.rhs is None:
            return A.RecurseFilter(first.token, None, None, line=line)
    elif _is_number(first.token) or parser_is_placeholder(first.token):
        values = [first.token] + [x.token for x in items[1:]]
        if len(values) != 4:
            parser.error("bbox requires four arguments", line)
            return None
        return A.BBox(*values, line=line)
    parser.error("Unknown query clause", line)
    return None


def parser_is_placeholder(tok: str) -> bool:
    return tok.startswith("{{") and tok.endswith("}}")
