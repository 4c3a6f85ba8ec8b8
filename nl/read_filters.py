"""What the things must have: the reading's steps on attribute filters ("with wifi", "without a
name", "more than 10 floors", "whose name contains Pizza"), after the cue tables' frame
(``geoql.nl.frame``) and the attribute words (``geoql.nl.attributes``). :func:`geoql.nl.request.read_request`
calls them in order; each takes and returns the reading's tuples.
"""

from __future__ import annotations

import dataclasses
import re
from functools import lru_cache
from typing import Sequence

from geoql.nl.attributes import AttributeMatch, find_field, number_words
from geoql.nl.cues import LANGUAGES as CUE_LANGUAGES, Matcher, list_words, table, tokens
from geoql.nl.frame import Frame
from geoql.nl.text import SPACELESS_SCRIPTS, fold, script_of, spaceless
from geoql.nl.model import Feature, Filter, Lexicon, Number, Place, SURE_THING_SCORE
from geoql.nl.read_places import _place_prepositions


def _filters(frame: Frame, features: tuple[Feature, ...], words: Sequence[AttributeMatch]) -> tuple[Filter, ...]:
    """The frame's attribute filters, each with the feature it was read from."""
    index = {(f.text, f.negated): k for k, f in reversed(list(enumerate(features)))}
    out = []
    for kind, text, span, op, value, unit in frame.filters:
        phrase = next((p for p, at in frame.spans.items() if at == span), None)
        feature = None if phrase is None else index.get((phrase, kind in ("no", "absent")), index.get((phrase, False)))
        if feature is None and phrase is not None and span is not None:
            # a phrase that lost a place read out of it ("wifi bristol" -> "wifi"): the phrase inside the span
            feature = next((k for k, f in enumerate(features) if f.span and span[0] <= f.span[0] and f.span[1] <= span[1]
                            and f.negated == (kind in ("no", "absent"))), None)
        if kind in ("compare", "name") and feature is not None and _names_thing(
                features[feature], words, value if kind == "name" else None, _name_cues(frame.language) if kind == "name" else ()):
            # "здания выше 25 этажей", "budynki powyżej 10 pięter", "streets named after goethe": the thing
            # and its comparison or name in one phrase; the phrase stays the thing, with the filter
            feature = None
        out.append(Filter(kind, text, span, op, value, unit, feature))
    return tuple(out)


def _filters_before_places(text: str, filters: tuple[Filter, ...], places: tuple[Place, ...],
                           language: str) -> tuple[Filter, ...]:
    """A filter whose words run on into a place read out of its phrase ends before the place and its
    preposition ("parques sin nombre de valencia": without a name, in Valencia)."""
    preps = _place_prepositions(language)
    out = []
    for f in filters:
        place = next((p for p in places if f.span and p.span and f.span[0] < p.span[0] < f.span[1] <= p.span[1]), None)
        if place is not None and f.kind in ("yes", "no", "absent"):
            words = text[f.span[0]:place.span[0]].split()
            while words and fold(words[-1]) in preps:
                words.pop()
            if words:
                kept = " ".join(words)
                f = dataclasses.replace(f, text=kept, span=(f.span[0], f.span[0] + len(kept)))
        out.append(f)
    return tuple(out)


def _filters_on_words(text: str, filters: tuple[Filter, ...], places: tuple[Place, ...], features: tuple[Feature, ...],
                      words: Sequence[AttributeMatch]) -> tuple[Filter, ...]:
    """A filter that cuts an attribute's word (Korean "와이파이 있는": the cue "이 있는" took the word's
    last syllable) or starts with a place before it ("제주 와이파이 있는") is that word, when what is
    left of it is the place and what it cut is inside a word."""
    out = []
    for f in filters:
        hits = [m for m in words if f.span and m.span[0] < f.span[1] and f.span[0] < m.span[1]]
        if f.kind in ("yes", "no", "absent") and len(hits) == 1 and hits[0].span != f.span:
            (a, b), (s, e) = hits[0].span, f.span
            head = text[s:a] if s < a else ""
            for p in places:
                if p.span and s <= p.span[0] and p.span[1] <= a:
                    head = head.replace(text[p.span[0]:p.span[1]], "", 1)
            tail, cut = text[b:e] if b < e else "", text[e:b] if e < b else ""
            if a >= s and not head.strip() and not tail.strip() and " " not in cut:
                phrase = next((k for k, g in enumerate(features) if g.span and g.span[0] < b and a < g.span[1]), f.feature)
                f = dataclasses.replace(f, text=text[a:b], span=(a, b), feature=phrase)
        if f.kind in ("no", "absent") and len(hits) == 1 and f.span and hits[0].span[0] <= f.span[0] \
                and f.span[1] <= hits[0].span[1] and hits[0].span != f.span and hits[0].attribute \
                and hits[0].attribute.yes and all(t.endswith("=no") for t in hits[0].attribute.yes):
            # the negation cue is inside the attribute's own words: "조명 없는" is unlit (lit=no), not "not unlit"
            f = dataclasses.replace(f, kind="yes", text=text[hits[0].span[0]:hits[0].span[1]], span=hits[0].span)
        out.append(f)
    return tuple(out)


def _names_thing(feature: Feature, words: Sequence[AttributeMatch], value: str | None = None,
                 cues: frozenset[str] = frozenset()) -> bool:
    """Whether the phrase names a thing beside the attribute words in it, the name ``value`` and the
    name's ``cues``: a sure lexicon match on none of them ("andares" of "mais de 15 andares" is the
    floors, not a footway; "endet" of "mit Stern endet" says how the name ends)."""
    if feature.span is None:
        return False
    start = feature.span[0]
    other = [w.span for w in words]
    at = feature.text.find(value) if value else -1
    if at >= 0:
        other.append((start + at, start + at + len(value)))
    return any(m.score >= SURE_THING_SCORE and not all(t.fold in cues for t in tokens(m.text)) and not any(
        a < start + m.span[1] and start + m.span[0] < b for a, b in other) for m in feature.tags)


@lru_cache(maxsize=None)
def _name_cues(language: str) -> frozenset[str]:
    """The folded words of ``language``'s name cues and name operations ("named", "endet", "contains")."""
    if language not in CUE_LANGUAGES:
        return frozenset()
    t = table(language)
    phrases = [*t["names"], *(p for ops in t["filters"]["name"].values() for p in ops)]
    return frozenset(tok.fold for p in phrases for tok in tokens(p))


