"""The tag knowledge index: sources → documents → artifacts (``geoql index build``).

Sources: the iD tagging schema (npm, pinned), the OverpassNL training split and,
when reachable, taginfo. ``retrieval`` loads what this package writes.
"""
