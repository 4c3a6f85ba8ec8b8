"""``geoql index build`` end to end through the dispatcher."""

from __future__ import annotations

import json

from fixtures_index import FakeNpmRegistry, reseal
from geoql.app.cli import main
from geoql.index import prebuilt
from geoql.retrieval.artifacts import content_key


def test_index_build_command(tmp_path, overpassnl_dir, capsys):
    out = tmp_path / "idx"
    with FakeNpmRegistry() as registry:
        code = main(["index", "build", "--out", str(out), "--data-dir", str(overpassnl_dir), "--cache-dir", str(tmp_path / "c"),
                     "--registry", registry.url, "--no-taginfo", "--no-glossaries", "--train-limit", "8"])
    assert code == 0
    assert f"index written to {out}" in capsys.readouterr().out
    assert json.loads((out / "manifest.json").read_text())["counts"]["examples"] == 8


def test_index_build_without_the_multilingual_vectors(tmp_path, overpassnl_dir, capsys):
    out = tmp_path / "idx"
    with FakeNpmRegistry() as registry:
        code = main(["index", "build", "--out", str(out), "--data-dir", str(overpassnl_dir), "--cache-dir", str(tmp_path / "c"),
                     "--registry", registry.url, "--no-taginfo", "--no-glossaries", "--no-multilingual", "--train-limit", "8"])
    assert code == 0 and "no multilingual" not in capsys.readouterr().err
    assert json.loads((out / "manifest.json").read_text())["multilingual"] == {"status": "disabled"}
    assert not (out / "examples.e5.npy").exists()


def test_unreachable_registry_is_a_user_error(tmp_path, overpassnl_dir, capsys):
    code = main(["index", "build", "--out", str(tmp_path / "idx"), "--data-dir", str(overpassnl_dir),
                 "--cache-dir", str(tmp_path / "c"), "--registry", "http://127.0.0.1:9", "--no-taginfo", "--no-glossaries"])
    assert code == 2
    err = capsys.readouterr().err
    assert "geoql index: error: could not fetch @openstreetmap/id-tagging-schema@7.2.0" in err
    assert "Traceback" not in err
    assert not (tmp_path / "idx").exists()


def test_unwritable_output_fails_before_any_download(tmp_path, overpassnl_dir, capsys):
    (tmp_path / "file").write_text("a user's file")
    with FakeNpmRegistry() as registry:
        code = main(["index", "build", "--out", str(tmp_path / "file" / "idx"), "--data-dir", str(overpassnl_dir),
                     "--cache-dir", str(tmp_path / "c"), "--registry", registry.url, "--no-taginfo", "--no-glossaries"])
        assert registry.requests == []
    assert code == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'file'} is not a directory" in err and "Traceback" not in err
    assert (tmp_path / "file").read_text() == "a user's file" and not (tmp_path / "c").exists()


def test_bad_option_is_a_user_error(tmp_path, capsys):
    assert main(["index", "build", "--out", str(tmp_path), "--registry", "ftp://x"]) == 2
    assert "--registry" in capsys.readouterr().err


def test_fit_ranker_command(small_index_dir, tmp_path, capsys):
    import shutil

    from geoql.retrieval import TagRetriever

    copy = tmp_path / "idx"
    shutil.copytree(small_index_dir, copy)
    (copy / "ranker.json").unlink(missing_ok=True)
    reseal(copy)
    assert TagRetriever.load(copy).ranker is None  # learned fusion without a ranker falls back to linear
    assert main(["index", "fit-ranker", "--index-dir", str(copy), "--every", "4", "--rerank", "10", "--c2", "0.1"]) == 0
    out = capsys.readouterr().out
    assert f"ranker written to {copy / 'ranker.json'}" in out
    data = json.loads((copy / "ranker.json").read_text())
    assert data["trained_on"]["every"] == 4 and "same gold query" in data["trained_on"]["leave_one_out"]
    assert "glossed" not in data  # the small index has too few code-switched copies (MIN_GLOSSED_COPIES)
    assert data["stage2"]["rerank"] == 10 and data["trained_on"]["C2"] == 0.1
    assert TagRetriever.load(copy).ranker is not None  # the manifest lists the new ranker.json's SHA-256