def _phrase_attributes(features: tuple[Feature, ...], words: Sequence[AttributeMatch], read: Sequence) -> tuple[Filter, ...]:
    """Attribute words inside a feature phrase, beside the words its tags match: "vegane Restaurants",
    "pharmacies open 24/7" (``geoql.nl.attributes``). Each is a ``yes`` filter of every thing
    (``feature`` None: the phrase stays a thing). Only with a lexicon's matches to tell the thing's
    words from the attribute's, and never over a filter the cue tables read already.

    >>> from geoql.nl.request import Knowledge, read_request
    >>> from geoql.nl.lexicon import Lexicon
    >>> [(f.kind, f.text, f.feature) for f in read_request("pharmacies open 24/7 in Madrid", Knowledge(Lexicon.default())).filters]
    [('yes', 'open 24/7', None)]
    """
    out = []
    taken = [span for _, _, span, *_ in read if span]
    for k, f in enumerate(features):
        tags_inside = bool(f.tags) and all(b - a < len(f.text) for a, b in (m.span for m in f.tags))
        letters = [ch for ch in f.text if ch.isalpha()]  # ("24小时营业" opens with a digit)
        if not f.negated and (not f.tags or tags_inside) and f.span is not None and letters and spaceless(letters[0]) and not any(
                a < f.span[1] and f.span[0] < b for a, b in taken):
            # a phrase written without spaces that is all one attribute's words, beside the things:
            # "广州有户外座位的餐厅" (in a spaced script a lone word is too often something else:
            # "accessible to cyclists"); a thing the lexicon reads inside it is the attribute's
            # ("車椅子対応": wheelchair accessible, not a chair)
            whole = [m for m in words if m.span == f.span and m.attribute.yes]
            if len(whole) == 1 and len(features) > 1:
                out.append(Filter("absent" if whole[0].without else "yes", whole[0].text, whole[0].span, feature=k))
                continue
            if not f.tags:
                continue
        if f.negated or not f.tags or f.span is None:
            continue
        for m in words:
            lead = m.text[:max(0, f.span[0] - m.span[0])]
            if m.attribute.yes and m.span[0] < f.span[0] < m.span[1] <= f.span[1] and re.fullmatch(r"\d[\d/.:-]*", lead.strip()) \
                    and not any(a < m.span[1] and m.span[0] < b for a, b in taken):
                # an attribute that opens with a number the cue tables read apart ("24 hour gas stations", "7/24 açık")
                out.append(Filter("yes", m.text, m.span))
                continue
            span, inner = m.span, (m.span[0] - f.span[0], m.span[1] - f.span[0])
            if f.span[0] <= span[0] < f.span[1] < span[1] and m.attribute.yes \
                    and not any(a < inner[1] and inner[0] < b for t in f.tags for a, b in [t.span]):
                # the attribute runs on into the next phrases, which it holds whole ("restauracje dostępne
                # dla wózków": "wózków" is the attribute's, no thing): they are the filter's
                held = [g for g, o in enumerate(features) if g != k and o.span is not None and not o.negated
                        and f.span[1] <= o.span[0] and o.span[1] <= span[1]]
                # ... or past the phrase's end into words no phrase holds ("aperte 24 ore su 24")
                if not any(a < span[1] and span[0] < b for a, b in taken):
                    out.append(Filter("yes", m.text, span, feature=held[0] if held else None))
                    out += [Filter("yes", m.text, span, feature=g) for g in held[1:]]
                continue
            if not (f.span[0] <= span[0] and span[1] <= f.span[1]):
                continue
            # an attribute that is only a key ("higher" of "peaks higher than 4000 m") is a comparison's;
            # one said missing ("isimsiz parklar") is an absence whatever it is
            # (a thing read inside the attribute's words is theirs: "saat" of "24 saat açık eczaneler")
            if not (m.attribute.yes or m.without) or any(a < inner[1] and inner[0] < b and not (inner[0] <= a and b <= inner[1])
                                                         for t in f.tags for a, b in [t.span]) \
                    or not any(not (inner[0] <= a and b <= inner[1]) for t in f.tags for a, b in [t.span]) \
                    or any(a < span[1] and span[0] < b for a, b in taken):
                continue
            out.append(Filter("absent" if m.without else "yes", m.text, span))
    for m in words:
        # an attribute whose words the cue tables split into phrases naming nothing, a number between
        # ("24時間営業": "時", "営業"): those phrases are its
        if not m.attribute.yes or any(f.span and f.span[0] < m.span[1] and m.span[0] < f.span[1] for f in out) \
                or any(a < m.span[1] and m.span[0] < b for a, b in taken):
            continue
        held = [g for g, o in enumerate(features) if o.span is not None and not o.negated
                and m.span[0] <= o.span[0] and o.span[1] <= m.span[1]
                and not any(t.score >= SURE_THING_SCORE for t in o.tags)]
        # (one phrase: only inside words of the attribute's own around it, "dla niepełnosprawnych")
        if len(held) > 1 or len(held) == 1 and features[held[0]].span != m.span:
            out += [Filter("absent" if m.without else "yes", m.text, m.span, feature=g) for g in held]
    return tuple(out)


def _attribute_over_places(places: tuple[Place, ...], filters: tuple[Filter, ...],
                           words: Sequence[AttributeMatch], text: str = "", language: str = "en") -> tuple[tuple, tuple]:
    """The attribute words around what the cue tables read: a place read inside them is none ("non
    accessibles en fauteuil roulant à Nice": "en" is no place preposition there); a filter read
    inside them takes them all, once, and where they open with its negation ("with no fee": the
    attribute "no fee", ``fee=no``) it asks for the attribute.

    >>> from geoql.nl.request import Knowledge, read_request
    >>> from geoql.nl.lexicon import Lexicon
    >>> r = read_request("hôtels non accessibles en fauteuil roulant à nice", Knowledge(Lexicon.default()))
    >>> [p.name for p in r.places], [(f.kind, f.text) for f in r.filters]
    (['nice'], [('no', 'accessibles en fauteuil roulant')])
    """
    def overlaps(m, span) -> bool:
        return bool(span) and m.span[0] < span[1] and span[0] < m.span[1]

    # (a place that is exactly an attribute word stays a place: "China", "Lit"; so does one that holds one
    # whole: "serra da estrela", "stars")
    kept = tuple(p for p in places if not any(overlaps(m, p.span) and m.span != p.span
                                              and not (p.span[0] <= m.span[0] and m.span[1] <= p.span[1]
                                                       and not spaceless(p.name[:1])) for m in words))
    # ... but in a script without spaces, where a particle reads a place before it ("車椅子で入れない店 大阪":
    # "で", with a wheelchair), an attribute word beside another place is the attribute: missing where a
    # negation closes it, else asked for
    said = [m for p in kept if len(kept) > 1 and p.span and spaceless(p.name[:1])
            for m in words if m.span == p.span and m.attribute.yes]
    kept = tuple(p for p in kept if not any(m.span == p.span for m in said))
    filters += tuple(Filter("absent" if _negation_after(text, m.span[1], language) else "yes", m.text, m.span)
                     for m in said if not any(f.span and f.span[0] < m.span[1] and m.span[0] < f.span[1] for f in filters))
    if any(f.kind == "compare" for f in filters):
        # ... but not a measure's word beside a comparison: "more than 100 m in height"
        kept = tuple(p for p in kept if not any(m.span == p.span and not m.attribute.yes for m in words))
    out: list[Filter] = []
    for f in filters:
        m = next((m for m in words if f.span and m.span[0] <= f.span[0] and f.span[1] <= m.span[1]
                  and m.span != f.span and f.kind != "compare"), None)
        if m is not None:
            # (a without-word that opens with the negation says the attribute is missing: "no fumadores"; one
            # that holds the negation closing it is the attribute as said: "舗装されていない", unpaved)
            closed = f.kind in ("no", "absent") and m.span[1] > f.span[1] and _closes_negation(text, m.span, language)
            kind = ("absent" if m.without else "yes") if f.kind in ("no", "absent") and m.span[0] < f.span[0] or closed \
                else f.kind
            f = dataclasses.replace(f, kind=kind, text=m.text, span=m.span)
            if any(o.span == f.span for o in out):
                continue
        elif f.kind in ("no", "absent") and f.span and (m := next((m for m in words if m.span == f.span and _closes_negation(
                text, m.span, language)), None)) is not None:
            # the attribute's words say it with their negation: as they say it ("舗装されていない", unpaved), or
            # missing where they are a without-word ("sigara içilmeyen", non-smoking)
            f = dataclasses.replace(f, kind="absent" if m.without else "yes")
        out.append(f)
    return kept, tuple(out)


def _closes_negation(text: str, span: tuple[int, int], language: str) -> bool:
    """Whether the words at ``span`` end with a negation of their own ("舗装されていない", "포장되지 않은":
    not paved, an attribute's words as they are written).

    >>> _closes_negation("舗装されていない道路", (0, 8), "ja"), _closes_negation("舗装された道路", (0, 5), "ja")
    (True, False)
    """
    return any((end := _negation_after(text, q, language)) is not None and end == span[1]
               for q in range(span[0] + 1, span[1]))


# How many words besides one attribute's a negated phrase may hold and still be that attribute
# ("sans accès fauteuil roulant": "accès").
MAX_ATTRIBUTE_FILLER = 1


