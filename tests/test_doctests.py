"""Every docstring example of ``overpassql`` and ``geoql``, one case per module.

The modules are imported under their installed names (``geoql.app.compile``), so
the examples see the same objects as every other caller.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import tomllib
from pathlib import Path

import pytest

# The installed packages, as pyproject.toml lists them (an editable install maps each
# to its folder, so walking geoql.__path__ alone would miss them).
PACKAGES = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]


def _modules() -> list[str]:
    names = set()
    for package_name in PACKAGES:
        package = importlib.import_module(package_name)
        names.add(package_name)
        for info in pkgutil.iter_modules(package.__path__, package_name + "."):
            if not info.ispkg and info.name.rsplit(".", 1)[-1] != "__main__":
                names.add(info.name)
    return sorted(names)


MODULES = _modules()


def test_every_layer_is_walked():
    for name in ("overpassql.parser", "geoql.core", "geoql.osm", "geoql.nl.text", "geoql.eval.metrics", "geoql.retrieval.tags",
                 "geoql.index.build", "geoql.app.compile", "geoql.app.cpu.model", "geoql.training.rewards"):
        assert name in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=0)
    report: list[str] = []
    for test in finder.find(module, name):
        if test.examples:
            runner.run(test, out=report.append)
    if runner.summarize(verbose=False).failed:
        pytest.fail("".join(report), pytrace=False)
