"""Query clauses in parentheses: Overpass parses ``(...)`` into an operator tree and
then asks each clause kind whether the tree is its shape; so does this module."""

from __future__ import annotations

import re
from typing import Optional

from . import ast as A
from .tokens import decode_string

RECURSE_FLAGS = {"r", "w", "bn", "bw", "br", "way_link", "way_cnt"}
RECURSE_ARROWS = {">", ">>", "<", "<<"}
# The statement each recursion filter becomes, by (filter, query type); a pair that is
# missing is an error Overpass reports when it builds the clause.
_RECURSE_TYPES = {
    ("r", "node"): "relation-node", ("r", "way"): "relation-way",
    ("r", "relation"): "relation-relation", ("r", "nwr"): "relation-nwr",
    ("r", "nw"): "relation-nw", ("r", "wr"): "relation-wr", ("r", "nr"): "relation-nr",
    ("w", "node"): "way-node", ("way_link", "node"): "way-link", ("way_cnt", "node"): "way-count",
    ("br", "relation"): "relation-backwards", ("bw", "relation"): "way-relation",
    ("bn", "way"): "node-way", ("bn", "relation"): "node-relation", ("bn", "wr"): "node-wr",
}
RECURSE_ERRORS = {
    "r": "A recursion of type 'r' produces nodes, ways, or relations.",
    "w": "A recursion of type 'w' produces nodes.",
    "way_link": "A recursion of type 'way_link' produces nodes.",
    "way_cnt": "A recursion of type 'way_cnt' produces nodes.",
    "br": "A recursion of type 'br' produces relations.",
    "bw": "A recursion of type 'bw' produces relations.",
    "bn": "A recursion of type 'bn' produces ways or relations.",
}


def recurse_type(kind: str, qtype: str) -> Optional[str]:
    return _RECURSE_TYPES.get((kind, qtype))


def _flatten_commas(tree: A.Expr) -> list[A.Expr]:
    items = []
    while tree is not None and tree.token == "," and tree.lhs is not None and tree.rhs is not None:
        items.append(tree.rhs)
        tree = tree.lhs
    items.append(tree)
    return items[::-1]


def _comma_leaves(tree: Optional[A.Expr]) -> list[Optional[A.Expr]]:
    """All operands of a comma chain, ``None`` where one is missing (``1,,2``)."""
    if tree is None or tree.token != ",":
        return [tree]
    return _comma_leaves(tree.lhs) + _comma_leaves(tree.rhs)


def _leaf(node: Optional[A.Expr]) -> str:
    return decode_string(node.token) if node is not None else ""


def _is_number(tok: str) -> bool:
    return bool(tok) and (tok[0].isdigit() or (tok[0] == "-" and len(tok) > 1
                                                and (tok[1].isdigit() or tok[1] == ".")))


def _head(node: A.Expr) -> tuple[str, Optional[str]]:
    """``name`` or ``name.set`` -> (name, set)."""
    if node.token == "." and node.lhs is not None:
        return node.lhs.token, node.rhs.token if node.rhs is not None else None
    return node.token, None


