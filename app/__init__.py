"""GeoQL application layer: ``compile(nl)``, model backends, demo and CLI.

>>> from app import compile, Compiler, Compilation
"""

from app.compile import Compilation, Compiler, compile  # noqa: A004
from app.decoding import Candidate

__all__ = ["compile", "Compiler", "Compilation", "Candidate"]
