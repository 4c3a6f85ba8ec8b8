"""Attribute phrases -> OSM tags: "with wifi", "vegane", "unlit", "more than 10 floors", "without a name".

The words are data (``nl/data/attributes.json``, hand-curated per language: iD's field labels are
form labels such as "Height (Meters)", not the words people type, and a wrong tag goes straight into a
query). An :class:`Attribute` says what having it means (``yes``: ``internet_access=wlan``), what not
having it means (``no``: ``wheelchair=no``; by default the key missing or each ``yes`` tag negated)
and which key a comparison or an absence tests (``key``: "more than 10 floors" ->
``building:levels``). :func:`find` reads the attribute words of a phrase, longest first, with the cue
tables' tokens and matcher (a trailing ``*`` matches any ending).

>>> [(m.text, m.attribute.id) for m in find("cafés com wi-fi", "pt")]
[('wi-fi', 'wifi')]
>>> [(m.text, m.attribute.yes) for m in find("vegane Restaurants", "de")]
[('vegane', ('diet:vegan=yes',))]
>>> m = find("Wi-Fiのあるカフェ", "ja")[0]
>>> m.text, m.attribute.key
('Wi-Fi', 'internet_access')
>>> [m.text for m in find("fast food places", "en", generic=True)]
['places']
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Sequence
from importlib import resources

from geoql.core.errors import GeoqlError
from geoql.nl.cues import Matcher, tokens
from geoql.nl.cues import LANGUAGES as CUE_LANGUAGES
from geoql.nl.cues import table as cue_table
from geoql.nl.text import base_language, fold, script_of, spaceless
from geoql.nl.words import within_one_edit


class AttributeDataError(GeoqlError):
    """The attribute data file is missing or malformed (a packaging fault: reinstall geoql)."""


@dataclass(frozen=True)
class Attribute:
    """One attribute: ``key`` (what a comparison, an absence or "with X" tests), ``yes`` (the tags that
    having it means; empty: the key alone), ``no`` (the tags that not having it means; empty: the key
    missing where ``yes`` is empty, else each ``yes`` tag negated), ``for_tags`` (another key for a
    feature's tag: a peak's height is its ``ele``), ``digits`` (the values are one digit in this range
    and a suffix: a hotel's ``stars`` are "4", "4S", "3.5": a comparison tests the first digit)."""

    id: str
    key: str
    yes: tuple[str, ...] = ()
    no: tuple[str, ...] = ()
    for_tags: tuple[tuple[str, str], ...] = ()
    digits: tuple[int, int] | None = None
    of: tuple[str, ...] = ()  # the tags of the thing it belongs to (a bench's backrest): see Lexicon.lookup's prefer

    def key_for(self, feature_tags) -> str:
        """The key this attribute tests on a feature with ``feature_tags`` ("higher than 4000 m" of a peak:
        ``ele``; a road's postcode: ``postal_code``, by ``highway=*``, any value; a tag of a key alone is
        written ``highway=`` or ``highway=*``).

        >>> attributes()["postcode"].key_for(["highway=residential"]), attributes()["postcode"].key_for(["building="])
        ('postal_code', 'addr:postcode')
        """
        own = dict(self.for_tags)
        return next((own[t] for t in feature_tags if t in own),
                    next((own[k] for t in feature_tags if (k := t.partition("=")[0] + "=*") in own), self.key))


@dataclass(frozen=True)
class AttributeMatch:
    """Where in the text an attribute is named (``span`` in the NFKC text given to :func:`find`)."""

    span: tuple[int, int]
    text: str
    attribute: Attribute | None  # None: a generic word ("places") that adds nothing
    without: bool = False  # the word says the attribute is missing: Turkish "isimsiz" (nameless)


@lru_cache(maxsize=None)
def _load(name: str) -> dict:
    try:
        return json.loads(resources.files("geoql.nl").joinpath("data", name).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise AttributeDataError(f"nl/data/{name} unreadable ({e}); reinstall geoql") from e


def _data() -> dict:
    return _load("attributes.json")


@lru_cache(maxsize=None)
def attributes() -> dict[str, Attribute]:
    """Every attribute by id."""
    out = {}
    for a in _data()["attributes"]:
        out[a["id"]] = Attribute(a["id"], a["key"], tuple(a.get("yes", ())), tuple(a.get("no", ())),
                                 tuple(sorted(a.get("for", {}).items())),
                                 tuple(a["digits"]) if a.get("digits") else None, tuple(a.get("of", ())))
    return out


@lru_cache(maxsize=None)
def _field_matcher(lang: str, missing: bool) -> Matcher:
    lang = base_language(lang)
    cues = []
    for a in _load("field_attributes.json")["attributes"]:
        if a.get("missing") and not missing:
            continue
        attribute = Attribute(a["id"], a["key"], tuple(a.get("yes", ())), tuple(a.get("no", ())))
        words, terms = a["words"], a["terms"]
        # as the hand-kept table reads them, a Latin-script request reads the other Latin-script
        # languages' labels too, but not their terms, which are loose ("casa", home, for delivery in Italian)
        own = [_gender_free(w) if lang in _GENDER_ENDINGS else w for w in (*words.get(lang, ()), *terms.get(lang, ()))]
        cues += [(w, (attribute, w)) for w in dict.fromkeys([*own, *words.get("en", ()), *terms.get("en", ()),
                                                             *_other_latin(words, lang)])]
    return Matcher(cues)


# The most letters a word may add to the label of a field read as missing ("materials", "материала"):
# its star stands for an ending, not for a longer word ("Design" is no "designated").
MISSING_ENDING_LETTERS = 2


# Languages whose adjectives and participles end in a gender and number vowel: iD writes a field's label
# in the masculine singular ("custodito*", "vigilado*"), a request agrees it with its thing ("parcheggi
# non custoditi", "playas vigiladas").
_GENDER_ENDINGS = frozenset({"it", "es", "pt"})
# The fewest letters left of a word whose ending vowel is dropped.
GENDER_STEM_LETTERS = 5


def _gender_free(word: str) -> str:
    """``word`` with the gender vowel of its last word left to the ``*`` ("custodito*" -> "custodit*").

    >>> _gender_free("custodito*"), _gender_free("aria condizionata*"), _gender_free("wifi*"), _gender_free("vigilado")
    ('custodit*', 'aria condizionat*', 'wifi*', 'vigilado')
    """
    if word.endswith(("o*", "a*")) and len(word.rsplit(" ", 1)[-1]) - 2 >= GENDER_STEM_LETTERS:
        return word[:-2] + "*"
    return word


def find_field(text: str, lang: str, *, missing: bool = False) -> AttributeMatch | None:
    """The iD field (``nl/data/field_attributes.json``) whose label or term is all of ``text``, else
    None. Form labels are not always the words people type, so the reader asks this only of a filter
    the cue tables read ("without armrests") that no attribute of the hand-kept table names. A yes/no
    field is one either way; with ``missing`` (the filter says the attribute is missing) also a field
    of free or listed values, by its label: "without a material" is ``material`` absent, while what
    "with a material" asks of its values is not this table's to say.

    >>> m = find_field("Armlehnen", "de")
    >>> m.attribute.key, m.attribute.no
    ('armrest', ('armrest=no',))
    >>> find_field("air conditioning", "en").attribute.yes, find_field("air", "en")
    (('air_conditioning=yes',), None)
    >>> find_field("Material", "de"), find_field("Material", "de", missing=True).attribute.key
    (None, 'material')
    >>> find_field("materials", "en", missing=True).text, find_field("designated", "en", missing=True)
    ('materials', None)
    """
    if not isinstance(text, str) or not text.strip():
        return None
    toks = tokens(text)
    hit = _field_matcher(lang if isinstance(lang, str) else "en", missing).match_at(toks, 0)
    if hit is None or hit[0] != len(toks):
        return None
    attribute, label = hit[1]
    last = label.split()[-1] if label.split() else label
    if not (attribute.yes or attribute.no) and last.endswith("*") \
            and len(toks[-1].fold) - len(fold(last.rstrip("*"))) > MISSING_ENDING_LETTERS:
        return None
    a, b = toks[0].start, toks[-1].end
    return AttributeMatch((a, b), text[a:b], attribute)


@lru_cache(maxsize=None)
def number_words(lang: str) -> dict[str, int]:
    """Numbers written as words in ``lang`` (folded), 1 to 10, ``nl/data/number_words.json``: what counts
    a measure ("five star", "cinco estrellas", "五つ星").

    >>> number_words("de")["funf"], number_words("ko")["오"], number_words("xx")  # keys folded: "fünf" -> "funf"
    (5, 5, {})
    """
    words = _load("number_words.json")["words"].get(base_language(lang) if isinstance(lang, str) else "", {})
    return {fold(w): v for w, v in words.items()}


# Another language's attribute word counts in a request read as English when it is a stem ("vegan*") or
# this long or longer: a short whole word is too often a name there ("china", "india").
OTHER_LANGUAGE_LETTERS = 6


@lru_cache(maxsize=None)
def _matcher(lang: str, generic: bool) -> Matcher:
    lang = base_language(lang)
    if generic:
        # a Latin-script request reads the other Latin-script languages' generic words too: the guess
        # rests on a few small words ("dm filialen in graz" is guessed English)
        table = _data()["generic"]
        others = [w for other, ws in table.items() if other != lang and _latin(other) for w in ws] if _latin(lang) else []
        return Matcher([(w, None) for w in dict.fromkeys([*table.get(lang, ()), *others])])
    by_id = attributes()
    cues = []
    for a in _data()["attributes"]:
        words = a["words"]
        # a language without its own words reads English's (ids and brands are written in English often too)
        for w in dict.fromkeys([*words.get(lang, ()), *words.get("en", ()), *_other_latin(words, lang)]):
            cues.append((w, by_id[a["id"]]))
    return Matcher(cues)


def _word_edge(text: str, at: int) -> bool:
    """Whether position ``at`` of ``text`` is outside a word (before its start or after its end)."""
    return at < 0 or at >= len(text) or not text[at].isalnum()


@lru_cache(maxsize=None)
def _spaced_cues(lang: str) -> frozenset[str]:
    """The attribute words of ``lang`` (and English's) that hold a space, folded: in a script without
    spaces only these match across one ("야외 좌석")."""
    lang = base_language(lang)
    return frozenset(" ".join(fold(w).split()) for a in _data()["attributes"]
                     for w in (*a["words"].get(lang, ()), *a["words"].get("en", ())) if " " in w.strip())


def _other_latin(words: dict[str, list[str]], lang: str) -> list[str]:
    """The words of the other Latin-script languages a request read in ``lang`` reads too: their stems
    and long words, when ``lang`` is written in Latin letters. The guess rests on a few small words: a
    request without them ("vegane restaurants freiburg") is guessed English, one with a shared one
    ("restaurantes vegetarianos en sevilla": "en") may be guessed French."""
    if not _latin(lang):
        return []
    return [w for other, ws in words.items() if other not in (lang, "en") for w in ws
            if (w.endswith("*") or len(w) >= OTHER_LANGUAGE_LETTERS)
            and all(not ch.isalpha() or script_of(ch) == "Latin" for ch in w)]


def _latin(lang: str) -> bool:
    """Whether ``lang``'s own attribute words are written in Latin letters (English: yes)."""
    own = [w for a in _data()["attributes"] for w in a["words"].get(lang, ())]
    return lang == "en" or bool(own) and all(script_of(ch) == "Latin" for w in own for ch in w if ch.isalpha())


@lru_cache(maxsize=None)
def words_of(lang: str) -> frozenset[str]:
    """The folded words of ``lang``'s own attribute phrases (a trailing ``*`` left off): "адрес", "wlan".

    >>> "адрес" in words_of("ru"), "wlan" in words_of("de")
    (True, True)
    """
    lang = base_language(lang)
    return frozenset(tok.fold for a in _data()["attributes"] for w in a["words"].get(lang, ())
                     for tok in tokens(w.rstrip("*")))


# A word of this many letters or more that no table knows, one slip of typing from one attribute word
# alone (see ``mended``), is that word misspelt: "opning hours", "öffnugszeiten". Shorter words are too
# often other words.
TYPO_LETTERS = 5


@lru_cache(maxsize=None)
def _typo_targets(lang: str) -> dict[str, tuple[tuple[str, str], ...]]:
    """The whole words of the attribute phrases ``lang`` reads (its own and English's, no ``*`` stems),
    folded and as written, by their folded first letter."""
    lang = base_language(lang)
    out: dict[str, dict[str, str]] = {}
    for a in _data()["attributes"]:
        for w in (*a["words"].get(lang, ()), *a["words"].get("en", ())):
            if w.endswith("*"):
                continue
            for tok in tokens(w):
                if not tok.spaceless and not tok.number and len(tok.fold) >= TYPO_LETTERS:
                    out.setdefault(tok.fold[0], {}).setdefault(tok.fold, tok.text)
    return {first: tuple(words.items()) for first, words in out.items()}


@lru_cache(maxsize=1)
def _all_attribute_words() -> frozenset[str]:
    """``words_of`` every language: a word some language's attribute uses is no typo in another."""
    return frozenset().union(*(words_of(lang) for lang in {lang for a in _data()["attributes"] for lang in a["words"]}))


def mended(text: str, lang: str, known: Callable[[], Sequence[frozenset[str]]] = tuple) -> str:
    """``text`` with each attribute word misspelt by one slip of typing (``_one_slip``) written as the
    word (``TYPO_LETTERS`` letters or more).
    A typo keeps a word's first letter and its last two (a changed ending is an inflection: "streets",
    "Apotheken", "gratuites" are no typos); a word ``known()`` holds (the lexicon's, the cue tables', a
    place's: asked only where a word is one slip from an attribute word, as building them takes a
    while) or one edit from a known word ("lakes": "lake", not "lanes"), any language's attribute word, or one
    as near to two attribute words is left as it is. Scripts without spaces are left alone.

    >>> mended("mountain peaks in wales no elevaton", "en")
    'mountain peaks in wales no elevation'
    >>> mended("Restaurants Köln ohne Öffnugszeiten", "de")
    'Restaurants Köln ohne Öffnungszeiten'
    >>> mended("lakes in wales", "en", lambda: (frozenset({"lake"}),)), mended("streets with lanes", "en")
    ('lakes in wales', 'streets with lanes')
    """
    if not isinstance(text, str) or not text:
        return text
    targets = _typo_targets(lang if isinstance(lang, str) else "en")
    ours = _all_attribute_words()
    out, at = [], 0
    quoted = [m.span() for m in _QUOTED.finditer(text)]
    sets: Sequence[frozenset[str]] | None = None
    for t in tokens(text):
        w = t.fold
        if t.spaceless or t.number or len(w) < TYPO_LETTERS or w in ours \
                or text[t.start - 1:t.start] in _KEY_JOINS or text[t.end:t.end + 1] in _KEY_JOINS \
                or any(a <= t.start < b for a, b in quoted):
            continue
        near = [(target, written) for target, written in targets.get(w[0], ()) if target[-2:] == w[-2:]
                and _one_slip(w, target)]
        if len(near) != 1:
            continue
        sets = known() if sets is None else sets
        if any(w in k for k in sets) or any(_near_known(w, k, near[0][0]) for k in sets):
            continue
        word = near[0][1]
        # (as the user wrote it: capitalised where they capitalised)
        word = word[:1].upper() + word[1:] if t.text[:1].isupper() else word[:1].lower() + word[1:]
        out += [text[at:t.start], word]
        at = t.end
    return "".join(out) + text[at:] if out else text


# (a word joined to another by these is part of a key, "wikimedia_commons", and one in quotes a name or key)
_KEY_JOINS = frozenset("_:=")
_QUOTED = re.compile(r'"[^"]*"|“[^”]*”|„[^“”]*[“”]|«[^»]*»|「[^」]*」')


def _one_slip(word: str, target: str) -> bool:
    """Whether ``word`` is ``target`` with one letter left out, one added or two neighbours swapped: the
    slips of typing. A letter changed for another is often another word ("wikimedia"/"wikipedia").

    >>> _one_slip("elevaton", "elevation"), _one_slip("popluation", "population"), _one_slip("wikimedia", "wikipedia")
    (True, True, False)
    """
    if abs(len(word) - len(target)) == 1:
        return within_one_edit(word, target)
    if len(word) != len(target) or word == target:
        return False
    diff = [i for i, (a, b) in enumerate(zip(word, target)) if a != b]
    return len(diff) == 2 and diff[1] == diff[0] + 1 and word[diff[0]] == target[diff[1]] and word[diff[1]] == target[diff[0]]


def _near_known(word: str, known: frozenset[str], target: str) -> bool:
    """Whether a word of ``known`` other than ``target`` is one edit from ``word`` (with its first letter)."""
    index = _known_index(known)
    return any(k != target and within_one_edit(word, k) for n in (len(word) - 1, len(word), len(word) + 1)
               for k in index.get((word[0], n), ()))


@lru_cache(maxsize=64)
def _known_index(known: frozenset[str]) -> dict[tuple[str, int], tuple[str, ...]]:
    index: dict[tuple[str, int], list[str]] = {}
    for k in known:
        if len(k) >= TYPO_LETTERS - 1:
            index.setdefault((k[0], len(k)), []).append(k)
    return {key: tuple(words) for key, words in index.items()}


def find(text: str, lang: str, *, generic: bool = False) -> list[AttributeMatch]:
    """The attribute words of ``text`` in ``lang`` (English's too), left to right, longest first; with
    ``generic`` the words that add nothing to a feature ("places", "Filialen") instead."""
    if not isinstance(text, str) or not text.strip():
        return []
    return list(_find(text, lang if isinstance(lang, str) else "en", generic))


# (the frame's segmentation of a request written without spaces and the request's reading ask for the
# same text's words: read once)
@lru_cache(maxsize=256)
def _find(text: str, lang: str, generic: bool) -> tuple[AttributeMatch, ...]:
    toks = tokens(text)
    out = []
    matcher = _matcher(lang, generic)
    for start, end, payload in matcher.find(toks):
        a, b = toks[start].start, toks[end - 1].end
        if not generic and toks[start].spaceless and any(ch.isspace() for ch in text[a:b]) \
                and " ".join(fold(text[a:b]).split()) not in _spaced_cues(lang) \
                and not (_word_edge(text, a - 1) and _word_edge(text, b)):
            # a one-word cue across a space counts as whole words only ("영업 시간", spaced or not), not
            # as a word's end and the next one's start: "한식" (Korean food) of "가능한 식당"
            continue
        # "adressiz": the stem's prefix cue ("adres*") reads the suffix as an ending; but a word that is
        # another attribute's whole word says it as it is ("aydınlatmasız" is unlit's, not lit less -sız)
        without = not generic and end == start + 1 and _stripped(toks[start], lang, matcher) is payload
        if not generic and payload is not None and payload.key:
            b = _with_kind(text, b, lang)
        out.append(AttributeMatch((a, b), text[a:b], payload, without=without))
    if not generic:
        missing = _without(text, toks, lang, matcher, {k for m in out for k in range(*m.span)})
        # (a without-word of several words takes the words inside it: "smoke free" is no "free" of a fee)
        out = [m for m in out if not any(w.span[0] <= m.span[0] and m.span[1] <= w.span[1] for w in missing)] + missing
        out.sort(key=lambda m: m.span)
    return tuple(out)


def _with_kind(text: str, end: int, lang: str) -> int:
    """Where an attribute's words end with the word after them that asks for its kind, which is the
    attribute itself ("路面類型", "노면 유형": ``kind_words``); else ``end``. (English's "type" is a small
    word its cue table drops, like French's and German's.)

    >>> [m.text for m in find("서울 노면 유형이 없는 자전거 도로", "ko")], [m.text for m in find("路面の種類がない道", "ja")]
    (['노면 유형'], ['路面の種類'])
    >>> [m.text for m in find("surface types", "en")]
    ['surface']
    """
    rest = text[end:]
    stripped = rest.lstrip()
    for w in _kind_words(lang):
        if stripped[:len(w)].lower() == w:
            stop = len(rest) - len(stripped) + len(w)
            if spaceless(w[-1]) or not rest[stop:stop + 1].isalnum():
                return end + stop
    return end


@lru_cache(maxsize=None)
def _kind_words(lang: str) -> tuple[str, ...]:
    """``kind_words`` of ``lang``, longest first."""
    return tuple(sorted(_data().get("kind_words", {}).get(base_language(lang), ()), key=len, reverse=True))


def _without(text: str, toks, lang: str, matcher: Matcher, taken: set[int]) -> list[AttributeMatch]:
    """Words that are an attribute's word and a suffix saying it is missing (``without_suffixes``):
    Turkish "isimsiz" (name + -siz), "wifisiz", "adressiz"; and words that say it whole (``without_words``:
    "unnamed", "безымянные").

    >>> [(m.text, m.attribute.key, m.without) for m in find("izmir'de isimsiz parklar", "tr")]
    [('isimsiz', 'name', True)]
    >>> [(m.text, m.attribute.key, m.without) for m in find("unnamed parks in oslo", "en")]
    [('unnamed', 'name', True)]
    >>> [(m.text, m.attribute.key, m.without) for m in find("smoke free bars", "en")]
    [('smoke free', 'smoking', True)]
    """
    out = []
    whole = _without_words(lang)
    i = 0
    while i < len(toks):
        t, end = toks[i], i + 1
        if t.start in taken:
            i += 1
            continue
        attribute = _stripped(t, lang, matcher)
        if attribute is None and not (i and toks[i - 1].fold in _negations(lang)):
            # (not after a negation: "nicht unbenannt" is named; a cue may be words: "non smoking")
            hit = whole.match_at(toks, i)
            attribute, end = (hit[1], hit[0]) if hit else (None, end)
        if attribute is not None:
            b = toks[end - 1].end
            out.append(AttributeMatch((t.start, b), text[t.start:b], attribute, without=True))
        i = end
    return out


@lru_cache(maxsize=None)
def _negations(lang: str) -> frozenset[str]:
    """The one-word negation cues of ``lang`` ("not", "nicht")."""
    lang = base_language(lang)
    if lang not in CUE_LANGUAGES:
        return frozenset()
    return frozenset(fold(w) for w in cue_table(lang)["negation"]["before"] if " " not in w)


@lru_cache(maxsize=None)
def _without_words(lang: str) -> Matcher:
    """The words of ``lang`` that are an attribute missing in one word (``without_words``: "unnamed",
    "безымянные", "unlit")."""
    by_id = attributes()
    return Matcher([(w, by_id[a]) for w, a in _data().get("without_words", {}).get(base_language(lang), {}).items()])


def _stripped(t, lang: str, matcher: Matcher) -> Attribute | None:
    """The attribute of token ``t`` less a without suffix of ``lang``, else None."""
    for suffix in _data().get("without_suffixes", {}).get(base_language(lang), ()):
        if len(t.fold) <= len(suffix) or not t.fold.endswith(suffix):
            continue
        stem = tokens(t.fold[:-len(suffix)])
        hit = matcher.match_at(stem, 0) if len(stem) == 1 else None
        if hit and hit[0] == 1:
            return hit[1]
    return None
