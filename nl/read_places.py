"""Where a request is: the reading's steps on places, after the cue tables' frame
(``geoql.nl.frame``). A place the caller knows inside a phrase ("hospital munich"), a city before a
thing ("제주 약국"), a place with its case ending ("izmirdeki hastaneler"), the place of some features
only ("cafes in Bonn and bakeries in Cologne"). :func:`geoql.nl.request.read_request` calls them in
order; each takes and returns the reading's tuples.
"""

from __future__ import annotations

import dataclasses
import re
from collections import ChainMap
from functools import lru_cache
from typing import Mapping

from geoql.nl.attributes import find as find_attributes
from geoql.nl.cues import LANGUAGES as CUE_LANGUAGES, table, tokens
from geoql.nl.frame import Frame, cue_language
from geoql.nl.places import dictionary_form, gazetteer, word_cities_in
from geoql.nl.text import fold, script_of, spaceless
from geoql.nl.words import entry_words, stem_fold
from geoql.nl.model import Feature, FeatureMatch, Knowledge, Lexicon, Place, SURE_THING_SCORE


@lru_cache(maxsize=None)
def _place_prepositions(language: str) -> frozenset[str]:
    """``language``'s one-word place prepositions, folded ("de", "di", "em", "in")."""
    if language not in CUE_LANGUAGES:
        return frozenset()
    return frozenset(fold(p) for p in table(language)["place"]["prepositions"] if " " not in p)


def _place_names(knowledge: Knowledge) -> Mapping[str, str]:
    """The place names a request may write without a preposition: the caller's first (the CPU
    default's: its training queries'), then, unless ``world_places`` is off, the world's cities."""
    own = knowledge.places or {}
    return ChainMap(own, gazetteer()) if knowledge.world_places else own


def _opening_cities(text: str, frame: Frame, knowledge: Knowledge) -> tuple[tuple[int, int], ...]:
    """The spans of the cities the gazetteer knows opening a request written without spaces, one after
    the other with the table's "and" between them, where the frame read no place there and split a
    name ("上海不是…": "上" and "海"; "成都地铁站…": "都" is "all"; "北京和上海的医院"): at each, the
    longest name of two to ``MAX_WIDE_PLACE_CHARS`` characters. () where the frame read each as a
    place already, read a phrase at the start and the cities are not a list ("苏州酒店", "阿拉贡有哪些医院"),
    for a request in spaces, or whose opening is an around's centre ("デンバーから50キロ以内")."""
    if not text[:1] or not spaceless(text[0]) or not knowledge.world_places:
        return ()
    if frame.around is not None and frame.around.of and text.startswith(frame.around.of[:2]):
        return ()
    # the frame read something at the start already: only a list of cities it split is read again
    opened = any(text.startswith(p) for p in frame.places) or any(text.startswith(w) and len(w) > 1 for w in frame.what)
    known = _place_names(knowledge)
    joiners = sorted((w for w in table(cue_language(frame.language))["place"]["and"] if w.strip()), key=len, reverse=True)
    out: list[tuple[int, int]] = []
    at = 0
    # (a city that opens an attribute's word is none: "バリアフリーでない…", not Bali)
    words = [m.span for m in find_attributes(text, frame.language) if m.attribute is not None]
    while at < len(text):
        found = next(((at, at + n) for n in range(min(MAX_WIDE_PLACE_CHARS, len(text) - at - 1), 1, -1)
                      if all(spaceless(ch) for ch in text[at:at + n]) and stem_fold(text[at:at + n]) in known), None)
        if found is None or any(a <= found[0] < b and found[1] < b for a, b in words):
            break
        # (the name with its kind of place, a space after: "제주도 카페", Jeju province)
        suffix = next((x for x in _place_suffixes(frame.language) if text.startswith(x + " ", found[1])), None)
        if suffix:
            found = (found[0], found[1] + len(suffix))
        out.append(found)
        joiner = next((w for w in joiners if text.startswith(w, found[1])), None)
        if joiner is None:
            break
        at = found[1] + len(joiner)
    # nothing to add where the frame read each of them as a place already ("东京和大阪的医院")
    if all(text[a:b] in frame.places for a, b in out):
        return ()
    # ... nor where it read a phrase at the start, unless that phrase is the city and an attribute's words
    # ("杭州免费的停车场": Hangzhou, then free; "卡纳塔克邦" stays one name)
    longer = bool(out) and any(text.startswith(p) and len(p) > out[0][1] and stem_fold(p) not in known
                               and _attribute_said(p[out[0][1]:], frame.language) for p in frame.places)
    # ... or where that phrase is the city alone and a negated one follows, a negation's letter or two between
    # ("北京无名公园": "无" took "名公园")
    alone = bool(out) and text[out[0][0]:out[0][1]] in frame.what \
        and any(0 <= text.find(n, out[0][1]) <= out[0][1] + 2 for n in frame.negated)
    if opened and len(out) < 2 and not longer and not alone:
        return ()
    return tuple(out)


@lru_cache(maxsize=None)
def _place_suffixes(language: str) -> tuple[str, ...]:
    """The cue table's endings that name a kind of place ("도", "県"), longest first."""
    if language not in CUE_LANGUAGES:
        return ()
    return tuple(sorted(table(language)["place"].get("suffixes", ()), key=len, reverse=True))


def _attribute_said(rest: str, language: str) -> bool:
    """Whether ``rest`` is all one attribute's words, after a negation's word at most ("免费": free;
    "没靠背": no backrest; "不要门票": no ticket), as after a city in "杭州没靠背的长椅"."""
    # (a negation's word is whole: "no" of "no wifi", not of "north"; in a script without spaces it runs on)
    lead = [""] + [w for w in (table(cue_language(language))["negation"]["before"] if language in CUE_LANGUAGES else ())
                   if w and rest.startswith(w) and (spaceless(w[-1]) or not rest[len(w):len(w) + 1].isalnum())]
    return any(m.attribute is not None and m.span == (0, len(rest) - len(w))
               for w in lead for m in find_attributes(rest[len(w):], language))


