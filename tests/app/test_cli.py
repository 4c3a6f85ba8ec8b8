"""The ``geoql`` dispatcher: every command registered, errors as one line with exit 2."""

from __future__ import annotations

import argparse

import pytest
from overpassql import OverpassQLError

import geoql.app.cli as app_cli
from geoql.app.backends.base import BackendError
from geoql.app.cli import main
from geoql.core.errors import UserError
from geoql.eval.dataset import DatasetError


def test_every_command_is_registered(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in ("ql", "eval", "index", "retrieval-eval", "compile", "ui", "cpu", "train"):
        assert command in out


def _commands(parser) -> dict:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


@pytest.mark.parametrize("command", sorted(app_cli.COMMAND_OWNERS))
def test_a_command_with_an_owner_builds_only_its_own_parser(command):
    """`geoql compile ...` imports one CLI module; its parser is the one the full parser has."""
    full, own = _commands(app_cli.build_parser()), _commands(app_cli.build_parser(command))
    assert set(own) == {command}
    assert own[command].format_help() == full[command].format_help()


def _parser_whose_handler_raises(exc):
    parser = argparse.ArgumentParser(prog="geoql")
    sub = parser.add_subparsers(dest="command")

    def handler(args):
        raise exc

    sub.add_parser("job").set_defaults(handler=handler)
    return lambda command=None: parser


@pytest.mark.parametrize(("exc", "code", "line"), [
    (UserError("pass --out FILE"), 2, "geoql job: error: pass --out FILE"),
    # every GeoqlError, raised anywhere below the handler, without a list of classes in the command
    (DatasetError("OverpassNL not found at /x: set GEOQL_DATA_DIR"), 2,
     "geoql job: error: OverpassNL not found at /x: set GEOQL_DATA_DIR"),
    (BackendError("unknown backend 'nope'"), 2, "geoql job: error: unknown backend 'nope'"),
    (OverpassQLError("line 1: expected ';'"), 2, "geoql job: error: line 1: expected ';'"),
    # an OSError that GeoQL raised with its own message keeps it
    (FileExistsError("runs/x is not empty; choose an empty or new directory"), 2,
     "geoql job: error: runs/x is not empty; choose an empty or new directory"),
    # a path that cannot be written, raised deep inside a command: the user's fix, not a traceback
    (FileNotFoundError(2, "No such file or directory", "/gone/x.json"), 2,
     "geoql job: error: No such file or directory (/gone/x.json); check the paths you gave"),
    (KeyboardInterrupt(), 130, "geoql job: interrupted"),
])
def test_errors_are_one_line(exc, code, line, monkeypatch, capsys):
    monkeypatch.setattr(app_cli, "build_parser", _parser_whose_handler_raises(exc))
    assert main(["job"]) == code
    assert capsys.readouterr().err == line + "\n"


def test_a_bug_is_not_hidden(monkeypatch):
    monkeypatch.setattr(app_cli, "build_parser", _parser_whose_handler_raises(KeyError("bug")))
    with pytest.raises(KeyError):
        main(["job"])


@pytest.mark.parametrize("argv", [
    ["compile", "--split", "dev", "--out", "x.pred", "--limit", "0"],
    ["retrieval-eval", "--split", "dev", "--limit", "-5"],
    ["cpu", "ablation", "--limit", "ten"],
])
def test_limits_are_counts(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2 and "--limit: must be a whole number of at least 1" in capsys.readouterr().err