def _attribute_in_phrase(text: str, features: tuple[Feature, ...], filters: tuple[Filter, ...],
                         words: Sequence[AttributeMatch], language: str) -> tuple[tuple, tuple]:
    """A negated phrase that holds one attribute's words and more: a thing the lexicon knows beside them
    is asked for, without the attribute ("nicht barrierefreie Restaurants": restaurants, not wheelchair
    accessible); a word or so that names nothing is the attribute's ("sans accès fauteuil roulant").

    >>> from geoql.nl.request import Knowledge, read_request
    >>> from geoql.nl.lexicon import Lexicon
    >>> r = read_request("nicht barrierefreie Restaurants in Mainz", Knowledge(Lexicon.default()))
    >>> [f.text for f in r.things], [(f.kind, f.text) for f in r.filters]
    (['barrierefreie Restaurants'], [('no', 'barrierefreie')])
    """
    features, out = list(features), []
    for flt in filters:
        # "有无线网络的咖啡馆": a negation cue took the attribute's first letter ("无") and left the rest a
        # negated phrase; that phrase is the attribute's, and missing only after a negation of its own
        # ("没有无线网络的咖啡馆")
        held = [k for k, f in enumerate(features) if flt.kind == "yes" and flt.span and f.negated and f.span
                and flt.span[0] < f.span[0] and f.span[1] <= flt.span[1]]
        if held:
            missing = _negation_before(text, flt.span[0], language)
            flt = dataclasses.replace(flt, kind="absent" if missing else "yes", feature=held[0])
        out.append(flt)
    filters, out = tuple(out), []
    stop = {fold(w) for w in table(language)["stop"]} if language in CUE_LANGUAGES else set()
    for flt in filters:
        # an attribute's words that open with the negation the phrase was read under ("nicht asphaltierte
        # Straßen", "not paved roads": unpaved's own words): the thing beside them is asked for, with the
        # attribute as its words say it
        opened = [m for m in words if flt.span and flt.kind in ("no", "absent") and flt.feature is not None
                  and m.span[0] < flt.span[0] < m.span[1] < flt.span[1]]
        if len(opened) == 1 and features[flt.feature].negated and _names_thing(features[flt.feature], opened):
            m, f = opened[0], features[flt.feature]
            # the thing is the words after the attribute's ("无障碍厕所": 厕所)
            features[flt.feature] = dataclasses.replace(_trimmed(f, f.span[0], m.span[1]), negated=False)
            out.append(dataclasses.replace(flt, kind="absent" if m.without else "yes", text=m.text, span=m.span,
                                           feature=None))
            continue
        inside = [m for m in words if flt.span and flt.kind in ("no", "absent") and m.attribute.key != "name"
                  and flt.span[0] <= m.span[0] and m.span[1] <= flt.span[1] and m.span != flt.span]
        if len(inside) != 1 or flt.feature is None:
            out.append(flt)
            continue
        m, f = inside[0], features[flt.feature]
        if f.span is not None and f.negated and _names_thing(f, inside):
            features[flt.feature] = dataclasses.replace(f, negated=False)
            out.append(dataclasses.replace(flt, text=m.text, span=m.span, feature=None))
            continue
        rest = [t for t in tokens(flt.text) if not (m.span[0] <= flt.span[0] + t.start < m.span[1])
                and t.fold not in stop]
        if not f.tags and len(rest) <= MAX_ATTRIBUTE_FILLER:
            out.append(dataclasses.replace(flt, text=m.text))  # the span keeps the filler word
            continue
        out.append(flt)
    return tuple(features), tuple(out)


def _field_words(text: str, features: tuple[Feature, ...], filters: tuple[Filter, ...],
                 words: Sequence[AttributeMatch], language: str) -> tuple[tuple[AttributeMatch, ...], tuple[Filter, ...]]:
    """The iD field that names all of a filter's words where no hand-kept attribute names any ("bus
    stops without shelter", "Hotels mit Klimaanlage": ``geoql.nl.attributes.find_field``), or all but
    a missing record's own words ("without specified materials": the filter's words become the
    field's, its span keeps the rest). Not where the words are a thing the request asks for beside
    ("ATMs and banks with ATMs"), nor a thing said not to be ("roads that are not footways": the
    things, less footways). Returns the fields' words and the filters.

    >>> from geoql.nl.request import Knowledge, read_request
    >>> from geoql.nl.lexicon import Lexicon
    >>> r = read_request("arrêts de bus sans abri à nantes", Knowledge(Lexicon.default()))
    >>> [(f.kind, f.text) for f in r.filters], [m.attribute.key for m in r.attribute_words]
    ([('absent', 'abri')], ['shelter'])
    >>> r = read_request("benches without specified materials in Lyon", Knowledge(Lexicon.default()))
    >>> [(f.kind, f.text) for f in r.filters], [m.attribute.key for m in r.attribute_words]
    ([('absent', 'materials')], ['material'])
    """
    out, kept = [], []
    for f in filters:
        kept.append(f)
        if f.kind not in ("yes", "no", "absent") or f.span is None \
                or any(m.span[0] < f.span[1] and f.span[0] < m.span[1] for m in (*words, *out)):
            continue
        own = features[f.feature] if f.feature is not None else None
        sure = {t.tags for t in own.tags if t.score >= SURE_THING_SCORE} if own is not None else set()
        if sure and (f.kind == "no" or any(g is not own and not g.negated and sure & {t.tags for t in g.tags}
                                           for g in features)):
            continue
        m = find_field(text[f.span[0]:f.span[1]], language, missing=f.kind != "yes")
        if m is None and f.kind != "yes":
            m = _field_of_record(text[f.span[0]:f.span[1]], language)
            if m is not None:
                kept[-1] = dataclasses.replace(f, text=m.text)  # (the span keeps the record's words)
        if m is not None:
            out.append(dataclasses.replace(m, span=(f.span[0] + m.span[0], f.span[0] + m.span[1])))
    return tuple(out), tuple(kept)


def _field_of_record(text: str, language: str) -> AttributeMatch | None:
    """The iD field a missing record's words name less the words of the record itself: "specified
    materials", "bench information", "sans matériau spécifié", "Materialangabe" (the material, less
    its "Angabe"). The record's words are the cue table's ``filters.unrecorded`` ("info", "Angabe") and
    the last words of its ``unrecorded_phrases`` ("specified" of "not specified"), with an ending of
    up to two letters ("spécifiés").

    >>> _field_of_record("specified materials", "en").attribute.key, _field_of_record("Materialangabe", "de").text
    ('material', 'Material')
    >>> _field_of_record("materials", "en"), _field_of_record("specified", "en"), _field_of_record("长凳信息", "zh").text
    (None, None, '长凳')
    """
    record = _record_cues(language)
    if not record:
        return None

    def said(word: str) -> bool:
        return any(word.startswith(w) and len(word) - len(w) <= 2 for w in record)

    if tokens(text) and all(t.spaceless for t in tokens(text)):
        # a script without spaces: the record's word closes the phrase ("长凳信息", "ベンチ情報")
        rest = text.rstrip()
        for w in _record_words_longest_first(language):
            if rest.endswith(w) and len(rest) > len(w):
                m = find_field(rest[:-len(w)], language, missing=True)
                if m is not None:
                    return m
        return None
    toks = [t for t in tokens(text) if not t.spaceless]
    if not toks or len(toks) != len(tokens(text)):
        return None
    kept = list(toks)
    while kept and said(kept[0].fold):
        kept.pop(0)
    while kept and said(kept[-1].fold):
        kept.pop()
    if kept and len(kept) < len(toks):
        m = find_field(text[kept[0].start:kept[-1].end], language, missing=True)
        return None if m is None else dataclasses.replace(m, span=(kept[0].start + m.span[0], kept[0].start + m.span[1]))
    if len(toks) == 1:
        # one compound word ending in the record's word: "Materialangabe", "Sitzbankinformationen"
        word = toks[0].fold
        for w in _record_words_longest_first(language):
            at = word.rfind(w)
            if at >= MIN_COMPOUND_LETTERS and len(word) - at - len(w) <= 2:
                m = find_field(text[toks[0].start:toks[0].start + at], language, missing=True)
                if m is not None:
                    return dataclasses.replace(m, span=(toks[0].start + m.span[0], toks[0].start + m.span[1]))
    return None


# The fewest letters before a record's word that end a compound word ("Material|angabe").
MIN_COMPOUND_LETTERS = 4


@lru_cache(maxsize=32)
def _record_words_longest_first(language: str) -> tuple[str, ...]:
    """``_record_words``' record words, longest first: the one a phrase ends in is the longest it ends in."""
    return tuple(sorted(_record_words(language)[0], key=len, reverse=True))


@lru_cache(maxsize=32)
def _record_cues(language: str) -> frozenset[str]:
    """The words that say a record, not what it records (folded): ``_record_words`` and the last word of
    each unrecorded phrase of several words ("specified" of "not specified") or of one ("unspecified")."""
    if language not in CUE_LANGUAGES:
        return frozenset()
    phrases = table(language)["filters"].get("unrecorded_phrases") or ()
    last = {tokens(p)[-1].fold for p in phrases if tokens(p) and not tokens(p)[-1].spaceless}
    return _record_words(language)[0] | frozenset(w for w in last if len(w) >= MIN_COMPOUND_LETTERS)