def _city_and_thing(places: tuple[Place, ...], features: tuple[Feature, ...], known: Mapping[str, str],
                    lexicon: Lexicon, language: str) -> tuple[tuple, tuple]:
    """A request of one place phrase and no thing whose first words are a city and whose last words
    name a thing, sure, before small words at most: the city and the thing ("제주 약국": pharmacies in
    Jeju; "부산 식당 중에": restaurants in Busan).

    >>> from geoql.nl.request import read_request
    >>> from geoql.nl.lexicon import Lexicon
    >>> r = read_request("제주 약국", Knowledge(Lexicon.default()))
    >>> r.place_names, [f.text for f in r.things]
    (('제주',), ['약국'])
    """
    if len(places) != 1 or places[0].span is None or places[0].role != "area":
        return places, features
    place = places[0]
    words = place.name.split()
    # the cue tables' small words the run took after the thing are no part of it ("부산 식당 중": among)
    stop = {fold(w) for w in table(cue_language(language))["stop"]} if language in CUE_LANGUAGES else set()
    while len(words) > 2 and fold(words[-1]) in stop:
        words = words[:-1]
    for n in range(len(words) - 1, 0, -1):
        city, rest = " ".join(words[:n]), " ".join(words[n:])
        # a city the gazetteer lacks counts in Korean, where a place and a thing are written so
        # ("대전 도서관"); in a script with case "Central Park" is one name
        if fold(city) not in known and city not in known and script_of(city[0]) != "Hangul" \
                and stem_fold(dictionary_form(city, language)) not in known:  # ("в москве кафе": Москва)
            continue
        at = place.span[0] + place.name.index(rest, len(city))
        opening = at == 0
        tags = tuple(m for m in lexicon.lookup(rest, language, opening=opening))
        if not any(m.score >= SURE_THING_SCORE and m.span == (0, len(rest)) for m in tags):
            continue
        city_place = dataclasses.replace(place, name=city, span=(place.span[0], place.span[0] + len(city)))
        return (city_place,), (Feature(rest, (at, at + len(rest)), tags=tags), *features)
    return places, features


def _article_places(text: str, places: tuple[Place, ...], known: Mapping[str, str], language: str) -> tuple[Place, ...]:
    """A place whose name begins with an article the cue tables took for the preposition's ("in den
    haag": Den Haag), when the gazetteer knows the name with it and not without ("the Netherlands" stays
    "Netherlands")."""
    # (not English's "the": "the Netherlands" is asked as "Netherlands", as the gazetteer's country names say)
    articles = _articles(language) - {"the"} if language in CUE_LANGUAGES and language != "en" else set()
    out = []
    for p in places:
        if p.span is not None and articles:
            head = text[:p.span[0]].rstrip()
            word = head.split()[-1] if head.split() else ""
            start = len(head) - len(word)
            if fold(word) in articles and stem_fold(text[start:p.span[1]]) in known and stem_fold(p.name) not in known:
                p = dataclasses.replace(p, name=text[start:p.span[1]], span=(start, p.span[1]))
        out.append(p)
    return tuple(out)


def _city_after_space(text: str, places: tuple[Place, ...], features: tuple[Feature, ...],
                      known: Mapping[str, str]) -> tuple[tuple, tuple]:
    """In a request written without spaces, a city the gazetteer knows typed last after a space, as a
    search box takes it ("没有门牌号的建筑 成都", "美術館 大阪"): a place of its own, though the cue tables
    read its letters into the phrase before ("成" kept, "都", all, a stop word). A phrase that ran into
    it ends at the space; nothing changes where a place holds it already.

    >>> ps, fs = _city_after_space("博物馆 成都", (), (Feature("博物馆 成", (0, 5)),), {"成都": "Chengdu"})
    >>> [(p.name, p.span) for p in ps], [(f.text, f.span) for f in fs]
    ([('成都', (4, 6))], [('博物馆', (0, 3))])
    """
    end = len(text.rstrip(" ?。？！!"))
    cut = text.rfind(" ", 0, end)
    name = text[cut + 1:end]
    if cut <= 0 or not 2 <= len(name) <= MAX_WIDE_PLACE_CHARS or not all(spaceless(ch) for ch in name) \
            or stem_fold(name) not in known or any(p.span and p.span[1] > cut for p in places):
        return places, features
    out = []
    for f in features:
        if f.span is not None and f.span[1] > cut:
            if f.span[0] >= cut:
                continue  # all of the phrase is the city's
            keep = text[f.span[0]:cut].rstrip()
            f = dataclasses.replace(f, text=keep, span=(f.span[0], f.span[0] + len(keep)),
                                    tags=tuple(m for m in f.tags if m.span[1] <= len(keep)))
        out.append(f)
    return places + (Place(name, (cut + 1, end)),), tuple(out)


