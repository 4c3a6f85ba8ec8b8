"""XML serialiser: the statement tree -> the text of ``osm3s_query --dump-xml --concise``."""

from __future__ import annotations

import re

from .lower import Element

_ESCAPES = {"&": "&amp;", '"': "&quot;", "<": "&lt;", ">": "&gt;"}
_ESCAPES.update({chr(c): f"&#x{c:02x};" for c in range(0x20)})
_ESCAPES = str.maketrans(_ESCAPES)


_SPECIAL = re.compile(r'[&"<>\x00-\x1f]')


def escape(value: str) -> str:
    return value.translate(_ESCAPES) if _SPECIAL.search(value) else value


def element_to_xml(el, indent: int = 0) -> str:
    if el is None:  # Overpass printed nothing (an aborted parse)
        return ""
    lines: list[str] = []
    _emit(el, indent, lines)
    return "\n".join(lines)


def _emit(el: Element, indent: int, lines: list[str]) -> None:
    pad = " " * indent
    attrs = "".join(f' {k}="{escape(v)}"' for k, v in el.attrs)
    if not el.children:
        lines.append(f"{pad}<{el.tag}{attrs}/>")
        return
    lines.append(f"{pad}<{el.tag}{attrs}>")
    for child in el.children:
        _emit(child, indent + 2, lines)
    lines.append(f"{pad}</{el.tag}>")
