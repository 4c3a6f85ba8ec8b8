"""``geoql cpu train``, ``ablation``, ``ship`` and ``ceiling`` end to end on a small budget."""

from __future__ import annotations

import pytest

from geoql.app.cli import main
from geoql.app.cpu.model import CpuModel


def test_train_then_ablation(tmp_path, capsys):
    assert main(["cpu", "train", "--out", str(tmp_path), "--limit", "30", "--k", "4"]) == 0
    assert "trained on 30 requests" in capsys.readouterr().out
    assert CpuModel.load(tmp_path).config.k == 4
    assert main(["cpu", "ablation", "--model-dir", str(tmp_path), "--limit", "10"]) == 0
    out = capsys.readouterr().out
    for step in ("copy top-1", "+ selection", "+ area edits", "+ tag edits", "+ other edits"):
        assert step in out


def test_train_with_tag_hints_then_ablation(tmp_path, capsys, monkeypatch, small_index_dir):
    argv = ["cpu", "train", "--out", str(tmp_path), "--limit", "20", "--k", "4", "--tag-hints", "on",
            "--index-dir", str(small_index_dir)]
    assert main(argv) == 0
    assert "tag hints: index" in capsys.readouterr().out
    monkeypatch.setenv("GEOQL_INDEX_DIR", str(small_index_dir))  # where the model finds its index
    assert main(["cpu", "ablation", "--model-dir", str(tmp_path), "--limit", "5"]) == 0
    assert "+ tag edits" in capsys.readouterr().out
    shipped = tmp_path / "shipped"
    assert main(["cpu", "ship", "--model-dir", str(tmp_path), "--index-dir", str(small_index_dir), "--out", str(shipped)]) == 0
    assert capsys.readouterr().out.count("wrote ") == 6
    assert sorted(p.name for p in shipped.iterdir()) == ["ranker.json", "selector.json", "selector.npz",
                                                         "vectors-english.npz", "vectors-multilingual.npz", "vectors.json"]


def test_ceiling_per_language(tmp_path, capsys, small_cpu_model_dir):
    from geoql.eval.dataset import load_split

    dev = load_split("dev")[:6]
    (tmp_path / "dev.xx.nl").write_text("".join(e.nl.upper() + "\n" for e in dev), encoding="utf-8")
    argv = ["cpu", "ceiling", "--osmnl-dir", str(tmp_path), "--languages", "xx", "--original", "--limit", "6",
            "--model-dir", str(small_cpu_model_dir)]
    assert main(argv) == 0
    rows = {line.split()[0]: [float(x) for x in line.split()[1:]] for line in capsys.readouterr().out.splitlines()[1:]}
    assert set(rows) == {"orig", "xx"}
    for answer, ceiling, candidates in rows.values():
        assert 0 <= answer <= ceiling <= 100 and candidates >= 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["cpu", "train", "--limit", "3"], "limit must be at least 20"),
     (["cpu", "train", "--limit", "20", "--tag-hints", "on", "--index-dir", "{tmp}/none"], "tag index is not usable"),
     (["cpu", "train", "--edits", "colour"], "unknown edit group"),
     (["cpu", "ablation", "--model-dir", "{tmp}/none"], "geoql cpu train"),
     (["cpu", "ship", "--model-dir", "{tmp}/none"], "geoql cpu train"),
     (["cpu", "ceiling", "--osmnl-dir", "{tmp}", "--languages", "xx"], "dev.xx.nl does not exist"),
     (["cpu", "ceiling", "--osmnl-dir", "{tmp}", "--languages", "short"], "dev.short.nl has 1 lines where OverpassNL dev has 1000"),
     # an output under a file: said before the training's minutes, not as a traceback at the save
     (["cpu", "train", "--out", "{tmp}/file/model"], "{tmp}/file is not a directory")],
)
def test_user_errors_are_one_line(argv, message, capsys, tmp_path):
    (tmp_path / "file").write_text("a user's file")
    (tmp_path / "dev.short.nl").write_text("cafes in Bonn\n", encoding="utf-8")
    assert main([a.replace("{tmp}", str(tmp_path)) for a in argv]) == 2
    err = capsys.readouterr().err
    assert message.replace("{tmp}", str(tmp_path)) in err and "Traceback" not in err
    assert "scoring" not in err  # no training started
    assert (tmp_path / "file").read_text() == "a user's file"
