"""A query in plain words, with iD's preset names for its tags where the tag index has them.

``overpassql.explain`` does the describing; this adds the names, read from the tag
index's ``tags.jsonl`` (no FAISS, no embedding model: a plain JSON-lines read, cached
per file version). Without an index the explanation simply has no names.

>>> explain('node["amenity"="cafe"]({{bbox}});out;', index_dir="/nonexistent")
'Nodes tagged `amenity=cafe` inside the current map view; output their tags and geometry.'
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Optional

import overpassql

from geoql.retrieval.artifacts import TAGS_JSONL, resolve_index_dir

__all__ = ["explain", "preset_names"]


def explain(query: str, lang: str = "en", index_dir: Optional[str | os.PathLike] = None) -> str:
    """``overpassql.explain(query, lang)`` with the index's preset names beside the tags.

    ``index_dir`` defaults to the tag index ``geoql`` uses (``$GEOQL_INDEX_DIR`` or the
    user data directory). Names in ``lang`` where the index has them, else none for a
    language other than English (an English name in a German sentence would mislead).
    """
    return overpassql.explain(query, lang, tag_names=preset_names(lang, index_dir) or None)


def preset_names(lang: str = "en", index_dir: Optional[str | os.PathLike] = None) -> dict[str, str]:
    """``{"amenity=cafe": "Cafe", "building=*": "Building", ...}`` from the tag index; empty
    when there is no index or it has no names in ``lang``.

    A tag document's ``names`` are English (id-tagging-schema's ``en`` strings, the
    preset's own name first). Names in other languages are read from the document's
    ``names_by_lang`` mapping (``{"de": ["Café"], ...}``) when the index carries one.
    """
    path = resolve_index_dir(index_dir) / TAGS_JSONL
    try:
        stat = path.stat()
    except OSError:
        return {}
    code = str(lang or "en").strip().lower().replace("_", "-").split("-")[0] or "en"
    return dict(_names(str(path), stat.st_mtime_ns, stat.st_size, code))


@lru_cache(maxsize=8)
def _names(path: str, mtime_ns: int, size: int, lang: str) -> tuple[tuple[str, str], ...]:
    names: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    doc = json.loads(line)
                except ValueError:
                    continue  # a torn line: the other names are still good
                if not isinstance(doc, dict) or not isinstance(doc.get("tag"), str):
                    continue
                if lang == "en":
                    found = doc.get("names")
                else:
                    by_lang = doc.get("names_by_lang")
                    found = by_lang.get(lang) if isinstance(by_lang, dict) else None
                if isinstance(found, list) and found and isinstance(found[0], str) and found[0]:
                    names.setdefault(doc["tag"], found[0])
    except OSError:
        return ()
    return tuple(names.items())
