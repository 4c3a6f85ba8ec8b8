"""Small helpers shared by the ``register(subparsers)`` modules of every layer."""

from __future__ import annotations

import argparse


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


__all__ = ["positive_int"]
