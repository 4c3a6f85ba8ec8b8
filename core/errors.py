"""The one error root of GeoQL.

Every exception that GeoQL raises on purpose derives from :class:`GeoqlError`, and
its message is written for the person at the keyboard: one line that says what went
wrong and names the fix. Every ``geoql`` command turns a :class:`GeoqlError` (and
``overpassql.OverpassQLError``, the language core's own root) into that one line on
stderr and exit code 2 (``geoql.app.cli.main``); anything else is a bug and keeps
its traceback.

>>> issubclass(UserError, GeoqlError), issubclass(ConfigError, ValueError)
(True, True)
>>> str(UserError("pass --out FILE"))
'pass --out FILE'
"""

from __future__ import annotations


class GeoqlError(Exception):
    """Root of the errors GeoQL raises for the user; the message names the fix."""


class UserError(GeoqlError):
    """Bad input or configuration seen by a command-line handler (a flag, a path, a file)."""


class ConfigError(GeoqlError, ValueError):
    """A setting out of range or of the wrong kind (a config dataclass, a recipe, a saved artifact's
    settings); the message names the setting and how to fix it. Also a ``ValueError``, which is
    what Python code passing a bad value expects."""


__all__ = ["GeoqlError", "UserError", "ConfigError"]