def _more_cities(text: str, places: tuple[Place, ...], features: tuple[Feature, ...],
                 known: Mapping[str, str], cue_words: frozenset[str] = frozenset()) -> tuple[tuple, tuple]:
    """In a request written without spaces that names a place already, another city the gazetteer knows
    that opens a phrase ("서울 카페와 부산 식당": 부산, then restaurants), or whose first letter the cue
    tables read as a word ("北京的咖啡馆和上海的餐厅": "上" is "on", "海" was left a phrase); in Korean
    also one right after words of the filters' cues ("이름에 커피가 들어간 부산 카페": "들어간", containing,
    then Busan). The city becomes a place of its own; the rest of the phrase, if any, stays the phrase."""
    out_places, out_features = list(places), []
    for f in features:
        if f.negated or f.span is None or any(p.span and p.span[0] < f.span[1] and f.span[0] < p.span[1] for p in places):
            out_features.append(f)
            continue
        start, end = f.span
        found = None
        words = f.text.split(" ")
        cued = next((k for k in range(1, len(words)) if not all(fold(w) in cue_words for w in words[:k])), 1) - 1
        after_cues = len(" ".join(words[:cued])) + 1 if cued else None
        for lead in (0, 1, after_cues):  # the city opens the phrase, began a letter before it, or follows cue words
            if lead is None:
                continue
            a = start - lead if lead in (0, 1) else start + lead
            if a < 0 or (lead == 1 and (not spaceless(text[a]) or any(p.span and p.span[0] <= a < p.span[1] for p in places))):
                continue
            for n in range(min(MAX_WIDE_PLACE_CHARS, end - a), 1, -1):
                name = text[a:a + n]
                rest = text[a + n:end]
                if not all(spaceless(ch) for ch in name) or stem_fold(name) not in known:
                    continue
                # what is left is nothing, or one thing the lexicon named there, after a space or a particle
                kept = [m for m in f.tags if (start + m.span[0]) >= a + n and text[start + m.span[0]:start + m.span[1]] == rest.strip()]
                if rest.strip() and not (kept and rest[:1] in (" ", *CLAUSE_PARTICLES)):
                    continue
                found = (a, n, rest)
                break
            if found:
                break
        if found is None or any(stem_fold(p.name) == stem_fold(text[found[0]:found[0] + found[1]]) for p in places):
            out_features.append(f)
            continue
        a, n, rest = found
        out_places.append(Place(text[a:a + n], (a, a + n)))
        if rest.strip():
            lead = len(rest) - len(rest.lstrip(" " + "".join(CLAUSE_PARTICLES)))
            r0 = a + n + lead
            shift = r0 - start
            tags = tuple(dataclasses.replace(m, span=(m.span[0] - shift, m.span[1] - shift)) for m in f.tags
                         if m.span[0] >= shift)
            out_features.append(dataclasses.replace(f, text=text[r0:end], span=(r0, end), tags=tags))
    out_places.sort(key=lambda p: p.span or (len(text), len(text)))
    return tuple(out_places), tuple(out_features)


@lru_cache(maxsize=None)
def _filter_cue_words(language: str) -> frozenset[str]:
    """The folded words of ``language``'s filter cues (with, without, comparisons, name operations),
    whole ("들어간": a Korean token is one syllable)."""
    return frozenset(entry_words(table(language)["filters"])) if language in CUE_LANGUAGES else frozenset()


def _place_in_thing(text: str, places: tuple[Place, ...], features: tuple[Feature, ...], lexicon: Lexicon,
                    language: str, known: Mapping[str, str]) -> tuple[tuple, tuple]:
    """A place read after a small word that is the end of a thing's name, where the lexicon reads the
    thing, the small word and the place as one thing and the gazetteer knows no such city ("boîtes aux
    lettres à Lyon": "aux" is a place preposition, "lettres" no place): the thing, whole.

    >>> from geoql.nl.lexicon import Lexicon
    >>> text = "boîtes aux lettres à lyon"
    >>> ps, fs = _place_in_thing(text, (Place("lettres", (11, 18)), Place("lyon", (21, 25))),
    ...                          (Feature("boîtes", (0, 6)),), Lexicon.default(), "fr", {"lyon": "Lyon"})
    >>> [p.name for p in ps], [(f.text, f.tags[0].tags) for f in fs]
    (['lyon'], [('boîtes aux lettres', ('amenity=post_box',))])
    """
    out_places, out = [], list(features)
    for p in places:
        k = next((k for k, f in enumerate(out) if p.span and f.span and not f.negated and f.span[1] < p.span[0]
                  and len(text[f.span[1]:p.span[0]].split()) == 1), None)
        if k is None or stem_fold(p.name) in known:
            out_places.append(p)
            continue
        f = out[k]
        whole = text[f.span[0]:p.span[1]]
        found = lexicon.lookup(whole, language)
        if len(found) == 1 and found[0].span == (0, len(whole)) and found[0].score >= SURE_THING_SCORE:
            out[k] = Feature(whole, (f.span[0], p.span[1]), negated=False, tags=(found[0],))
        else:
            out_places.append(p)
    return (places, features) if len(out_places) == len(places) else (tuple(out_places), tuple(out))


def _thing_before_place(places: tuple[Place, ...], features: tuple[Feature, ...], lexicon: Lexicon,
                        language: str) -> tuple[tuple, tuple]:
    """A place read as "things in another place" of the request ("Cafés in Bonn und Bäckereien in Köln":
    German capitals made "Bäckereien in Köln" a name): the things, and the other place."""
    names = {p.name for p in places}
    out_places, added = [], []
    for p in places:
        words = p.name.split()
        split = None
        for n in range(1, len(words) - 1):
            head, tail = " ".join(words[:n]), " ".join(words[n + 1:])
            if tail in names and p.span is not None:
                found = lexicon.lookup(head, language, opening=False)
                # (a kind of place is part of a place's name: "Métropole de Lyon", "City of London")
                if len(found) == 1 and found[0].span == (0, len(head)) and found[0].score >= SURE_THING_SCORE \
                        and not any(t.startswith(("place=", "boundary=", "admin_level=")) for t in found[0].tags):
                    split = (head, found)
                    break
        if split is None:
            out_places.append(p)
            continue
        head, found = split
        added.append(Feature(head, (p.span[0], p.span[0] + len(head)), tags=tuple(found)))
    if not added:
        return places, features
    return tuple(out_places), tuple(sorted((*features, *added), key=lambda f: (f.span or (0, 0))[0]))


