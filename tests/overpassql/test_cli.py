"""geoql ql: argument parsing and output through a real argparse parser."""

from __future__ import annotations

import argparse
import io

import pytest

from overpassql import cli


def _run(argv):
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.handler(args)


def test_xml_of_an_argument(capsys):
    assert _run(["ql", "xml", 'node["a"="b"];out;']) == 0
    out = capsys.readouterr()
    assert out.out.startswith('<osm-script>\n  <query into="_" type="node">')
    assert out.err == ""


def test_compact_pretty_and_turbo(capsys):
    _run(["ql", "--turbo", "compact", 'node[a=b]({{bbox}});out geom qt;'])
    assert capsys.readouterr().out == 'node["a"="b"](44.99,-0.99,44.99,-0.99);out qt geom;\n'
    _run(["ql", "pretty", 'way[a][b];'])
    assert capsys.readouterr().out == 'way\n  ["a"]\n  ["b"];\n'
    _run(["ql", "turbo", '{{geocodeArea:"X"}}->.a;'])
    assert capsys.readouterr().out == "area(3600069990)->.a;\n"


def test_check_reads_stdin_and_reports_errors(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO('node["a"="b"]\nway;'))
    assert _run(["ql", "check"]) == 1
    assert capsys.readouterr().err == "line 2: parse error: ';' expected - 'way' found.\n"


def test_unknown_action_is_rejected():
    with pytest.raises(SystemExit):
        _run(["ql", "bogus", "node;"])
