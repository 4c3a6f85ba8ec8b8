"""Which words of a request call for which tags, learned from the training pairs.

For every content word ``w`` of the training requests and every tag ``t``
(``key=value`` or a bare ``key``) in the paired query, ``P(t | w)`` is the share
of requests containing ``w`` whose query uses ``t``. A tag is "supported" by a
request when some word of it predicts the tag well. This gives the features a
way to see that a neighbour's ``natural=spring`` does not fit "castle in ...",
and the tag edits the tag that does (``historic=castle``).

>>> lex = TagLexicon.fit(["castles in Bonn", "springs in Bonn", "castles in Rome"],
...                      ['node["historic"="castle"];out;', 'node["natural"="spring"];out;',
...                       'way["historic"="castle"];out;'], min_count=1)
>>> round(lex.support({"castle", "in", "rome"}, "historic=castle"), 2)
0.67
>>> lex.best_tags({"castle"}, key="historic")[0][0]
'historic=castle'
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import cached_property

from geoql.nl.words import word_stems

# Reads tag filters for statistics only; edits go through the overpassql AST.
# Keys at least this often first in their statement say what an element is (amenity 0.96,
# boundary 0.75 in the training queries); below, they qualify it (cuisine 0.73, wheelchair 0.49).
MAIN_SHARE = 0.75
_PLAIN_KEY = re.compile(r"^[a-z][a-z0-9_:]*$")
_FILTER = re.compile(r'\[\s*(!?~?)\s*"?([^"\]=!~]+?)"?\s*(?:(=|!=|~|!~)\s*"([^"]*)")?\s*(?:,\s*i)?\s*\]')


def query_tags(query: str) -> list[tuple[str, str, str]]:
    """``(key, op, value)`` of the tag filters in a query ('' op/value for key-only).

    >>> query_tags('node["amenity"="cafe"]["wifi"](area.a);way[!"name"];')
    [('amenity', '=', 'cafe'), ('wifi', '', ''), ('name', '!', '')]
    """
    out = []
    for prefix, key, op, value in _FILTER.findall(query):
        if key.startswith(("bbox", "out", "timeout", "maxsize", "date", "diff", "adiff")) and not op:
            continue
        out.append((key.strip(), op or ("!" if prefix.startswith("!") else ""), value))
    return out


def tag_names(query: str) -> set[str]:
    """``key=value`` for equality filters, ``key`` for every filter."""
    names = set()
    for key, op, value in query_tags(query):
        names.add(key)
        if op == "=" and value:
            names.add(f"{key}={value}")
    return names


@dataclass
class TagLexicon:
    word_tag: dict[str, dict[str, float]] = field(default_factory=dict)
    tag_count: dict[str, int] = field(default_factory=dict)
    # Share of the statements filtering on a key where it is the first tag filter: near 1
    # for keys that say what an element is (amenity, highway), near 0 for keys that
    # qualify it (wheelchair, cuisine), which are the ones a request can add.
    key_main: dict[str, float] = field(default_factory=dict)
    word_idf: dict[str, float] = field(default_factory=dict)

    @classmethod
    def fit(cls, nls: list[str], queries: list[str], *, min_count: int = 2) -> "TagLexicon":
        word_count: Counter = Counter()
        pair: dict[str, Counter] = defaultdict(Counter)
        tag_count: Counter = Counter()
        key_seen: Counter = Counter()
        key_first: Counter = Counter()
        for nl, query in zip(nls, queries):
            for statement in query.split(";"):
                keys = [key for key, _, _ in query_tags(statement)]
                key_seen.update(set(keys))
                if keys:
                    key_first[keys[0]] += 1
            words = word_stems(nl)
            tags = tag_names(query)
            word_count.update(words)
            tag_count.update(tags)
            for w in words:
                pair[w].update(tags)
        word_tag = {}
        for w, counts in pair.items():
            n = word_count[w]
            if n < min_count:
                continue
            # +1 in the denominator: a word seen once is weaker evidence than one seen 20 times.
            probs = {t: c / (n + 1) for t, c in counts.items() if c >= min_count}
            if probs:
                word_tag[w] = probs
        key_main = {k: key_first[k] / n for k, n in key_seen.items()}
        word_idf = {w: math.log((len(nls) + 1) / (n + 1)) for w, n in word_count.items()}
        return cls(word_tag=word_tag, tag_count=dict(tag_count), key_main=key_main, word_idf=word_idf)

    def idf(self, word: str) -> float:
        """Rarity of a request word in the training requests (unseen words count as rarest)."""
        return self.word_idf.get(word, self._idf_ceiling)

    @cached_property
    def _idf_ceiling(self) -> float:
        # Computed once: recomputed per call it scanned every word and was a third of a request's time.
        return max(self.word_idf.values(), default=1.0)

    def main_share(self, key: str) -> float:
        """How often ``key`` is the first tag filter of a statement (1.0 for unseen keys)."""
        return self.key_main.get(key, 1.0)

    def support(self, words: set[str], tag: str) -> float:
        """How strongly the request words call for ``tag`` (0..1)."""
        return max((self.word_tag.get(w, {}).get(tag, 0.0) for w in words), default=0.0)

    def qualifiers(self, words: set[str], *, threshold: float) -> list[tuple[str, float]]:
        """Qualifying tags (``key=value`` or a bare ``key``) the words call for, best first.

        A qualifying tag has a key that is rarely a statement's first filter
        (``wheelchair=yes``, ``cuisine=italian``, ``website``); a bare key only
        when none of its ``key=value`` tags qualifies.
        """
        scores: dict[str, float] = {}
        for w in words:
            for tag, p in self.word_tag.get(w, {}).items():
                key = tag.split("=", 1)[0]
                if p < threshold or not _PLAIN_KEY.match(key) or self.main_share(key) >= MAIN_SHARE:
                    continue
                scores[tag] = max(p, scores.get(tag, 0.0))
        valued = {t.split("=", 1)[0] for t in scores if "=" in t}
        best = [(t, p) for t, p in scores.items() if "=" in t or t not in valued]
        return sorted(best, key=lambda kv: (-kv[1], kv[0]))

    def best_tags(self, words: set[str], *, key: str | None = None, limit: int = 5) -> list[tuple[str, float]]:
        """Tags the words call for, best first (``key=value`` tags only; optionally one key)."""
        scores: dict[str, float] = {}
        for w in words:
            for tag, p in self.word_tag.get(w, {}).items():
                if "=" not in tag or (key is not None and not tag.startswith(key + "=")):
                    continue
                if p > scores.get(tag, 0.0):
                    scores[tag] = p
        return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