def _spaceless_with(text: str, frame: Frame, features: tuple[Feature, ...], filters: tuple[Filter, ...],
                    words: Sequence[AttributeMatch] = ()) -> tuple[Filter, ...]:
    """In a script without spaces, a phrase that names no thing and is all an attribute's words (the
    hand-kept table's, ``words``, or an iD yes/no field's: "成都有wifi的咖啡馆"), right
    after a with-cue ("苏州有空调的酒店") or right before one ("シャワーがあるキャンプ場"), beside a thing:
    a ``yes`` filter of the things (the cue tables read a with-phrase only after the first phrase).

    >>> from geoql.nl.request import Knowledge, read_request
    >>> from geoql.nl.lexicon import Lexicon
    >>> [(f.kind, f.text) for f in read_request("苏州有空调的酒店", Knowledge(Lexicon.default())).filters]
    [('yes', '空调')]
    """
    if frame.script not in SPACELESS_SCRIPTS or frame.language not in CUE_LANGUAGES:
        return ()
    cues = tuple(table(frame.language)["filters"]["with"])
    after = bool(table(frame.language)["filters"].get("with_after"))
    read = {f.feature for f in filters if f.feature is not None} | {f.span for f in filters}
    out = []
    for k, f in enumerate(features):
        # (a phrase the lexicon names a thing too is the attribute where the hand-kept table names it whole
        # and another thing follows: "有照明的篮球场", "有路灯的街道": lit, not street lamps and pitches)
        own = any(m.span == f.span and m.attribute.yes for m in words)
        if f.negated or f.tags and not (own and any(g.tags and not g.negated for g in features[k + 1:])) \
                or f.span is None or k in read or f.span in read \
                or not any(g.tags and not g.negated for j, g in enumerate(features) if j != k) \
                or not (own or find_field(f.text, frame.language)):
            continue
        if (text[f.span[1]:].lstrip().startswith(cues) if after else text[:f.span[0]].rstrip().endswith(cues)):
            out.append(Filter("yes", f.text, f.span, feature=k))
    return tuple(out)


def _negation_before(text: str, at: int, language: str, reach: int = 0) -> bool:
    """Whether a negation cue of ``language`` written before what it negates stands before ``at``: right
    before it, or at most ``reach`` letters earlier ("without any wifi"). A cue of a spaced script is a
    whole word ("no" does not end "casino"); one of a spaceless script is its letters ("没有无线网络").
    The one answer to "is this negated from before" for every reader of filters.

    >>> _negation_before("hoteles sin número de habitaciones", 12, "es")
    True
    >>> _negation_before("casino wifi", 7, "en"), _negation_before("without any wifi", 12, "en", NEGATION_REACH)
    (False, True)
    """
    if language not in CUE_LANGUAGES:
        return False
    head = fold(text[:at]).rstrip()
    for cue in table(language)["negation"]["before"]:
        c = fold(cue).strip()
        if not c:
            continue
        i = head.find(c, max(0, len(head) - len(c) - reach))
        while i != -1:
            end = i + len(c)
            if spaceless(c[-1]) or ((i == 0 or not head[i - 1].isalnum())
                                    and (end == len(head) or not head[end].isalnum())):
                return True
            i = head.find(c, i + 1)
    return False


def _inside_attribute(span: tuple[int, int] | None, words: Sequence[AttributeMatch]) -> bool:
    """Whether a cue at ``span`` lies inside a longer attribute word.

    >>> from geoql.nl.attributes import find
    >>> _inside_attribute((14, 23), find("edifícios sem número de porta em braga", "pt"))
    True
    >>> _inside_attribute((0, 6), find("quantas escolas com wifi", "pt"))
    False
    """
    return span is not None and any(a <= span[0] and span[1] <= b and b - a > span[1] - span[0]
                                    for a, b in (m.span for m in words))


def _counted_attributes(text: str, filters: tuple[Filter, ...], words: Sequence[AttributeMatch],
                        numbers: Sequence[Number], language: str) -> tuple[tuple[Filter, ...], tuple]:
    """A measure asked for with a number right before it ("hotels with 5 stars", "a 3-storey
    building"): that many, a comparison "=", or the comparison a cue right after the measure says
    ("4성급 이상", "4 stars or higher"). (Only a measure with no tags of its own: "with 2 wifi" is no
    count of wifi.) A number may be a word ("five star hotels": :func:`_number_word_before`). Returns
    the filters, where each measure and such a cue after it or a number word before it stand, and the
    number words read.""" 
    def number_before(m):
        n = next((n for n in numbers if n.span is not None and n.unit is None and n.span[1] <= m.span[0]
                  and text[n.span[1]:m.span[0]].strip(" -") == ""), None)
        if n is None and (m.attribute.digits or m.attribute.key == "building:levels"):
            # (a number word counts a measure only: "avec un nom" is no count of names)
            n = _number_word_before(text, m.span[0], language)
            if n is not None:
                spelled.append(n)
                cues.append((n.span[0], m.span[1]))  # the word and the measure: no thing ("五" of "五つ星")
        return n

    spelled: list[Number] = []

    after = _compare_cues(language)

    def op_after(m) -> str:
        gap = len(text[m.span[1]:]) - len(text[m.span[1]:].lstrip())
        rest = fold(text[m.span[1] + gap:])
        for c, op in after:
            if rest.startswith(c) and (spaceless(c[-1]) or rest[len(c):len(c) + 1] in ("", " ", ",")):
                cues.append((m.span[0], m.span[1] + gap + len(c)))
                return op
        return "="

    cues: list[tuple[int, int]] = []

    def number_after(m):
        # "mit einer Höchstgeschwindigkeit von 40", "a speed limit of 30": the measure, "of", its value
        n = next((n for n in numbers if n.span is not None and n.unit is None and m.span[1] <= n.span[0]
                  and fold(text[m.span[1]:n.span[0]].strip()) in _VALUE_LINKS), None)
        if n is not None:
            cues.append((m.span[0], n.span[1]))
        return n

    out = []
    for f in filters:
        m = next((m for m in words if f.kind == "yes" and f.span == m.span and not m.attribute.yes), None)
        n = number_before(m) if m is not None else None
        if n is None and m is not None and m.attribute.key in _MEASURE_KEYS:
            n = number_after(m)
            if n is not None:
                out.append(dataclasses.replace(f, kind="compare", op="=", value=n.text))
                continue
        out.append(dataclasses.replace(f, kind="compare", op=op_after(m), value=n.text) if n is not None else f)
    # ... and one inside a thing's phrase, where no cue read it ("hoteles de 5 estrellas", "5성급 호텔",
    # "5つ星ホテル"), of the measures that are counted (stars, floors)
    for m in words:
        if m.attribute.yes or not (m.attribute.digits or m.attribute.key == "building:levels") \
                or any(f.span and f.span[0] < m.span[1] and m.span[0] < f.span[1] for f in out):
            continue
        n = number_before(m)
        if n is not None:
            out.append(Filter("compare", m.text, m.span, op_after(m), n.text))
    return tuple(out), tuple(cues), tuple(spelled)


# Keys whose value is a number a request may give after the measure's word.
_MEASURE_KEYS = frozenset({"maxspeed", "stars", "capacity", "building:levels", "ele", "height", "lanes", "population",
                           "width", "maxheight", "maxweight"})
# The words between a measure and its value ("a speed limit of 30", "Höchstgeschwindigkeit von 40"), folded.
_VALUE_LINKS = frozenset({"of", "von", "de", "di", "do", "da", "del", "van", "od", "at", "à", "a"})


def _number_word_before(text: str, at: int, language: str) -> Number | None:
    """A number written as a word right before ``at`` ("five star", "cinco estrellas", "Fünf-Sterne",
    "五つ星", "오성급"): as a :class:`Number`, else None. In a script without spaces one letter, the one
    right before; else the whole word before (a hyphen or a space between)."""
    words = number_words(language)
    head = text[:at].rstrip(" -")
    if not words or not head:
        return None
    if spaceless(head[-1]):
        word, start = head[-1], len(head) - 1
        # (a word of several letters ends with it: "서울오성급" is no number; "오" of "오성급" is, after a space or particle)
        if start > 0 and spaceless(head[start - 1]) and script_of(head[-1]) == "Hangul":
            return None
    else:
        word = re.split(r"[\s\-]", head)[-1]
        start = len(head) - len(word)
    value = words.get(fold(word))
    return None if value is None else Number(float(value), str(value), (start, start + len(word)))


