"""Evaluators (``if:``, ``make``, ``convert``, ``for``, ``retro``): the operators and
functions Overpass knows, the eval-* element each becomes, and the errors Overpass
reports when it builds them (checked while parsing; ``lower.py`` builds the elements)."""

from __future__ import annotations

from typing import Optional

from . import ast as A

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
