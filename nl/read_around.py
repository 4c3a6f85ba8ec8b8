"""How near: the reading's steps on an around ("within 300 m of the Eiffel Tower", "cafés near
schools"): whether a distance is one, what its centre is (a named place, other features, a
landmark), whether the request asks outside it. :func:`geoql.nl.request.read_request` calls them.
"""

from __future__ import annotations

from typing import Sequence

from geoql.nl.attributes import AttributeMatch
from geoql.nl.cues import LANGUAGES as CUE_LANGUAGES, plural_endings, table, tokens
from geoql.nl.frame import Frame
from geoql.nl.text import SPACELESS_SCRIPTS, fold, script_of, spaceless
from geoql.nl.model import Feature, Filter, Lexicon, Number, Place, Request, SURE_THING_SCORE, Things
from geoql.nl.read_places import CLAUSE_PARTICLES, _articles, _place_prepositions


def _named(request: "Request") -> bool:
    """Whether a phrase read with a lexicon has a content word that no tag match covers (a name:
    "wembley" of "wembley stadium", "colosseum")."""
    covered = [(f.span[0] + m.span[0], f.span[0] + m.span[1]) for f in request.features if f.span for m in f.tags]
    stop = set(request.words)
    return any(t.fold in stop and not any(a <= t.start and t.end <= b for a, b in covered)
               for t in tokens(request.text))


def _measure_not_distance(text: str, frame: Frame, words: Sequence[AttributeMatch],
                          numbers: Sequence[Number]) -> Filter | None:
    """An "around" whose centre is a measure's word and whose number a comparison word follows: a
    comparison ("서울 높이 100m 이상 건물": buildings 100 m high or more, not 100 m from a height); or
    whose number a comparison word leads, the measure after it ("edificios de más de 100 metros de
    altura": more than 100 m high, not 100 m from a height)."""
    of = frame.around.of
    if not of or frame.language not in CUE_LANGUAGES:
        return None
    measure = [m for m in words if fold(m.text) == fold(of.strip()) and not m.attribute.yes]
    if len(measure) != 1:
        return None
    m = measure[0]
    ops = table(frame.language)["filters"]["compare"]
    number = next((n for n in numbers if n.unit is not None and text.find(of) < (n.span or (0, 0))[0]), None)
    if number is not None:
        after = text[number.span[1]:]
        found = sorted((after.find(w), -len(w), op) for op, ws in ops.items() for w in ws if 0 <= after.find(w) <= UNIT_GAP)
    else:
        number = next((n for n in numbers if n.unit is not None and n.span is not None and n.span[1] <= m.span[0]
                       and len(text[n.span[1]:m.span[0]].split()) <= 3), None)
        before = fold(text[:number.span[0]].rstrip()) if number is not None else ""
        found = sorted((-len(w), op) for op, ws in ops.items() for w in ws
                       if w and before.endswith(fold(w)) and (len(before) == len(w) or not before[-len(w) - 1].isalpha()))
    if not found:
        return None
    return Filter("compare", m.text, m.span, found[0][-1], number.text, number.unit)


# How far after a number (its unit between) a comparison word may stand.
UNIT_GAP = 6


def _not_within(text: str, frame: Frame, of: str | None, numbers: Sequence[Number]) -> bool:
    """Whether a negation stands right before the around ("hamlets not within 700 m of a road", "唔喺任何
    主要道路嘅 700 米範圍內"): what is asked is outside the distance."""
    if frame.language not in CUE_LANGUAGES:
        return False
    t = table(frame.language)
    starts = [n.span[0] for n in numbers if n.span is not None and n.unit is not None]
    if of and text.find(of) >= 0:
        starts.append(text.find(of))
    if not starts:
        return False
    before = text[:min(starts)].rstrip()
    # the around's own words and a preposition may stand between ("not within", "唔喺")
    for lead in sorted((*t["around"]["before"], *t["place"]["prepositions"]), key=len, reverse=True):
        if lead and before.lower().endswith(lead.lower()) and (
                spaceless(lead[-1:]) or len(before) == len(lead) or not before[-len(lead) - 1].isalpha()):
            before = before[:-len(lead)].rstrip()
            break
    words = before.lower().split()
    return any(before.endswith(cue) if spaceless(cue[:1]) else bool(words) and " ".join(words[-len(cue.split()):]) == cue.lower()
               for cue in t["negation"]["before"] if cue)


