"""Atomic files and directories: an interruption never damages what was there."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from fakes.support import run_concurrently

from geoql.core import files
from geoql.core.files import atomic_dir, check_writable_dir, replace_dir, write_atomic


def test_write_atomic_text_and_bytes(tmp_path):
    target = tmp_path / "a" / "b.json"
    assert write_atomic(target, "é\n") == target
    assert target.read_bytes() == "é\n".encode()
    write_atomic(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    assert [p.name for p in target.parent.iterdir()] == ["b.json"]


def test_write_atomic_keeps_the_old_file_when_the_rename_fails(tmp_path, monkeypatch):
    target = tmp_path / "results.pred"
    target.write_text("the user's results\n")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(target, "half")
    assert target.read_text() == "the user's results\n"
    assert [p.name for p in tmp_path.iterdir()] == ["results.pred"]  # no temporary left


def test_write_atomic_gives_the_usual_mode(tmp_path):
    old = os.umask(0o022)
    try:
        path = write_atomic(tmp_path / "m.txt", "x")
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644


def test_replace_dir_swaps_and_removes_the_old(tmp_path):
    target = tmp_path / "index"
    target.mkdir()
    (target / "old.txt").write_text("old")
    staging = tmp_path / ".index.new"
    staging.mkdir()
    (staging / "new.txt").write_text("new")
    replace_dir(staging, target)
    assert sorted(p.name for p in target.iterdir()) == ["new.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]


def _swap_with_renames(tmp_path, monkeypatch, before_rename):
    """A model folder, a finished staging folder, and ``os.rename`` that first calls ``before_rename(src)``
    (which may raise, or play another writer); returns (target, staging)."""
    target = tmp_path / "model"
    target.mkdir()
    (target / "model.pkl").write_text("trained for minutes")
    staging = tmp_path / "staging"
    staging.mkdir()
    (staging / "model.pkl").write_text("ours")
    real_rename = os.rename

    def rename(src, dst):
        before_rename(Path(src), staging, target)
        real_rename(src, dst)

    monkeypatch.setattr(files.os, "rename", rename)
    return target, staging


def test_replace_dir_puts_the_old_back_when_the_swap_fails(tmp_path, monkeypatch):
    def interrupt(src, staging, target):
        if src == staging:
            raise OSError("interrupted")

    target, staging = _swap_with_renames(tmp_path, monkeypatch, interrupt)
    with pytest.raises(OSError, match="interrupted"):
        replace_dir(staging, target)
    assert (target / "model.pkl").read_text() == "trained for minutes"


def test_replace_dir_gives_way_to_a_writer_that_finished_meanwhile(tmp_path, monkeypatch):
    # The interleaving that left a stray ".prepared-….old.…" folder in CI: another writer publishes its
    # copy between our moving the old one aside and our swap.
    def another_writer(src, staging, target):
        if src == staging:
            target.mkdir()
            (target / "model.pkl").write_text("theirs")

    target, staging = _swap_with_renames(tmp_path, monkeypatch, another_writer)
    with pytest.raises(OSError):
        replace_dir(staging, target)
    assert (target / "model.pkl").read_text() == "theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model", "staging"]  # the caller removes its staging


def test_replace_dir_keeps_the_old_aside_when_it_cannot_be_put_back(tmp_path, monkeypatch):
    # Not a concurrent writer (the place is empty): the user's old copy must survive, beside it.
    def broken_disk(src, staging, target):
        if src == staging or src.name == "previous":
            raise OSError(errno.EIO, "input/output error")

    target, staging = _swap_with_renames(tmp_path, monkeypatch, broken_disk)
    with pytest.raises(OSError, match="input/output error"):
        replace_dir(staging, target)
    (kept,) = tmp_path.glob(".model.old.*/previous")
    assert (kept / "model.pkl").read_text() == "trained for minutes"


def test_concurrent_atomic_dirs_leave_one_complete_copy(tmp_path):
    for round_ in range(20):
        out = tmp_path / str(round_)

        def build(n=round_):
            try:
                atomic_dir(out, lambda p: (p / "x").write_text(str(n)))
            except OSError:
                pass  # lost the race to another writer: its copy is in place

        _, errors = run_concurrently(build, 6)
        assert not errors and (out / "x").read_text() == str(round_)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(str(i) for i in range(20))


def test_atomic_dir_builds_beside_and_cleans_up(tmp_path):
    out = atomic_dir(tmp_path / "d", lambda p: (p / "x").write_text("1"))
    assert (out / "x").read_text() == "1"
    with pytest.raises(KeyboardInterrupt):
        atomic_dir(tmp_path / "d", lambda p: (_ for _ in ()).throw(KeyboardInterrupt()))
    assert (out / "x").read_text() == "1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]


def test_check_writable_dir(tmp_path):
    check_writable_dir(tmp_path / "new" / "deeper")
    assert not (tmp_path / "new").exists()  # nothing stays
    blocker = tmp_path / "file.txt"
    blocker.write_text("")
    with pytest.raises(OSError, match="is not a directory; choose an output path in a writable directory"):
        check_writable_dir(blocker / "out")


def _holder(target):
    """A process inside ``staging_dir(target)``, as a build is; its staging directory."""
    import subprocess
    import sys

    code = ("import sys, time; from pathlib import Path; from geoql.core.files import staging_dir\n"
            "with staging_dir(Path(sys.argv[1])) as s:\n    (s / 'part.faiss').write_bytes(b'x' * 1000); print(s, flush=True); time.sleep(600)")
    process = subprocess.Popen([sys.executable, "-c", code, str(target)], stdout=subprocess.PIPE, text=True)
    return process, Path(process.stdout.readline().strip())


def test_a_killed_builds_staging_is_removed_and_a_live_one_kept(tmp_path):
    import time

    target = tmp_path / "v1"
    live, live_dir = _holder(target)
    killed, killed_dir = _holder(target)
    try:
        killed.kill()  # SIGKILL: no cleanup of its own
        killed.wait()
        assert live_dir.name.startswith(".v1.build-") and killed_dir.is_dir()
        assert files.remove_dead_staging(target) == []  # both younger than a minute: one may be locking it right now
        hour_ago = time.time() - 3600
        for path in (live_dir, killed_dir):
            os.utime(path, (hour_ago, hour_ago))
        assert files.is_live_staging(live_dir) and not files.is_live_staging(killed_dir)
        assert files.remove_dead_staging(target) == [killed_dir]
        assert live_dir.is_dir() and (live_dir / "part.faiss").is_file() and not killed_dir.exists()
    finally:
        live.kill()
        live.wait()
    # the next staging_dir of the same target (the next build) removes the rest
    os.utime(live_dir, (time.time() - 3600,) * 2)
    with files.staging_dir(target):
        assert not live_dir.exists()


def test_the_previous_copy_set_aside_is_kept_while_it_is_the_only_one(tmp_path):
    import time

    target = tmp_path / "v1"
    aside = tmp_path / ".v1.old.abc123"
    (aside / "previous").mkdir(parents=True)
    os.utime(aside, (time.time() - 3600,) * 2)
    assert files.remove_dead_staging(target) == [] and aside.is_dir()  # killed between the two renames: the only copy
    target.mkdir()
    assert files.remove_dead_staging(target) == [aside] and not aside.exists()
