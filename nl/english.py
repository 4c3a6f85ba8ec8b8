"""The English patterns: what the first CPU default read from a request, with small regular expressions.

These rules follow the OverpassNL requests: place names come after "in"/"near"/"around" and
are written capitalised ("bars in Bonn", "Schools in Rio de Janeiro, Brazil"), the visible map
is "in current view". The cue tables (``geoql.nl.frame``) read every language; the CPU
default's selector was trained on what these patterns find, merged with the cue tables'
reading where they find nothing (:func:`with_frame`), so they stay beside it, read once by
:func:`geoql.nl.read_request` (``Request.english``, ``Request.english_with_frame``), until the
model is retrained on the cue tables' reading alone.

>>> e = read_english("Cafes in Rio de Janeiro, Brazil that have wifi")
>>> e.area, e.in_view, e.count
('Rio de Janeiro, Brazil', False, False)
>>> read_english("How many benches are there in the current view?").in_view
True
>>> read_english("What breweries are in the specified area?").in_view
True
>>> read_english("How many benches in Bonn").count
True
>>> sorted(read_english("nodes and ways with a name").types)
['node', 'way']
>>> read_english("Bus stops within 200 m of schools in Paris").numbers
('200',)
>>> read_english("Bus stops within 200 m of schools in Paris").distance
('200', 'm')
>>> read_english("ways edited by user MassGIS_Import without a name").users
('MassGIS_Import',)
>>> read_english("benches without a backrest").negates("backrest")
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from geoql.nl.words import STEM_STOPWORDS, stem_fold, word_stems

# Words that may sit inside a place name between capitalised words
# ("Rio de Janeiro", "Frankfurt am Main", "Stratford upon Avon").
_CONNECTORS = frozenset(
    "de do da dos das del della di du des la le les am an im upon on sur en y von van der den of el al bei ob "
    "unter lès".split()
)
# Words between the preposition and the name that are not part of the name.
PLACE_NOUNS = frozenset(
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
# The names a repair may put in place of a neighbour's (more quotation marks than _QUOTED).
_QUOTED_NAME = re.compile(r'"([^"]+)"|“([^”]+)”|„([^“”]+)[“”]|«\s*([^»]+?)\s*»|「([^」]+)」')
_TYPE_WORDS = {
    "node": re.compile(r"\b(?:nodes?|points?)\b", re.IGNORECASE),
    "way": re.compile(r"\bways?\b", re.IGNORECASE),
    "relation": re.compile(r"\b(?:relations?|multipolygons?)\b", re.IGNORECASE),
}
_TRAILING = ".;:!?)("
_ELIDED = re.compile(r"^[a-z]{1,2}['’][A-Z]")
# Ids the request lists: runs of 4+ digits that are not part of a decimal number or a date.
_REQUEST_ID = re.compile(r"(?<![\d.,:-])\d{4,}(?![\d]|[.,]\d)")
_DISTANCE = re.compile(r"(\d+(?:\.\d+)?)\s*(km|kilometers?|kilometres?|m|meters?|metres?)\b", re.IGNORECASE)
_UID = re.compile(r"\b(?:uid|user\s*id|user\s+with\s+(?:the\s+)?id|id)\s*:?\s*(\d+)", re.IGNORECASE)
_USER = re.compile(
    r"\b(?:by\s+(?:the\s+)?users?|users?|(?:edited|changed|modified|created|added)\s+by(?:\s+(?:the\s+)?users?)?)"
    r"\s+(?:\"([^\"]+)\"|([^\s\",.]+))",
    re.IGNORECASE,
)
_NOT_USER = frozenset("with id in on between after before since and or the a an that who which".split())
_TIME_WORDS = re.compile(
    r"\b(?:newer|since|edited|changed|modified|created|last|yesterday|today|days?|weeks?|months?|years?|hours?|"
    r"between|after|before|recent(?:ly)?|date)\b",
    re.IGNORECASE,
)
_USER_WORDS = re.compile(r"\b(?:user|uid|mapper|contributor|changeset)\b", re.IGNORECASE)
_AROUND_WORDS = re.compile(r"\b(?:around|near|nearby|close|within|distance|radius|metres?|meters?|km|m)\b", re.IGNORECASE)
# A negation and up to three words after it: "without a backrest", "not tagged as private".
# A lookahead: "no x no y z" has two scopes, the second starting inside the first.
_NEGATION = re.compile(r"\b(?:without|no|not|missing|lacking)\s+(?=(\S+)(?:\s+(\S+))?(?:\s+(\S+))?)", re.IGNORECASE)


@dataclass(frozen=True)
class EnglishReading:
    """What the English patterns read from a request (see the module's docstring)."""

    area: str | None = None  # the place: the last capitalised span after in/near/around/of/at
    in_view: bool = False  # "in the current view", "in the selected window", "bbox"
    count: bool = False  # "how many", "count", a request starting with "number of"
    types: frozenset[str] = frozenset()  # node / way / relation, as named ("points", "multipolygons")
    numbers: tuple[str, ...] = ()  # free-standing numbers, dates left out
    dates: tuple[str, ...] = ()  # ISO dates as written ("2019-01-01", "2019-01-01T00:00:00Z")
    quoted: tuple[str, ...] = ()  # "..." and “...” spans
    stems: frozenset[str] = frozenset()  # word_stems of the request, less the area's
    area_stems: frozenset[str] = frozenset()  # word_stems of the area
    ids: tuple[str, ...] = ()  # runs of 4+ digits that are not a year, a date or part of a decimal
    quoted_names: tuple[str, ...] = ()  # quoted spans, with „…“, «…» and 「…」 too
    distance: tuple[str, str] | None = None  # the first "<number> <m|km|...>": (number, unit as written)
    uid: str | None = None  # "uid 123", "user id 123", "id: 123"
    users: tuple[str, ...] = ()  # user names after "by user", "edited by", ... (quoted or one word)
    time_words: bool = False  # a word about time or edits ("since", "last", "edited", "days")
    user_words: bool = False  # "user", "uid", "mapper", "contributor", "changeset"
    around_words: bool = False  # "around", "near", "within", "radius", a distance unit
    # The words after each negation ("without", "no", "not", "missing", "lacking"), up to three.
    negation_scopes: tuple[tuple[str, ...], ...] = field(default=(), repr=False)

    def negates(self, word: str) -> bool:
        """Whether ``word`` (its first five letters, any case) is one of the three words after a negation."""
        prefix = re.compile(re.escape(word[:5]), re.IGNORECASE)
        return any(prefix.match(w) for scope in self.negation_scopes for w in scope)


def _is_capitalised(token: str) -> bool:
    if _ELIDED.match(token):  # "d'Azur", "l'Aquila"
        return True
    first = token[:1]
    # Non-Latin scripts (Cyrillic, Greek, CJK...) have no case that would tell.
    return first.isupper() or first == '"' or (first.isalpha() and not first.isascii() and not first.islower())


def extract_area(nl: str, places: dict[str, str] | None = None) -> str | None:
    """The place the request is about: the last capitalised span after in/near/around.

    ``places`` (folded name -> spelling, e.g. the CPU default's ``known_places``) also lets a
    place written in lower case count ("in algeria"), but only a name the training queries use
    as a place; it is returned as the request writes it.

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
        while j < len(tokens) and tokens[j][0].lower() in PLACE_NOUNS:
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
        if stem_fold(" ".join(words)) in places:
            # As the request writes it: queries for lower-case requests mostly keep the case.
            return " ".join(t for t, _, _ in tokens[j : j + n]).rstrip(_TRAILING)
    return None


def is_place_word(folded: str) -> bool:
    """Whether a folded name may be a known place: not a stop word nor a word such as "city"
    (a place name that is also a common word would turn "in use" into a place)."""
    return folded not in STEM_STOPWORDS and folded not in PLACE_NOUNS


def request_ids(nl: str) -> tuple[str, ...]:
    """The ids a request lists, in its order.

    >>> request_ids("ways with the IDs 613126639, 613126640 and 61312664 in 2019-01-01")
    ('613126639', '613126640', '61312664')
    """
    text = re.sub(r"\b\d{4}-\d{1,2}-\d{1,2}\b", " ", nl)
    return tuple(dict.fromkeys(m.group() for m in _REQUEST_ID.finditer(text) if not 1800 <= int(m.group()) <= 2100))


def read_english(nl: str, places: dict[str, str] | None = None) -> EnglishReading:
    """Read a request with the English patterns (``places``: see :func:`extract_area`)."""
    area = extract_area(nl, places)
    distance = _DISTANCE.search(nl)
    uid = _UID.search(nl)
    area_stems = word_stems(area) if area else frozenset()
    return EnglishReading(
        area=area,
        in_view=bool(_VIEW.search(nl) or _VIEW_ALONE.search(nl)),
        count=bool(_COUNT.search(nl)),
        types=frozenset(t for t, rx in _TYPE_WORDS.items() if rx.search(nl)),
        numbers=tuple(_NUMBER.findall(_DATE.sub(" ", nl))),
        dates=tuple(_DATE.findall(nl)),
        quoted=tuple(a or b for a, b in _QUOTED.findall(nl)),
        # Place names say nothing about tags ("Bonn" would vote for whatever was asked in Bonn).
        stems=word_stems(nl) - area_stems,
        area_stems=area_stems,
        ids=request_ids(nl),
        quoted_names=tuple(next(g for g in m.groups() if g) for m in _QUOTED_NAME.finditer(nl)),
        distance=(distance.group(1), distance.group(2)) if distance else None,
        uid=uid.group(1) if uid else None,
        users=tuple(a or b for a, b in _USER.findall(nl) if (a or b).lower() not in _NOT_USER),
        time_words=bool(_TIME_WORDS.search(nl)),
        user_words=bool(_USER_WORDS.search(nl)),
        around_words=bool(_AROUND_WORDS.search(nl)),
        negation_scopes=tuple(tuple(w for w in m.groups() if w) for m in _NEGATION.finditer(nl)),
    )


def with_frame(english: EnglishReading, *, language: str, script: str, in_view: bool, place: str | None,
               output, dates, types) -> EnglishReading:
    """The English reading with the cue tables' (``geoql.nl.frame``) where it misses: the map view,
    else the place; counting, dates written in words, element types. The view comes first: a request
    that names it wants the view's box, and a word before a particle is a place only by its position
    ("現在の表示範囲内で、車椅子で…": in the current view, by wheelchair)."""
    area, view, stems = english.area, english.in_view, english.stems
    area_stems = english.area_stems
    if area is not None and not view and script == "Latin" and language not in ("en", "und"):
        # The English rules read "in <Capitalised word>" as a place, and German capitalises every noun ("in Planung",
        # "in Gebäuden", "in Vorwärtsrichtung"). Where they found one word and the frame, which knows the language's
        # cue words, reads the map view or a place that does not overlap it, the frame's reading wins.
        one_word = len(area.split()) == 1 and "," not in area
        if one_word and (in_view or (place and place not in area and area not in place)):
            stems = stems | area_stems
            area, area_stems = None, frozenset()
    if area is None and not view:
        if in_view:
            view = True
        elif place:
            area, area_stems = place, word_stems(place)
            stems = stems - area_stems
    return replace(english, area=area, in_view=view, stems=stems, area_stems=area_stems,
                   count=english.count or "count" in output,
                   # "July 15, 2019", "15. Juli 2019", "2019年7月15日"
                   dates=english.dates if english.dates or not dates else tuple(dates),
                   types=english.types or frozenset(types) & {"node", "way", "relation"})
