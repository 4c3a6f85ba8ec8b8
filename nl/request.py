"""A request, read once: :func:`read_request` -> :class:`Request`, the one reading every consumer takes.

``compile()`` reads each request once and hands the :class:`Request` to retrieval
(``geoql.retrieval.prompt_context``, ``TagRetriever.search``), to every backend
(``GenerationRequest.request``), to the checks (``unsupported_constants``) and to the
confidence (``assess``). Nothing downstream reads the words again: what they need is a field
here. The reading is rules and cue tables (``geoql.nl.frame``: every language; the English
patterns of ``geoql.nl.english``; the words of ``geoql.nl.words``; the faithfulness evidence of
``geoql.nl.support``), plus what a caller knows beyond them (:class:`Knowledge`): place names it
learned, a :class:`Lexicon` of the tags feature phrases name, and :class:`Things` it knows by name.

>>> r = read_request("benches within 100 m of a playground in Zurich")
>>> r.language, r.what, r.place, r.around.radius_m, r.around.of
('en', ('benches',), 'Zurich', 100.0, 'a playground')
>>> r.features[0]
Feature(text='benches', span=(0, 7), negated=False, tags=(), place=None)
>>> r.words
('benches', '100', 'playground', 'zurich')
>>> r = read_request("Wie viele Apotheken gibt es im aktuellen Kartenausschnitt?")
>>> r.language, r.in_view, sorted(r.output), r.what
('de', True, ['count'], ('Apotheken',))
>>> r = read_request("ID为7725447的用户在2019年2月11日编辑了哪些节点和路径？")
>>> r.uids, r.dates, sorted(r.types)
((7725447,), ('2019-02-11',), ['node', 'way'])
>>> read_request("🏛️🏛️").language, read_request("").what
('und', ())
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections import ChainMap
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Mapping, Protocol, Sequence

from geoql.nl.attributes import AttributeMatch, find as find_attributes, find_field, number_words, words_of
from geoql.nl.cues import LANGUAGES as CUE_LANGUAGES, table, tokens
from geoql.nl.english import EnglishReading, read_english, with_frame
from geoql.nl.frame import MAX_CHARS, Frame, cue_language, latin_rivals, latin_scores, read_frame
from geoql.nl.lexicon import SHORT_BRAND
from geoql.nl.places import dictionary_form, gazetteer
from geoql.nl.support import Support, read_support
from geoql.nl.text import SPACELESS_SCRIPTS, fold, script_of, spaceless
from geoql.nl.text import scripts as script_counts
from geoql.nl.words import content_words, entry_words, stem_fold, topic_words, word_stems

# Roles of a place: the area of the whole request, the place of some features only ("cafes in
# Bonn and bakeries in Cologne"), the centre of an around ("within 5 km of Munich central station").
PLACE_ROLES = ("area", "feature", "centre")


# ------------------------------------------------------------------ what a reader may be told

@dataclass(frozen=True)
class FeatureMatch:
    """The shape of a lexicon's answer that the reading keeps (``Feature.tags``): where in the
    feature's text it matched, the tags it stands for, how sure (0..1), the name that matched.
    Any object with ``span``, ``tags`` and ``score`` will do (a feature lexicon's own matches)."""

    span: tuple[int, int]
    tags: tuple[str, ...]  # "amenity=fuel", "brand=Starbucks" ...
    score: float
    name: str = ""


class Lexicon(Protocol):
    """The seam for a multilingual feature and brand lexicon: the tags a feature phrase names
    (``Feature.tags``, ``Request.brands``), best first; ``lookup(text, lang)`` as a feature
    lexicon answers it; ``known_words(text, lang)``: how many words of ``text`` the language's own
    surfaces name (what decides between close language guesses). ``opening``: whether ``text`` opens
    the request (a capital inside it tells a brand spelled like a word); ``brand(text, lang)``: the
    brand a phrase names in any case ("except bp": BP), where the reading knows a brand is meant."""

    def lookup(self, text: str, lang: str, *, opening: bool = True) -> Sequence[FeatureMatch]: ...

    def known_words(self, text: str, lang: str) -> int: ...

    def brand(self, text: str, lang: str) -> FeatureMatch | None:
        """The brand ``text`` is, whatever its case or (where names inflect) its ending, else None."""
        ...


class Things(Protocol):
    """Names of kinds of features: whether a phrase read as a place only by its position names one
    instead (Chinese "公园的长椅": the benches of parks, while "北京的博物馆" is the museums of
    Beijing), and whether an around's centre phrase does (``geoql.retrieval.TagRetriever.names``:
    the tag index's names in the request's languages)."""

    def names_a_thing(self, phrase: str, language: str) -> bool: ...


@dataclass(frozen=True)
class Knowledge:
    """What a caller knows beyond the cue tables, for :func:`read_request`.

    ``lexicon`` (:class:`Lexicon`) ties feature phrases to tags; ``things`` (:class:`Things`) tells
    a thing from a place by its name; ``places``: folded place names -> spelling (the CPU
    default's, learned from its training queries): a place written in lower case after "in"
    counts when it is one of them ("castles in algeria"). ``world_places``: whether a name of
    ``geoql.nl.places``' gazetteer written with no preposition at the start or end of the request
    is its place too ("dentist toronto"); off where a phrase is one name ("Munich central station").
    """

    lexicon: Lexicon | None = None
    things: Things | None = None
    places: Mapping[str, str] = field(default_factory=dict)
    world_places: bool = True


NO_KNOWLEDGE = Knowledge()


# ------------------------------------------------------------------ the parts of a request

@dataclass(frozen=True)
class Feature:
    """A thing the request asks for (or, ``negated``, asks to be without), as written: "cafés",
    "outdoor seating". ``span``: its characters in ``Request.text``; ``tags``: what the lexicon
    ties to it (empty without one); ``place``: the index in ``Request.places`` of its own place,
    when it has one ("cafes in Bonn and bakeries in Cologne")."""

    text: str
    span: tuple[int, int] | None = None
    negated: bool = False
    tags: tuple[FeatureMatch, ...] = ()
    place: int | None = None


@dataclass(frozen=True)
class Place:
    """A named place, as written ("Москве", "Rio de Janeiro"). ``role`` (:data:`PLACE_ROLES`):
    ``area`` of the whole request, ``feature`` of some features only, ``centre`` of an around.
    ``opening``: read only because it opens the request before a weak link ("北京的博物馆"),
    so a thing may stand there too (see :class:`Things`)."""

    name: str
    span: tuple[int, int] | None = None
    role: str = "area"
    opening: bool = False


@dataclass(frozen=True)
class Around:
    """"within 100 m of a playground": ``radius_m`` 100.0, ``of`` "a playground". ``centre``: what
    the distance is measured from: ``features`` (things the centre phrase names: "a playground",
    "schools"), ``place`` (a named place: "of Munich central station", "the Eiffel Tower"; its
    name is ``place`` and it is one of ``Request.places``, role ``centre``), ``coords``
    (``Request.coords``), or ``None`` (not named, or the reading cannot tell). ``of_request``: the
    centre phrase read on its own (its tags are searched apart)."""

    radius_m: float
    of: str | None = None
    centre: str | None = None
    place: str | None = None
    of_request: "Request | None" = field(default=None, repr=False)
    beyond: bool = False  # farther than the distance ("离主要道路超过700米"), not within it


FILTER_KINDS = ("yes", "no", "absent", "compare", "name")


@dataclass(frozen=True)
class Filter:
    """An attribute the elements must have, as the request words it (``kind``, :data:`FILTER_KINDS`):
    "with wifi" (``yes``), "not private" (``no``), "without a name" (``absent``), "more than 10
    floors" (``compare``: ``op`` one of ``>``, ``>=``, ``<``, ``<=``, ``=`` ("with 5 stars"), ``value`` "10", ``unit`` when one
    follows), "whose name contains Pizza" (``name``: ``op`` ``contains`` / ``starts`` / ``ends`` /
    ``equals``, ``value`` the name). ``text`` is the attribute's words ("wifi", "floors"), ``span``
    where they stand, ``feature`` the index in ``Request.features`` of the phrase they were read
    from (None: no phrase, "longer than 5 km")."""

    kind: str
    text: str
    span: tuple[int, int] | None = None
    op: str | None = None
    value: str | None = None
    unit: str | None = None
    feature: int | None = None


@dataclass(frozen=True)
class Number:
    """A number of the request with its unit when one follows ("5 km", "300 m", "3 days")."""

    value: float
    text: str
    span: tuple[int, int] | None = None
    unit: str | None = None


@dataclass(frozen=True)
class Request:
    """A request, read once (see the module's docstring). Sequences are tuples, sets frozensets:
    a reading is shared, never changed."""

    nl: str  # the request as given
    text: str  # NFKC, at most MAX_CHARS characters: what the spans index
    language: str = "und"  # ISO 639 ("en", "de", "zh", "yue"...; "und": nothing tells)
    script: str = "Common"  # the script of most letters ("Latin", "Han", "Cyrillic"...)
    scripts: tuple[str, ...] = ()  # every script of its letters, most letters first
    features: tuple[Feature, ...] = ()  # what it asks for, then what it asks to be without
    filters: tuple[Filter, ...] = ()
    brands: tuple[Feature, ...] = ()  # features that name a brand (the lexicon's: Feature.tags)
    places: tuple[Place, ...] = ()
    in_view: bool = False  # the map view ("in the current view", "im aktuellen Kartenausschnitt")
    around: Around | None = None
    bbox: tuple[float, float, float, float] | None = None  # south, west, north, east
    coords: tuple[float, float] | None = None  # lat, lon
    area_ids: tuple[int, ...] = ()  # Overpass area ids (3600000000 + a relation id)
    ids: tuple[tuple[str, int], ...] = ()  # ("way", 613126639)
    uids: tuple[int, ...] = ()
    users: tuple[str, ...] = ()
    names: tuple[str, ...] = ()  # quoted names, and name-cased words after a name cue ("named Bart Smit")
    quoted: tuple[str, ...] = ()  # every quoted span (names and tag keys alike)
    types: frozenset[str] = frozenset()  # node / way / relation / area, only when named
    output: frozenset[str] = frozenset()  # count / geom / center / csv / meta, only when asked
    dates: tuple[str, ...] = ()  # ISO dates, both ends of a range
    periods: tuple[str, ...] = ()  # turbo periods from relative time ("1 week")
    since: bool = False  # a since-cue leads the date: it starts a period
    numbers: tuple[Number, ...] = ()
    # attribute words of the text ("wifi", "floors", "name": geoql.nl.attributes, spans in ``text``) and
    # the spans of words that add nothing to a feature ("places", "stores", "Filialen")
    attribute_words: tuple[AttributeMatch, ...] = ()
    generic_words: tuple[tuple[int, int], ...] = ()
    words: tuple[str, ...] = ()  # content words, folded, in order (geoql.nl.words.content_words)
    stems: frozenset[str] = frozenset()  # their crude stems, all of the request's (geoql.nl.words.word_stems)
    topic_words: tuple[str, ...] = ()  # words that name OpenStreetMap data (nodes, a user, the view, a city)
    support: Support | None = field(default=None, repr=False)  # evidence for a query's constants
    # The English patterns alone, and with the cue tables' reading where they miss: what the
    # CPU default's selector was trained on (geoql.nl.english).
    english: EnglishReading = field(default_factory=EnglishReading, repr=False)
    english_with_frame: EnglishReading = field(default_factory=EnglishReading, repr=False)

    @property
    def what(self) -> tuple[str, ...]:
        """The features asked for, as written."""
        return tuple(f.text for f in self.features if not f.negated)

    @property
    def things(self) -> tuple[Feature, ...]:
        """The features asked for that are things, not attributes of them: "bars and pubs with outdoor
        seating" -> bars, pubs (outdoor seating is a ``Filter``)."""
        attributes = {f.feature for f in self.filters}
        return tuple(f for k, f in enumerate(self.features) if not f.negated and k not in attributes)

    @property
    def negated(self) -> tuple[str, ...]:
        """The phrases under a negation: what must not be there ("without Wikipedia tags", "без")."""
        return tuple(f.text for f in self.features if f.negated)

    @property
    def place_names(self) -> tuple[str, ...]:
        """The places the request is in (roles ``area`` and ``feature``), as written, in their order:
        not the centre of an around, which is ``around.place``."""
        return tuple(p.name for p in self.places if p.role != "centre")

    @property
    def place(self) -> str | None:
        """The first place the request is in (:attr:`place_names`), or None."""
        return next((p.name for p in self.places if p.role != "centre"), None)

    @property
    def opening_place(self) -> str | None:
        """A place read only because it opens the request (:attr:`Place.opening`), or None."""
        return next((p.name for p in self.places if p.opening), None)

    @property
    def about_places(self) -> bool:
        """The reading found something only a map query asks for: a place, the map view, a
        radius, coordinates, ids, element types, users or names."""
        return bool(self.places or self.in_view or self.around or self.bbox or self.coords or self.area_ids
                    or self.ids or self.types or self.uids or self.users or self.names)


# ------------------------------------------------------------------ reading

def read_request(nl: str, knowledge: Knowledge | None = None, *, language: str | None = None) -> Request:
    """Read ``nl`` once into a :class:`Request`, with what ``knowledge`` adds to the cue tables;
    ``language``: the language it is written in, when the caller knows (a phrase of a request read
    on its own: "het station" is Dutch in a Dutch request).

    Never raises: text that is empty, emoji, in a script without a cue table or not text at all
    gives a Request with what could be read (at worst only ``nl``, ``language="und"``).
    """
    if not isinstance(nl, str):
        nl = "" if nl is None else str(nl)
    knowledge = knowledge or NO_KNOWLEDGE
    lexicon, things = knowledge.lexicon, knowledge.things
    frame = read_frame(nl, language) if language else read_frame(nl)
    text = frame_text(nl)
    rival = _rival_language(text, frame, lexicon) if not language else None
    if rival is not None:
        frame = read_frame(nl, rival)
    opening = _opening_cities(text, frame, knowledge) if lexicon is not None else ()
    if opening:
        frame = read_frame(nl, frame.language, known=opening)
    # A place read only by its position that the lexicon knows as a thing is the thing: "公园的长椅".
    thing = frame.opening_place
    if not (thing and things is not None and things.names_a_thing(thing, frame.language)):
        thing = None
    places = tuple(Place(name, frame.spans.get(name), opening=name == frame.opening_place)
                   for name in frame.places if name != thing)
    what = [thing, *frame.what] if thing else list(frame.what)
    features = tuple(_feature(phrase, frame, lexicon, negated=False) for phrase in what) + \
        tuple(_feature(phrase, frame, lexicon, negated=True) for phrase in frame.negated)
    if lexicon is not None and knowledge.world_places and not any(
            not f.negated and any(m.score >= SURE_THING_SCORE for m in f.tags) for f in features):
        # (no thing read elsewhere: a with-phrase alone is no thing, "in Bonn Cafés mit WLAN")
        places, features = _city_and_thing(places, features, _place_names(knowledge), lexicon, frame.language)
    if not places:
        places, features = _known_places(text, features, _place_names(knowledge), named=bool(frame.quoted or frame.names),
                                         prepositions=_place_prepositions(frame.language), language=frame.language)
        # a phrase that lost its place is looked up again: its matches' spans index its own text
        features = tuple(f if f.tags or lexicon is None else dataclasses.replace(f, tags=tuple(lexicon.lookup(f.text, frame.language)))
                         for f in features)
    if lexicon is not None and knowledge.world_places and any(not f.negated and not f.tags for f in features):
        # a phrase that is all a city, beside the places read ("ospedali a milano e a torino", "京都と奈良のお寺")
        # or in the middle of the request ("wifiがある東京のカフェ"); only a phrase without tags can be one,
        # so a request whose phrases all name things does not load the gazetteer
        places, features = _place_phrases(places, features, _place_names(knowledge), text)
    if lexicon is not None and knowledge.world_places and (places or frame.script == "Hangul") \
            and frame.script in SPACELESS_SCRIPTS:
        places, features = _more_cities(text, places, features, _place_names(knowledge), _filter_cue_words(frame.language))
    if lexicon is not None and len(places) > 1:
        places, features = _thing_before_place(places, features, lexicon, frame.language)
    places, features = _feature_places(places, features)
    if knowledge.world_places:
        places = _article_places(text, places, _place_names(knowledge), frame.language)
    if frame.in_view:
        # "dans la vue actuelle de la carte", "del mapa", "der Karte": the map is the one viewed, not a map board
        features = tuple(f for f in features if not (f.tags and all(m.tags == MAP_BOARD for m in f.tags)))
    if lexicon is not None:
        features = _negated_brands(features, lexicon, frame.language)
        features = _brand_before_thing(features, lexicon, frame.language)
    found = find_attributes(text, frame.language)
    attribute_words = tuple(m for m in found if m.attribute is not None)
    filters = _filters(frame, features, attribute_words) + _phrase_attributes(features, attribute_words, frame.filters)
    filters = _filters_before_places(text, filters, places, frame.language)
    filters = _filters_on_words(text, filters, places, features, attribute_words)
    places, filters = _attribute_over_places(places, filters, attribute_words)
    features, filters = _attribute_in_phrase(text, features, filters, attribute_words, frame.language)
    numbers = tuple(Number(*n) for n in frame.numbers)
    filters = _measure_then_comparison(text, filters, attribute_words, numbers)
    features, filters = _comparison_leftovers(features, filters, frame.language)
    if lexicon is not None:
        features, filters = _negation_opening_attribute(text, features, filters, attribute_words, lexicon, frame.language)
    filters = _listed_attributes(features, filters, attribute_words)
    filters, cues, spelled = _counted_attributes(text, filters, attribute_words, numbers, frame.language)
    numbers = tuple(sorted(numbers + spelled, key=lambda n: n.span or (0, 0)))
    for k in reversed(range(len(features))):
        # a phrase that is all the comparison's cue after a measure ("higher" of "4 stars or higher"; "星以上")
        f = features[k]
        if f.span is not None and not f.tags and any(a <= f.span[0] and f.span[1] <= b for a, b in cues):
            features, filters = _without_feature(features, filters, k)
        # ... or a word of another phrase's attribute that an apostrophe cut off ("aperto" of "tavoli all'aperto")
        elif f.span is not None and not f.tags and not f.negated and not any(g.feature == k for g in filters) \
                and any(g.kind == "yes" and g.span and g.span[0] < f.span[0] and f.span[1] <= g.span[1] for g in filters):
            features, filters = _without_feature(features, filters, k)
    filters += _spaceless_with(text, frame, features, filters, attribute_words)
    attribute_words += _field_words(text, features, filters, attribute_words, frame.language)
    # a name asked for is no place: "кафе в названии которых есть кофе в москве"
    values = {fold(f.value) for f in filters if f.kind == "name" and f.value}
    places = tuple(p for p in places if fold(p.name) not in values)
    place = places[0].name if places else None
    # a count cue that begins an attribute's longer word is that word: "sem número de porta" (pt
    # "número de" counts) asks for no count
    output = {kind for kind in frame.output if not _inside_attribute(frame.output_spans.get(kind), attribute_words)
              and not (kind == "count" and _negated_at(text, frame.output_spans.get(kind), frame.language))}
    english = read_english(nl, dict(knowledge.places) if knowledge.places else None)
    merged = with_frame(english, language=frame.language, script=frame.script, in_view=frame.in_view, place=place,
                        output=output, dates=frame.dates, types=frame.types)
    around = None
    compared = _measure_not_distance(text, frame, attribute_words, numbers) if frame.around is not None else None
    if compared is not None:
        filters += (compared,)
    if frame.around is not None and compared is None:
        of = _less_distance_cue(frame.around.of, frame.language)
        if of is None and lexicon is not None:
            k, of = _centre_before_number(text, frame, features)
            if k is not None:
                features, filters = _without_feature(features, filters, k)
            else:
                k, p, of = _centre_after_near(text, frame, features, places, numbers)
                if k is not None:
                    features, filters = _without_feature(features, filters, k)
                elif p is not None:
                    places = places[:p] + places[p + 1:]
        elif lexicon is not None:
            k, of = _centre_with_word_before(text, features, of, lexicon, frame.language)
            if k is not None:
                features, filters = _without_feature(features, filters, k)
        # the centre phrase read on its own, without known places: "munich central station" is one name
        of_request = read_request(of, dataclasses.replace(knowledge, places={}, world_places=False),
                                  language=frame.language) if of else None
        centre, centre_place = _centre(of, of_request, frame, things, lexicon is not None,
                                       after_article=bool(of) and _after_contraction(text, of))
        around = Around(frame.around.radius_m, of, centre="coords" if of is None and frame.coords else centre,
                        place=centre_place, of_request=of_request,
                        beyond=frame.around.beyond or _not_within(text, frame, of, numbers))
        if centre_place is not None:
            start = text.find(centre_place)
            places += (Place(centre_place, (start, start + len(centre_place)) if start >= 0 else None, role="centre"),)
        elif centre == "features" and of_request.place_names and not any(p.role == "area" for p in places):
            # "名古屋の駅から500m以内": the stations of Nagoya, so the request is in Nagoya
            start = text.find(of_request.place)
            places += (Place(of_request.place, (start, start + len(of_request.place)) if start >= 0 else None),)
    return Request(
        nl=nl, text=text, language=frame.language, script=frame.script, scripts=tuple(script_counts(text)),
        features=features, filters=filters, brands=_brands(features), places=places, in_view=frame.in_view,
        around=around, bbox=frame.bbox, numbers=numbers,
        coords=frame.coords, area_ids=tuple(frame.area_ids), ids=tuple(frame.ids), uids=tuple(frame.uids),
        users=tuple(frame.users), names=tuple(frame.names), quoted=tuple(frame.quoted), types=frozenset(frame.types),
        output=frozenset(output), dates=tuple(frame.dates), periods=tuple(frame.periods), since=frame.since,
        attribute_words=attribute_words, generic_words=tuple(m.span for m in find_attributes(text, frame.language, generic=True)),
        # the language's own stop words where all_tables leaves its table out (words.json has only English's)
        words=tuple(content_words(nl, frame.language)), stems=word_stems(nl), topic_words=topic_words(nl, frame.language),
        support=read_support(nl, [dictionary_form(p.name, frame.language) for p in places]),
        english=english, english_with_frame=merged)


# How far below the guess a language's cue-word score may be and still read the request where its
# feature lexicon knows more of the words (``_rival_language``).
RIVAL_MARGIN = 0.5
# ... and below an English guess made on English words ("bakkers en slagers in haarlem": Dutch's "en").
ENGLISH_RIVAL_MARGIN = 0.1


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


def _rival_language(text: str, frame: Frame, lexicon: Lexicon | None) -> str | None:
    """A language to read a Latin-script request in instead of the guess: one whose cue words score
    within ``RIVAL_MARGIN`` of the guess's and whose feature lexicon knows strictly more of the
    request's words ("hospitales en madrid y barcelona" is Spanish, not French; "otogar ankara",
    with no cue word at all, is Turkish). None: keep the guess."""
    if lexicon is None or frame.script != "Latin":
        return None
    # English read by its own small words stays English unless a language as likely by its small words
    # knows two of the words or more: English's lexicon leaves out words it reads wrong more often than
    # right ("place", "route", "tunnel"), which another language may know ("place in Bochum" is English)
    score = latin_scores(text)
    english = frame.language == "en" and score.get("en", 0.0) > 0
    margin, least = (ENGLISH_RIVAL_MARGIN, 2) if english else (RIVAL_MARGIN, 1)
    rivals = latin_rivals(score, frame.language, margin)
    if not rivals:
        return None
    best, known = None, lexicon.known_words(text, frame.language)
    own = _own_words(text, frame.language)
    for lang in rivals:
        n = lexicon.known_words(text, lang)
        if n > known and n >= least:
            best, known = lang, n
        elif best is None and n == known and n >= least and not english \
                and score.get(lang, 0.0) >= score.get(frame.language, 0.0) and _own_words(text, lang) > own:
            # a tie of the cue words and of the things known: the language whose own attribute and number
            # words the request uses ("hoteles de cinco estrellas": Spanish, not French)
            best = lang
    return best


def _own_words(text: str, language: str) -> int:
    """How many words of ``text`` are ``language``'s own attribute or number words."""
    own = words_of(language) | set(number_words(language))
    return sum(1 for t in tokens(text) if not t.spaceless and t.fold in own)


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
    while at < len(text):
        found = next(((at, at + n) for n in range(min(MAX_WIDE_PLACE_CHARS, len(text) - at - 1), 1, -1)
                      if all(spaceless(ch) for ch in text[at:at + n]) and stem_fold(text[at:at + n]) in known), None)
        if found is None:
            break
        out.append(found)
        joiner = next((w for w in joiners if text.startswith(w, found[1])), None)
        if joiner is None:
            break
        at = found[1] + len(joiner)
    # nothing to add where the frame read each of them as a place already ("东京和大阪的医院")
    if all(text[a:b] in frame.places for a, b in out) or opened and len(out) < 2:
        return ()
    return tuple(out)


def frame_text(nl: str) -> str:
    """The text a reading's spans index: NFKC, at most ``MAX_CHARS`` characters."""
    return unicodedata.normalize("NFKC", nl)[:MAX_CHARS]


def _city_and_thing(places: tuple[Place, ...], features: tuple[Feature, ...], known: Mapping[str, str],
                    lexicon: Lexicon, language: str) -> tuple[tuple, tuple]:
    """A request of one place phrase and no thing whose first words are a city and whose last words
    name a thing, sure: the city and the thing ("제주 약국": pharmacies in Jeju).

    >>> from geoql.nl.lexicon import Lexicon
    >>> r = read_request("제주 약국", Knowledge(Lexicon.default()))
    >>> r.place_names, [f.text for f in r.things]
    (('제주',), ['약국'])
    """
    if len(places) != 1 or places[0].span is None or places[0].role != "area":
        return places, features
    place = places[0]
    words = place.name.split()
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


def _negated_brands(features: tuple[Feature, ...], lexicon: Lexicon, language: str) -> tuple[Feature, ...]:
    """A negated word after a thing that is a brand written in lower case or inflected: the brand ("fuel
    stations except bp", "petrol stations that are not shell", "stacje paliw oprócz orlenu"). The lexicon
    reads a brand spelled like a word only with its capital; after "except" beside a thing, the brand is
    what is meant. A short brand (``SHORT_BRAND`` letters or fewer, the lexicon's bound for a brand it reads
    only as the brand writes it: "bp") counts only where it sells what the thing is."""
    things = {t for f in features if not f.negated for m in f.tags for t in m.tags}
    if not things:
        return features
    out = []
    for f in features:
        if f.negated and not f.tags and f.span is not None and 0 < len(f.text.split()) <= 2:
            found = lexicon.brand(f.text, language)
            if found is not None and (len(f.text) > SHORT_BRAND or found.tags[0] in things):
                f = dataclasses.replace(f, tags=(found,))
        out.append(f)
    return tuple(out)


def _brand_before_thing(features: tuple[Feature, ...], lexicon: Lexicon, language: str) -> tuple[Feature, ...]:
    """A phrase that is a brand written in lower case and then a thing of the brand's kind: the brand
    ("subway restaurants": Subway sells fast food, an amenity as restaurants are; "spar supermarkets").
    The lexicon reads a brand spelled like a word only with its capital; a thing of another kind after it
    keeps the word a word ("next bus stops"), and so does a brand whose tag spells it otherwise."""
    out = []
    for f in features:
        best = f.tags[0] if f.tags else None
        if not f.negated and best is not None and not best.tags[0].startswith("brand") and f.span is not None \
                and 0 < best.span[0] and best.span[1] == len(f.text):
            head = f.text[:best.span[0]].strip()
            found = lexicon.brand(head, language) if 0 < len(head.split()) <= 2 and len(head) > SHORT_BRAND else None
            if found is not None and found.tags[0].split("=")[0] == best.tags[0].split("=")[0] \
                    and any(t.startswith("brand=") and fold(t[6:]) == fold(head) for t in found.tags):
                f = dataclasses.replace(f, tags=(dataclasses.replace(found, span=(0, len(f.text)), text=f.text),))
        out.append(f)
    return tuple(out)


def _feature(phrase: str, frame: Frame, lexicon: Lexicon | None, *, negated: bool) -> Feature:
    span = frame.spans.get(phrase)
    opening = span is None or span[0] == 0
    tags = tuple(lexicon.lookup(phrase, frame.language, opening=opening)) if lexicon is not None else ()
    return Feature(phrase, span, negated=negated, tags=tags)


def _filters(frame: Frame, features: tuple[Feature, ...], words: Sequence[AttributeMatch]) -> tuple[Filter, ...]:
    """The frame's attribute filters, each with the feature it was read from."""
    index = {(f.text, f.negated): k for k, f in reversed(list(enumerate(features)))}
    out = []
    for kind, text, span, op, value, unit in frame.filters:
        phrase = next((p for p, at in frame.spans.items() if at == span), None)
        feature = None if phrase is None else index.get((phrase, kind in ("no", "absent")), index.get((phrase, False)))
        if kind in ("compare", "name") and feature is not None and _names_thing(
                features[feature], words, value if kind == "name" else None, _name_cues(frame.language) if kind == "name" else ()):
            # "здания выше 25 этажей", "budynki powyżej 10 pięter", "streets named after goethe": the thing
            # and its comparison or name in one phrase; the phrase stays the thing, with the filter
            feature = None
        out.append(Filter(kind, text, span, op, value, unit, feature))
    return tuple(out)


# The tags of "map" as a thing (an information board); in a request about the map view, the map viewed.
MAP_BOARD = ("tourism=information", "information=map")


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
        out.append(f)
    return tuple(out)


# A lexicon match this sure names a thing (composition takes a phrase's tags at this score too).
SURE_THING_SCORE = 0.5


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
                out.append(Filter("yes", whole[0].text, whole[0].span, feature=k))
                continue
            if not f.tags:
                continue
        if f.negated or not f.tags or f.span is None:
            continue
        for m in words:
            lead = m.text[:max(0, f.span[0] - m.span[0])]
            if m.attribute.yes and m.span[0] < f.span[0] < m.span[1] <= f.span[1] and lead.strip().isdigit() \
                    and not any(a < m.span[1] and m.span[0] < b for a, b in taken):
                # an attribute that opens with a number the cue tables read apart ("24 hour gas stations")
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
            out += [Filter("yes", m.text, m.span, feature=g) for g in held]
    return tuple(out)


def _attribute_over_places(places: tuple[Place, ...], filters: tuple[Filter, ...],
                           words: Sequence[AttributeMatch]) -> tuple[tuple, tuple]:
    """The attribute words around what the cue tables read: a place read inside them is none ("non
    accessibles en fauteuil roulant à Nice": "en" is no place preposition there); a filter read
    inside them takes them all, once, and where they open with its negation ("with no fee": the
    attribute "no fee", ``fee=no``) it asks for the attribute.

    >>> from geoql.nl.lexicon import Lexicon
    >>> r = read_request("hôtels non accessibles en fauteuil roulant à nice", Knowledge(Lexicon.default()))
    >>> [p.name for p in r.places], [(f.kind, f.text) for f in r.filters]
    (['nice'], [('no', 'accessibles en fauteuil roulant')])
    """
    def overlaps(m, span) -> bool:
        return bool(span) and m.span[0] < span[1] and span[0] < m.span[1]

    # (a place that is exactly an attribute word stays a place: "China", "Lit")
    kept = tuple(p for p in places if not any(overlaps(m, p.span) and m.span != p.span for m in words))
    if any(f.kind == "compare" for f in filters):
        # ... but not a measure's word beside a comparison: "more than 100 m in height"
        kept = tuple(p for p in kept if not any(m.span == p.span and not m.attribute.yes for m in words))
    out: list[Filter] = []
    for f in filters:
        m = next((m for m in words if f.span and m.span[0] <= f.span[0] and f.span[1] <= m.span[1]
                  and m.span != f.span and f.kind != "compare"), None)
        if m is not None:
            kind = "yes" if f.kind in ("no", "absent") and m.span[0] < f.span[0] else f.kind
            f = dataclasses.replace(f, kind=kind, text=m.text, span=m.span)
            if any(o.span == f.span for o in out):
                continue
        out.append(f)
    return kept, tuple(out)


# How many words besides one attribute's a negated phrase may hold and still be that attribute
# ("sans accès fauteuil roulant": "accès").
MAX_ATTRIBUTE_FILLER = 1


def _attribute_in_phrase(text: str, features: tuple[Feature, ...], filters: tuple[Filter, ...],
                         words: Sequence[AttributeMatch], language: str) -> tuple[tuple, tuple]:
    """A negated phrase that holds one attribute's words and more: a thing the lexicon knows beside them
    is asked for, without the attribute ("nicht barrierefreie Restaurants": restaurants, not wheelchair
    accessible); a word or so that names nothing is the attribute's ("sans accès fauteuil roulant").

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
                 words: Sequence[AttributeMatch], language: str) -> tuple[AttributeMatch, ...]:
    """The iD yes/no field that names all of a filter's words where no hand-kept attribute names any
    ("bus stops without shelter", "Hotels mit Klimaanlage": ``geoql.nl.attributes.find_field``).
    Not where the words are a thing the request asks for beside ("ATMs and banks with ATMs"), nor a
    thing said not to be ("roads that are not footways": the things, less footways).

    >>> from geoql.nl.lexicon import Lexicon
    >>> r = read_request("arrêts de bus sans abri à nantes", Knowledge(Lexicon.default()))
    >>> [(f.kind, f.text) for f in r.filters], [m.attribute.key for m in r.attribute_words]
    ([('absent', 'abri')], ['shelter'])
    """
    out = []
    for f in filters:
        if f.kind not in ("yes", "no", "absent") or f.span is None \
                or any(m.span[0] < f.span[1] and f.span[0] < m.span[1] for m in (*words, *out)):
            continue
        own = features[f.feature] if f.feature is not None else None
        sure = {t.tags for t in own.tags if t.score >= SURE_THING_SCORE} if own is not None else set()
        if sure and (f.kind == "no" or any(g is not own and not g.negated and sure & {t.tags for t in g.tags}
                                           for g in features)):
            continue
        m = find_field(text[f.span[0]:f.span[1]], language)
        if m is not None:
            out.append(dataclasses.replace(m, span=(f.span[0] + m.span[0], f.span[0] + m.span[1])))
    return tuple(out)


def _spaceless_with(text: str, frame: Frame, features: tuple[Feature, ...], filters: tuple[Filter, ...],
                    words: Sequence[AttributeMatch] = ()) -> tuple[Filter, ...]:
    """In a script without spaces, a phrase that names no thing and is all an attribute's words (the
    hand-kept table's, ``words``, or an iD yes/no field's: "成都有wifi的咖啡馆"), right
    after a with-cue ("苏州有空调的酒店") or right before one ("シャワーがあるキャンプ場"), beside a thing:
    a ``yes`` filter of the things (the cue tables read a with-phrase only after the first phrase).

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
        if f.negated or f.tags or f.span is None or k in read or f.span in read \
                or not any(g.tags and not g.negated for g in features) \
                or not (any(m.span == f.span and m.attribute.yes for m in words) or find_field(f.text, frame.language)):
            continue
        if (text[f.span[1]:].lstrip().startswith(cues) if after else text[:f.span[0]].rstrip().endswith(cues)):
            out.append(Filter("yes", f.text, f.span, feature=k))
    return tuple(out)


