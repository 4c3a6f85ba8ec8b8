"""Entry points: text in, text out; every function accepts any string without raising
anything but :class:`ParseError` (and only ``parse`` raises that)."""

from __future__ import annotations

from functools import lru_cache
from typing import Union

from . import ast as A
from .errors import Diagnostic
from .lower import lower
from .parser import Parser, parse
from .xml import element_to_xml


@lru_cache(maxsize=65536)
def _convert(text: str):
    script = Parser(text, turbo=False, converter=True).parse()
    root, static = lower(script)
    return script, root, tuple(script.errors) + tuple(static)


def to_xml_with_errors(text: str) -> tuple[str, list[Diagnostic]]:
    """``(xml, diagnostics)`` as ``osm3s_query --dump-xml`` prints them (stdout, stderr)."""
    _, root, errors = _convert(text)
    return element_to_xml(root), list(errors)


def to_xml(text: str) -> str:
    """``osm3s_query --dump-xml --concise`` of ``text`` (stdout, stripped), also for
    queries with errors (the partial output the official metric scores)."""
    return to_xml_with_errors(text)[0]


def to_ql(text: str, pretty: bool = False) -> str:
    """``--dump-compact-ql`` (or ``--dump-pretty-ql``) of ``text``."""
    from .ql import element_to_ql
    _, root, _ = _convert(text)
    return element_to_ql(root, pretty=pretty)


def dump(script: A.Script) -> str:
    """AST -> one-line QL in the dataset's style; placeholders are kept."""
    from .ql import dump_script
    return dump_script(script)


def tag_filters(text_or_script: Union[str, A.Script]) -> list[A.Tag]:
    """The tag filters of the query statements, in source order (not ``if:`` tags)."""
    script = text_or_script
    if isinstance(script, str):
        script = parse(script, collect_errors=True)
    return [node for node in A.walk(script) if isinstance(node, A.Tag)]
