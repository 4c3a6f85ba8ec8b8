"""``geoql index build`` end to end through the dispatcher."""

from __future__ import annotations

import json

from app.cli import main
from fixtures_index import FakeNpmRegistry


def test_index_build_command(tmp_path, overpassnl_dir, capsys):
    out = tmp_path / "idx"
    with FakeNpmRegistry() as registry:
        code = main(["index", "build", "--out", str(out), "--data-dir", str(overpassnl_dir), "--cache-dir", str(tmp_path / "c"),
                     "--registry", registry.url, "--no-taginfo", "--train-limit", "8"])
    assert code == 0
    assert f"index written to {out}" in capsys.readouterr().out
    assert json.loads((out / "manifest.json").read_text())["counts"]["examples"] == 8


def test_unreachable_registry_is_a_user_error(tmp_path, overpassnl_dir, capsys):
    code = main(["index", "build", "--out", str(tmp_path / "idx"), "--data-dir", str(overpassnl_dir),
                 "--cache-dir", str(tmp_path / "c"), "--registry", "http://127.0.0.1:9", "--no-taginfo"])
    assert code == 2
    err = capsys.readouterr().err
    assert "geoql index: error: could not fetch @openstreetmap/id-tagging-schema@7.2.0" in err
    assert "Traceback" not in err
    assert not (tmp_path / "idx").exists()


def test_bad_option_is_a_user_error(tmp_path, capsys):
    assert main(["index", "build", "--out", str(tmp_path), "--registry", "ftp://x"]) == 2
    assert "--registry" in capsys.readouterr().err
