"""A non-editable install works from any directory, package data included.

``pip install .`` builds the wheel the way a user gets it (one import package
``geoql`` plus the ``overpassql`` library, no generic top-level names such as
``app`` or ``index``); the installed copy then answers from ``/``, away from the
repository's folders.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("site")
    # --no-deps/--no-build-isolation: the dependencies and setuptools of this venv serve;
    # what is tested is what the wheel holds.
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-cache-dir", "--target", str(target), str(ROOT)], check=True, timeout=600,
                   capture_output=True)
    return target


def _run(args, installed: Path, **env) -> subprocess.CompletedProcess:
    environ = {**os.environ, "PYTHONPATH": str(installed), **env}
    return subprocess.run(args, cwd="/", env=environ, capture_output=True, text=True, timeout=300)


def test_the_wheel_holds_one_package_and_its_data(installed):
    tops = {p.name for p in installed.iterdir() if (p / "__init__.py").is_file()}
    assert tops == {"geoql", "overpassql"}
    assert (installed / "overpassql" / "grammar.lark").is_file()
    assert {p.name for p in (installed / "geoql" / "training" / "configs").glob("*.yaml")} >= {
        "qwen3-4b-sft-lora-r64.yaml", "qwen3-4b-grpo.yaml", "tiny-sft.yaml"}
    # fitted once and shipped: a fresh install with the canonical index takes them instead of training
    for shipped in ("app/cpu/shipped/selector.npz", "app/cpu/shipped/selector.json", "index/shipped/ranker.json"):
        assert (installed / "geoql" / shipped).is_file(), shipped
    # the feature lexicon's data, one file per language and the brands, and the place-name rules
    for data in ("nl/data/lexicon/en.json.gz", "nl/data/lexicon/brands.json.gz", "nl/data/lexicon/sources.json",
                 "nl/data/place_inflection.json"):
        assert (installed / "geoql" / data).is_file(), data
    for layer in ("core", "osm", "nl", "eval", "retrieval", "index", "app", "training"):
        assert (installed / "geoql" / layer / "__init__.py").is_file(), layer


def test_the_installed_lexicon_reads_from_anywhere(installed):
    code = "from geoql.nl.lexicon import lookup; print(lookup('Tankstellen in Stuttgart', 'de')[0].tags)"
    result = _run([sys.executable, "-c", code], installed)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "('amenity=fuel',)"


def test_the_user_request_benchmark_ships_with_the_package(installed):
    """eval/data travels in the wheel: the benchmark loads and scores without the repository or ../shared."""
    code = ("from geoql.eval.userbench import load_rows, score; rows = load_rows('all'); "
            "print(len(rows), score(rows[:3], ['', '', '']).ok)")
    result = _run([sys.executable, "-c", code], installed)
    assert result.returncode == 0, result.stderr
    n, ok = result.stdout.split()
    assert int(n) >= 420 and ok == "0"


def test_the_public_api_imports_from_anywhere(installed):
    code = ("import geoql, overpassql; from geoql import compile, Compiler, Compilation; "
            "print(geoql.__file__); print(overpassql.__file__); print(compile('  ').errors[0])")
    result = _run([sys.executable, "-c", code], installed)
    assert result.returncode == 0, result.stderr
    geoql_file, overpassql_file, message = result.stdout.splitlines()
    assert geoql_file.startswith(str(installed)) and overpassql_file.startswith(str(installed))
    assert message.startswith("empty request")


def test_the_installed_command_compiles_from_anywhere(installed, small_cpu_model_dir):
    result = _run([str(installed / "bin" / "geoql"), "compile", "pubs in Dublin"], installed,
                  GEOQL_CPU_MODEL_DIR=str(small_cpu_model_dir))
    assert result.returncode == 0, result.stderr
    assert '"amenity"="pub"' in result.stdout and "Dublin" in result.stdout
