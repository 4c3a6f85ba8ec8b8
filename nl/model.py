"""The typed reading of a request: :class:`Request` and its parts (:class:`Feature`, :class:`Filter`,
:class:`Place`, :class:`Around`, :class:`Number`), and what a caller may tell the reader
(:class:`Knowledge`: a :class:`Lexicon`, :class:`Things`, place names). ``geoql.nl.request`` reads a
request into them (:func:`~geoql.nl.request.read_request`) and exports them; the reading's steps
(``read_places``, ``read_filters``, ``read_around``) build them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Protocol, Sequence

from geoql.nl.attributes import AttributeMatch
from geoql.nl.english import EnglishReading
from geoql.nl.support import Support
from geoql.nl.words import topic_words


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
    brand a phrase names in any case ("except bp": BP), where the reading knows a brand is meant;
    ``corrected(text, lang)``: what a phrase with a misspelt word names; ``surface_words(lang)``: the
    folded words of its surfaces, which are no typos (see ``geoql.nl.attributes.mended``)."""

    def lookup(self, text: str, lang: str, *, opening: bool = True) -> Sequence[FeatureMatch]: ...

    def known_words(self, text: str, lang: str) -> int: ...

    def brand(self, text: str, lang: str) -> FeatureMatch | None:
        """The brand ``text`` is, whatever its case or (where names inflect) its ending, else None."""
        ...

    def corrected(self, text: str, lang: str) -> FeatureMatch | None:
        """The one thing ``text`` names with a word misspelt ("restaraunts"), over all of ``text``, else None;
        asked only of a phrase ``lookup`` finds nothing in."""
        ...

    def surface_words(self, lang: str) -> frozenset[str]: ...


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
    ``equals``, each with ``not_`` before it where the name must not: "whose name does not contain
    Coffee", ``value`` the name); "no wheelchair info" is ``absent`` with ``op`` ``unrecorded`` (the key
    missing, whatever value stands for not having it). ``text`` is the attribute's words ("wifi", "floors"), ``span``
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
    month_dates: tuple[str, ...] = ()  # those of ``dates`` written without a day ("between January and March 2024")
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
        # (a phrase the segmenter cut out of an attribute's words is theirs: "おむ" of "おむつ替え台があるトイレ")
        words = [f.span for f in self.filters if f.span is not None and f.kind in ("yes", "no", "absent")]
        return tuple(f for k, f in enumerate(self.features) if not f.negated and k not in attributes
                     and not (not f.tags and f.span is not None and any(a <= f.span[0] and f.span[1] <= b for a, b in words)))

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


# A lexicon match this sure names a thing (composition takes a phrase's tags at this score too).
SURE_THING_SCORE = 0.5
