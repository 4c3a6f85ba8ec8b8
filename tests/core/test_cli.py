"""positive_int, the argparse type for counts."""

from __future__ import annotations

import argparse

import pytest

from geoql.core.cli import positive_int


@pytest.mark.parametrize(("text", "value"), [("1", 1), ("20", 20), (" 7 ", 7)])
def test_counts(text, value):
    assert positive_int(text) == value


@pytest.mark.parametrize("text", ["0", "-5", "2.5", "ten", ""])
def test_not_counts(text):
    with pytest.raises(argparse.ArgumentTypeError, match="at least 1"):
        positive_int(text)


def test_in_a_parser(capsys):
    parser = argparse.ArgumentParser(prog="geoql compile")
    parser.add_argument("--limit", type=positive_int)
    with pytest.raises(SystemExit):
        parser.parse_args(["--limit", "0"])
    assert "must be a whole number of at least 1, got '0'" in capsys.readouterr().err
