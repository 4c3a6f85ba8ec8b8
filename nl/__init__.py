"""The request's own words, in any language: scripts, folding, cue tables, the intent frame.

This layer reads natural-language text only; it knows nothing of tags, indexes or
models. ``geoql.eval`` (faithfulness), ``geoql.retrieval`` (tokenising) and
``geoql.app`` (candidates) build on it.
"""