def _negation_before(text: str, at: int, language: str) -> bool:
    """Whether a negation cue of ``language`` (one written before what it negates) ends the text before ``at``."""
    cues = tuple(table(language)["negation"]["before"]) if language in CUE_LANGUAGES else ()
    return bool(cues) and text[:at].rstrip().endswith(cues)


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


def _negated_at(text: str, span: tuple[int, int] | None, language: str) -> bool:
    """Whether a negation cue stands right before ``span``: "sin número de ..." counts nothing (es
    "número de" is a count cue), it lacks a number.

    >>> _negated_at("hoteles sin número de habitaciones", (12, 21), "es")
    True
    """
    if span is None or language not in CUE_LANGUAGES:
        return False
    head = fold(text[:span[0]].rstrip())
    return any(head.endswith(fold(cue)) and (len(head) == len(cue) or not head[-len(cue) - 1].isalnum())
               for cue in table(language)["negation"]["before"] if cue and not spaceless(cue[-1]))


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

    after = sorted(((fold(c), op) for op, cs in table(language)["filters"]["compare"].items() for c in cs),
                   key=lambda c: -len(c[0])) if language in CUE_LANGUAGES else []

    def op_after(m) -> str:
        gap = len(text[m.span[1]:]) - len(text[m.span[1]:].lstrip())
        rest = fold(text[m.span[1] + gap:])
        for c, op in after:
            if rest.startswith(c) and (spaceless(c[-1]) or rest[len(c):len(c) + 1] in ("", " ", ",")):
                cues.append((m.span[0], m.span[1] + gap + len(c)))
                return op
        return "="

    cues: list[tuple[int, int]] = []

    out = []
    for f in filters:
        m = next((m for m in words if f.kind == "yes" and f.span == m.span and not m.attribute.yes), None)
        n = number_before(m) if m is not None else None
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
    for k, f in enumerate(filters):
        if f.kind == "yes" and f.span is not None and f.span not in measures:
            m = next((m for m in measures.values() if m.span[0] == f.span[0]), None)
            n = next((n for n in numbers if m is not None and n.span is not None and n.span[1] == f.span[1]
                      and m.span[1] <= n.span[0] and len(text[m.span[1]:n.span[0]].split()) <= 1), None)
            if n is not None:
                out[k] = dataclasses.replace(f, kind="compare", text=m.text, op="=", value=n.text, unit=n.unit)
            continue
        if f.kind != "yes" or f.span not in measures:
            continue
        after = next((g for g in filters if g.kind == "compare" and g.span and f.span[1] <= g.span[0]
                      and len(text[f.span[1]:g.span[0]].split()) <= 2), None)
        if after is not None and not any(after.span[0] <= m.span[0] and m.span[1] <= after.span[1] for m in words):
            out[k] = dataclasses.replace(after, text=f.text, span=(f.span[0], after.span[1]), feature=f.feature)
            out.remove(after)
    return tuple(out)


