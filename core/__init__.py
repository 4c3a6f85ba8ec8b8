"""Shared plumbing for every GeoQL layer above ``overpassql``.

The bottom layer of the ``geoql`` package: the error root with user-facing
messages (``geoql.core.errors``), user directories (``geoql.core.paths``),
atomic files (``geoql.core.files``) and command-line helpers
(``geoql.core.cli``). It imports nothing else of the project.
"""
