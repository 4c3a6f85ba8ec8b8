"""What a request asks for, read from its text with small rules.

Everything here is about the natural-language side only; the query side is
handled by ``edits``. The rules follow the OverpassNL requests: place names come
after "in"/"near"/"around" and are written capitalised ("bars in Bonn",
"Schools in Rio de Janeiro, Brazil"), the visible map is "in current view".

>>> info = analyse("Cafes in Rio de Janeiro, Brazil that have wifi")
>>> info.area, info.in_view, info.count
('Rio de Janeiro, Brazil', False, False)
>>> analyse("How many benches are there in the current view?").in_view
True
>>> analyse("What breweries are in the specified area?").in_view
True
>>> analyse("How many benches in Bonn").count
True
>>> sorted(analyse("nodes and ways with a name").types)
['node', 'way']
>>> analyse("Bus stops within 200 m of schools in Paris").numbers
['200']
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from geoql.retrieval.text import DATABASE_NAMES

# Words that may sit inside a place name between capitalised words
# ("Rio de Janeiro", "Frankfurt am Main", "Stratford upon Avon").
_CONNECTORS = frozenset(
    "de do da dos das del della di du des la le les am an im upon on sur en y von van der den of el al bei ob "
    "unter lès".split()
)
# Words between the preposition and the name that are not part of the name.
_PLACE_NOUNS = frozenset(
    "the city town village state county country region municipality district province area centre center".split()
)
_PREPOSITIONS = frozenset({"in", "near", "around", "of", "at"})
# Lower-case words that belong to administrative names ("Ульяновская область",
# "Communauté de communes ...", "Klippans kommun").
_ADMIN_WORDS = frozenset("область район kommun kommune communes gemeinde kreis landkreis et".split())
_VIEW = re.compile(
    r"\b(?:in|within|on|inside|of)\s+(?:the\s+)?(?:current|this|my)\s+(?:map\s+)?"
    r"(?:view|map|bbox|bounding\s+box|area|window|screen|extent)\b",
    re.IGNORECASE,
)
# "in the selected window" is how 5% of the training requests name the map view.
_VIEW_ALONE = re.compile(
    r"\b(?:current\s+view|bbox|bounding\s+box|(?:visible|selected|displayed|specified|given|chosen)\s+"
    r"(?:map|area|window|region))\b",
    re.IGNORECASE,
)
# "number of" counts only when the request starts with it: "motorways without a given
# number of lanes" asks for a tag (in the training split 22 of 29 requests that start with
# "number of" are answered with a count, 10 of 27 with it elsewhere).
_COUNT = re.compile(
    r"\bhow\s+many\b|\bcount(?:s|ing)?\b|^\W*(?:the\s+)?(?:total\s+)?(?:number|amount)\s+of\b", re.IGNORECASE
)
_TOKEN = re.compile(r'"[^"]+"|[^\s,]+|,')
_NUMBER = re.compile(r"(?<![\w.:-])\d+(?:\.\d+)?(?![\w:-])")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}:\d{2}Z)?\b")
_QUOTED = re.compile(r'"([^"]+)"|“([^”]+)”')
_TYPE_WORDS = {
    "node": re.compile(r"\b(?:nodes?|points?)\b", re.IGNORECASE),
    "way": re.compile(r"\bways?\b", re.IGNORECASE),
    "relation": re.compile(r"\b(?:relations?|multipolygons?)\b", re.IGNORECASE),
}
_TRAILING = ".;:!?)("
_ELIDED = re.compile(r"^[a-z]{1,2}['’][A-Z]")


@dataclass
class RequestInfo:
    """The parts of a request that edits and features look at."""

    nl: str
    area: str | None = None
    in_view: bool = False
    count: bool = False
    types: set[str] = field(default_factory=set)
    numbers: list[str] = field(default_factory=list)
    dates: list[str] = field(default_factory=list)
    quoted: list[str] = field(default_factory=list)
    words: set[str] = field(default_factory=set)  # content words, without the place name's


def _is_capitalised(token: str) -> bool:
    if _ELIDED.match(token):  # "d'Azur", "l'Aquila"
        return True
    first = token[:1]
    # Non-Latin scripts (Cyrillic, Greek, CJK...) have no case that would tell.
    return first.isupper() or first == '"' or (first.isalpha() and not first.isascii() and not first.islower())


def extract_area(nl: str, places: dict[str, str] | None = None) -> str | None:
    """The place the request is about: the last capitalised span after in/near/around.

    ``places`` (folded name -> spelling, see :func:`known_places`) also lets a
    place written in lower case count ("in algeria"), but only a name the
    training queries use as a place; it is returned as the request writes it.

    >>> extract_area("Fuel stations in Ukraine selling E10 fuel")
    'Ukraine'
    >>> extract_area("Schools in the city of Frankfurt am Main")
    'Frankfurt am Main'
    >>> extract_area("Benches in current view") is None
    True
    >>> extract_area("castles in algeria", {"algeria": "Algeria"})
    'algeria'
    """
    text = _VIEW.sub(" ", nl)
    tokens = [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)]
    found = None
    inside = 0  # end of the last span found: "of" in "United States of America" starts no new one
    for i, (tok, start, _) in enumerate(tokens):
        if tok.lower() not in _PREPOSITIONS or start < inside:
            continue
        j = i + 1
        while j < len(tokens) and tokens[j][0].lower() in _PLACE_NOUNS:
            j += 1
        if j >= len(tokens):
            continue
        if not _is_capitalised(tokens[j][0]):
            known = _known_span(tokens, j, places) if places else None
            if known:
                found = known
            continue
        end = tokens[j][2]
        k = j + 1
        while k < len(tokens):
            tok2 = tokens[k][0]
            nxt = tokens[k + 1][0] if k + 1 < len(tokens) else ""
            if tok2 == "," and nxt and _is_capitalised(nxt):
                end, k = tokens[k + 1][2], k + 2
            elif _is_capitalised(tok2):
                end, k = tokens[k][2], k + 1
            elif tok2.lower() in _ADMIN_WORDS:
                end, k = tokens[k][2], k + 1
            elif tok2.lower() in _CONNECTORS:
                # a run of connectors must lead to a capitalised word ("Pays de la Loire")
                m = k
                while m < len(tokens) and tokens[m][0].lower() in _CONNECTORS:
                    m += 1
                if m < len(tokens) and (_is_capitalised(tokens[m][0]) or tokens[m][0].lower() in _ADMIN_WORDS):
                    end, k = tokens[m][2], m + 1
                else:
                    break
            else:
                break
        span = text[tokens[j][1] : end].strip().strip('"').rstrip(_TRAILING).strip()
        if span:
            found, inside = span, end
    return found


_MAX_PLACE_WORDS = 4


def _known_span(tokens, j: int, places: dict[str, str]) -> str | None:
    """The longest run of tokens from ``j`` that is a known place name (folded)."""
    for n in range(min(_MAX_PLACE_WORDS, len(tokens) - j), 0, -1):
        words = [t for t, _, _ in tokens[j : j + n]]
        if "," in words:
            continue
        words[-1] = words[-1].rstrip(_TRAILING)
        if fold(" ".join(words)) in places:
            # As the request writes it: queries for lower-case requests mostly keep the case.
            return text_of(tokens, j, j + n).rstrip(_TRAILING)
    return None


def text_of(tokens, start: int, stop: int) -> str:
    return " ".join(t for t, _, _ in tokens[start:stop])


def known_places(queries, *, min_count: int = 1) -> dict[str, str]:
    """Folded place name -> its most common spelling, from the queries' geocodeArea names.

    Names that are also common words would turn "in use" into a place, so only
    names with a letter and of 3+ characters are kept, and stop words are dropped.

    >>> known_places(['{{geocodeArea:"Algeria"}}', '{{geocodeArea:"algeria"}}', '{{geocodeArea:"Algeria"}}'])
    {'algeria': 'Algeria'}
    """
    from collections import Counter, defaultdict

    pattern = re.compile(r"\{\{(?:geocodeArea|nominatimArea):\s*\"?(.*?)\"?\s*\}\}")
    spellings: dict[str, Counter] = defaultdict(Counter)
    for query in queries:
        for name in set(pattern.findall(query)):
            name = name.strip()
            if len(name) >= 3 and "{{" not in name and any(ch.isalpha() for ch in name):
                spellings[fold(name)][name] += 1
    out = {}
    for key, counts in spellings.items():
        if key in _STOPWORDS or key in _PLACE_NOUNS or sum(counts.values()) < min_count:
            continue
        out[key] = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    return dict(sorted(out.items()))


def fold(text: str) -> str:
    """Lower case without accents, for comparing words."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Function words: they occur in every request and would tie every tag to every other.
