"""The one home of GeoQL's user directories.

Everything GeoQL keeps for a user (the tag index, the trained CPU model, the
downloaded dataset, HTTP caches, downloaded tag sources) lives under one of two
roots, chosen here and nowhere else:

- ``data``: what took minutes to build (``platformdirs.user_data_dir("geoql")``);
- ``cache``: what can be fetched again (``$GEOQL_CACHE_DIR``, else
  ``platformdirs.user_cache_dir("geoql")``).

A component with a variable of its own (``$GEOQL_INDEX_DIR``, ``$GEOQL_CPU_MODEL_DIR``)
names it as ``env``: when set, it is the directory itself.

>>> import os
>>> os.environ["GEOQL_DOCTEST_DIR"] = "/srv/geoql-index"
>>> user_dir("data", "index", "v5", env="GEOQL_DOCTEST_DIR")
PosixPath('/srv/geoql-index')
>>> del os.environ["GEOQL_DOCTEST_DIR"]
>>> user_dir("data", "index", "v5").parts[-2:]
('index', 'v5')
>>> user_dir("temp")
Traceback (most recent call last):
ValueError: unknown user directory kind 'temp': use 'data' or 'cache'
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "geoql"
CACHE_ENV_VAR = "GEOQL_CACHE_DIR"


def user_dir(kind: str, *parts: str, env: str | None = None) -> Path:
    """The user directory of ``kind`` (``"data"`` or ``"cache"``) joined with ``parts``.

    ``env``, when given and set, overrides the whole path. Nothing is created.
    """
    if kind not in ("data", "cache"):
        raise ValueError(f"unknown user directory kind {kind!r}: use 'data' or 'cache'")
    configured = os.environ.get(env) if env else None
    if configured:
        return Path(configured).expanduser()
    if kind == "cache" and os.environ.get(CACHE_ENV_VAR):
        root = Path(os.environ[CACHE_ENV_VAR]).expanduser()
    else:
        root = Path(platformdirs.user_cache_dir(APP_NAME) if kind == "cache" else platformdirs.user_data_dir(APP_NAME))
    return root.joinpath(*parts)


__all__ = ["user_dir", "APP_NAME", "CACHE_ENV_VAR"]