def _listed_attributes(features: tuple[Feature, ...], filters: tuple[Filter, ...],
                       words: Sequence[AttributeMatch]) -> tuple[Filter, ...]:
    """A phrase that is all one attribute's words, listed with an attribute asked for ("cafes with wifi
    and outdoor seating", "Cafés mit WLAN und Terrasse", "Wi-Fiとテラス席があるカフェ"): asked for too,
    not a thing of its own."""
    asked = [f for f in filters if f.kind == "yes" and f.span is not None]
    if not asked:
        return filters
    held = {f.feature for f in filters}
    out = list(filters)
    for k, f in enumerate(features):
        if f.negated or f.span is None or k in held:
            continue
        whole = [m for m in words if m.span == f.span and m.attribute.yes]
        if len(whole) == 1 and not any(o.span == f.span for o in out):
            out.append(Filter("yes", whole[0].text, whole[0].span, feature=k))
    return tuple(out)


def _listed_missing(text: str, features: tuple[Feature, ...], filters: tuple[Filter, ...],
                    words: Sequence[AttributeMatch], language: str) -> tuple[tuple, tuple[Filter, ...]]:
    """An attribute listed with one said to be missing, inside the same negation, is missing too:
    after it where the negation comes first ("cafes without wifi and wheelchair access", "ohne WLAN und
    Terrasse"), before it where it comes last ("Wi-Fiとテラス席がない", "와이파이와 야외 좌석이 없는"). Only a
    list word or a comma between: "without wifi and with outdoor seating" asks for the seating.

    >>> from geoql.nl.request import Knowledge, read_request
    >>> from geoql.nl.lexicon import Lexicon
    >>> r = read_request("cafes without wifi and wheelchair access in Paris", Knowledge(Lexicon.default()))
    >>> [(f.kind, f.text) for f in r.filters]
    [('absent', 'wifi'), ('absent', 'wheelchair access')]
    """
    if language not in CUE_LANGUAGES:
        return features, filters
    # (and the particles that list what one negation denies: "電話番号もウェブサイトもない", "전화번호랑 홈페이지 없는")
    ands = {w.strip() for w in list_words(language)} | {",", "、", "，"} \
        | {fold(w) for w in table(language).get("negation_lists", ())}
    after = tuple(table(language)["negation"]["after"])
    missing = [f for f in filters if f.kind in ("no", "absent") and f.span is not None]
    if not missing:
        return features, filters

    def listed(gap: str) -> bool:
        gap = fold(gap).strip()
        return bool(gap) and (gap in ands or gap.strip(",、，").strip() in ands)

    def negated_after(end: int) -> bool:
        # (a particle may come between: "야외 좌석이 없는", "テラス席がない")
        rest = text[end:].lstrip()
        return rest.startswith(after) or rest[1:].lstrip().startswith(after)

    def negation_of(span: tuple[int, int]) -> Filter | None:
        for n in missing:
            if span[0] >= n.span[1] and listed(text[n.span[1]:span[0]]) and _negation_before(text, n.span[0], language, NEGATION_REACH):
                return n
            if span[1] <= n.span[0] and listed(text[span[1]:n.span[0]]) and negated_after(n.span[1]):
                return n
        return None

    def an_attribute(text_: str, span: tuple[int, int]) -> bool:
        return any(m.span == span and m.attribute is not None and m.attribute.key for m in words) \
            or find_field(text_, language, missing=True) is not None

    out = []
    for f in filters:
        n = negation_of(f.span) if f.kind == "yes" and f.span is not None and f.value is None else None
        if n is not None and an_attribute(f.text, f.span):
            f = dataclasses.replace(f, kind=n.kind)
        out.append(f)
    held = {f.feature for f in out} | {f.span for f in out}
    features = list(features)
    for k, feature in enumerate(tuple(features)):
        if feature.negated or feature.span is None or k in held or feature.span in held:
            continue
        n = negation_of(feature.span)
        # an attribute's words, or a thing's with a record's ("without shelter and bench information":
        # the bench's record, read as iD's field by _field_words)
        if n is not None and (an_attribute(feature.text, feature.span) or _field_of_record(feature.text, language)):
            out.append(Filter(n.kind, feature.text, feature.span, feature=k))
            continue
        # an attribute's words ending a thing's phrase, listed with a missing one: "restoranlar telefon ve web
        # sitesi yok" (the phrase stays the thing's; the filter holds the attribute's words)
        at = feature.span[0]
        tail = next((m for m in words if m.attribute is not None and m.attribute.key and at < m.span[0]
                     and m.span[1] == feature.span[1] and any(t.span[1] + at <= m.span[0] for t in feature.tags)), None)
        n = negation_of(tail.span) if tail is not None and tail.span not in held else None
        if n is not None:
            head = text[at:tail.span[0]].rstrip()
            features[k] = dataclasses.replace(feature, text=head, span=(at, at + len(head)),
                                              tags=tuple(t for t in feature.tags if t.span[1] <= len(head)))
            out.append(Filter(n.kind, tail.text, tail.span))
    return tuple(features), tuple(out)


# How far before an attribute's words its negation cue may be (letters): "without any wifi", "没有"
NEGATION_REACH = 16


def _negation_opening_attribute(text: str, features: tuple[Feature, ...], filters: tuple[Filter, ...],
                                words: Sequence[AttributeMatch], lexicon: Lexicon,
                                language: str) -> tuple[tuple, tuple]:
    """An attribute whose first letter is a negation cue, read as a negation of what follows it ("无障碍
    厕所": barrier-free toilets, not toilets without "障碍"): the attribute is asked for, the rest of the
    phrase is the thing."""
    if language not in CUE_LANGUAGES:
        return features, filters
    negations = set(table(language)["negation"]["before"])
    features, out = list(features), []
    for flt in filters:
        f = features[flt.feature] if flt.feature is not None else None
        # (after a negation of its own the attribute is what is missing: "没有无线网络")
        m = next((m for m in words if f is not None and f.negated and f.span and m.attribute.yes
                  and m.span[0] < f.span[0] < m.span[1] <= f.span[1]
                  and text[m.span[0]:f.span[0]] in negations
                  and not _negation_before(text, m.span[0], language)), None)
        if m is None or flt.kind not in ("no", "absent"):
            out.append(flt)
            continue
        rest = text[m.span[1]:f.span[1]].strip()
        start = text.find(rest, m.span[1]) if rest else m.span[1]
        tags = tuple(lexicon.lookup(rest, language, opening=False)) if rest else ()
        features[flt.feature] = Feature(rest, (start, start + len(rest)), tags=tags) if rest else dataclasses.replace(f, negated=False)
        out.append(Filter("yes", m.text, m.span, feature=None if rest else flt.feature))
    return tuple(features), tuple(out)


def _measure_then_comparison(text: str, filters: tuple[Filter, ...], words: Sequence[AttributeMatch],
                             numbers: Sequence[Number]) -> tuple[Filter, ...]:
    """A measure asked for ("with a speed limit") and right after it a comparison that names no measure
    of its own ("of at least 100", where "at" cut the phrase): one comparison of that measure. A measure
    and its number in one phrase ("with a speed limit of 50", "Tempolimit 30", "an elevation of 3000 m"):
    that much, a comparison "="."""
    measures = {m.span: m for m in words if not m.attribute.yes}
    out = list(filters)
    merged: set[int] = set()  # the comparisons taken into the measure before them
    for k, f in enumerate(filters):
        if f.kind != "yes" or f.span is None:
            continue
        if f.span not in measures:
            m = next((m for m in measures.values() if m.span[0] == f.span[0]), None)
            n = next((n for n in numbers if m is not None and n.span is not None and n.span[1] == f.span[1]
                      and m.span[1] <= n.span[0] and len(text[m.span[1]:n.span[0]].split()) <= 1), None)
            if n is not None:
                out[k] = dataclasses.replace(f, kind="compare", text=m.text, op="=", value=n.text, unit=n.unit)
            continue
        j = next((j for j, g in enumerate(filters) if g.kind == "compare" and g.span and f.span[1] <= g.span[0]
                  and len(text[f.span[1]:g.span[0]].split()) <= 2), None)
        after = filters[j] if j is not None else None
        if after is not None and not any(after.span[0] <= m.span[0] and m.span[1] <= after.span[1] for m in words):
            out[k] = dataclasses.replace(after, text=f.text, span=(f.span[0], after.span[1]), feature=f.feature)
            merged.add(j)
    # (removed at the end: a removal inside the loop would shift the place of a later replacement)
    return tuple(g for j, g in enumerate(out) if j not in merged)


