"""Entry points: text in, text out; every function accepts any string without raising
anything but :class:`ParseError` (and only ``parse`` raises that). :func:`check` is
the validity check every caller shares."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Union

from . import ast as A
from .errors import Diagnostic, SerializationError
from .lower import lower
from .parser import CACHEABLE, Parser, deep_recursion, parse
from .ql import dump_script, element_to_ql, pretty_script
from .tokens import blank_opaque
from .turbo import replace_turbo_vars
from .xml import element_to_xml


# An ``out`` word where a statement starts: at the beginning, after ; { } ( ), or after an
# input set (".a out"). Read on the text without strings and comments (tokens.blank_opaque).
_OUT_STATEMENT = re.compile(r"(?:^|[;{}()]|\.\w+)\s*out\b")


def _convert_uncached(text: str):
    if not isinstance(text, str):
        raise TypeError(f"expected a str query, got {type(text).__name__}")
    with deep_recursion():
        script = Parser(text, turbo=False, converter=True).parse()
        try:
            root, static = lower(script)
        except RecursionError:
            # An operator chain deeper than Python can walk: keep what is printable.
            script.errors.append(Diagnostic(1, 1, "Expression nested too deeply to convert"))
            script.statements = []
            root, static = lower(script)
    return script, root, tuple(script.errors) + tuple(static)


# Trees are big, XML strings small: keep few trees and many finished conversions
# (MBR decoding and the metrics call to_xml on the same strings over and over).
_convert_cached = lru_cache(maxsize=4096)(_convert_uncached)


def _convert(text: str):
    if isinstance(text, str) and len(text) <= CACHEABLE:
        return _convert_cached(text)
    return _convert_uncached(text)


def _xml_uncached(text: str) -> tuple[str, tuple[Diagnostic, ...]]:
    _, root, errors = _convert_uncached(text)
    with deep_recursion():
        return element_to_xml(root), errors


_xml_cached = lru_cache(maxsize=65536)(_xml_uncached)


def _errors_uncached(text: str) -> tuple[Diagnostic, ...]:
    return _convert_uncached(text)[2]


# The validity check needs the messages only: the CPU default checks ~70 candidates a request, and
# printing their XML would add a sixth to each check.
_errors_cached = lru_cache(maxsize=65536)(_errors_uncached)


def to_xml_with_errors(text: str) -> tuple[str, list[Diagnostic]]:
    """``(xml, diagnostics)`` as ``osm3s_query --dump-xml`` prints them (stdout, stderr)."""
    if isinstance(text, str) and len(text) <= CACHEABLE:
        xml, errors = _xml_cached(text)
    else:
        xml, errors = _xml_uncached(text)
    return xml, list(errors)


def to_xml(text: str) -> str:
    """``osm3s_query --dump-xml --concise`` of ``text`` (stdout, stripped), also for
    queries with errors (the partial output the official metric scores)."""
    return to_xml_with_errors(text)[0]


def check(text: str) -> list[Diagnostic]:
    """Why ``text`` is not a valid query: an empty list means it is valid.

    The one definition of validity: every message the converter (``osm3s_query``)
    prints for the query, parse and static errors alike, with overpass-turbo
    placeholders first replaced as the official metric does (``replace_turbo_vars``),
    so ``{{bbox}}`` is fine and a misspelt ``{{bbx}}`` is not. A blank text is no query.

    >>> check('nwr["amenity"="cafe"]({{bbox}});out;')
    []
    >>> [str(d) for d in check('nwr["amenity"="cafe"]({{bbx}});out;')]
    ['line 1: parse error: Unknown query clause']
    >>> [d.kind for d in check('node(newer:"2020");out;')]
    ['static']
    """
    if not isinstance(text, str):
        raise TypeError(f"check() needs a str, got {type(text).__name__}")
    if not text.strip():
        return [Diagnostic(1, 1, "empty query")]
    text = replace_turbo_vars(text)
    if len(text) > CACHEABLE:
        return list(_errors_uncached(text))
    return list(_errors_cached(text))


def has_output(text: str) -> bool:
    """``text`` has an ``out`` statement: without one a query runs and returns nothing.

    Textual, for speed (pools of candidates ask it for each): it agrees with the parsed tree
    on every OverpassNL query that parses (tests/overpassql/test_api.py), and costs a
    regular-expression pass instead of a parse. Words inside strings and comments do not count.

    >>> has_output('nwr["amenity"="cafe"]({{bbox}});out center;')
    True
    >>> has_output('[out:json];nwr["name"="way; out"]({{bbox}});')
    False
    >>> has_output('foreach.a->.b{.b out geom;}')
    True
    """
    if not isinstance(text, str):
        raise TypeError(f"has_output() needs a str, got {type(text).__name__}")
    return "out" in text and _OUT_STATEMENT.search(blank_opaque(text)) is not None


def to_ql(text: str, pretty: bool = False) -> str:
    """``--dump-compact-ql`` (or ``--dump-pretty-ql``) of ``text``."""
    _, root, _ = _convert(text)
    with deep_recursion():
        try:
            return element_to_ql(root, pretty=pretty)
        except RecursionError:
            return ""


def pretty(text: str) -> str:
    """``text`` one statement a line (the clauses of a long one a line each, as
    ``to_ql(pretty=True)`` lays them out), in the query's own spelling: overpass-turbo placeholders (``{{bbox}}``, ``{{geocodeArea:X}}``)
    stay, and ``dump(parse(pretty(q))) == dump(parse(q))``. A text that does not parse
    comes back unchanged (its errors are :func:`check`'s to report).

    >>> print(pretty('[out:json];{{geocodeArea:"Bonn"}}->.a;(nwr["amenity"="cafe"](area.a);'
    ...              'nwr["amenity"="restaurant"]["outdoor_seating"="yes"]["wheelchair"="yes"](area.a););out center;'))
    [out:json];
    {{geocodeArea:"Bonn"}}->.a;
    (
      nwr["amenity"="cafe"](area.a);
      nwr
        ["amenity"="restaurant"]
        ["outdoor_seating"="yes"]
        ["wheelchair"="yes"]
        (area.a);
    );
    out center;
    """
    if not isinstance(text, str):
        raise TypeError(f"pretty() needs a str, got {type(text).__name__}")
    with deep_recursion():
        script = parse(text, collect_errors=True)
        if script.errors or not text.strip():
            return text
        try:
            return pretty_script(script)
        except RecursionError:
            return text


def dump(script: A.Script) -> str:
    """AST -> one-line QL in the dataset's style; placeholders are kept."""
    with deep_recursion():
        try:
            return dump_script(script)
        except RecursionError:
            raise SerializationError("the script is nested too deeply to dump") from None


def tag_filters(text_or_script: Union[str, A.Script]) -> list[A.Tag]:
    """The tag filters of the query statements, in source order (not ``if:`` tags)."""
    script = text_or_script
    if not isinstance(script, (str, A.Script)):
        raise TypeError(f"tag_filters() needs a str or Script, got {type(script).__name__}")
    if isinstance(script, str):
        script = parse(script, collect_errors=True)
    return [node for node in A.walk(script) if isinstance(node, A.Tag)]
