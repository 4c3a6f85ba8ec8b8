"""Entry points: text in, text out; every function accepts any string without raising
anything but :class:`ParseError` (and only ``parse`` raises that)."""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from functools import lru_cache
from typing import Union

from . import ast as A
from .errors import Diagnostic, SerializationError
from .lower import lower
from .parser import Parser, parse
from .xml import element_to_xml


# Statements nest up to 1023 levels (Overpass' own limit); a few Python frames each.
RECURSION_LIMIT = 20000
_CACHEABLE = 20000  # characters; bigger inputs are not worth keeping in memory


_limit_lock = threading.Lock()
_limit_users = 0
_limit_saved = 0


@contextmanager
def deep_recursion():
    """Raise the recursion limit while converting; reference-counted, so concurrent
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
    if isinstance(text, str) and len(text) <= _CACHEABLE:
        return _convert_cached(text)
    return _convert_uncached(text)


def _xml_uncached(text: str) -> tuple[str, tuple[Diagnostic, ...]]:
    _, root, errors = _convert_uncached(text)
    with deep_recursion():
        return element_to_xml(root), errors


_xml_cached = lru_cache(maxsize=65536)(_xml_uncached)


def to_xml_with_errors(text: str) -> tuple[str, list[Diagnostic]]:
    """``(xml, diagnostics)`` as ``osm3s_query --dump-xml`` prints them (stdout, stderr)."""
    if isinstance(text, str) and len(text) <= _CACHEABLE:
        xml, errors = _xml_cached(text)
    else:
        xml, errors = _xml_uncached(text)
    return xml, list(errors)


def to_xml(text: str) -> str:
    """``osm3s_query --dump-xml --concise`` of ``text`` (stdout, stripped), also for
    queries with errors (the partial output the official metric scores)."""
    return to_xml_with_errors(text)[0]


def to_ql(text: str, pretty: bool = False) -> str:
    """``--dump-compact-ql`` (or ``--dump-pretty-ql``) of ``text``."""
    from .ql import element_to_ql
    _, root, _ = _convert(text)
    with deep_recursion():
        try:
            return element_to_ql(root, pretty=pretty)
        except RecursionError:
            return ""


def dump(script: A.Script) -> str:
    """AST -> one-line QL in the dataset's style; placeholders are kept."""
    from .ql import dump_script
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
