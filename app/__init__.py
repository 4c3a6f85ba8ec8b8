"""GeoQL application layer: ``compile(nl)``, model backends, demo and CLI.

>>> from geoql.app import compile, Compiler, Compilation
"""

from geoql.app.compile import Compilation, Compiler, compile  # noqa: A004
from geoql.app.decoding import Candidate

__all__ = ["compile", "Compiler", "Compilation", "Candidate"]