# The database's own name is one too: "OpenStreetMap features in X" asks for every element
# (retrieval.text.without_database_name).
_STOPWORDS = frozenset(
    """a an and are as at be by for from in into is it of on or that the their there these this those to with
    all any me my show find give list get where which what who whose please i we you""".split()
) | DATABASE_NAMES


def content_words(text: str) -> set[str]:
    """Folded words with a crude plural stem, for overlap features."""
    out = set()
    for w in _WORD.findall(fold(text)):
        if w in _STOPWORDS:
            continue
        if len(w) > 3 and w.endswith("ies"):
            w = w[:-3] + "y"
        elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
            w = w[:-1]
        out.add(w)
    return out


def analyse(nl: str, places: dict[str, str] | None = None) -> RequestInfo:
    """Read a request once; the result is shared by all candidates."""
    area = extract_area(nl, places)
    return RequestInfo(
        nl=nl,
        area=area,
        in_view=bool(_VIEW.search(nl) or _VIEW_ALONE.search(nl)),
        count=bool(_COUNT.search(nl)),
        types={t for t, rx in _TYPE_WORDS.items() if rx.search(nl)},
        numbers=_NUMBER.findall(_DATE.sub(" ", nl)),
        dates=_DATE.findall(nl),
        quoted=[a or b for a, b in _QUOTED.findall(nl)],
        # Place names say nothing about tags ("Bonn" would vote for whatever was asked in Bonn).
        words=content_words(nl) - (content_words(area) if area else set()),
    )