def test_fit_ranker_without_index_is_a_user_error(tmp_path, capsys):
    assert main(["index", "fit-ranker", "--index-dir", str(tmp_path / "none")]) == 2
    assert "geoql index build" in capsys.readouterr().err


def test_build_fits_the_ranker(small_index_dir):
    data = json.loads((small_index_dir / "ranker.json").read_text())
    assert data["model"] == "cascade of two logistic regressions" and data["trained_on"]["split"] == "train"
    assert "glossed" not in data  # ~260 code-switched copies: fewer than MIN_GLOSSED_COPIES


def test_fit_ranker_bad_rerank_is_a_user_error(small_index_dir, tmp_path, capsys):
    assert main(["index", "fit-ranker", "--index-dir", str(small_index_dir), "--rerank", "0"]) == 2
    assert "rerank must be at least 1" in capsys.readouterr().err


def test_fit_ranker_fits_even_where_the_shipped_one_fits(small_index_dir, overpassnl_dir, tmp_path, capsys, monkeypatch):
    """``--fit-ranker``: the build of the small index's sources fits its own ranker instead of taking the shipped one."""
    shipped = tmp_path / "ranker.json"
    prebuilt.ship_ranker(small_index_dir, shipped)
    monkeypatch.setattr(prebuilt, "RANKER_FILE", shipped)
    out = tmp_path / "idx"
    with FakeNpmRegistry() as registry:
        code = main(["index", "build", "--out", str(out), "--data-dir", str(overpassnl_dir), "--cache-dir", str(tmp_path / "c"),
                     "--registry", registry.url, "--no-taginfo", "--no-glossaries", "--train-limit", "300", "--fit-ranker"])
    assert code == 0
    assert capsys.readouterr().out.rstrip().endswith("; ranker fitted")
    assert json.loads((out / "manifest.json").read_text())["ranker"] == "fitted"
    assert content_key(out) == content_key(small_index_dir)  # without the flag the shipped one would fit


def test_verify_hashes_every_file(small_index_dir, tmp_path, capsys):
    import os
    import shutil

    copy = tmp_path / "idx"
    shutil.copytree(small_index_dir, copy)
    assert main(["index", "verify", "--index-dir", str(copy)]) == 0
    assert "files match their SHA-256" in capsys.readouterr().out
    path = copy / "examples.e5.npy"
    stat = path.stat()
    data = bytearray(path.read_bytes())
    data[-7] ^= 0x40
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert main(["index", "verify", "--index-dir", str(copy)]) == 2
    err = capsys.readouterr().err
    assert "examples.e5.npy" in err and "geoql index build --out" in err and "Traceback" not in err


def test_the_next_build_removes_what_a_killed_build_left(tmp_path, overpassnl_dir, capsys):
    """A killed `geoql index build` leaves .NAME.build-* (19-134 MB); the next build of NAME removes it."""
    import os
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "idx"
    with FakeNpmRegistry() as registry:
        argv = ["index", "build", "--out", str(out), "--data-dir", str(overpassnl_dir), "--cache-dir", str(tmp_path / "c"),
                "--registry", registry.url, "--no-taginfo", "--no-glossaries", "--train-limit", "8"]
        build = subprocess.Popen([sys.executable, "-m", "geoql", *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob(".idx.build-*/tags.jsonl")) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(build.pid, signal.SIGKILL)
        build.wait()
        (left,) = tmp_path.glob(".idx.build-*")
        assert not out.exists()
        os.utime(left, (time.time() - 3600,) * 2)  # a minute on: no build could still be starting in it
        assert main(argv) == 0
    assert not left.exists() and (out / "manifest.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c", "idx"]
