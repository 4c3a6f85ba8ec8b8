"""Writing directories so that an interrupted write never damages what was there."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable


def atomic_dir(out: str | os.PathLike, write: Callable[[Path], object]) -> Path:
    """Build a directory with ``write(staging)`` beside ``out``, then swap it in.

    Until the swap, ``out`` keeps its previous content; if ``write`` fails, the
    staging directory is removed and ``out`` is untouched.

    >>> import tempfile
    >>> base = Path(tempfile.mkdtemp())
    >>> _ = atomic_dir(base / "d", lambda p: (p / "a.txt").write_text("one"))
    >>> def broken(p):
    ...     (p / "a.txt").write_text("two")
    ...     raise RuntimeError("disk full")
    >>> try:
    ...     atomic_dir(base / "d", broken)
    ... except RuntimeError:
    ...     pass
    >>> (base / "d" / "a.txt").read_text(), sorted(q.name for q in base.iterdir())
    ('one', ['d'])
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        write(staging)
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            os.rename(out, old / "previous")
            os.rename(staging, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out