def make_criterion(parser, tree: Optional[A.Expr], qtype: str, line: int):
    if tree is None:
        parser.error("Unknown query clause", line)
        return None
    items = _flatten_commas(tree)
    first = items[0]
    rest = [_leaf(x) for x in items[1:]]

    if first.token == ":" and first.lhs is not None:
        compound = False
        while first.lhs is not None and first.lhs.token == ":":  # "a:b:c" from a broken value
            first, compound = first.lhs, True
        name, set_name = _head(first.lhs) if first.lhs is not None else ("", None)
        value = _leaf(first.rhs)
        compound = compound or (first.rhs is not None
                                and (first.rhs.lhs is not None or first.rhs.rhs is not None))
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
                return A.Newer("" if compound else value, line=line)
            if name == "changed":
                if compound:  # Overpass drops a "since" it could not read as one token
                    return A.Changed("", rest[0] if rest else None, line=line)
                return A.Changed(value, rest[0] if rest else None, line=line)
            if name == "area":
                return A.AreaFilter(None, value, line=line)
        if name in RECURSE_FLAGS:
            return A.RecurseFilter(name, set_name, ",".join(args), line=line)
    elif len(items) == 1:
        name, set_name = _head(first)
        if first.lhs is None and first.rhs is None or set_name is not None or first.token == ".":
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
    if tree.token == ",":
        leaves = _comma_leaves(tree)
        lead = leaves[0]
        if lead is not None and (_is_number(lead.token) or parser_is_placeholder(lead.token)):
            values = [x.token if x is not None else "" for x in leaves]
            if len(values) != 4 or any(x is None or x.lhs is not None or x.rhs is not None
                                       for x in leaves):
                parser.error("bbox requires four arguments", line)
                return None
            return A.BBox(*values, line=line)
    if len(items) > 1 and (_is_number(first.token) or parser_is_placeholder(first.token)):
        values = [first.token] + [x.token for x in items[1:]]
        if len(values) != 4:
            parser.error("bbox requires four arguments", line)
            return None
        return A.BBox(*values, line=line)
    parser.error("Unknown query clause", line)
    return None


def parser_is_placeholder(tok: str) -> bool:
    return tok.startswith("{{") and tok.endswith("}}")


_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
ZERO_DATE = "0000-00-00T00:00:00Z"
_RECURSE_ALLOWED = ('"relation-relation", "relation-backwards","relation-way", "relation-node", '
                    '"way-node", "way-relation","node-relation", "node-way", "down", "down-rel", '
                    '"up", or "up-rel"')
_ROLE_ALLOWED = ('"relation-relation", "relation-backwards","relation-way", "relation-node", '
                 '"way-relation",or "node-relation"')


_FLOAT = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def poly_numbers(bounds: str) -> list[str]:
    """The numbers Overpass reads from a poly string (strtod after strtod)."""
    return _FLOAT.findall(bounds)


def valid_timestamp(value: str, *, turbo: bool = False) -> bool:
    # Overpass reads the fields at fixed offsets and ignores anything after the "Z".
    if turbo and value.startswith("{{"):  # a turbo date, replaced before conversion
        return True
    return bool(_TIMESTAMP.match(value))


def static_checks(parser, flt, qtype: str, line: int) -> None:
    """The checks Overpass runs when it creates the clause's statement, in its order."""
    turbo = parser.turbo
    if isinstance(flt, A.Newer) and not valid_timestamp(flt.date, turbo=turbo):
        parser.error('The attribute "than" must contain a timestamp exactly in the form '
                     'yyyy-mm-ddThh:mm:ssZ.', line, kind="static")
    elif isinstance(flt, A.Changed) and flt.since is not None:
        for name, value in (("since", flt.since), ("until", flt.until or flt.since)):
            if not valid_timestamp(value, turbo=turbo):
                parser.error(f'The attribute "{name}" must contain a timestamp exactly in the '
                             'form "yyyy-mm-ddThh:mm:ssZ".', line, kind="static")
    elif isinstance(flt, A.Poly):
        if len(poly_numbers(flt.bounds)) % 2:
            parser.error('For the attribute "bounds" of the element "polygon-query" an even '
                         'number of float values must be provided.', line, kind="static")
    elif isinstance(flt, A.RecurseFilter) and flt.kind not in RECURSE_ARROWS:
        if recurse_type(flt.kind, qtype) is None:
            parser.error(RECURSE_ERRORS[flt.kind], line)
            parser.error('For the attribute "type" of the element "recurse" the only allowed '
                         f'values are {_RECURSE_ALLOWED}.', line, kind="static")
            if flt.role is not None:
                parser.error(f'A role can only be specified for values {_ROLE_ALLOWED}.', line,
                             kind="static")
