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

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from app.cpu.request import content_words

# Reads tag filters for statistics only; edits go through the overpassql AST.
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

    @classmethod
    def fit(cls, nls: list[str], queries: list[str], *, min_count: int = 2) -> "TagLexicon":
        word_count: Counter = Counter()
        pair: dict[str, Counter] = defaultdict(Counter)
        tag_count: Counter = Counter()
        for nl, query in zip(nls, queries):
            words = content_words(nl)
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
        return cls(word_tag=word_tag, tag_count=dict(tag_count))

    def support(self, words: set[str], tag: str) -> float:
        """How strongly the request words call for ``tag`` (0..1)."""
        return max((self.word_tag.get(w, {}).get(tag, 0.0) for w in words), default=0.0)

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