def _feature_places(places: tuple[Place, ...], features: tuple[Feature, ...]) -> tuple[tuple, tuple]:
    """Places of their own features: "cafes in Bonn and bakeries in Cologne" reads two places, each
    after its own features, so each is the place of those (role ``feature``, ``Feature.place``).
    Places with no feature between them ("in Dendermonde, Belgium", "in Berlin and Hamburg") stay
    the area of the whole request.

    >>> ps, fs = _feature_places((Place("Bonn", (9, 13)), Place("Cologne", (30, 37))),
    ...                          (Feature("cafes", (0, 5)), Feature("bakeries", (18, 26))))
    >>> [(p.name, p.role) for p in ps], [(f.text, f.place) for f in fs]
    ([('Bonn', 'feature'), ('Cologne', 'feature')], [('cafes', 0), ('bakeries', 1)])
    """
    located = sorted((p.span, i) for i, p in enumerate(places) if p.span is not None)
    if len(located) < 2 or len(located) != len(places):
        return places, features
    things = [(f.span, k) for k, f in enumerate(features) if not f.negated and f.span]
    # The things of each place lie between it and the place before ("cafes in Bonn and bakeries in
    # Cologne"), or, where places come first ("波恩的咖啡馆和科隆的面包店"), between it and the next.
    for bounds in ([(0 if n == 0 else located[n - 1][0][1], span[0]) for n, (span, _) in enumerate(located)],
                   [(span[1], located[n + 1][0][0] if n + 1 < len(located) else None)
                    for n, (span, _) in enumerate(located)]):
        own = {k: i for (low, high), (_, i) in zip(bounds, located)
               for span, k in things if low <= span[0] and (high is None or span[0] < high)}
        # every place has things of its own, and every thing has a place: else the places narrow one area
        if len(own) == len(things) and set(own.values()) == {i for _, i in located}:
            return (tuple(dataclasses.replace(p, role="feature") for p in places),
                    tuple(dataclasses.replace(f, place=own[k]) if k in own else f for k, f in enumerate(features)))
    return places, features


# At most this many words of a feature phrase are tried as a known place at its start or end.
MAX_KNOWN_PLACE_WORDS = 3


def _known_places(text: str, features: tuple[Feature, ...], known: Mapping[str, str], *,
                  named: bool = False, prepositions: frozenset[str] = frozenset(), language: str = "en",
                  words: Mapping[str, str] | None = None) -> tuple[tuple, tuple]:
    """A place the caller knows (``Knowledge.places``) at the start or the end of the request, written
    with no preposition, that the cue tables read as part of a feature phrase: "hospital munich",
    "madrid farmacias". The phrase keeps the rest; nothing changes when no feature phrase would be
    left (unless the request ``named`` what it asks for: '부산 "자갈치시장"') or nothing matches. A known
    place after one of the language's place ``prepositions`` ends a phrase anywhere in the request
    ("hoteles de madrid con wifi": the cue tables read "de madrid" into the phrase, the with-clause after).
    A place that opens the request may carry its case ending where the language inflects names and no
    apostrophe parts them ("izmirdeki hastaneler", "ankarada wifi olan kafeler"), and so may one that
    ends it ("аптеки екатеринбурга"). A city spelled like a word (``words``: "Bristol", from
    :func:`~geoql.nl.places.word_cities_in`) counts only where it ends the request after its thing, or
    after a place preposition in any language ("bibliotecas de granada con metadatos"); a negated
    phrase may end on a known place too ("briefkästen ohne leerungszeiten dresden", "hotels without
    stars coimbra").

    >>> ps, fs = _known_places("dentist toronto", (Feature("dentist toronto", (0, 15)),), {"toronto": "Toronto"})
    >>> [(p.name, p.span) for p in ps], [(f.text, f.span) for f in fs]
    ([('toronto', (8, 15))], [('dentist', (0, 7))])
    >>> ps, fs = _known_places("museo x madrid", (Feature("museo", (0, 5)), Feature("madrid", (8, 14))), {"madrid": "Madrid"})
    >>> [p.name for p in ps], [f.text for f in fs]
    (['madrid'], ['museo'])
    """
    end = len(text.rstrip(" ?.!。？！"))
    things = [f for f in features if not f.negated]
    inside = _city_inside(features, known, words or {})
    if inside is not None:
        return inside
    for k, f in enumerate(features):
        if f.span is None or f.negated and not prepositions and f.span[0] != 0:
            continue
        edge = (f.span[1] == end or f.span[0] == 0) and not f.negated
        if edge and (len(things) > 1 or named) and (stem_fold(f.text) in known or _inflected_place(f.text, language, known)):
            # a phrase of its own that is all a known place: 'hotel called "Hotel Sacher" vienna', "trabzonda
            # a101 dışındaki marketler" (Trabzon + -da)
            return (Place(f.text, f.span),), features[:k] + features[k + 1:]
        before = text[f.span[0] - 1] if f.span[0] > 0 else None
        wide = None if f.negated else _wide_edge_place(f, known, end, before)  # (inside the request: only a place that is a word of its own)
        if wide is not None:
            return (wide[0],), features[:k] + (wide[1],) + features[k + 1:]
        toks = [t for t in tokens(f.text) if not t.spaceless]
        if not edge and not prepositions and not (f.negated and f.span[0] == 0):
            continue
        for n in range(min(MAX_KNOWN_PLACE_WORDS, len(toks) - 1), 0, -1):
            for head, run in ((False, toks[-n:]), (True, toks[:n])):
                # (a negated phrase only so, or at the request's end: "parques sin nombre de valencia")
                after_prep = not head and len(toks) > n + 1 and toks[-n - 1].fold in prepositions
                a, b = run[0].start, run[-1].end
                # (a known city ending the request's first phrase where a filter's cue follows: "negozi firenze
                # senza orari", "restaurants rotterdam zonder afhaal"; the phrase's thing all before it)
                first = not head and not f.negated and f.span[0] == 0 and f.span[1] != end and bool(f.tags) \
                    and all(m.span[1] <= a for m in f.tags) and stem_fold(f.text[a:b]) in known
                if (head and f.span[0] != 0) or (not head and f.span[1] != end and not after_prep and not first
                                                 and not _genitive_place(f.text[a:b], language, known)):
                    continue
                key = stem_fold(f.text[a:b])
                at_end = not head and f.span[1] == end
                inflected = _inflected_place(f.text[a:b], language, known)
                if head and f.negated and not inflected and not (key in known and _attribute_said(f.text[b:].strip(), language)):
                    # (a negated phrase opens on a place only with its case ending: "konyada kebapçı olmayan";
                    # or before an attribute's words all: "bursa engelli girişi olmayan eczaneler")
                    continue
                # (a city spelled like a word may open the request too, before a thing the lexicon reads in
                # the rest of its phrase: "granada calles sin iluminacion"; not in English, where an adjective
                # opens a phrase: "nice restaurants")
                opens = head and language != "en" and words is not None and key in words \
                    and any(m.span[0] >= b for m in f.tags) and not any(m.span[0] < b for m in f.tags)
                if key not in known and not inflected and not opens \
                        and not (at_end and words and key in words) \
                        and not (after_prep and words is not None and key in word_cities_in(None)):
                    continue
                # (the preposition before the place goes with it: "hospitais de lisboa" -> "hospitais")
                rest = f.text[b:] if head else f.text[:toks[-n - 1].start if after_prep else a]
                lead = len(rest) - len(rest.lstrip())
                rest = rest.strip()
                start = f.span[0] + (b + lead if head else 0)
                place = Place(f.text[a:b], (f.span[0] + a, f.span[0] + b))
                feature = dataclasses.replace(f, text=rest, span=(start, start + len(rest)), tags=())
                return (place,), features[:k] + (feature,) + features[k + 1:]
    return (), features