def _comparison_leftovers(features: tuple[Feature, ...], filters: tuple[Filter, ...],
                          language: str) -> tuple[tuple, tuple]:
    """Phrases that are only a comparison's words, read apart from it: "高さ200" and "以上" of "東京の高さ200m
    以上の建物" (the comparison "高さ" >= 200 holds them). A phrase the lexicon names a thing in stays."""
    compared = [f for f in filters if f.kind == "compare" and f.span is not None and f.value]
    if not compared or language not in CUE_LANGUAGES:
        return features, filters
    t = table(language)
    cues = {tok.fold for ops in t["filters"]["compare"].values() for w in ops for tok in tokens(w)}
    cues |= {tok.fold for unit in t["units"].values() for w in unit for tok in tokens(w)}
    for k in range(len(features) - 1, -1, -1):
        f = features[k]
        if f.negated or f.span is None or any(m.score >= SURE_THING_SCORE for m in f.tags):
            continue
        words = [tok for tok in tokens(f.text) if tok.fold not in cues and not tok.number]
        inside = all(any(c.span[0] <= f.span[0] + tok.start and f.span[0] + tok.end <= c.span[1] for c in compared)
                     for tok in words)
        if inside and not any(g.feature == k for g in filters):
            features, filters = _without_feature(features, filters, k)
    return features, filters