def _centre_with_word_before(text: str, features: tuple[Feature, ...], of: str, lexicon: Lexicon,
                             language: str) -> tuple[int | None, str]:
    """A centre read as one word whose phrase began a word earlier: that word, read apart as a phrase
    naming nothing, and the centre name one thing together ("metro istasyonlarına 100 m mesafedeki":
    subway stations). Returns the index of the phrase taken in (None: none) and the centre."""
    start = text.find(of)
    for k, g in enumerate(features):
        if g.negated or g.span is None or g.tags or not 0 < start - g.span[1] <= 1:
            continue
        whole = text[g.span[0]:start + len(of)]
        found = lexicon.lookup(whole, language, opening=g.span[0] == 0)
        if len(found) == 1 and found[0].span == (0, len(whole)) and found[0].score >= SURE_THING_SCORE:
            return k, whole
    return None, of


def _centre_before_number(text: str, frame: Frame, features: tuple[Feature, ...]) -> tuple[int | None, str | None]:
    """In a script without spaces, the phrase right before an around's distance with nothing between, when
    a thing follows: the centre ("广州医院500米以内的药店": hospitals, the pharmacies near them; "天安门1公里以内的
    酒店"). Returns its index among the features and its phrase (None, None: no such phrase)."""
    if frame.script not in SPACELESS_SCRIPTS:
        return None, None
    asked = [(k, f) for k, f in enumerate(features) if not f.negated and f.span is not None]
    for k, f in asked[:-1]:
        after = text[f.span[1]:].lstrip()
        if after[:1].isdigit() and any(g.span[0] > f.span[1] and g.tags for _, g in asked):
            return k, f.text
    return None, None


# German prepositions that hold the definite article ("vom" = von dem): a noun after one is as after "dem".
GERMAN_CONTRACTIONS = ("vom", "zum", "zur", "beim", "am", "im")


def _after_contraction(text: str, of: str) -> bool:
    """Whether ``of`` follows a German preposition holding the article ("vom Alexanderplatz")."""
    at = text.find(of)
    return at > 0 and fold(text[:at]).rstrip().endswith(tuple(" " + c for c in GERMAN_CONTRACTIONS))


def _less_distance_cue(of: str | None, language: str) -> str | None:
    """The centre phrase without a distance cue that closes it ("vom Alexanderplatz entfernt": away)."""
    if not of or language not in CUE_LANGUAGES:
        return of
    for cue in sorted(table(language)["around"]["after"], key=len, reverse=True):
        if len(cue) >= NEAR_CUE_LETTERS and fold(of).endswith(" " + fold(cue)):
            return of[:len(of) - len(cue)].rstrip() or of
    return of


# The shortest "near" cue after which a phrase may be an around's centre ("near", "nahe", "près de").
NEAR_CUE_LETTERS = 4


def _centre_after_near(text: str, frame: Frame, features: tuple[Feature, ...], places: tuple[Place, ...],
                       numbers: Sequence[Number]) -> tuple[int | None, int | None, str | None]:
    """In a spaced script, the phrase or place right after a "near" cue and right before the around's
    distance cue: the centre ("atms near times square within 200m", "hotels close to the colosseum
    within 1 km"). Returns (its index among the features, among the places, its text); all None
    when there is none."""
    if frame.script in SPACELESS_SCRIPTS or frame.language not in CUE_LANGUAGES:
        return None, None, None
    cues = table(frame.language)["around"]
    # (not a short word such as "of", "de", "vom": after it stands any name, "museos de madrid")
    near = tuple(" " + fold(c) for c in cues["of_after"] if len(c) >= NEAR_CUE_LETTERS)
    before = {fold(c) for c in cues["before"]}
    number = next((n for n in numbers if n.unit is not None and n.span is not None), None)
    if not near or number is None:
        return None, None, None
    articles = _articles(frame.language)
    spans = [(None, p, p_.span, p_.name) for p, p_ in enumerate(places) if p_.span is not None] + \
        [(k, None, f.span, f.text) for k, f in enumerate(features) if f.span is not None and not f.negated and k > 0]
    for k, p, (a, b), name in spans:
        head = fold(text[:a]).rstrip().split()
        while head and head[-1] in articles:
            head.pop()
        gap = text[b:number.span[0]]
        for other in places:
            # ... a place in between, with its preposition: "benches near playgrounds in vienna within 30 m"
            if other.span is not None and b <= other.span[0] and other.span[1] <= number.span[0]:
                lead = text[b:other.span[0]].split()
                if len(lead) == 1 and fold(lead[0]) in _place_prepositions(frame.language):
                    gap = text[other.span[1]:number.span[0]]
        gap = fold(gap).strip()
        if (" " + " ".join(head)).endswith(near) and (gap == "" or gap in before):
            return k, p, name
    return None, None, None