def _city_inside(features: tuple[Feature, ...], known: Mapping[str, str],
                 words: Mapping[str, str]) -> tuple[tuple, tuple] | None:
    """A known city (not one spelled like a word) inside the first phrase, after the words the lexicon
    reads as its thing and before more words, as people type a request with no preposition: "bänke
    freiburg rückenlehne nicht erfasst", "fietspaden groningen wegdek onbekend". The city is the place;
    the words before it stay the thing's phrase and those after it are a phrase of their own (an
    attribute's, as the filters read it). None where there is no such city.

    >>> ps, fs = _city_inside((Feature("bänke freiburg rückenlehne", (0, 26), tags=(FeatureMatch((0, 5), "bänke", "Bank", ("amenity=bench",)),)),),
    ...                       {"freiburg": "Freiburg"}, {})
    >>> [(p.name, p.span) for p in ps], [(f.text, f.span) for f in fs]
    ([('freiburg', (6, 14))], [('bänke', (0, 5)), ('rückenlehne', (15, 26))])
    """
    f = features[0] if features else None
    if f is None or f.negated or f.span is None or f.span[0] != 0 or not f.tags:
        return None
    toks = [t for t in tokens(f.text) if not t.spaceless]
    for n in range(min(MAX_KNOWN_PLACE_WORDS, len(toks) - 2), 0, -1):
        for i in range(1, len(toks) - n):
            a, b = toks[i].start, toks[i + n - 1].end
            key = stem_fold(f.text[a:b])
            if key not in known or key in words or any(m.span[1] > a for m in f.tags):
                continue
            before, after = f.text[:a].rstrip(), f.text[b:].strip()
            start = f.span[0] + f.text.index(after, b)
            place = Place(f.text[a:b], (f.span[0] + a, f.span[0] + b))
            return (place,), (dataclasses.replace(f, text=before, span=(f.span[0], f.span[0] + len(before)), tags=()),
                              Feature(after, (start, start + len(after))), *features[1:])
    return None


# Languages that write a thing's place in the genitive after it, with no preposition, anywhere in the
# request: "реки и каналы петербурга с геометрией", "все азс самары кроме лукойла".
GENITIVE_PLACE_LANGUAGES = frozenset({"ru"})


def _genitive_place(name: str, language: str, known: Mapping[str, str]) -> bool:
    """Whether ``name`` (a word or a phrase ending a thing's phrase) is a known place with its case ending
    in a language of ``GENITIVE_PLACE_LANGUAGES`` ("петербурга", "нижнего новгорода").

    >>> _genitive_place("петербурга", "ru", {"петербург": "Saint Petersburg"}), _genitive_place("петербург", "ru", {"петербург": "x"})
    (True, False)
    """
    if language not in GENITIVE_PLACE_LANGUAGES:
        return False
    lemma = dictionary_form(name, language)
    return fold(lemma) != fold(name) and len(lemma) >= 4 and stem_fold(lemma) in known


def _inflected_place(word: str, language: str, known: Mapping[str, str]) -> bool:
    """Whether ``word`` is a known place with a case ending ("izmirdeki": İzmir + -deki), in a language
    whose place names inflect; its dictionary form of four letters or more, so that a short word is no
    city by chance."""
    lemma = dictionary_form(word, language)
    return lemma != word and len(lemma) >= 4 and " " not in word and stem_fold(lemma) in known


