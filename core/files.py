"""The one home of writing files and directories that an interruption cannot damage.

- :func:`write_atomic`: a file is written beside its destination and renamed over
  it, so readers see the old content or the new one, never half of it;
  :func:`open_atomic` is the same for a file written piece by piece.
- :func:`atomic_dir` / :func:`staging_dir` / :func:`replace_dir`: a directory is built
  beside its destination and swapped in; until the swap the old one stays as it was. A
  staging directory is locked (``flock``) by the process that builds it, so the one a killed
  build left behind (``.NAME.build-*``, up to 150 MB for an index) is recognised and removed
  by the next :func:`staging_dir` of the same destination (:func:`remove_dead_staging`),
  never one a live build is still writing.
- :func:`check_writable_dir`: fail at once, not after minutes of work, when an
  output directory cannot be written.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Callable, Iterator


def write_atomic(path: str | os.PathLike, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` through a temporary file and a rename.

    The parent directory is created. On any failure the temporary file is removed
    and ``path`` keeps its previous content.

    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "sub" / "out.txt"
    >>> write_atomic(target, "one\\n").read_text()
    'one\\n'
    >>> write_atomic(target, b"two").read_bytes(), sorted(p.name for p in target.parent.iterdir())
    (b'two', ['out.txt'])
    >>> oct(target.stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    True
    """
    with open_atomic(path) as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)
    return Path(path)


@contextmanager
def open_atomic(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """A binary file to write ``path`` piece by piece; it takes the place of ``path`` when the
    ``with`` block ends without an exception, else it is removed and ``path`` keeps its content.

    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "rows.jsonl"
    >>> with open_atomic(target) as f:
    ...     for n in range(3):
    ...         _ = f.write(b"%d\\n" % n)
    >>> target.read_bytes()
    b'0\\n1\\n2\\n'
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        # mkstemp makes the file owner-only; give it the mode a plain open() would have.
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def replace_dir(staging: str | os.PathLike, target: str | os.PathLike) -> Path:
    """Move the finished directory ``staging`` to ``target``, replacing what was there.

    The old ``target`` is renamed aside first and removed only after the new one is
    in place, so a failure midway leaves one of the two complete. When another writer
    puts its own complete copy at ``target`` meanwhile, the swap fails, that copy stays,
    and nothing of ours is left beside it.
    """
    staging, target = Path(staging), Path(target)
    if not target.exists():
        os.rename(staging, target)
        return target
    aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.{ASIDE_TAG}", dir=target.parent))
    try:
        os.rename(target, aside / "previous")
    except BaseException:  # e.g. a concurrent writer moved it first: nothing of it is in the empty ``aside``
        shutil.rmtree(aside, ignore_errors=True)
        raise
    try:
        os.rename(staging, target)
    except BaseException:
        try:
            os.rename(aside / "previous", target)  # put the old one back
        except OSError as exc:
            # A concurrent writer's complete copy held the place at that moment (it may be swapped for a third
            # one meanwhile, never for nothing): the old one is not needed. Any other failure: keep it aside.
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
        shutil.rmtree(aside, ignore_errors=True)
        raise
    shutil.rmtree(aside, ignore_errors=True)
    return target


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
    with staging_dir(out) as staging:
        write(staging)
        return replace_dir(staging, out)


STAGING_TAG = "build-"  # .NAME.build-XXXXXXXX: a directory being built for NAME
ASIDE_TAG = "old."  # .NAME.old.XXXXXXXX: replace_dir's previous NAME, removed right after the swap
# A staging directory is locked a moment after it is made; one younger than this is never judged dead.
DEAD_AFTER_S = 60.0


@contextmanager
def staging_dir(target: str | os.PathLike) -> Iterator[Path]:
    """A new, empty directory beside ``target`` (``.NAME.build-*``), locked while the block runs and
    removed at its end unless it was moved into place (:func:`replace_dir`). Staging directories that
    killed builds of ``target`` left behind are removed first.

    >>> import tempfile
    >>> base = Path(tempfile.mkdtemp())
    >>> with staging_dir(base / "index") as staging:
    ...     _ = (staging / "a").write_text("x")
    ...     staging.name.startswith(".index.build-"), is_live_staging(staging)
    (True, True)
    >>> sorted(base.iterdir())
    []
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_dead_staging(target)
    path = Path(tempfile.mkdtemp(prefix=f".{target.name}.{STAGING_TAG}", dir=target.parent))
    fd = os.open(path, os.O_RDONLY)  # not inherited by child processes (PEP 446): the lock dies with this one
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield path
    finally:
        if path.exists():
            shutil.rmtree(path, ignore_errors=True)
        os.close(fd)


def is_live_staging(path: str | os.PathLike) -> bool:
    """Whether a process still holds the staging directory ``path``'s lock (it is being built)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops a lock taken here
    return False


def remove_dead_staging(target: str | os.PathLike) -> list[Path]:
    """Remove what interrupted writers of ``target`` left beside it; the removed paths.

    A staging directory (``.NAME.build-*``) goes when no process holds its lock and it is older than
    :data:`DEAD_AFTER_S` (a live build locks its own a moment after making it). ``replace_dir``'s
    ``.NAME.old.*`` goes only while ``target`` itself exists: otherwise it holds the only copy.
    Never raises: a directory that cannot be listed or removed is left as it is.
    """
    target = Path(target)
    removed = []
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        name = entry.name
        staging = name.startswith(f".{target.name}.{STAGING_TAG}")
        aside = name.startswith(f".{target.name}.{ASIDE_TAG}")
        if not (staging or aside):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or now - entry.stat(follow_symlinks=False).st_mtime < DEAD_AFTER_S:
                continue
        except OSError:
            continue
        path = Path(entry.path)
        if staging:
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # a live build
                os.close(fd)
                continue
            try:  # ours now: a build that starts meanwhile makes a directory of its own
                shutil.rmtree(path, ignore_errors=True)
            finally:
                os.close(fd)
        elif target.exists():
            shutil.rmtree(path, ignore_errors=True)
        else:
            continue
        if not path.exists():
            removed.append(path)
    return removed


def check_writable_dir(path: str | os.PathLike) -> None:
    """Fail now, not after minutes of work, when the directory ``path`` could not be made or written.

    Creates nothing that stays: a probe directory is made and removed in the nearest
    existing ancestor. Raises ``OSError`` with a message that names the path and the fix.

    >>> import tempfile; check_writable_dir(Path(tempfile.gettempdir()) / "geoql-doctest" / "out")
    >>> check_writable_dir(__file__ + "/out")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    OSError: cannot write to .../files.py/out: .../files.py is not a directory; choose an output path in a writable directory
    """
    target = Path(path).expanduser()
    existing = target
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    fix = "choose an output path in a writable directory"
    if not existing.is_dir():
        raise OSError(f"cannot write to {target}: {existing} is not a directory; {fix}")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".geoql-write-check-", dir=existing))
    except OSError as exc:
        raise OSError(f"cannot write to {target}: {exc.strerror or exc} in {existing}; {fix}") from None


__all__ = ["write_atomic", "open_atomic", "replace_dir", "atomic_dir", "staging_dir", "is_live_staging", "remove_dead_staging",
           "check_writable_dir"]