def _brands(features: tuple[Feature, ...]) -> tuple[Feature, ...]:
    """The features the lexicon ties to a brand ("Starbucks": ``brand=Starbucks``); none without a lexicon."""
    return tuple(f for f in features if any(t.startswith(("brand=", "brand:wikidata=")) for m in f.tags for t in m.tags))


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
                  named: bool = False, prepositions: frozenset[str] = frozenset(), language: str = "en") -> tuple[tuple, tuple]:
    """A place the caller knows (``Knowledge.places``) at the start or the end of the request, written
    with no preposition, that the cue tables read as part of a feature phrase: "hospital munich",
    "madrid farmacias". The phrase keeps the rest; nothing changes when no feature phrase would be
    left (unless the request ``named`` what it asks for: '부산 "자갈치시장"') or nothing matches. A known
    place after one of the language's place ``prepositions`` ends a phrase anywhere in the request
    ("hoteles de madrid con wifi": the cue tables read "de madrid" into the phrase, the with-clause after).
    A place that opens the request may carry its case ending where the language inflects names and no
    apostrophe parts them ("izmirdeki hastaneler", "ankarada wifi olan kafeler").

    >>> ps, fs = _known_places("dentist toronto", (Feature("dentist toronto", (0, 15)),), {"toronto": "Toronto"})
    >>> [(p.name, p.span) for p in ps], [(f.text, f.span) for f in fs]
    ([('toronto', (8, 15))], [('dentist', (0, 7))])
    >>> ps, fs = _known_places("museo x madrid", (Feature("museo", (0, 5)), Feature("madrid", (8, 14))), {"madrid": "Madrid"})
    >>> [p.name for p in ps], [f.text for f in fs]
    (['madrid'], ['museo'])
    """
    end = len(text.rstrip(" ?.!。？！"))
    things = [f for f in features if not f.negated]
    for k, f in enumerate(features):
        if f.span is None or f.negated and not prepositions:
            continue
        edge = (f.span[1] == end or f.span[0] == 0) and not f.negated
        if edge and (len(things) > 1 or named) and stem_fold(f.text) in known:
            # a phrase of its own that is all a known place: 'hotel called "Hotel Sacher" vienna'
            return (Place(f.text, f.span),), features[:k] + features[k + 1:]
        before = text[f.span[0] - 1] if f.span[0] > 0 else None
        wide = None if f.negated else _wide_edge_place(f, known, end, before)  # (inside the request: only a place that is a word of its own)
        if wide is not None:
            return (wide[0],), features[:k] + (wide[1],) + features[k + 1:]
        toks = [t for t in tokens(f.text) if not t.spaceless]
        if not edge and not prepositions:
            continue
        for n in range(min(MAX_KNOWN_PLACE_WORDS, len(toks) - 1), 0, -1):
            for head, run in ((False, toks[-n:]), (True, toks[:n])):
                # (a negated phrase only so: "parques sin nombre de valencia")
                after_prep = not head and len(toks) > n + 1 and toks[-n - 1].fold in prepositions
                if (head and (f.span[0] != 0 or f.negated)) or (not head and (f.span[1] != end or f.negated) and not after_prep):
                    continue
                a, b = run[0].start, run[-1].end
                if stem_fold(f.text[a:b]) not in known and not (head and _inflected_place(f.text[a:b], language, known)):
                    continue
                rest = f.text[b:] if head else f.text[:a]
                lead = len(rest) - len(rest.lstrip())
                rest = rest.strip()
                start = f.span[0] + (b + lead if head else 0)
                place = Place(f.text[a:b], (f.span[0] + a, f.span[0] + b))
                feature = dataclasses.replace(f, text=rest, span=(start, start + len(rest)), tags=())
                return (place,), features[:k] + (feature,) + features[k + 1:]
    return (), features


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