def _place_phrases(places: tuple[Place, ...], features: tuple[Feature, ...],
                   known: Mapping[str, str], text: str | None = None) -> tuple[tuple, tuple]:
    """Feature phrases that name nothing the lexicon knows and are all a known place, read beside
    the places the cue tables found: "milano" of "ospedali a milano e a torino" (Italian reads a place
    after "a" only once), "奈良" of "京都と奈良のお寺". Nothing changes unless a thing with tags is left.

    >>> ps, fs = _place_phrases((Place("torino", (22, 28)),), (Feature("ospedali", (0, 8), tags=(1,)),
    ...                          Feature("milano", (11, 17))), {"milano": "Milan"})
    >>> [p.name for p in ps], [f.text for f in fs]
    (['milano', 'torino'], ['ospedali'])
    """
    if text is not None:
        taken = [g.span for g in features if g.span] + [p.span for p in places if p.span]
        features = tuple(_with_words_before(text, f, known, taken) for f in features)
    named = [k for k, f in enumerate(features)
             if not f.negated and not f.tags and f.span is not None and stem_fold(f.text) in known]
    if not named or not any(f.tags for k, f in enumerate(features) if k not in named and not f.negated):
        return places, features
    found = [Place(features[k].text, features[k].span) for k in named]
    ordered = tuple(sorted(places + tuple(found), key=lambda p: p.span or (1 << 30, 0)))
    return ordered, tuple(f for k, f in enumerate(features) if k not in named)


def _with_words_before(text: str, f: Feature, known: Mapping[str, str], taken: list[tuple[int, int]]) -> Feature:
    """A phrase without tags with the word or two before it, where together they are a known place
    whose first word the cue tables read as a small word ("em são paulo": "são" is also "are";
    "in los angeles"), none of them ``taken`` by a phrase or place; else the phrase as it is."""
    if f.negated or f.tags or f.span is None or stem_fold(f.text) in known:
        return f
    for n in (1, 2):
        m = re.search(r"(?:\S+\s+){%d}$" % n, text[:f.span[0]])
        if m is None or any(a < f.span[0] and m.start() < b for a, b in taken):
            return f
        if stem_fold(text[m.start():f.span[1]]) in known:
            return dataclasses.replace(f, text=text[m.start():f.span[1]], span=(m.start(), f.span[1]))
    return f


# The longest place name tried at the edge of a phrase written without spaces ("北京", "名古屋", "서울특별시").
MAX_WIDE_PLACE_CHARS = 6


# Particles that end a clause before a noun phrase in Chinese and Japanese ("…的北京公园", "…の東京の公園").
CLAUSE_PARTICLES = frozenset("的の")


def _wide_edge_place(f: Feature, known: Mapping[str, str], end: int, before: str | None = None) -> tuple[Place, Feature] | None:
    """A known place that opens (or ends) a phrase written without spaces, and the rest of the phrase:
    "苏州酒店" is hotels in 苏州, "와이파이 되는 카페 대구" cafés in 대구. The longest name wins; the rest
    must keep a letter.

    >>> p, rest = _wide_edge_place(Feature("苏州酒店", (0, 4)), {stem_fold("苏州"): "Suzhou"}, 4)
    >>> (p.name, p.span), (rest.text, rest.span)
    (('苏州', (0, 2)), ('酒店', (2, 4)))
    """
    text = f.text
    after_particle = before is not None and before in CLAUSE_PARTICLES
    for head in (True, False):
        # inside the request, only a place that is a word of its own opening a phrase whose rest is
        # one thing: "스타벅스가 아닌 서울 카페" (not "활동을 위해 지정된 ...", not "阿拉伯语")
        inside = head and f.span[0] != 0
        if (inside and not spaceless(text[:1])) or (not head and f.span[1] != end):
            continue
        for n in range(min(MAX_WIDE_PLACE_CHARS, len(text) - 1), 1, -1):
            name = text[:n] if head else text[-n:]
            rest = text[n:] if head else text[:-n]
            if not (spaceless(name[0]) and spaceless(name[-1])) or stem_fold(name) not in known:
                continue
            # ... or after a particle that closes a clause before it ("修改过的北京公园": changed parks in 北京)
            if inside and not ((rest[:1] == " " or after_particle) and any(text[a:b] == rest.strip() for (a, b) in
                                                                          (m.span for m in f.tags) if a >= n)):
                continue
            if not any(ch.isalpha() for ch in rest) or (rest[:1].isalpha() and not spaceless(rest[0]) and head) \
                    or (not head and rest[-1:].isalpha() and not spaceless(rest[-1])):
                continue  # a name inside a word of another script is no name
            lead = len(rest) - len(rest.lstrip())
            start = f.span[0] + (n + lead if head else 0)
            rest = rest.strip()
            place_start = f.span[0] if head else f.span[1] - n
            return (Place(name, (place_start, place_start + n)),
                    dataclasses.replace(f, text=rest, span=(start, start + len(rest)), tags=()))
    return None


def _articles(language: str) -> set[str]:
    return {fold(w) for w in table(cue_language(language))["place"]["articles"]} | {"the"}


# Languages whose requests name a district or town with no preposition before their thing, where a
# word the lexicon does not know at the request's edge is the place ("경주 박물관", "博多 ラーメン屋",
# "kadıköyde eczane"); the gazetteer lists cities of 100,000 people, not districts or towns.
EDGE_PLACE_LANGUAGES = frozenset({"ko", "ja", "zh", "yue", "tr"})
# A Turkish place in the locative ("kadıköyde", "bodrumdaki", "beşiktaş'ta"): the name and its ending.
_TR_LOCATIVE = re.compile(r"^(\w{3,}?)['’]?[dt][ae](?:ki)?$")
# The most characters of an unknown place in a script without spaces.
MAX_EDGE_PLACE_CHARS = 6