def merge_frame(info: RequestInfo, frame) -> RequestInfo:
    """Fill in what the English rules missed from the intent frame (``geoql.nl.frame.Frame``):
    the map view, else its place; counting, dates written in words, element types. The view comes first: a request that
    names it wants the view's box, and a word before a particle is a place only by its position
    ("現在の表示範囲内で、車椅子で…": in the current view, by wheelchair).
    Changes ``info`` in place and returns it."""
    if info.area is not None and not info.in_view and frame.script == "Latin" and frame.language not in ("en", "und"):
        # The English rules read "in <Capitalised word>" as a place, and German capitalises every noun ("in Planung",
        # "in Gebäuden", "in Vorwärtsrichtung"). Where they found one word and the frame, which knows the language's
        # cue words, reads the map view or a place that does not overlap it, the frame's reading wins.
        one_word = len(info.area.split()) == 1 and "," not in info.area
        if one_word and (frame.in_view or (frame.place and frame.place not in info.area and info.area not in frame.place)):
            info.words = info.words | content_words(info.area)
            info.area = None
    if info.area is None and not info.in_view:
        if frame.in_view:
            info.in_view = True
        elif frame.place:
            info.area = frame.place
            info.words = info.words - content_words(frame.place)
    info.count = info.count or "count" in frame.output
    if not info.dates and frame.dates:  # "July 15, 2019", "15. Juli 2019", "2019年7月15日"
        info.dates = list(frame.dates)
    if not info.types:
        info.types = set(frame.types) & {"node", "way", "relation"}
    return info
