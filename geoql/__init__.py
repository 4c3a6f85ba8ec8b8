"""GeoQL: natural language to OverpassQL for OpenStreetMap.

The public API::

    >>> from geoql import compile, Compiler, Compilation
    >>> compile("   ").errors
    ["empty request: describe what to find, e.g. 'drinking water taps in Vienna'"]

The layers, bottom up (``docs/INTERFACES.md``; checked by ``lint-imports``):
``overpassql`` (its own top-level library) -> ``geoql.core`` -> ``geoql.osm`` ->
``geoql.eval`` -> ``geoql.retrieval`` -> ``geoql.index`` -> ``geoql.app`` ->
``geoql.training``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["compile", "Compiler", "Compilation", "__version__"]

if TYPE_CHECKING:  # pragma: no cover
    from geoql.app.compile import Compilation, Compiler, compile  # noqa: A004

# Resolved on first use (PEP 562): ``import geoql.core`` or ``import geoql.eval``
# must not pull in the application layer and its backends.
_PUBLIC = {"compile": "geoql.app.compile", "Compiler": "geoql.app.compile", "Compilation": "geoql.app.compile"}


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        value = getattr(import_module(_PUBLIC[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'geoql' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