def _place_and_things(of: str, of_request: "Request") -> bool:
    """Whether a centre phrase without spaces is a place and things the lexicon names sure, and nothing
    else: "名古屋の駅" (Nagoya's stations), "成都地铁站"; not "東京タワー" (タワー is no thing of Tokyo's, the
    phrase is one landmark: it is written without a joiner and the lexicon names a tower)."""
    if of_request.script not in SPACELESS_SCRIPTS or len(of_request.place_names) != 1:
        return False
    things = [f for f in of_request.features if not f.negated]
    if not things or not all(any(m.score >= SURE_THING_SCORE for m in f.tags) for f in things):
        return False
    rest = of.replace(of_request.place, "", 1)
    for f in things:
        rest = rest.replace(f.text, "", 1)
    rest = rest.strip()
    joined = rest in CLAUSE_PARTICLES  # ("名古屋の駅", "广州的医院")
    return joined or (not rest and of_request.script == "Han")


def _things_in_place(of: str, of_request: "Request", language: str) -> bool:
    """Whether a centre phrase read with the gazetteer is things the lexicon names sure and one known
    place at its start or end, apart from them by a space or a place preposition, and nothing else:
    "수원 학교", "广州 学校" (a city before its things, in a script without spaces), "schools in galway"
    (a place preposition between); not "stephansplatz wien" (no thing named: a landmark and its city),
    "the village Ipeúna", "wembley stadium" (a kind and a name), "苏州公园" (one word: a park's name).

    >>> from geoql.nl.model import FeatureMatch
    >>> class R:
    ...     script, place_names, place = "Hangul", ("수원",), "수원"
    ...     features = (Feature("학교", (3, 5), tags=(FeatureMatch((0, 2), ("amenity=school",), 1.0),)),)
    >>> _things_in_place("수원 학교", R(), "ko"), _things_in_place("학교 수원", R(), "ko")
    (True, False)
    >>> R.place_names, R.place = ("苏州",), "苏州"
    >>> R.script, R.features = "Han", (Feature("公园", (2, 4), tags=(FeatureMatch((0, 2), ("leisure=park",), 0.83),)),)
    >>> _things_in_place("苏州公园", R(), "zh")
    False
    """
    if len(of_request.place_names) != 1 or not of_request.place:
        return False
    things = [f for f in of_request.features if not f.negated]
    if not things or not all(any(m.score >= SURE_THING_SCORE for m in f.tags) for f in things):
        return False
    place = of_request.place
    if not (of.startswith(place) or of.endswith(place)):
        return False
    rest = of[len(place):] if of.startswith(place) else of[:len(of) - len(place)]
    if not rest[:1].isspace() and not rest[-1:].isspace():
        return False  # (written as one word with its thing: a name)
    for f in things:
        rest = rest.replace(f.text, " ", 1)
    words = [fold(w) for w in rest.split()]
    if not words:
        # side by side with no word between, only a city before its things in a script without spaces
        # ("수원 학교"): in a spaced one the pair is as often a kind and a name ("the village Ipeúna",
        # "wembley stadium")
        return of_request.script in SPACELESS_SCRIPTS and of.startswith(place)
    skip = _place_prepositions(language) | _articles(language)
    if language in CUE_LANGUAGES and all(w in {fold(j) for j in table(language)["joiners"]} | _articles(language)
                                         for w in words) \
            and not any(fold(f.text).split()[0].endswith(plural_endings(language)) for f in things if f.text.split()):
        # one thing (as the lexicon spells it, not a plural) "of" a place is a landmark's name: "torre de
        # belém", "castello di Milano"; things "of" a place are its things: "des gares de strasbourg"
        return False
    return any(w in _place_prepositions(language) for w in words) and all(w in skip for w in words)


# The longest phrase without spaces read as a landmark's name when nothing else tells.
MAX_LANDMARK_CHARS = 10


def _landmark(of: str, of_request: "Request") -> bool:
    """Whether a centre phrase in a script without spaces can be a landmark's name: one word, no thing
    the lexicon names in it, no kana of grammar ("指定した地点", the place given, is no name)."""
    return (len(of) <= MAX_LANDMARK_CHARS and not any(ch.isspace() for ch in of)
            and not any(script_of(ch) == "Hiragana" for ch in of)
            and not any(f.tags and not _named_kind(f, of_request.language) for f in of_request.features))


