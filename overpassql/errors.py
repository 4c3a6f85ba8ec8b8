"""One error hierarchy for the language core; every error knows where it happened."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Diagnostic:
    """One message as Overpass prints it on stderr (``line N: parse error: ...``)."""

    line: int
    column: int
    message: str
    kind: str = "parse"  # "parse" or "static", the two prefixes osm3s_query uses

    def __str__(self) -> str:
        return f"line {self.line}: {self.kind} error: {self.message}"


class OverpassQLError(Exception):
    """Base class of all errors raised by :mod:`overpassql`."""


class ParseError(OverpassQLError, ValueError):
    """The query does not parse cleanly; ``errors`` holds every diagnostic in order."""

    def __init__(self, errors: list[Diagnostic], script=None):
        self.errors = list(errors)
        self.script = script
        first = self.errors[0] if self.errors else Diagnostic(1, 1, "invalid query")
        self.line = first.line
        self.column = first.column
        self.message = first.message
        super().__init__(str(first) if len(self.errors) == 1
                         else f"{first} (and {len(self.errors) - 1} more)")


class SerializationError(OverpassQLError, TypeError):
    """A serialiser met an AST node it does not know (a bug or a hand-built bad tree)."""