def _unknown_edge_place(text: str, features: tuple[Feature, ...], lexicon: Lexicon, language: str, *,
                        named: bool = False, attributes: tuple[tuple[int, int], ...] = ()) -> tuple[tuple, tuple]:
    """A word no table knows that opens or ends the request, written apart from a thing the lexicon
    reads, in a language of ``EDGE_PLACE_LANGUAGES``: the place of the request ("경주 박물관", "종로 카페",
    "kadıköyde eczane"; Turkish only in the locative where it opens the request, "binalar çankaya" where
    it ends it), also where it opens a brand's negated phrase ("강남 스타벅스 말고 다른 카페") or a phrase
    that holds an attribute's words after it (``attributes``, their spans: "해운대 등받이 없는 벤치",
    "강남 와이파이 있는 카페"), or is a phrase of its own beside a name the request ``named`` ("'학림다방'
    종로"; in any language at the request's end: '"Kale Cafe" amasra'). Nothing changes where the word
    is part of what the lexicon or brands read.

    >>> class L:
    ...     def lookup(self, text, lang, **kw): return []
    ...     def brand(self, text, lang): return None
    >>> f = Feature("경주 박물관", (0, 6), tags=(FeatureMatch((3, 6), ("tourism=museum",), 1.0),))
    >>> ps, fs = _unknown_edge_place("경주 박물관", (f,), L(), "ko")
    >>> [(p.name, p.span) for p in ps], [(g.text, g.span) for g in fs]
    ([('경주', (0, 2))], [('박물관', (3, 6))])
    """
    end = len(text.rstrip(" ?.!。？！"))
    for k, f in enumerate(features):
        if named and not f.negated and not f.tags and f.span is not None and (f.span[0] == 0 or f.span[1] == end) \
                and len(f.text.split()) == 1 and _named_edge_place(f.text, language, f.span[0] == 0) is not None \
                and not lexicon.lookup(f.text, language) and lexicon.brand(f.text, language) is None:
            # (beside a quoted name a lone word at the end is its place in any language: '"Kale Cafe" amasra')
            name = _named_edge_place(f.text, language, f.span[0] == 0)
            return (Place(name, f.span),), features[:k] + features[k + 1:]
    if language not in EDGE_PLACE_LANGUAGES:
        return (), features
    for k, f in enumerate(features):
        if f.negated and not (f.span is not None and f.span[0] == 0 and spaceless(f.text[:1])):
            continue
        if not f.tags and f.span is not None and f.span[0] == 0 and " " in f.text.strip():
            # an attribute right after the place, had or missing: "강남 와이파이 있는 카페", "해운대 등받이 없는 벤치"
            word = f.text.split()[0]
            b = f.span[0] + f.text.index(word) + len(word)
            name = _edge_place_name(word, language, True)
            if name is not None and any(b < a < f.span[1] and not text[b:a].strip() for a, _ in attributes) \
                    and not any(a < b and f.span[0] < e for a, e in attributes) \
                    and not lexicon.lookup(word, language) and lexicon.brand(word, language) is None:
                rest = text[b:f.span[1]]
                start = b + len(rest) - len(rest.lstrip())
                rest = rest.strip()
                return (Place(name, (f.span[0], b)),), features[:k] + (
                    dataclasses.replace(f, text=rest, span=(start, start + len(rest))),) + features[k + 1:]
            continue
        if not f.tags or f.span is None or " " not in f.text.strip():
            continue
        for head in (True, False):
            if (head and f.span[0] != 0) or (not head and f.span[1] != end):
                continue
            words = f.text.split()
            word = words[0] if head else words[-1]
            a = f.text.index(word) if head else f.text.rindex(word)
            b = a + len(word)
            if any(m.span[0] < b and a < m.span[1] for m in f.tags):
                continue  # the lexicon reads the word: it is (part of) the thing
            name = _edge_place_name(word, language, head)
            if name is None or lexicon.lookup(word, language) or lexicon.brand(word, language) is not None:
                continue
            rest = f.text[b:] if head else f.text[:a]
            lead = len(rest) - len(rest.lstrip())
            start = f.span[0] + (b + lead if head else 0)
            shift = start - f.span[0]
            tags = tuple(dataclasses.replace(m, span=(m.span[0] - shift, m.span[1] - shift)) for m in f.tags)
            rest = rest.strip()
            place = Place(name, (f.span[0] + a, f.span[0] + b))  # (the span keeps a case ending: the word is read)
            return (place,), features[:k] + (dataclasses.replace(f, text=rest, span=(start, start + len(rest)),
                                                                   tags=tags),) + features[k + 1:]
    return (), features


def _named_edge_place(word: str, language: str, head: bool) -> str | None:
    """The place a word beside a quoted name names: :func:`_edge_place_name` in its languages, else a word
    of letters (and hyphens) at the request's end: "quimper", "krynica-zdrój"."""
    if language in EDGE_PLACE_LANGUAGES:
        return _edge_place_name(word, language, head)
    letters = word.replace("-", "")
    # (a spaced script's letters, no word of the filters' cues: "die 'D…' enthalten" ends on a verb)
    return word if not head and len(letters) >= MIN_NAMED_PLACE_LETTERS and letters.isalpha() \
        and all(script_of(ch) in ("Latin", "Cyrillic") for ch in letters) \
        and fold(word) not in _filter_cue_words(language) else None


# The fewest letters of a word read as a place beside a quoted name in a spaced script.
MIN_NAMED_PLACE_LETTERS = 4


def _edge_place_name(word: str, language: str, head: bool) -> str | None:
    """The place an unknown word at the request's edge names, or None where it cannot be one."""
    if language == "tr":
        m = _TR_LOCATIVE.match(word)
        if head:
            return m.group(1) if m else None
        return word if len(word) >= 4 and word.isalpha() else None
    if 2 <= len(word) <= MAX_EDGE_PLACE_CHARS and all(spaceless(ch) for ch in word):
        return word
    return None


@lru_cache(maxsize=None)
def and_words(language: str) -> frozenset[str]:
    """The folded words that join two places or two things in ``language``'s cue table ("and", "ve", "和"):
    read once per language, for every request that asks."""
    return frozenset(fold(w) for w in table(cue_language(language))["place"]["and"])


@lru_cache(maxsize=1)
def _every_and() -> frozenset[str]:
    return frozenset(fold(w) for lang in CUE_LANGUAGES for w in table(lang)["place"]["and"])


