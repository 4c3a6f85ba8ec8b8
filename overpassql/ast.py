"""AST of OverpassQL: small mutable dataclasses, one per statement, filter and setting.

The tree is source-level (what the user wrote); the serialisers turn it into what
Overpass prints. Edit a query by changing fields and calling ``overpassql.dump``::

    script = parse('area[name="Bonn"]->.a;nwr[amenity=cafe](area.a);out center;')
    for node in walk(script):
        if isinstance(node, Tag) and node.key == "amenity":
            node.value = "pub"
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Iterator, Optional, Union

from .errors import Diagnostic


# ---------------------------------------------------------------- expressions

@dataclass
class Expr:
    """A node of Overpass' operator tree (``if:``, ``make``, ``convert``, ``for``).

    ``token`` is the operator or the leaf text (strings keep their quotes);
    brackets are the nodes ``(``, ``[`` and ``{`` whose ``lhs`` is the callee or
    subject and ``rhs`` the content, exactly as Overpass builds the tree.
    """

    token: str
    lhs: Optional["Expr"] = None
    rhs: Optional["Expr"] = None
    line: int = 0


# -------------------------------------------------------------------- filters

@dataclass
class Tag:
    """``[key]``, ``[key=value]``, ``[!key]``, ``[key~regex,i]``, ``[~keyregex~regex]``."""

    key: str
    value: str = ""
    op: str = "exists"  # "=", "!=", "~", "!~", "exists", "not_exists"
    key_regex: bool = False
    case_insensitive: bool = False
    line: int = 0


@dataclass
class BBox:
    """``(south,west,north,east)``; values kept as written."""

    south: str
    west: str
    north: str
    east: str
    line: int = 0


@dataclass
class Around:
    """``(around[.set]:radius[,lat,lon[,lat,lon...]])``."""

    radius: str
    coords: list[str] = field(default_factory=list)
    set: Optional[str] = None
    line: int = 0


@dataclass
class AreaFilter:
    """``(area)``, ``(area.set)``, ``(area:id)``."""

    set: Optional[str] = None
    ref: Optional[str] = None
    line: int = 0


@dataclass
class Pivot:
    set: Optional[str] = None
    line: int = 0


@dataclass
class Poly:
    bounds: str
    line: int = 0


@dataclass
class Ids:
    """``(123)`` (``short=True``) or ``(id:1,2,3)``."""

    ids: list[str]
    short: bool = False
    line: int = 0


@dataclass
class User:
    names: list[str]
    line: int = 0


@dataclass
class Uid:
    uids: list[str]
    line: int = 0


@dataclass
class Newer:
    date: str
    line: int = 0


@dataclass
class Changed:
    since: Optional[str] = None
    until: Optional[str] = None
    line: int = 0


@dataclass
class RecurseFilter:
    """``(r)``, ``(w.set)``, ``(bn)``, ``(r:"role")``, ``(>)``, ``(<<.set)``."""

    kind: str
    set: Optional[str] = None
    role: Optional[str] = None
    line: int = 0


@dataclass
class IfFilter:
    expr: Optional[Expr]
    line: int = 0


@dataclass
class SetFilter:
    """``node.a`` / ``node.a.b``: intersect with a named set (``prefix``: right after
    the type, where Overpass puts it first)."""

    name: str
    prefix: bool = False
    line: int = 0


@dataclass
class PlaceholderFilter:
    """An overpass-turbo placeholder used as a filter, e.g. ``({{bbox}})``."""

    text: str
    line: int = 0


Filter = Union[Tag, BBox, Around, AreaFilter, Pivot, Poly, Ids, User, Uid, Newer, Changed,
               RecurseFilter, IfFilter, SetFilter, PlaceholderFilter]


# ----------------------------------------------------------------- statements

@dataclass
class Query:
    """``type[.set]filters...[->.into]``, e.g. ``nwr["amenity"="cafe"](area.a)``."""

    type: str
    filters: list = field(default_factory=list)
    into: str = "_"
    line: int = 0


@dataclass
class Item:
    """``.set`` alone (``._``, ``.a->.b``)."""

    set: str = "_"
    into: str = "_"
    line: int = 0


@dataclass
class Union_:
    body: list = field(default_factory=list)
    into: str = "_"
    line: int = 0


@dataclass
class Difference:
    body: list = field(default_factory=list)
    into: str = "_"
    line: int = 0


@dataclass
class Recurse:
    """``>``, ``>>``, ``<``, ``<<`` as statements (``.a >->.b``)."""

    kind: str
    set: Optional[str] = None
    into: str = "_"
    line: int = 0


@dataclass
class Out:
    """``out`` with its options in source order (``geom``, ``qt``, ``10``, ``meta``...)."""

    options: list[str] = field(default_factory=list)
    set: Optional[str] = None
    bbox: Optional[tuple] = None
    line: int = 0


@dataclass
class IsIn:
    set: Optional[str] = None
    lat: Optional[str] = None
    lon: Optional[str] = None
    into: str = "_"
    line: int = 0


@dataclass
class MapToArea:
    set: Optional[str] = None
    into: str = "_"
    line: int = 0


@dataclass
class Make:
    """``make``/``convert type key=expr,...``; ``keyword`` says which."""

    keyword: str
    type: str = ""
    assignments: list[Expr] = field(default_factory=list)
    set: Optional[str] = None
    into: str = "_"
    line: int = 0


@dataclass
class Block:
    """``foreach``, ``for(...)``, ``complete``, ``retro(...)``, ``if(...)``, ``compare``,
    ``timeline``, ``local``: a keyword, an optional argument and a body."""

    keyword: str
    body: list = field(default_factory=list)
    set: Optional[str] = None
    into: str = "_"
    arg: Optional[Expr] = None
    else_body: Optional[list] = None
    line: int = 0


@dataclass
class Placeholder:
    """An overpass-turbo placeholder used as a statement (``{{geocodeArea:X}}->.a``);
    ``definition`` marks a user shortcut ``{{name=value}}`` (no ``;`` after it)."""

    text: str
    into: str = "_"
    line: int = 0
    definition: bool = False


@dataclass
class Setting:
    """``[key:value]``; ``config`` is the csv field list of ``[out:csv(...)]``."""

    key: str
    value: str = ""
    config: Optional[str] = None
    extra: Optional[str] = None  # second date of [diff:a,b]
    line: int = 0


@dataclass
class Script:
    """A whole query. ``aborted``: Overpass gave up and printed nothing (the parse
    stopped at the first such error; ``statements`` holds what came before)."""

    settings: list[Setting] = field(default_factory=list)
    statements: list = field(default_factory=list)
    errors: list[Diagnostic] = field(default_factory=list)
    aborted: bool = False


Node = Union[Script, Setting, Query, Item, Union_, Difference, Recurse, Out, IsIn, MapToArea,
             Make, Block, Placeholder, Expr, Filter]


def walk(node) -> Iterator:
    """Yield ``node`` and every AST node below it, depth first, in source order."""
    stack = [node]
    while stack:
        cur = stack.pop()
        yield cur
        children = []
        for name in _fields_of(type(cur))[0]:
            value = getattr(cur, name)
            if isinstance(value, list):
                children.extend(v for v in value if hasattr(v, "__dataclass_fields__"))
            elif hasattr(value, "__dataclass_fields__") and not isinstance(value, Diagnostic):
                children.append(value)
        stack.extend(reversed(children))


def clone(node):
    """A copy of ``node`` and of every AST node and list below it, to change without touching ``node``.

    Strings, tuples of strings and diagnostics are immutable and shared. About three times faster
    than parsing the text again and six times faster than ``copy.deepcopy``, so a tree parsed once
    can be handed out many times (``overpassql.parse`` keeps recent trees and returns clones).

    >>> script = Script(statements=[Query(type="node", filters=[Tag("amenity", "cafe", "=")])])
    >>> copy = clone(script)
    >>> copy.statements[0].filters[0].value = "pub"
    >>> script.statements[0].filters[0].value, copy == script
    ('cafe', False)
    """
    if isinstance(node, list):
        return [clone(value) for value in node]
    if not hasattr(node, "__dataclass_fields__") or isinstance(node, Diagnostic):
        return node
    cls = type(node)
    new = object.__new__(cls)
    state = new.__dict__
    state.update(node.__dict__)
    node_fields, string_lists = _fields_of(cls)
    for name in node_fields:
        value = state[name]
        if value is not None:
            state[name] = clone(value)
    for name in string_lists:
        state[name] = list(state[name])
    return new


# Field types that never hold a node: walk skips them (a Tag has no field to look into). Any other
# type, a new one included, is looked into.
_LEAF_TYPES = frozenset({"str", "int", "bool", "float", "Optional[str]", "Optional[int]", "list[str]", "Optional[tuple]"})
_FIELDS: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def _fields_of(cls: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(fields that may hold a node, fields that are lists of strings)`` of a node class: what walk
    looks into and what clone copies besides."""
    # dataclasses.fields() builds a fresh tuple of Field objects per call; the CPU default walks
    # ~3,000 nodes per request, so the names are looked up once per node class.
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = (tuple(f.name for f in fields(cls) if f.type not in _LEAF_TYPES),
                                tuple(f.name for f in fields(cls) if f.type == "list[str]"))
    return found
