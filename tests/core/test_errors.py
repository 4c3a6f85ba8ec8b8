"""One error root: every exception class GeoQL defines derives from GeoqlError."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import tomllib
from pathlib import Path

import pytest

from geoql.core.errors import GeoqlError, UserError

PACKAGES = [p for p in tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
            ["tool"]["setuptools"]["packages"] if p.startswith("geoql")]


def _error_classes() -> list[type]:
    found = {}
    for package_name in PACKAGES:
        package = importlib.import_module(package_name)
        for info in pkgutil.iter_modules(package.__path__, package_name + "."):
            if info.ispkg or info.name.endswith("__main__"):
                continue
            module = importlib.import_module(info.name)
            for name, obj in vars(module).items():
                if (inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module.__name__
                        and not name.startswith("_")):
                    found[f"{module.__name__}.{name}"] = obj
    return [found[k] for k in sorted(found)]


ERRORS = _error_classes()


def test_the_walk_finds_the_known_errors():
    names = {c.__name__ for c in ERRORS}
    assert {"BackendError", "IndexMissingError", "DatasetError", "OverpassError", "ConfigError"} <= names


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_every_error_has_the_one_root(cls):
    assert issubclass(cls, GeoqlError)


def test_user_error_is_a_geoql_error_with_its_message():
    with pytest.raises(GeoqlError, match="pass --out FILE"):
        raise UserError("pass --out FILE")