def _joined_places(places: tuple[Place, ...], known: Mapping[str, str], language: str) -> tuple[Place, ...]:
    """A place read as "A <and> B", where the language's place "and" joined two names the cue tables took
    for one (a capital after "y" continues a name: "Trinidad y Tobago"), and A and B are each a known
    place and the whole is none: two places ("cines en Sevilla y Málaga").

    >>> [(p.name, p.span) for p in _joined_places((Place("Sevilla y Málaga", (9, 25)),), {"sevilla": "Seville", "malaga": "Málaga"}, "es")]
    [('Sevilla', (9, 16)), ('Málaga', (19, 25))]
    """
    # (every table's "and": the guess may be another language, "ijssalons in delft en leiden" reads as English)
    ands = _every_and()
    out = []
    for p in places:
        words = p.name.split(" ")
        cut = next((k for k in range(1, len(words) - 1) if fold(words[k]) in ands
                    and stem_fold(" ".join(words[:k])) in known and stem_fold(" ".join(words[k + 1:])) in known), None)
        if cut is None or p.span is None or stem_fold(p.name) in known:
            out.append(p)
            continue
        first, second = " ".join(words[:cut]), " ".join(words[cut + 1:])
        start, end = p.span
        out += [dataclasses.replace(p, name=first, span=(start, start + len(first))),
                dataclasses.replace(p, name=second, span=(end - len(second), end), opening=False)]
    return tuple(out)


def _place_before_and(text: str, places: tuple[Place, ...], features: tuple[Feature, ...], known: Mapping[str, str],
                      language: str) -> tuple[tuple, tuple]:
    """A known place that ends a phrase right before a place word of the language's "and" and a place
    read after it: the first of two places ("baumärkte kassel und erfurt", "bibliotheken zwolle en
    groningen"). The phrase keeps the rest; nothing changes otherwise.

    >>> ps, fs = _place_before_and("baumärkte kassel und erfurt", (Place("erfurt", (21, 27)),),
    ...                            (Feature("baumärkte kassel", (0, 16)),), {"kassel": "Kassel"}, "de")
    >>> [(p.name, p.span) for p in ps], [(f.text, f.span) for f in fs]
    ([('kassel', (10, 16)), ('erfurt', (21, 27))], [('baumärkte', (0, 9))])
    """
    for k, f, toks in _phrases_beside_and(text, places, features, language, place_after=True):
        for n in range(min(MAX_KNOWN_PLACE_WORDS, len(toks) - 1), 0, -1):
            a, b = toks[-n].start, toks[-n].end if n == 1 else toks[-1].end
            if stem_fold(f.text[a:b]) in known:
                return _split_off(places, features, k, (a, b), (0, len(f.text[:a].rstrip())))
    return places, features


def _place_after_and(text: str, places: tuple[Place, ...], features: tuple[Feature, ...], known: Mapping[str, str],
                     language: str) -> tuple[tuple, tuple]:
    """A known place with its case ending that opens a phrase right after a place read and the
    language's "and": the second of two places ("trabzon ve konyadaki otogarlar": Konya + -daki, "izmir ve
    ankaradaki hastaneler"), the mirror of :func:`_place_before_and`. The phrase keeps the rest, its tags
    to be looked up again; nothing changes otherwise.

    >>> ps, fs = _place_after_and("izmir ve ankaradaki hastaneler", (Place("izmir", (0, 5)),),
    ...                           (Feature("ankaradaki hastaneler", (9, 30)),), {"ankara": "Ankara"}, "tr")
    >>> [(p.name, p.span) for p in ps], [(f.text, f.span) for f in fs]
    ([('izmir', (0, 5)), ('ankaradaki', (9, 19))], [('hastaneler', (20, 30))])
    """
    for k, f, toks in _phrases_beside_and(text, places, features, language, place_after=False):
        if len(toks) >= 2 and _inflected_place(f.text[toks[0].start:toks[0].end], language, known):
            return _split_off(places, features, k, (toks[0].start, toks[0].end), (toks[1].start, len(f.text)))
    return places, features


def _phrases_beside_and(text: str, places: tuple[Place, ...], features: tuple[Feature, ...], language: str, *,
                        place_after: bool):
    """(index, phrase, its tokens in spaced letters) of each phrase of a thing with a place read right
    after it (``place_after``) or right before it, the language's "and" between them."""
    ands = and_words(language)
    for k, f in enumerate(features):
        if f.negated or f.span is None:
            continue
        if place_after:
            place = next((p for p in places if p.span is not None and p.span[0] >= f.span[1]), None)
            gap = text[f.span[1]:place.span[0]] if place is not None else None
        else:
            place = ([p for p in places if p.span is not None and p.span[1] <= f.span[0]] or [None])[-1]
            gap = text[place.span[1]:f.span[0]] if place is not None else None
        if gap is not None and fold(gap.strip()) in ands:
            yield k, f, [t for t in tokens(f.text) if not t.spaceless]


def _split_off(places: tuple[Place, ...], features: tuple[Feature, ...], k: int, place: tuple[int, int],
               keep: tuple[int, int]) -> tuple[tuple, tuple]:
    """``places`` with the letters ``place`` of phrase ``k`` a place of their own, in the order of the
    text, and the phrase cut to the letters ``keep``, its tags to be looked up again."""
    f = features[k]
    (a, b), (c, d) = place, keep
    found = Place(f.text[a:b], (f.span[0] + a, f.span[0] + b))
    cut = dataclasses.replace(f, text=f.text[c:d], span=(f.span[0] + c, f.span[0] + d), tags=())
    ordered = tuple(sorted(places + (found,), key=lambda p: p.span or (1 << 30, 0)))
    return ordered, features[:k] + (cut,) + features[k + 1:]