@lru_cache(maxsize=32)
def _compare_cues(language: str) -> tuple[tuple[str, str], ...]:
    """``language``'s comparison cues, folded, with their operators, longest first (none without a table)."""
    if language not in CUE_LANGUAGES:
        return ()
    return tuple(sorted(((fold(c), op) for op, cs in table(language)["filters"]["compare"].items() for c in cs),
                        key=lambda c: -len(c[0])))


@lru_cache(maxsize=32)
def _compare_tokens(language: str) -> frozenset[str]:
    """The folded tokens of ``language``'s comparison cues and units."""
    t = table(language)
    return frozenset({tok.fold for ops in t["filters"]["compare"].values() for w in ops for tok in tokens(w)}
                     | {tok.fold for unit in t["units"].values() for w in unit for tok in tokens(w)})


def _comparison_leftovers(features: tuple[Feature, ...], filters: tuple[Filter, ...],
                          language: str, measures: Sequence[AttributeMatch] = (), text: str = "") -> tuple[tuple, tuple]:
    """Phrases that are only a comparison's words, read apart from it: "高さ200" and "以上" of "東京の高さ200m
    以上の建物" (the comparison "高さ" >= 200 holds them), or the measure right after it, "tall" of "over
    200 m tall" (``measures``: the attribute words of ``text``). A phrase the lexicon names a thing in stays."""
    compared = [f for f in filters if f.kind == "compare" and f.span is not None and f.value]
    if not compared or language not in CUE_LANGUAGES:
        return features, filters
    cues = _compare_tokens(language)
    for k in range(len(features) - 1, -1, -1):
        f = features[k]
        if f.negated or f.span is None or any(m.score >= SURE_THING_SCORE for m in f.tags):
            continue
        words = [tok for tok in tokens(f.text) if tok.fold not in cues and not tok.number]
        inside = all(any(c.span[0] <= f.span[0] + tok.start and f.span[0] + tok.end <= c.span[1] for c in compared)
                     for tok in words)
        measure = any(m.span == f.span and not m.attribute.yes for m in measures) and any(
            c.span[1] <= f.span[0] and all(t.fold in cues for t in tokens(text[c.span[1]:f.span[0]])) for c in compared)
        if (inside or measure) and not any(g.feature == k for g in filters):
            features, filters = _without_feature(features, filters, k)
    return features, filters


def _filter_leftovers(features: tuple[Feature, ...], filters: tuple[Filter, ...],
                      cues: Sequence[tuple[int, int]]) -> tuple[tuple, tuple]:
    """Phrases without tags that are a filter's words read apart: all the comparison's cue after a
    measure (``cues``: "higher" of "4 stars or higher"; "星以上"), a word of another phrase's attribute
    that an apostrophe cut off ("aperto" of "tavoli all'aperto"), or the counted measure itself read as
    a phrase of its own after a preposition ("stelle" of "a 4 stelle")."""
    for k in reversed(range(len(features))):
        f = features[k]
        if f.span is None or f.tags:
            continue
        if any(a <= f.span[0] and f.span[1] <= b for a, b in cues):
            features, filters = _without_feature(features, filters, k)
        elif not f.negated and not any(g.feature == k for g in filters) \
                and any(g.span and (g.kind == "yes" and g.span[0] < f.span[0] or g.kind == "compare" and g.span[0] <= f.span[0])
                        and f.span[1] <= g.span[1] for g in filters):
            features, filters = _without_feature(features, filters, k)
    return features, filters


def _not_allowed(features: tuple[Feature, ...], filters: tuple[Filter, ...], words: Sequence[AttributeMatch],
                 language: str) -> tuple[tuple, tuple]:
    """An attribute said not allowed ("bars where smoking is not allowed", "parks where dogs aren't
    permitted"): the negation reads the permission word (the cue table's ``filters.allowed``) as a thing
    said not to be, and the attribute as a ``yes`` filter before it; the attribute is ``absent`` (its
    ``no`` tag: ``smoking=no``), the permission word no thing.

    >>> from geoql.nl.request import Knowledge, read_request
    >>> from geoql.nl.lexicon import Lexicon
    >>> r = read_request("bars where smoking is not allowed in lisbon", Knowledge(Lexicon.default()))
    >>> [(f.kind, f.text) for f in r.filters], [f.text for f in r.features]
    ([('absent', 'smoking')], ['bars'])
    """
    allowed = _allowed_words(language)
    for flt in filters:
        k = flt.feature
        if flt.kind != "no" or k is None or not features[k].negated or fold(features[k].text) not in allowed \
                or features[k].span is None:
            continue
        before = [f for f in filters if f.kind == "yes" and f.span is not None and f.span[1] <= features[k].span[0]
                  and any(m.span == f.span and m.attribute.yes and m.attribute.no for m in words)]
        if len(before) != 1:
            continue
        said = dataclasses.replace(before[0], kind="absent")
        rest = tuple(said if f is before[0] else f for f in filters if f is not flt)
        return _without_feature(features, rest, k)
    return features, filters


@lru_cache(maxsize=None)
def _allowed_words(language: str) -> frozenset[str]:
    """The folded permission words of ``language``'s cue table (``filters.allowed``); none without a table."""
    return frozenset(fold(w) for w in table(language)["filters"].get("allowed", ())) if language in CUE_LANGUAGES \
        else frozenset()


def _without_feature(features: tuple[Feature, ...], filters: tuple[Filter, ...], k: int) -> tuple[tuple, tuple]:
    """The features less the ``k``-th, and the filters with their feature indices moved to match (a filter
    read from that phrase keeps no phrase)."""
    moved = tuple(f if f.feature is None or f.feature < k else
                  dataclasses.replace(f, feature=None if f.feature == k else f.feature - 1) for f in filters)
    return features[:k] + features[k + 1:], moved


def _negation_after(text: str, at: int, language: str) -> int | None:
    """Where a negation cue of ``language`` written after what it negates ends, when one follows ``at``
    (or a verb in its negative form, the next word or the one after: "배달 안 되는", "tuvaleti olmayan",
    "電話番号未登録", "sandalye ile girilemeyen"); None when none does.

    >>> _negation_after("배달 안 되는 식당", 2, "ko"), _negation_after("배달 되는 식당", 2, "ko")
    (7, None)
    >>> _negation_after("車椅子で入れないホテル", 3, "ja")
    8
    """
    if language not in CUE_LANGUAGES:
        return None
    negation = table(language)["negation"]
    start = at + len(text[at:]) - len(text[at:].lstrip())
    tail = fold(text[start:])
    # past a one-letter particle in a script without spaces: "車椅子で入れない" (can't get in by wheelchair)
    skip = (0, 1) if tail[:1] and spaceless(tail[0]) and tail[0] in _particles(language) else (0,)
    for k in skip:
        for cue in negation["after"]:
            cue = fold(cue)
            rest = tail[k:]
            if cue and rest.startswith(cue) and (spaceless(cue[-1]) or len(rest) == len(cue) or not rest[len(cue)].isalnum()):
                return start + k + len(cue)
    endings = tuple(fold(e) for e in negation.get("after_endings", ()))
    for m in list(re.finditer(r"\S+", tail))[:2] if endings else ():
        if m.group().endswith(endings):
            return start + m.end()
    return None


@lru_cache(maxsize=None)
def _particles(language: str) -> frozenset[str]:
    """The one-letter stop words of ``language`` written without spaces (Japanese で, が, は, の)."""
    return frozenset(w for w in table(language)["stop"] if len(w) == 1 and spaceless(w))


