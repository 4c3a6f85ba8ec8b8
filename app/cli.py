"""The ``geoql`` command line: a thin dispatcher.

Each package owns its subcommands in its own ``cli.py`` with a
``register(subparsers)`` function; this module only wires them together and is
the one place where errors become what the user sees: a ``GeoqlError`` (or
``overpassql.OverpassQLError``) is one line ``geoql <command>: error: <message>``
and exit code 2; anything else is a bug and keeps its traceback. Those modules
must stay cheap to import (heavy libraries are imported inside the command
handlers), so ``geoql --help`` answers at once.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import sys

from overpassql import OverpassQLError

from geoql.core.errors import GeoqlError

# The modules with a ``register(subparsers)``, in the order their commands appear in --help.
COMMAND_MODULES = (
    "overpassql.cli",
    "geoql.eval.cli",
    "geoql.index.cli",
    "geoql.retrieval.cli",
    "geoql.app.compile_cli",
    "geoql.app.ui_cli",
    "geoql.app.run_cli",
    "geoql.app.cpu_cli",
    "geoql.app.eval_cli",
    "geoql.training.cli",
)


# Commands whose one module is all a call of them needs: `geoql compile "..."` then imports
# that module only, not every package's CLI (their imports were ~0.1 s of a cold compile).
# tests/app/test_cli.py checks that each really is registered by that module alone.
COMMAND_OWNERS = {
    "compile": "geoql.app.compile_cli",
    "ui": "geoql.app.ui_cli",
    "run": "geoql.app.run_cli",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``geoql`` parser; with ``command`` (a key of :data:`COMMAND_OWNERS`), only that command's."""
    parser = argparse.ArgumentParser(
        prog="geoql",
        description="Natural language to OverpassQL for OpenStreetMap.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in (COMMAND_OWNERS[command],) if command in COMMAND_OWNERS else COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            # A package still under construction must not break the others.
            if exc.name == name:
                continue
            raise
        module.register(subparsers)
    return parser


# The cyclic collector's first generation is collected every GC_THRESHOLD allocations (Python's
# default, 700, rescanned the ~10^6 objects of a loaded CPU model and index 169 times in one
# `geoql compile`: ~0.17 s of ~1.1 s of CPU). Reference counting frees everything else as before.
GC_THRESHOLD = 50_000


def main(argv: list[str] | None = None) -> int:
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        result = handler(args)
    except (GeoqlError, OverpassQLError) as exc:
        print(f"geoql {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"geoql {args.command}: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # a path the user gave cannot be read or written: their fix, not a bug report
        print(f"geoql {args.command}: error: {_os_error_line(exc)}", file=sys.stderr)
        return 2
    return int(result or 0)


def _os_error_line(exc: OSError) -> str:
    """One line for an ``OSError``: the message as written when GeoQL raised it with one,
    else the system's reason, the path and where to look.

    >>> _os_error_line(FileExistsError("runs/x is not empty; choose an empty or new directory"))
    'runs/x is not empty; choose an empty or new directory'
    >>> _os_error_line(FileNotFoundError(2, "No such file or directory", "/gone/x.json"))
    'No such file or directory (/gone/x.json); check the paths you gave'
    """
    if exc.errno is None and exc.strerror is None and exc.args:
        return str(exc)
    where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
    return f"{exc.strerror or exc}{where}; check the paths you gave"

