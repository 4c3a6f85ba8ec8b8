"""The request's own words, in any language: scripts, folding, cue tables, and the one reading.

This layer reads natural-language text only; it knows nothing of tags, indexes or models.
:func:`read_request` reads a request once into a :class:`Request` (``geoql.nl.request``), which
``geoql.eval`` (faithfulness), ``geoql.retrieval`` (tag search, the prompt) and ``geoql.app``
(``compile()``, the backends, the confidence) take as it is.
"""

from geoql.nl.request import Around, Feature, Filter, Knowledge, Number, Place, Request, read_request

__all__ = ["Around", "Feature", "Filter", "Knowledge", "Number", "Place", "Request", "read_request"]