# Languages whose verbs follow the attribute they say something of ("배달 안 되는", "sandalye ile girilemeyen").
VERB_FINAL = frozenset({"ko", "ja", "tr"})


def _unused_attributes(text: str, features: tuple[Feature, ...], filters: tuple[Filter, ...],
                       words: Sequence[AttributeMatch], language: str,
                       avoid: Sequence[tuple[int, int]] = ()) -> tuple[tuple, tuple]:
    """An attribute with yes tags that the reading found but no filter took ("playas donde se admiten
    perros", "배달 안 되는 식당", "電話番号未登録のレストラン"): a filter of every thing,
    ``absent`` when it is said missing (a without-word, or a negation cue right before or after it),
    else ``yes``; a phrase that holds nothing but the attribute's words and its verb (no tag of its
    own outside them) is the filter's, no thing. Not an attribute that is itself the request's one thing
    ("biergärten münchen"), nor one whose words a thing's sure tags name, nor one inside ``avoid`` (the
    places' words).

    >>> from geoql.nl.request import Knowledge, read_request
    >>> from geoql.nl.lexicon import Lexicon
    >>> r = read_request("restaurants qui font la livraison toulouse", Knowledge(Lexicon.default()))
    >>> [(f.kind, f.text, f.feature) for f in r.filters], [f.text for f in r.features]
    ([('yes', 'livraison', None)], ['restaurants'])
    """
    taken = [f.span for f in filters if f.span is not None]
    for m in words:
        if not m.attribute.yes or any(a < m.span[1] and m.span[0] < b for a, b in taken):
            continue
        own = [k for k, f in enumerate(features) if f.span is not None and f.span[0] <= m.span[0] and m.span[1] <= f.span[1]]
        if not own or any(t.score >= SURE_THING_SCORE and t.span[0] + features[k].span[0] <= m.span[0] < t.span[1] + features[k].span[0]
                          for k in own for t in features[k].tags):
            continue
        things = [k for k, f in enumerate(features) if k not in own and not f.negated and f.tags]
        if not things or any(a <= m.span[0] and m.span[1] <= b for a, b in avoid):
            continue
        after = _negation_after(text, m.span[1], language)
        if not spaceless(m.text[0]) or script_of(m.text[0]) == "Hangul":  # (Korean is spaced)
            # in a spaced script only a phrase that opens with the attribute's words, and after them
            # only its negation or a one-letter verb where verbs follow ("배달 안 되", "드라이브스루 되"):
            # a word before is another sense ("publicly accessible", "areas covered"), a noun after its
            # own ("wheelchair users", "장애인 보행자");
            # a capital inside the request is a name ("Greece Center Drive")
            phrase = features[max(own, key=lambda k: features[k].span[0])]
            rest = text[m.span[1]:phrase.span[1]].strip()
            if phrase.span[0] < m.span[0] or m.span[0] > 0 and m.text[:1].isupper() \
                    or rest and not (language in VERB_FINAL and (len(rest) <= 1 or after is not None and after >= phrase.span[1])):
                continue
        negated = m.without or _negation_before(text, m.span[0], language) \
            or after is not None
        span = m.span
        for k in sorted(own, reverse=True):
            f = features[k]
            outside = [t for t in f.tags if not (m.span[0] <= t.span[0] + f.span[0] and t.span[1] + f.span[0] <= m.span[1])]
            if not outside:
                # the phrase is the filter's: its other words ("带走" of "打包带走") are the attribute's too
                span = (min(span[0], f.span[0]), max(span[1], f.span[1]))
                features, filters = _without_feature(features, filters, k)
        if after is not None:
            span = (span[0], max(span[1], after))  # the negation is the filter's words too
        filters += (Filter("absent" if negated else "yes", m.text, span),)
        taken.append(span)
    return features, filters


def _negated_things(features: tuple[Feature, ...], filters: tuple[Filter, ...],
                    words: Sequence[AttributeMatch]) -> tuple[Filter, ...]:
    """An absence read on the words of a thing said not to be, which no attribute names ("restaurants
    in Leiden maar geen pizzeria's": Dutch "geen" is both "no" and "without"): the thing's negation
    (``no``) is what the request says, not a missing tag.

    >>> from geoql.nl.request import Knowledge, read_request
    >>> from geoql.nl.lexicon import Lexicon
    >>> r = read_request("restaurants in Leiden maar geen pizzeria", Knowledge(Lexicon.default()))
    >>> [(f.kind, f.text, f.feature) for f in r.filters]
    [('no', 'pizzeria', 1)]
    """
    def keys(g: Feature) -> set[str]:
        return {tag.split("=")[0] for t in g.tags if t.score >= SURE_THING_SCORE for tag in t.tags}

    asked = set().union(*(keys(g) for g in features if not g.negated))
    out = []
    for f in filters:
        # (a kind of a thing asked for: "restaurants ... geen pizzeria's"; "without permanent residents"
        # stays an absence whatever the lexicon makes of its words)
        k = next((k for k, g in enumerate(features) if g.negated and g.span is not None and f.span is not None
                  and g.span[0] <= f.span[0] and f.span[1] <= g.span[1] and keys(g) & asked), None)
        if f.kind == "absent" and k is not None and not any(m.span[0] < f.span[1] and f.span[0] < m.span[1] for m in words):
            f = dataclasses.replace(f, kind="no", feature=k)
        out.append(f)
    return tuple(out)


def _negated_attributes(features: tuple[Feature, ...], filters: tuple[Filter, ...],
                        words: Sequence[AttributeMatch]) -> tuple[tuple, tuple]:
    """A thing said not to be whose only match lies inside an attribute's words is that attribute said
    missing ("大阪で車椅子だと使えないトイレ": 椅子, a chair, is part of 車椅子, a wheelchair): an ``absent``
    filter of every thing, the phrase no thing.

    >>> from geoql.nl.request import Knowledge, read_request
    >>> from geoql.nl.lexicon import Lexicon
    >>> r = read_request("大阪で車椅子だと使えないトイレ", Knowledge(Lexicon.default()))
    >>> [(f.kind, f.text) for f in r.filters], [f.text for f in r.features]
    ([('absent', '車椅子')], ['トイレ'])
    """
    changed = True
    while changed:  # one at a time: each takes a phrase out and moves the others' indices
        changed = False
        for flt in filters:
            k = flt.feature
            if flt.kind != "no" or k is None or not features[k].negated or features[k].span is None:
                continue
            g = features[k]
            inside = [m for m in words if m.attribute.yes and g.span[0] <= m.span[0] and m.span[1] <= g.span[1]]
            if len(inside) != 1 or not g.tags or not all(
                    inside[0].span[0] <= g.span[0] + t.span[0] and g.span[0] + t.span[1] <= inside[0].span[1] for t in g.tags):
                continue
            features, filters = _without_feature(features, tuple(x for x in filters if x is not flt), k)
            filters += (Filter("absent", inside[0].text, g.span),)
            changed = True
            break
    return features, filters


