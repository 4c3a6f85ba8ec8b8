"""The CPU default's view of a request, and the place names it learned from its training queries.

A request is read once, by ``geoql.nl.read_request`` (with :func:`known_places` as
``Knowledge.places``); the edits and features read one :class:`~geoql.nl.english.EnglishReading`
of it: the English patterns with the cue tables' reading where they miss
(``Request.english_with_frame``; ``Request.english`` alone for a model configured without the
frame), whose ``stems`` a request read through a glossary takes from its translation.

>>> from geoql.nl import read_request
>>> info = view(read_request("Cafes in Rio de Janeiro, Brazil that have wifi"))
>>> info.area, info.in_view, info.count, sorted(info.stems)
('Rio de Janeiro, Brazil', False, False, ['cafe', 'have', 'wifi'])
>>> sorted(view(read_request("Museen in Bonn"), gloss="museums in Bonn").stems)
['museum']
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import replace

from geoql.nl.english import EnglishReading, is_place_word
from geoql.nl.request import Request
from geoql.nl.words import stem_fold, word_stems

_PLACEHOLDER = re.compile(r"\{\{(?:geocodeArea|nominatimArea):\s*\"?(.*?)\"?\s*\}\}")


def view(request: Request, *, frame: bool = True, gloss: str | None = None) -> EnglishReading:
    """What the edits and features read of ``request``: the English patterns, with the cue tables'
    reading where they miss unless ``frame`` is off; with ``gloss`` (the request's English, word by
    word) the stems are the translation's, less the place's: the lexicon and the training
    requests speak English ("Museen" meets neither, "museum" both)."""
    info = request.english_with_frame if frame else request.english
    if gloss is not None:
        info = replace(info, stems=word_stems(gloss) - info.area_stems)
    return info


def known_places(queries, *, min_count: int = 1) -> dict[str, str]:
    """Folded place name -> its most common spelling, from the queries' geocodeArea names.

    Names that are also common words would turn "in use" into a place, so only
    names with a letter and of 3+ characters are kept, and stop words are dropped.

    >>> known_places(['{{geocodeArea:"Algeria"}}', '{{geocodeArea:"algeria"}}', '{{geocodeArea:"Algeria"}}'])
    {'algeria': 'Algeria'}
    """
    spellings: dict[str, Counter] = defaultdict(Counter)
    for query in queries:
        for name in set(_PLACEHOLDER.findall(query)):
            name = name.strip()
            if len(name) >= 3 and "{{" not in name and any(ch.isalpha() for ch in name):
                spellings[stem_fold(name)][name] += 1
    out = {}
    for key, counts in spellings.items():
        if not is_place_word(key) or sum(counts.values()) < min_count:
            continue
        out[key] = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    return dict(sorted(out.items()))