def _named(request: "Request") -> bool:
    """Whether a phrase read with a lexicon has a content word that no tag match covers (a name:
    "wembley" of "wembley stadium", "colosseum")."""
    covered = [(f.span[0] + m.span[0], f.span[0] + m.span[1]) for f in request.features if f.span for m in f.tags]
    stop = set(request.words)
    return any(t.fold in stop and not any(a <= t.start and t.end <= b for a, b in covered)
               for t in tokens(request.text))


def _without_feature(features: tuple[Feature, ...], filters: tuple[Filter, ...], k: int) -> tuple[tuple, tuple]:
    """The features less the ``k``-th, and the filters with their feature indices moved to match (a filter
    read from that phrase keeps no phrase)."""
    moved = tuple(f if f.feature is None or f.feature < k else
                  dataclasses.replace(f, feature=None if f.feature == k else f.feature - 1) for f in filters)
    return features[:k] + features[k + 1:], moved


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


def _centre(of: str | None, of_request: "Request | None", frame: Frame,
            things: Things | None, lexicon: bool = False, after_article: bool = False) -> tuple[str | None, str | None]:
    """(what an around is measured from, the named place when it is one): the centre phrase names a
    place when its own reading finds one ("of the Eiffel Tower"), or, in a script with case, when
    a word of it is written as a name ("of Munich central station"; German capitalises every noun,
    so there after a definite article only: "um den Hauptbahnhof"); things otherwise ("of a
    playground", "um einen Spielplatz", "of schools"). Names of things that know the phrase as a thing
    says so first; in a script without case, without one, nothing tells.

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
        return "place", of_request.place
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