def _unrecorded(text: str, filters: tuple[Filter, ...], language: str,
                attribute_words: Sequence[AttributeMatch] = ()) -> tuple[Filter, ...]:
    """A missing attribute whose word is followed by a word for its record ("ohne Rollstuhl-Angabe",
    "no wheelchair info", "sin información de accesibilidad" before it): the key missing, not its
    ``no`` value. It stays an ``absent`` filter, with ``op`` "unrecorded".

    >>> _unrecorded("arztpraxen ohne rollstuhl-angabe", (Filter("absent", "rollstuhl", (16, 25)),), "de")[0].op
    'unrecorded'
    >>> _unrecorded("cafes without wifi in bonn", (Filter("absent", "wifi", (14, 18)),), "en")[0].op is None
    True
    """
    words, joiners = _record_words(language)
    if not words:
        return filters
    out = []
    for f in filters:
        if f.kind in ("no", "absent") and f.span is not None:
            # the record's word in the filter's own words or right after them ("wheelchair info"), or
            # before them with a joiner ("información de accesibilidad")
            own = tokens(text[f.span[0]:f.span[1]])
            inside = own[1:] + tokens(re.split(r"[,;.]", text[f.span[1]:])[0])[:1]
            before = tokens(text[:f.span[0]])[-2:]
            # (in a script without spaces a token is a letter: the record's word is one of the spaced words,
            # "영업시간 정보 빠진")
            spaced = [fold(w) for w in text[f.span[0]:f.span[1]].split()[1:]]
            # (or opening them, an attribute's words after it: "без указания часов работы")
            opens = bool(own) and own[0].fold in words and any(
                f.span[0] + own[0].end <= m.span[0] and m.span[1] <= f.span[1] for m in attribute_words)
            # (in a script without spaces, closing them after an attribute's words: "没有维基百科条目的城市")
            whole = fold(text[f.span[0]:f.span[1]])
            closes = bool(whole) and spaceless(whole[-1]) and any(whole.endswith(w) and any(
                f.span[0] <= m.span[0] and m.span[1] <= f.span[1] - len(w) for m in attribute_words) for w in words)
            if any(w.fold in words for w in inside) or any(w in words for w in spaced) or opens or closes \
                    or len(before) == 2 and before[0].fold in words and before[1].fold in joiners:
                f = dataclasses.replace(f, kind="absent", op="unrecorded")
                named = [m for m in attribute_words if f.span[0] <= m.span[0] and m.span[1] <= f.span[1]]
                if len(named) == 1 and fold(named[0].text) != fold(f.text.strip()):
                    # the attribute's own words, less the record's: "zonder overdekt-tag"
                    f = dataclasses.replace(f, text=named[0].text, span=named[0].span)
        out.append(f)
    return tuple(out)


def _unrecorded_phrase(text: str, features: tuple[Feature, ...], filters: tuple[Filter, ...],
                       attribute_words: Sequence[AttributeMatch], language: str) -> tuple[tuple, tuple, tuple]:
    """A phrase that says an attribute is not recorded ("nicht eingetragen", "sans info sur", "не указана",
    "未登録", "정보 없는", "girilmemiş": the cue table's ``filters.unrecorded_phrases``) beside an attribute's
    words: the attribute's key missing (``absent``, ``op`` "unrecorded"), in place of whatever the words
    between them were read as ("bares donde no pone si se puede fumar": not a negated "pone" and a smoking
    bar). The attribute is the one nearest the phrase; a request with no thing left outside the two is
    left as read. Also returns the attribute's words where the reading had not named them (an iD field).

    >>> from geoql.nl.attributes import find
    >>> from geoql.nl.model import FeatureMatch
    >>> text, cafe = "京都 テラス席の有無が未登録のカフェ", FeatureMatch((0, 3), ("amenity=cafe",), 1.0)
    >>> feats = (Feature("テラス席", (3, 7)), Feature("カフェ", (15, 18), tags=(cafe,)), Feature("有無", (8, 10), negated=True))
    >>> flts = (Filter("no", "有無", (8, 10), feature=2), Filter("yes", "テラス席", (3, 7), feature=0))
    >>> f, r, _ = _unrecorded_phrase(text, feats, flts, [m for m in find(text, "ja") if m.attribute], "ja")
    >>> [(x.text, x.negated) for x in f], [(x.kind, x.text, x.op) for x in r]
    ([('カフェ', False), ('テラス席の有無が未登録', True)], [('absent', 'テラス席', 'unrecorded')])
    """
    phrases = _unrecorded_phrases(language)
    if phrases is None:
        return features, filters, ()
    toks = tokens(text)
    found = phrases.find(toks)
    if len(found) != 1:
        return features, filters, ()
    i, j, _ = found[0]
    start, end = toks[i].start, toks[j - 1].end
    clause = (text.rfind(",", 0, start) + 1, len(text) if text.find(",", end) < 0 else text.find(",", end))

    def beside(span) -> bool:
        return clause[0] <= span[0] and span[1] <= clause[1] and (span[1] <= start or span[0] >= end)

    near = [m for m in attribute_words if m.attribute.key and beside(m.span)]
    # a phrase the lexicon read as a thing whose words an iD yes/no field names whole: "ベンチの情報が入ってない
    # バス停" (a bench's record, at a bus stop)
    for f in features:
        if f.span is not None and beside(f.span) and not any(m.span[0] < f.span[1] and f.span[0] < m.span[1] for m in near):
            m = find_field(f.text, language, missing=True)
            if m is not None:
                near.append(dataclasses.replace(m, span=(f.span[0] + m.span[0], f.span[0] + m.span[1])))
    if not near:
        return features, filters, ()
    word = min(near, key=lambda m: start - m.span[1] if m.span[1] <= start else m.span[0] - end)
    # the attributes listed with it, away from the phrase ("ohne Informationen zu Unterstand und Sitzbank",
    # "屋根やベンチの情報がない"); two side by side or joined by "of" are one thing whose head is unclear
    # ("адрес оператора", "nombre de voies"): left as read
    words, ands, joiners = [word], list_words(language), _record_words(language)[1]
    after = word.span[0] >= end
    for m in sorted((m for m in near if m is not word and (m.span[0] >= end) == after),
                    key=lambda m: m.span[0] if after else -m.span[0]):
        last = words[-1]
        gap = fold(text[last.span[1]:m.span[0]] if after else text[m.span[1]:last.span[0]]).strip()
        listed = gap.strip(",、， ")
        if gap and (listed in ands or not listed):  # a list word or a comma between
            words.append(m)
        elif not gap or gap in joiners:
            return features, filters, ()
        else:
            break
    lo, hi = min(start, *(m.span[0] for m in words)), max(end, *(m.span[1] for m in words))

    def inside(span) -> bool:
        return span is not None and span[0] < hi and lo < span[1]

    # a thing read with the two in one phrase keeps its own words: "ismi girilmemiş camiler" (mosques)
    trimmed = tuple(_trimmed(f, lo, hi) if inside(f.span) and not f.negated else f for f in features)
    if not any(f.tags and not f.negated and not inside(f.span) for f in trimmed):
        return features, filters, ()
    features = trimmed
    filters = tuple(f for f in filters if not inside(f.span)
                    and not (f.feature is not None and inside(features[f.feature].span)))
    for k in reversed(range(len(features))):
        if inside(features[k].span):
            features, filters = _without_feature(features, filters, k)
    # the words from the phrase to the attribute are the filter's phrase: a negated feature, as a "without" reads
    k = len(features)
    features += (Feature(text[lo:hi], (lo, hi), negated=True),)
    added = tuple(m for m in words if m not in attribute_words)
    return features, filters + tuple(Filter("absent", m.text, m.span, op="unrecorded", feature=k) for m in words), added


def _trimmed(feature: Feature, lo: int, hi: int) -> Feature:
    """``feature`` less the characters ``lo``–``hi`` at its start or end, where what the lexicon read in it
    lies outside them; unchanged otherwise."""
    a, b = feature.span
    if not feature.tags or not (a >= lo or b <= hi):
        return feature
    cut = (max(hi, a), b) if a >= lo else (a, min(lo, b))
    # (a match inside the two is the attribute's word: "telefonu belirtilmemiş eczaneler", a telephone's)
    kept = tuple(m for m in feature.tags if cut[0] <= a + m.span[0] and a + m.span[1] <= cut[1])
    if not kept or not all(lo <= a + m.span[0] and a + m.span[1] <= hi for m in feature.tags if m not in kept):
        return feature
    text = feature.text[cut[0] - a:cut[1] - a]
    lead = len(text) - len(text.lstrip())
    text = text.strip()
    if not text:
        return feature
    start = cut[0] + lead
    tags = tuple(dataclasses.replace(m, span=(m.span[0] - (start - a), m.span[1] - (start - a))) for m in kept)
    return dataclasses.replace(feature, text=text, span=(start, start + len(text)), tags=tags)


@lru_cache(maxsize=32)
def _unrecorded_phrases(language: str) -> Matcher | None:
    phrases = table(language)["filters"].get("unrecorded_phrases") if language in CUE_LANGUAGES else None
    return Matcher(phrases) if phrases else None


@lru_cache(maxsize=32)
def _record_words(language: str) -> tuple[frozenset[str], frozenset[str]]:
    """``language``'s words for an attribute's record ("info", "Angabe") and its joiners ("de"), folded
    (none without a table)."""
    if language not in CUE_LANGUAGES:
        return frozenset(), frozenset()
    t = table(language)
    return frozenset(fold(w) for w in t["filters"].get("unrecorded", ())), frozenset(fold(w) for w in t["joiners"])
