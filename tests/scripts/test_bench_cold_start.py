"""benchmarks/bench_cold_start.py: the folders it is given are the user's; it refuses one it would build into."""

from __future__ import annotations

import importlib.util

import pytest

from testdata import REPO_ROOT


def _bench():
    spec = importlib.util.spec_from_file_location("bench_cold_start", REPO_ROOT / "benchmarks" / "bench_cold_start.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("layout", ["empty", "parent"])
def test_an_index_dir_without_its_own_index_is_refused(tmp_path, capsys, layout):
    # the timed side would build an index into such a folder and replace it whole: given the parent of
    # the user's index (~/.local/share/geoql/index), that removed the index/v1 inside it
    folder = tmp_path / "index"
    folder.mkdir()
    if layout == "parent":
        (folder / "manifest.json").write_text("{}", encoding="utf-8")
        (folder / "v1").mkdir()
        (folder / "v1" / "manifest.json").write_text("{}", encoding="utf-8")
    with pytest.raises(SystemExit) as exc:
        _bench().main(["--before", "HEAD", "--index-dir", str(folder), "--model-dir", str(tmp_path), "--skip-fresh"])
    assert exc.value.code == 2
    assert "give the index folder itself" in capsys.readouterr().err
    assert layout == "empty" or (folder / "v1" / "manifest.json").is_file()
