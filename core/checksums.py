"""The one home of checking saved files against the SHA-256 their manifest lists.

Everything GeoQL saves for later (the tag index, the CPU model) lists each of its files
with its SHA-256 in its ``manifest.json``; a loader compares before it reads, so a damaged
or edited file is a clear message and a rebuild, never a different answer.

Hashing every file on every cold start would read ~150 MB that the loaders otherwise
only memory-map or never touch (an index's glossaries and lexicon). So each file's digest is
remembered in the user cache (``file-hashes.json``) against its *stamp*: size, modification
and change times in nanoseconds, inode and device. Any write to a file through the file system
moves its modification and change times, and setting the modification time back
(``touch -d``, ``os.utime``) moves the change time, which no user call can set: a file
changed in any of these ways is hashed again and caught. What the stamp cannot see is a change
below the file system (a failing disk flipping a bit in place): :func:`file_digests` with
``remembered=False`` (``geoql index verify``) hashes everything.

The memo is only ever a shortcut to a digest: a missing, unreadable or unwritable memo costs the
hashing, never the check.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from .files import write_atomic
from .paths import user_dir

MEMO_FILE = "file-hashes.json"
SEAL = "manifest_sha256"  # a manifest's own digest: of its canonical JSON without this entry


def sha256_file(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, in hex.

    >>> import tempfile; p = Path(tempfile.mkdtemp()) / "a"; _ = p.write_bytes(b"abc")
    >>> sha256_file(p)[:16]
    'ba7816bf8f01cfea'
    """
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _stamp(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def _memo_path() -> Path:
    return user_dir("cache", MEMO_FILE)


def _read_memo() -> dict:
    try:
        memo = json.loads(_memo_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return memo if isinstance(memo, dict) else {}


def _write_memo(memo: dict) -> None:
    memo = {name: entry for name, entry in memo.items() if Path(name).exists()}  # files deleted since
    try:
        write_atomic(_memo_path(), json.dumps(memo, indent=0, sort_keys=True))
    except OSError:  # a read-only or full cache only costs the hashing next time
        pass


def _is_sha256(value) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def file_digests(paths, *, remembered: bool = True) -> list[str]:
    """Each file's SHA-256; with ``remembered``, a file whose stamp is the one last seen is not read again.

    Raises ``OSError`` for a file that is missing or unreadable.
    """
    memo = _read_memo() if remembered else {}
    out, changed = [], False
    for path in paths:
        path = Path(path)
        stamp = _stamp(path.stat())
        name = str(path.resolve())
        entry = memo.get(name)
        if not (isinstance(entry, dict) and entry.get("stat") == stamp and _is_sha256(entry.get("sha256"))):
            digest = sha256_file(path)
            # The file may have changed while it was read: remember the digest only for the stamp it was read under.
            if _stamp(path.stat()) == stamp:
                memo[name] = {"stat": stamp, "sha256": digest}
                changed = True
            out.append(digest)
        else:
            out.append(entry["sha256"])
    if changed and remembered:
        _write_memo(memo)
    return out


def folder_files(folder: str | os.PathLike, skip: tuple[str, ...] = ()) -> list[str]:
    """Every file under ``folder`` as a relative POSIX path, sorted; names in ``skip`` and dot files (a
    writer's temporaries, ``geoql.core.files.write_atomic``) left out.

    >>> import tempfile; d = Path(tempfile.mkdtemp()); (d / "sub").mkdir()
    >>> _ = (d / "b").write_text("1"); _ = (d / "sub" / "a").write_text("2"); _ = (d / "manifest.json").write_text("{}")
    >>> _ = (d / ".b.x1.tmp").write_text("half")
    >>> folder_files(d, skip=("manifest.json",))
    ['b', 'sub/a']
    """
    folder = Path(folder)
    names = (p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    return sorted(n for n in names if n not in skip and not any(part.startswith(".") for part in n.split("/")))


def digest_folder(folder: str | os.PathLike, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """``{relative path: SHA-256}`` of every file under ``folder`` (what a manifest lists), hashed now."""
    folder = Path(folder)
    names = folder_files(folder, skip)
    return dict(zip(names, file_digests([folder / n for n in names], remembered=False)))


def remember(folder: str | os.PathLike, names) -> None:
    """Hash the files ``names`` under ``folder`` now and remember their digests (a writer, after moving a
    finished build into place): its first load then only stats them."""
    folder = Path(folder)
    file_digests([folder / name for name in names])


def mismatches(folder: str | os.PathLike, expected: dict[str, str], *, remembered: bool = True) -> list[str]:
    """The names of ``expected`` whose file under ``folder`` is missing or whose SHA-256 differs; [] when all match.

    >>> import tempfile; d = Path(tempfile.mkdtemp()); _ = (d / "a").write_bytes(b"abc")
    >>> mismatches(d, {"a": sha256_file(d / "a"), "b": "0" * 64}, remembered=False)
    ['b']
    >>> _ = (d / "a").write_bytes(b"abd"); mismatches(d, {"a": "ba7816bf" + "0" * 56}, remembered=False)
    ['a']
    """
    folder = Path(folder)
    names = sorted(expected)
    present = [n for n in names if (folder / n).is_file()]
    try:
        found = dict(zip(present, file_digests([folder / n for n in present], remembered=remembered)))
    except OSError:  # a file removed or unreadable meanwhile: check one by one
        found = {}
        for n in present:
            try:
                found[n] = file_digests([folder / n], remembered=remembered)[0]
            except OSError:
                pass
    return [n for n in names if found.get(n) != expected[n]]


def _canonical_digest(data: dict) -> str:
    body = {k: v for k, v in data.items() if k != SEAL}
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


def seal(data: dict) -> dict:
    """``data`` (a manifest) with its own digest added (:data:`SEAL`): a manifest cannot list its own file's
    SHA-256, and its settings (a model's config, an index's languages) change answers as much as any array.

    >>> sealed = seal({"k": 10, "files": {"a": "00"}})
    >>> is_sealed(sealed), is_sealed({**sealed, "k": 11}), is_sealed({"k": 10})
    (True, False, False)
    """
    return {**{k: v for k, v in data.items() if k != SEAL}, SEAL: _canonical_digest(data)}


def is_sealed(data) -> bool:
    """Whether a manifest carries its own digest and it matches (see :func:`seal`)."""
    return isinstance(data, dict) and data.get(SEAL) == _canonical_digest(data)


__all__ = ["seal", "is_sealed", "SEAL", "sha256_file", "file_digests", "folder_files", "digest_folder", "remember", "mismatches", "MEMO_FILE"]
