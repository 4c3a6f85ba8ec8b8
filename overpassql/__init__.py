"""OverpassQL language core: parse, serialise (XML / compact QL / pretty QL), edit.

>>> to_xml('node["amenity"="cafe"];out;').splitlines()[1].strip()
'<query into="_" type="node">'
"""

from __future__ import annotations

from . import ast
from .api import check, dump, has_output, parse, pretty, tag_filters, to_ql, to_xml, to_xml_with_errors
from .ast import Script, walk
from .errors import Diagnostic, OverpassQLError, ParseError, SerializationError
from .explain import explain
from .turbo import replace_turbo_vars

__all__ = ["ast", "parse", "check", "has_output", "to_xml", "to_xml_with_errors", "to_ql", "pretty", "dump", "tag_filters",
           "explain", "replace_turbo_vars", "Script", "walk", "ParseError", "Diagnostic",
           "OverpassQLError", "SerializationError"]