def _named_kind(f: Feature, language: str) -> bool:
    """Whether a phrase without spaces is a name and the kind of thing it is, the lexicon knowing only
    the kind, at its end ("남산타워": Namsan + tower): a landmark, not every tower. Not where a distance
    cue opens it ("距离公交站": from bus stops)."""
    cues = table(language)["around"] if language in CUE_LANGUAGES else {}
    opening = tuple(c for c in (*cues.get("before", ()), *cues.get("of_start", ())) if c)
    return f.span is not None and bool(f.tags) and not (opening and f.text.startswith(opening)) and all(
        MIN_LANDMARK_NAME <= m.span[0] and m.span[1] == len(f.text) for m in f.tags)


# The fewest letters before a kind of thing that make a name of them ("남산" of "남산타워").
MIN_LANDMARK_NAME = 2


def _weak_tail(of: str, place: str, language: str) -> bool:
    """Whether ``place`` ends the lower-case phrase ``of`` after a weak preposition of ``language`` (one
    that opens a place only before a name-cased word or at a request's end) with words before it.

    >>> _weak_tail("torre de belém", "belém", "pt"), _weak_tail("Torre de Belém", "Belém", "pt"), _weak_tail("in bonn", "bonn", "en")
    (True, False, False)
    """
    if language not in CUE_LANGUAGES or not fold(of).endswith(fold(place)) or any(ch.isupper() for ch in of):
        return False
    words = of[:len(of) - len(place)].split()
    weak = {fold(w) for w in table(language)["place"].get("needs_capital", [])}
    return len(words) >= 2 and fold(words[-1]) in weak


def _centre(of: str | None, of_request: "Request | None", frame: Frame,
            things: Things | None, lexicon: bool = False, after_article: bool = False) -> tuple[str | None, str | None]:
    """(what an around is measured from, the named place when it is one): the centre phrase names a
    place when its own reading finds one ("of the Eiffel Tower"), or, in a script with case, when
    a word of it is written as a name ("of Munich central station"; German capitalises every noun,
    so there after a definite article only: "um den Hauptbahnhof"); things otherwise ("of a
    playground", "um einen Spielplatz", "of schools"). Names of things that know the phrase as a thing
    says so first; in a script without case, without one, nothing tells.

    >>> from geoql.nl.request import Knowledge, read_request
    >>> from geoql.nl.frame import read_frame
    >>> one_name = Knowledge(world_places=False)  # as read_request reads a centre phrase
    >>> _centre("Munich central station", read_request("Munich central station", one_name), read_frame("x"), None)
    ('place', 'Munich central station')
    >>> _centre("a playground", read_request("a playground"), read_frame("x"), None)
    ('features', None)
    """
    if not of or of_request is None:
        return None, None
    if things is not None and things.names_a_thing(of, frame.language):
        return "features", None
    if of_request.place_names and lexicon and _place_and_things(of, of_request):
        return "features", None
    if of_request.place_names:
        # a lower-case name whose end a weak preposition opens is the centre whole: "torre de belém"
        return "place", of if _weak_tail(of, of_request.place, frame.language) else of_request.place
    # with a lexicon (``lexicon``: the phrase was read with one), what its matches leave tells
    if lexicon and of_request.features and all(f.tags for f in of_request.features) and not _named(of_request) \
            and not (of_request.script in SPACELESS_SCRIPTS and all(_named_kind(f, of_request.language) for f in of_request.features)):
        return "features", None  # the lexicon names all of it: "a playground", "hospitals"
    if lexicon and of_request.script not in SPACELESS_SCRIPTS and of_request.script != "Common" \
            and _named(of_request) and not any(w[:1].isupper() for w in of.split()):
        # written all in lower case, with a word no tag names: "wembley stadium", "munich central
        # station", "the colosseum" (a thing the lexicon lacks reads as a place too: "aires de jeux")
        words = of.split()
        rest = words[1:] if words and fold(words[0]) in _articles(frame.language) else words
        return "place", " ".join(rest)
    words = of.split()
    articles = _articles(frame.language)
    if lexicon and of_request.script in SPACELESS_SCRIPTS and not frame.coords and _landmark(of, of_request):
        # one word the lexicon does not name: a landmark or a district ("天安门", "渋谷から", "東京タワーから")
        return "place", of
    if of_request.script in SPACELESS_SCRIPTS or of_request.script == "Common":
        return None, None
    rest = words[1:] if words and fold(words[0]) in articles else words
    named = [w for w in rest if w[:1].isupper()]
    if frame.language == "de":
        named = named if len(words) > len(rest) or len(named) >= 2 or after_article else []
    if named and rest:
        return "place", " ".join(rest)
    return "features", None
