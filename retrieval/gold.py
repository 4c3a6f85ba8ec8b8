"""Which tags a query uses, and which of them a retriever is expected to find.

A *controlled* pair is a ``key=value`` whose value comes from a shared
vocabulary (``amenity=cafe``, ``admin_level=8``). Free-text keys (names, refs,
addresses, ids, dates, contact details, measurements) have no value worth
retrieving; they are indexed once as ``key=*`` and left out of pair recall.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import overpassql

# Exact free-text keys; prefixes and suffixes below cover their families.
FREE_TEXT_KEYS = frozenset(
    """name alt_name official_name old_name short_name loc_name int_name nat_name reg_name sorting_name
    ref postal_code wikidata wikipedia website url phone email fax operator brand network description note
    fixme FIXME source opening_hours collection_times service_times start_date end_date check_date
    population ele height width maxheight maxweight maxwidth maxlength maxspeed minspeed voltage frequency
    capacity inscription destination iata icao isbn image mapillary wikimedia_commons created_by
    de:amtlicher_gemeindeschluessel de:regionalschluessel ISO3166-1 ISO3166-2 ISO3166-1:alpha2
    ISO3166-1:alpha3 ISO3166-1:numeric is_in uid user id gnis:feature_id""".split()
)
FREE_TEXT_PREFIXES = (
    "name:", "addr:", "ref:", "contact:", "is_in:", "source:", "note:", "description:", "website:",
    "wikipedia:", "wikidata:", "opening_hours:", "brand:", "operator:wikidata", "network:wikidata",
    "turn:lanes", "destination:", "official_name:", "alt_name:", "old_name:", "short_name:", "capacity:",
    "maxspeed:", "phone:", "email:", "fixme:", "check_date:", "survey:", "tiger:", "gnis:", "NHD:",
)
FREE_TEXT_SUFFIXES = (
    "_name", ":name", ":ref", ":wikidata", ":wikipedia", ":id", "_ref", ":date", "_date", ":url", ":website",
)


def is_free_text_key(key: str) -> bool:
    """True for keys whose values are names, numbers, ids or dates rather than a vocabulary.

    >>> [is_free_text_key(k) for k in ["name:en", "addr:street", "amenity", "admin_level", "ref:INSEE"]]
    [True, True, False, False, True]
    """
    return key in FREE_TEXT_KEYS or key.startswith(FREE_TEXT_PREFIXES) or key.endswith(FREE_TEXT_SUFFIXES)


def tag_id(key: str, value: str | None) -> str:
    """The index's id for a tag: ``key=value``, or ``key=*`` for free-text keys and bare keys."""
    if value is None or value == "*" or is_free_text_key(key):
        return f"{key}=*"
    return f"{key}={value}"


_ALTERNATION = re.compile(r"^\^?\(?([\w:.\- ]+(?:\|[\w:.\- ]+)*)\)?\$?$")


def regex_values(pattern: str) -> list[str]:
    """The literal values of a simple alternation regex, else [].

    A value without a letter or digit (``craft~"."``) is a wildcard — "any value" — not a literal.

    >>> regex_values("^(primary|secondary)$"), regex_values("bus_stop"), regex_values("^foo.*"), regex_values(".")
    (['primary', 'secondary'], ['bus_stop'], [], [])
    """
    match = _ALTERNATION.match(pattern.strip())
    if not match:
        return []
    values = [v.strip() for v in match.group(1).split("|") if v.strip()]
    if not all(any(ch.isalnum() for ch in v) for v in values):
        return []
    return values


@dataclass(frozen=True)
class GoldTag:
    key: str
    value: str | None  # None for key-only filters
    controlled: bool

    @property
    def tag(self) -> str:
        return tag_id(self.key, self.value)


def query_tags(query: str) -> list[GoldTag]:
    """Positive tag filters of a query via ``overpassql.tag_filters``, in source order.

    Negated filters (``!=``, ``!~``, ``not_exists``) and regex keys say what the
    answer is *not* or match families of keys, so they are not retrieval targets.
    A query that does not parse contributes what the parser recovered.
    """
    try:
        filters = overpassql.tag_filters(query)
    except Exception:  # the gold data holds 93 queries that do not parse cleanly
        try:
            script = overpassql.parse(query, collect_errors=True)
            filters = overpassql.tag_filters(script)
        except Exception:
            return []
    tags: list[GoldTag] = []
    for f in filters:
        if f.key_regex or not f.key:
            continue
        if f.op == "=":
            tags.append(GoldTag(f.key, f.value, not is_free_text_key(f.key)))
        elif f.op == "~":
            values = regex_values(f.value or "")
            if values and not is_free_text_key(f.key):
                tags.extend(GoldTag(f.key, v, True) for v in values)
            else:
                tags.append(GoldTag(f.key, None, False))
        elif f.op == "exists":
            tags.append(GoldTag(f.key, None, False))
    return tags


def controlled_pairs(query: str) -> list[str]:
    """Occurrences of controlled ``key=value`` pairs (duplicates within a query dropped)."""
    seen: dict[str, None] = {}
    for t in query_tags(query):
        if t.controlled and t.value is not None:
            seen.setdefault(t.tag, None)
    return list(seen)


def query_keys(query: str) -> list[str]:
    seen: dict[str, None] = {}
    for t in query_tags(query):
        seen.setdefault(t.key, None)
    return list(seen)
