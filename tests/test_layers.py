"""The layer contract of ``[tool.importlinter]`` in pyproject.toml holds, and it bites.

``lint-imports`` reads packages from the file system. An editable install maps
``geoql.app`` to ``app/`` and so on (``[tool.setuptools.package-dir]``), which the
linter cannot follow, so each check runs on a mirror of the installed layout made of
links to the repository's folders (``mirror``). The two failing cases copy one
folder into the mirror and add an import that the contract forbids.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def mirror(where: Path, copy: tuple[str, ...] = ()) -> Path:
    """The installed layout under ``where`` (links to the sources; packages in ``copy`` are copied)."""
    package_dir = tomllib.loads(PYPROJECT.read_text())["tool"]["setuptools"]["package-dir"]
    for package, folder in sorted(package_dir.items(), key=lambda item: item[0].count(".")):
        target = where.joinpath(*package.split("."))
        source = ROOT / folder
        if package in copy:
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        elif "." in package:
            target.symlink_to(source, target_is_directory=True)
        else:  # a top-level package: its own folder, so that the subpackages can sit inside it
            target.mkdir(parents=True)
            for item in source.iterdir():
                if item.suffix == ".py":
                    (target / item.name).symlink_to(item)
    return where


def lint(where: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(where)}
    return subprocess.run([str(LINT_IMPORTS), str(PYPROJECT), "--no-cache"], cwd=where, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_layer_contract_holds(tmp_path):
    result = lint(mirror(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_the_mirror_holds_every_layer(tmp_path):
    where = mirror(tmp_path)
    layers = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"][0]["layers"]
    for layer in layers:
        assert (where / "geoql" / layer / "__init__.py").is_file(), layer


@pytest.mark.parametrize(("package", "module", "line", "broken"), [
    ("geoql.core", "errors.py", "import geoql.app.compile", "geoql.core.errors -> geoql.app.compile"),
    ("geoql.eval", "metrics.py", "from geoql.retrieval import text", "geoql.eval.metrics -> geoql.retrieval.text"),
    ("overpassql", "tokens.py", "import geoql.core.errors", "overpassql.tokens -> geoql.core.errors"),
])
def test_an_upward_import_breaks_the_contract(tmp_path, package, module, line, broken):
    where = mirror(tmp_path, copy=(package,))
    path = where.joinpath(*package.split("."), module)
    path.write_text(path.read_text() + f"\n{line}  # added by the test\n")
    result = lint(where)
    assert result.returncode == 1, result.stdout + result.stderr
    assert broken in result.stdout, result.stdout
