"""The ``geoql`` command line: a thin dispatcher.

Each package owns its subcommands in its own ``cli.py`` with a
``register(subparsers)`` function; this module only wires them together.
Those modules must stay cheap to import (heavy libraries are imported inside
the command handlers), so ``geoql --help`` answers at once.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# (module, description) in the order they appear in --help.
COMMAND_MODULES = (
    "overpassql.cli",
    "geoql.eval.cli",
    "geoql.index.cli",
    "geoql.retrieval.cli",
    "geoql.app.compile_cli",
    "geoql.app.ui_cli",
    "geoql.app.cpu_cli",
    "geoql.training.cli",
)


class UserError(Exception):
    """An error caused by input or configuration: printed as one line, exit 2."""


def positive_int(text: str) -> int:
    """argparse type for counts such as ``--limit``: a whole number of at least 1.

    >>> positive_int("20")
    20
    >>> positive_int("-5")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: must be a whole number of at least 1, got '-5'
    """
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="geoql",
        description="Natural language to OverpassQL for OpenStreetMap.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            # A package still under construction must not break the others.
            if exc.name == name:
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        result = handler(args)
    except UserError as exc:
        print(f"geoql {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"geoql {args.command}: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # a path the user gave cannot be read or written: their fix, not a bug report
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        print(f"geoql {args.command}: error: {exc.strerror or exc}{where}; check the paths you gave", file=sys.stderr)
        return 2
    return int(result or 0)

