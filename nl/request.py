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
from functools import lru_cache

from geoql.nl.attributes import find as find_attributes, mended, number_words, words_of
from geoql.nl.cues import LANGUAGES as CUE_LANGUAGES, plural_endings, table, tokens
from geoql.nl.english import read_english, with_frame
from geoql.nl.frame import JA_QUOTE, MAX_CHARS, Frame, cue_language, latin_rivals, latin_scores, read_frame
from geoql.nl.lexicon import BRAND_SCORE, INFLECTED_BRAND_LANGUAGES, PLURAL_S_LANGUAGES, SHORT_BRAND, is_spaceless_text
from geoql.nl.places import dictionary_form, gazetteer, is_town, word_cities_in
from geoql.nl.support import read_support
from geoql.nl.text import SPACELESS_SCRIPTS, fold, in_dictionary, spaceless
from geoql.nl.text import scripts as script_counts
from geoql.nl.words import content_words, cue_words, stem_fold, topic_words, word_stems
from geoql.nl.model import (
    Around, FILTER_KINDS, Feature, FeatureMatch, Filter, Knowledge, Lexicon, NO_KNOWLEDGE, Number, PLACE_ROLES,
    Place, Request, SURE_THING_SCORE, Things,
)
from geoql.nl.read_places import (
    _article_places, _city_and_thing, and_words, _feature_places, _filter_cue_words, _joined_places, _known_places,
    _city_after_space, _more_cities, _opening_cities, _place_after_and, _place_before_and, _place_in_thing, _place_names,
    _place_phrases, _place_prepositions,
    _thing_before_place, _unknown_edge_place,
)
from geoql.nl.read_filters import (
    _attribute_in_phrase, _attribute_over_places, _comparison_leftovers, _counted_attributes, _field_words,
    _filter_leftovers, _filters, _filters_before_places, _filters_on_words, _inside_attribute, _listed_attributes,
    _listed_missing,
    _measure_then_comparison, _negation_before, _negation_opening_attribute, _phrase_attributes, _spaceless_with,
    _negated_attributes, _negated_things, _not_allowed, _unrecorded, _unrecorded_phrase, _unused_attributes, _without_feature,
)
from geoql.nl.read_around import (
    _after_contraction, _centre, _centre_after_near, _centre_before_number, _centre_with_word_before,
    _less_distance_cue, _measure_not_distance, _not_within, _things_in_place,
)

__all__ = [
    "Around", "FILTER_KINDS", "Feature", "FeatureMatch", "Filter", "Knowledge", "Lexicon", "NO_KNOWLEDGE",
    "Number", "PLACE_ROLES", "Place", "Request", "SURE_THING_SCORE", "Things", "frame_text", "read_request",
]


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
    given = nl
    frame = read_frame(nl, language) if language else read_frame(nl)
    # an attribute word misspelt by one slip of typing is read as the word ("opning hours"): the whole reading,
    # the frame's included, reads the mended text; ``Request.nl`` stays as given
    # (only with a lexicon: without its words every word it knows would look misspelt)
    guessed = frame.language
    fixed = mended(frame_text(nl), guessed, lambda: _known_words(knowledge, guessed)) \
        if lexicon is not None else frame_text(nl)
    if fixed != frame_text(nl):
        nl = fixed
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
    if lexicon is not None:
        # (the whole was read as a place: a city spelled like a word counts as one of the two, "in delft en leiden")
        places = _joined_places(places, ChainMap(_place_names(knowledge), word_cities_in(None)), frame.language)
    what = _listed([thing, *frame.what] if thing else list(frame.what), frame, text)
    found = find_attributes(text, frame.language)
    attribute_words = tuple(m for m in found if m.attribute is not None)
    # the things the request's attributes belong to: a word naming several is the one they fit
    prefer = frozenset(t for m in attribute_words for t in m.attribute.of)
    features = tuple(_feature(phrase, frame, lexicon, negated=False, prefer=prefer) for phrase in what) + \
        tuple(_feature(phrase, frame, lexicon, negated=True, prefer=prefer) for phrase in frame.negated)
    if lexicon is not None:
        features = _joined_things(text, features, lexicon, frame.language)
        if knowledge.world_places:
            places, features = _place_in_thing(text, places, features, lexicon, frame.language, _place_names(knowledge))
    if lexicon is not None and knowledge.world_places and not any(
            not f.negated and any(m.score >= SURE_THING_SCORE for m in f.tags) for f in features):
        # (no thing read elsewhere: a with-phrase alone is no thing, "in Bonn Cafés mit WLAN")
        places, features = _city_and_thing(places, features, _place_names(knowledge), lexicon, frame.language)
    if lexicon is not None:
        # (a place the frame read inside an attribute's words is none, and leaves room for the request's
        # own: "sin acceso en silla de ruedas zaragoza")
        places = tuple(p for p in places if not _inside_attribute(p.span, attribute_words))
    if not places:
        unread = features
        places, features = _known_places(text, features, _place_names(knowledge), named=bool(frame.quoted or frame.names),
                                         prepositions=_place_prepositions(frame.language), language=frame.language,
                                         # (English requests end on adjectives that are cities too, "restaurants nice";
                                         # other languages' dictionaries list their own cities, pt "lisboa", fr "tours")
                                         words=word_cities_in("en" if frame.language == "en" and latin_scores(text)
                                                              else None) if knowledge.world_places else None)
        if not places and lexicon is not None and knowledge.world_places \
                and not (frame.in_view or frame.bbox or frame.coords or frame.around):
            places, features = _unknown_edge_place(text, features, lexicon, frame.language,
                                                   named=bool(frame.quoted or frame.names),
                                                   # (an attribute a with- or without-cue reads)
                                                   attributes=tuple(m.span for m in attribute_words if any(
                                                       span and span[0] < m.span[1] and m.span[0] < span[1]
                                                       for _, _, span, *_ in frame.filters)))
        features = _looked_up_again(features, lexicon, frame.language)
        if places and all(is_town(p.name) for p in places) and not frame.quoted and not frame.names \
                and not any(f.tags for f in features if not f.negated):
            # a town only beside a thing the request names: "cafes galway", not "lorem ipsum dolor sit amet"
            # (Amet, a town in India); a city the gazetteer held before the towns stands alone ("london")
            places, features = (), unread
    if lexicon is not None and knowledge.world_places and places:
        # (a city spelled like a word too: before "and" and a place, it is one, "bibliotheken zwolle en groningen")
        before = places
        places, features = _place_before_and(text, places, features,
                                             ChainMap(_place_names(knowledge), word_cities_in(None)), frame.language)
        # (... and a place with its case ending after "and": "trabzon ve konyadaki otogarlar")
        places, features = _place_after_and(text, places, features, _place_names(knowledge), frame.language)
        if places != before:
            features = _looked_up_again(features, lexicon, frame.language)
    if lexicon is not None and knowledge.world_places and any(not f.negated and not f.tags for f in features):
        # a phrase that is all a city, beside the places read ("ospedali a milano e a torino", "京都と奈良のお寺")
        # or in the middle of the request ("wifiがある東京のカフェ"); only a phrase without tags can be one,
        # so a request whose phrases all name things does not load the gazetteer
        places, features = _place_phrases(places, features, _place_names(knowledge), text)
        if places and any(not f.negated and not f.tags for f in features):
            # beside a place read, a city spelled like a word too: "colonnine di ricarica a torino e genova"
            places, features = _place_phrases(places, features, ChainMap(_place_names(knowledge), word_cities_in(None)), text)
    if lexicon is not None and knowledge.world_places and frame.script in SPACELESS_SCRIPTS:
        places, features = _city_after_space(text, places, features, _place_names(knowledge))
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
        features = _thing_then_negated_brand(features)
        features = _brand_before_thing(features, lexicon, frame.language, placed=bool(places))
        features = _listed_things(features, frame.language)
        features += _quoted_kind(text, frame, features, lexicon)
    filters = _filters(frame, features, attribute_words) + _phrase_attributes(features, attribute_words, frame.filters)
    filters = _filters_before_places(text, filters, places, frame.language)
    filters = _filters_on_words(text, filters, places, features, attribute_words)
    places, filters = _attribute_over_places(places, filters, attribute_words, text, frame.language)
    features, filters = _attribute_in_phrase(text, features, filters, attribute_words, frame.language)
    numbers = tuple(Number(*n) for n in frame.numbers)
    filters = _measure_then_comparison(text, filters, attribute_words, numbers)
    features, filters = _comparison_leftovers(features, filters, frame.language, attribute_words, text)
    if lexicon is not None:
        features, filters = _negation_opening_attribute(text, features, filters, attribute_words, lexicon, frame.language)
    filters = _listed_attributes(features, filters, attribute_words)
    filters, cues, spelled = _counted_attributes(text, filters, attribute_words, numbers, frame.language)
    numbers = tuple(sorted(numbers + spelled, key=lambda n: n.span or (0, 0)))
    features, filters = _filter_leftovers(features, filters, cues)
    filters += _spaceless_with(text, frame, features, filters, attribute_words)
    if frame.around is None:  # (with an around, a word left over may be its centre: "距离避难所25米以内")
        features, filters = _unused_attributes(text, features, filters, attribute_words, frame.language,
                                               avoid=tuple(p.span for p in places if p.span))
    features, filters = _listed_missing(text, features, filters, attribute_words, frame.language)
    fields, filters = _field_words(text, features, filters, attribute_words, frame.language)
    attribute_words += fields
    filters = _negated_things(features, filters, attribute_words)
    features, filters = _negated_attributes(features, filters, attribute_words)
    features, filters = _not_allowed(features, filters, attribute_words, frame.language)
    filters = _unrecorded(text, filters, frame.language, attribute_words)
    features, filters, named = _unrecorded_phrase(text, features, filters, attribute_words, frame.language)
    attribute_words += named
    # a name asked for is no place: "кафе в названии которых есть кофе в москве"
    values = {fold(f.value) for f in filters if f.kind == "name" and f.value}
    places = tuple(p for p in places if fold(p.name) not in values)
    # the copy-edit path puts this name into its neighbour's query: the dictionary form, as the
    # composition writes it ("w Warszawie" -> "Warszawa")
    place = dictionary_form(places[0].name, frame.language) if places else None
    # a count cue that begins an attribute's longer word is that word: "sem número de porta" (pt
    # "número de" counts) asks for no count
    output = {kind for kind in frame.output if not _inside_attribute(frame.output_spans.get(kind), attribute_words)
              and not (kind == "count" and kind in frame.output_spans
                       and _negation_before(text, frame.output_spans[kind][0], frame.language))}
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
        if of and centre != "features" and lexicon is not None and knowledge.world_places:
            # things of a city the gazetteer knows: "수원 학교에서", "广州 学校周围"
            in_city = read_request(of, dataclasses.replace(knowledge, places={}), language=frame.language)
            if _things_in_place(of, in_city, frame.language):
                centre, centre_place, of_request = "features", None, in_city
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
    users = tuple(frame.users)
    if lexicon is not None and not users and frame.edited and (frame.dates or frame.periods):
        features, users = _edits_user(text, features, lexicon, frame.language)
    return Request(
        nl=given, text=text, language=frame.language, script=frame.script, scripts=tuple(script_counts(text)),
        features=features, filters=filters, brands=_brands(features), places=places, in_view=frame.in_view,
        around=around, bbox=frame.bbox, numbers=numbers,
        coords=frame.coords, area_ids=tuple(frame.area_ids), ids=tuple(frame.ids), uids=tuple(frame.uids),
        users=users, names=tuple(frame.names), quoted=tuple(frame.quoted), types=frozenset(frame.types),
        output=frozenset(output), dates=tuple(frame.dates), month_dates=tuple(d for d in frame.dates if d in frame.month_dates),
        periods=tuple(frame.periods), since=frame.since,
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


def _rival_language(text: str, frame: Frame, lexicon: Lexicon | None) -> str | None:
    """A language to read a request in instead of the guess. In Chinese characters alone: Japanese, where
    it writes a kanji only Japanese uses (:func:`_kanji_rival`). In the Latin script: one whose cue words score
    within ``RIVAL_MARGIN`` of the guess's and whose feature lexicon knows strictly more of the
    request's words ("hospitales en madrid y barcelona" is Spanish, not French; "otogar ankara",
    with no cue word at all, is Turkish; "supermarkten of drogisterijen in delft", guessed English on
    "of" and "in", is Dutch: English's lexicon knows none of its words). None: keep the guess."""
    if lexicon is None:
        return None
    if frame.script == "Han" and frame.language in ("zh", "yue"):
        return _kanji_rival(text, lexicon)
    if frame.script != "Latin":
        return None
    # English read by its own small words stays English unless a language as likely by its small words
    # knows two of the words or more: English's lexicon leaves out words it reads wrong more often than
    # right ("place", "route", "tunnel"), which another language may know ("place in Bochum" is English)
    score = latin_scores(text)
    writers = _writers_of_not_word(text, frame.language)
    if writers:
        # a word the guess never writes there is another language's: "multibancos e bancos no porto" is
        # Portuguese (Spanish writes "y"), whose "no" (in the) Spanish reads as a negation
        return max(writers, key=lambda lang: score.get(lang, 0.0))
    english = frame.language == "en" and score.get("en", 0.0) > 0
    margin, least = (ENGLISH_RIVAL_MARGIN, 2) if english else (RIVAL_MARGIN, 1)
    # a number's unit names no thing, whatever a lexicon says ("200 metros": Portuguese's metros, subways)
    text = _MEASURE.sub(r"\1", text)
    best, known = None, lexicon.known_words(text, frame.language)
    # English that knows none of the words reads as any language within the wider margin that knows two
    # ("supermarkten of drogisterijen in delft": English's "of" and "in")
    rivals = latin_rivals(score, frame.language, RIVAL_MARGIN if english and not known else margin)
    if not rivals:
        return None
    own = _own_words(text, frame.language)
    before_city = _prepositions_before_cities(text)
    for lang in rivals:
        others = set().union(*(_place_prepositions(x) for x in (frame.language, *rivals) if x != lang))
        if not english and before_city & (_place_prepositions(lang) - others):
            # a place preposition of this rival's alone right before a city: "mercados no porto" is Portuguese
            # ("no": Portuguese "in the", Spanish "not"); "a torino" tells French from Italian nothing
            return lang
        n = lexicon.known_words(text, lang)
        # English that knows none of the words, guessed on words another language shares as much ("in"),
        # is that language where its lexicon knows one ("Schulen in Founex", "museen in dresden")
        need = 1 if english and not known and score.get(lang, 0.0) >= score.get(frame.language, 0.0) else least
        if n > known and n >= need:
            best, known = lang, n
        elif best is None and n == known and n >= least and not english \
                and score.get(lang, 0.0) >= score.get(frame.language, 0.0) and _own_words(text, lang) > own:
            # a tie of the cue words and of the things known: the language whose own attribute and number
            # words the request uses ("hoteles de cinco estrellas": Spanish, not French)
            best = lang
    return best


# A number and the word after it, its unit ("200 metros", "5 km").
_MEASURE = re.compile(r"(\d+(?:[.,]\d+)?)\s*[^\W\d_]+")


def _writers_of_not_word(text: str, language: str) -> tuple[str, ...]:
    """The Latin-script languages whose markers hold a word of ``text`` that ``language`` does not write
    where it stands (its cue table's ``language.not_words``: word -> the starts of a next word that allow
    it, Spanish "e" before an i sound, "padres e hijos"); () when the request has none.

    >>> _writers_of_not_word("multibancos e bancos no porto", "es"), _writers_of_not_word("padres e hijos", "es")
    (('it', 'pt'), ())
    """
    if language not in CUE_LANGUAGES:
        return ()
    never = table(language)["language"].get("not_words", {})
    if not never:
        return ()
    words = [t.fold for t in tokens(text)]
    for k, w in enumerate(words):
        if w in never and k + 1 < len(words) and not words[k + 1].startswith(tuple(never[w])):
            return tuple(lang for lang in CUE_LANGUAGES if lang != language
                         and "Latin" in table(lang)["language"]["scripts"] and w in table(lang)["markers"])
    return ()


def _kanji_rival(text: str, lexicon: Lexicon) -> str | None:
    """Japanese for a request in Chinese characters alone, guessed Chinese, that uses a letter only
    Japanese names write (its own simplified kanji: 図, 駅, 薬, 銭, 沢) and none only Chinese ones do
    ("金沢 図書館", "大阪 薬局"); None: keep the guess. The letters are the feature lexicon's."""
    ja = lexicon.letters("ja")
    chinese = lexicon.letters("zh") | lexicon.letters("yue")
    letters = {ch for ch in text if spaceless(ch)}
    own = ja - chinese
    # (most Chinese requests hold no Japanese-only letter: no Japanese lookup for them)
    if not letters & own or letters & (chinese - ja):
        return None
    # the letter inside a thing Japanese names: the letters are only those of the lexicon's names, so a
    # place's letter may be missing from Chinese's by chance ("隆" of "科隆有哪些社区", Cologne)
    if any(own & set(text[m.span[0]:m.span[1]]) for m in lexicon.lookup(text, "ja")):
        return "ja"
    return None


def _looked_up_again(features: tuple[Feature, ...], lexicon: Lexicon | None, language: str) -> tuple[Feature, ...]:
    """The phrases without tags looked up again, after a place step cut a place out of one: its matches'
    spans index its own text. (A phrase no step changed finds nothing new: the lookup as the request
    opens is the stricter one.)"""
    if lexicon is None:
        return features
    return tuple(f if f.tags else dataclasses.replace(f, tags=tuple(lexicon.lookup(f.text, language))) for f in features)


def _prepositions_before_cities(text: str) -> frozenset[str]:
    """The folded words right before a city the gazetteer or ``word_cities`` knows ("no" of "mercados no porto")."""
    toks = [t for t in tokens(text) if not t.spaceless]
    cities = word_cities_in(None)
    known = gazetteer()
    return frozenset(a.fold for a, b in zip(toks, toks[1:]) if (key := stem_fold(b.text)) in known or key in cities)


def _own_words(text: str, language: str) -> int:
    """How many words of ``text`` are ``language``'s own attribute or number words."""
    own = words_of(language) | set(number_words(language))
    return sum(1 for t in tokens(text) if not t.spaceless and t.fold in own)


def _known_words(knowledge: Knowledge, language: str) -> tuple[frozenset[str], ...]:
    """The words no typo is read in: the lexicon's surfaces of ``language``, and every cue table's words
    with the words of the place names ``knowledge`` reads (built once per knowledge)."""
    places = knowledge.places or None
    key = (id(places), knowledge.world_places)
    got = _KNOWN.get(key)
    if got is None or got[0] is not places:
        names = {*(places or {}), *(gazetteer() if knowledge.world_places else {})}
        words = {w for name in names for w in fold(name).split()} | {w for ws in cue_words().values() for w in ws}
        if len(_KNOWN) >= KNOWN_SETS:
            _KNOWN.pop(next(iter(_KNOWN)))  # (the oldest: a process reads with one or two knowledges)
        got = _KNOWN[key] = (places, frozenset(words))
    lexicon = knowledge.lexicon.surface_words(language) if knowledge.lexicon is not None else frozenset()
    return lexicon, got[1]


# (places -> the words of their names and the cue tables'; the mapping is held so that its id stays its
# own; knowledge without places of its own shares one entry)
_KNOWN: dict[tuple, tuple] = {}
KNOWN_SETS = 4


def frame_text(nl: str) -> str:
    """The text a reading's spans index: NFKC, at most ``MAX_CHARS`` characters."""
    return unicodedata.normalize("NFKC", nl)[:MAX_CHARS]


def _edits_user(text: str, features: tuple[Feature, ...], lexicon: Lexicon, language: str,
                ) -> tuple[tuple[Feature, ...], tuple[str, ...]]:
    """In a request about edits in time, the one word no table knows, written in letters and digits, is
    the user's name, cue or not ("what has woodpeck edited in the past 3 days", "что правил Zverik за
    последнюю неделю"); the features less it and the user, or both unchanged."""
    if any(f.tags for f in features if not f.negated):
        return features, ()  # things edited ("parkings à vélos ajoutés récemment"): a word there is theirs
    named = [f for f in features if not f.negated and not f.tags and f.span is not None and len(f.text.split()) == 1
             and _USER_NAME.match(f.text) and not lexicon.lookup(f.text, language)
             and lexicon.brand(f.text, language) is None and f.text.casefold() not in words_of(language)]
    if len(named) != 1 or _dictionary_word(named[0].text, language) or fold(named[0].text) in _not_names(language) \
            or named[0].span[0] > 0 and text[named[0].span[0] - 1] in "([（":
        return features, ()  # (a word of the maps themselves, "OpenStreetMap"; a name glossed in brackets)
    return tuple(f for f in features if f is not named[0]), (named[0].text,)


@lru_cache(maxsize=None)
def _not_names(language: str) -> frozenset[str]:
    """Words the cue tables say are no place, and so no user either ("osm", "openstreetmap", "wikidata")."""
    return frozenset(fold(w) for lang in dict.fromkeys((cue_language(language), "en")) for w in table(lang)["place"]["not_places"])


def _dictionary_word(word: str, language: str) -> bool:
    """Whether ``word`` is a word of ``language``'s or English's dictionary: no user's name
    ("canton", "inclus", "Forstwege")."""
    return any(in_dictionary(word, lang) for lang in dict.fromkeys((language, "en")))


# A user's name as this rule takes it: Latin letters and digits, "_", "-", "." (a word in another script is
# too often a word of the request's language the dictionaries lack)
_USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{2,}$")


def _negated_brands(features: tuple[Feature, ...], lexicon: Lexicon, language: str) -> tuple[Feature, ...]:
    """A negated word after a thing that is a brand written in lower case or inflected: the brand ("fuel
    stations except bp", "petrol stations that are not shell", "stacje paliw oprócz orlenu"). The lexicon
    reads a brand spelled like a word only with its capital; after "except" beside a thing, the brand is
    what is meant. A short brand (``SHORT_BRAND`` letters or fewer, the lexicon's bound for a brand it reads
    only as the brand writes it: "bp") counts only where it sells what the thing is, and so does a brand
    spelled like a word the lexicon reads as another thing (where the brand table gives a brand another of
    its categories, it stays the word: "supermarchés sauf carrefour", Carrefour's fuel stations)."""
    things = {t for f in features if not f.negated for m in f.tags for t in m.tags}
    if not things:
        return features
    out = []
    for f in features:
        branded = any(t.startswith("brand") for m in f.tags for t in m.tags)
        if f.negated and not branded and f.span is not None and 0 < len(f.text.split()) <= 2:
            found = lexicon.brand(f.text, language)
            # (as written, or with a case ending where names inflect: not a plural, "excluding garages")
            ending = 2 if language in INFLECTED_BRAND_LANGUAGES else 0
            if found is not None and (len(f.text) > SHORT_BRAND and not f.tags or found.tags[0] in things) \
                    and _spells_brand(found, f.text, ending=ending):
                f = dataclasses.replace(f, tags=(found,))
        out.append(f)
    return tuple(out)


# Signs that join two things in one phrase: "pubs n bars", "pubs / bars", "cafés + bakeries" (a slash
# between two letters, "bares/restaurantes", splits the phrase earlier: ``_listed``).
LIST_SIGNS = frozenset({"/", "n", "&", "+", "'n'", "n'"})


def _listed_things(features: tuple[Feature, ...], language: str) -> tuple[Feature, ...]:
    """A phrase that is two things the lexicon names whole, side by side, with a sign of a list between
    them ("pubs n bars", "pubs / bars") or both plural ("museos teatros y cines"): one feature
    each. Not two words of one thing ("hotel bar", "pizza restaurants": the first is no plural), nor
    letters glued together in a script without spaces, nor a brand.

    >>> pub, bar = FeatureMatch((0, 4), ("amenity=pub",), 0.9), FeatureMatch((7, 11), ("amenity=bar",), 0.9)
    >>> [(f.text, f.span) for f in _listed_things((Feature("pubs n bars", (0, 11), tags=(pub, bar)),), "en")]
    [('pubs', (0, 4)), ('bars', (7, 11))]
    >>> hotel = FeatureMatch((0, 5), ("tourism=hotel",), 0.9)
    >>> len(_listed_things((Feature("hotel bars", (0, 10), tags=(hotel, FeatureMatch((6, 10), ("amenity=bar",), 0.9))),), "en"))
    1
    """
    out: list[Feature] = []
    for f in features:
        matches = sorted(f.tags, key=lambda m: m.span[0])
        if f.negated or f.span is None or len(matches) < 2 or any(
                m.score < SURE_THING_SCORE or any(t.startswith("brand") for t in m.tags) for m in matches) \
                or any(a.span[1] > b.span[0] for a, b in zip(matches, matches[1:])):
            out.append(f)
            continue
        gaps = [f.text[:matches[0].span[0]], *(f.text[a.span[1]:b.span[0]] for a, b in zip(matches, matches[1:])),
                f.text[matches[-1].span[1]:]]
        inner = gaps[1:-1]
        signed = all(g.strip().casefold() in LIST_SIGNS for g in inner)
        plural = plural_endings(language)
        plurals = bool(plural) and all(not g.strip() and g for g in inner) and all(
            fold(f.text[m.span[0]:m.span[1]]).endswith(plural) for m in matches)
        if gaps[0].strip() or gaps[-1].strip() or not (signed or plurals):
            out.append(f)
            continue
        for m in matches:
            a, b = m.span
            out.append(dataclasses.replace(f, text=f.text[a:b], span=(f.span[0] + a, f.span[0] + b),
                                           tags=(dataclasses.replace(m, span=(0, b - a)),)))
    return tuple(out)


def _thing_then_negated_brand(features: tuple[Feature, ...]) -> tuple[Feature, ...]:
    """A negated phrase of a thing and then a brand, where nothing else is asked for: the thing, without
    the brand ("강남 카페 스타벅스 빼고", cafés in Gangnam but Starbucks: the negation after the phrase
    is the brand's).

    >>> cafe = FeatureMatch((0, 2), ("amenity=cafe",), 1.0)
    >>> brand = FeatureMatch((3, 7), ("amenity=cafe", "brand=스타벅스"), 0.9)
    >>> [(f.text, f.span, f.negated) for f in _thing_then_negated_brand((Feature("카페 스타벅스", (3, 10), True, (cafe, brand)),))]
    [('카페', (3, 5), False), ('스타벅스', (6, 10), True)]
    """
    if any(not f.negated and f.tags for f in features):
        return features
    out: list[Feature] = []
    for f in features:
        m = f.tags
        if f.negated and f.span is not None and len(m) == 2 and m[0].span[0] == 0 and m[0].span[1] < m[1].span[0] \
                and m[1].span[1] == len(f.text) and not any(t.startswith("brand") for t in m[0].tags) \
                and any(t.startswith("brand=") for t in m[1].tags) and f.text[m[0].span[1]:m[1].span[0]].isspace():
            a, b = f.span[0], f.span[0] + m[1].span[0]
            out += [Feature(f.text[:m[0].span[1]], (a, a + m[0].span[1]), False, (m[0],), f.place),
                    Feature(f.text[m[1].span[0]:], (b, f.span[1]), True, (dataclasses.replace(m[1], span=(0, f.span[1] - b)),), f.place)]
            continue
        out.append(f)
    return tuple(out)


def _brand_before_thing(features: tuple[Feature, ...], lexicon: Lexicon, language: str, *,
                        placed: bool = False) -> tuple[Feature, ...]:
    """A phrase that is a brand written in lower case and a thing of the brand's kind, before or after it:
    the brand ("subway restaurants": Subway sells fast food, an amenity as restaurants are; "spar
    supermarkets"; "distributori eni").
    The lexicon reads a brand spelled like a word only with its capital; a thing of another kind after it
    keeps the word a word ("next bus stops"), and so does a brand whose tag spells it otherwise."""
    # a phrase of only a brand beside the others ("大阪のファミマとセブンイレブン", "pingo doce ou continente em braga")
    beside = any(not g.negated and g.tags and all(any(t.startswith("brand=") for t in m.tags) for m in g.tags)
                 for g in features)
    # ... or no thing read at all, in a place ("continente no porto")
    alone = placed and not any(g.tags for g in features if not g.negated)
    only = beside or alone and sum(not g.negated for g in features) == 1
    out = []
    for f in features:
        best = f.tags[0] if f.tags else None
        if not f.negated and best is not None and not best.tags[0].startswith("brand") and f.span is not None \
                and 0 < best.span[0] and best.span[1] == len(f.text):
            found = _brand_beside(f.text[:best.span[0]].strip(), best, lexicon, language)
            if found is not None:
                f = _as_brand(f, found)
        elif not f.negated and best is not None and not best.tags[0].startswith("brand") and f.span is not None \
                and best.span[0] == 0 and best.span[1] < len(f.text) and len(f.tags) == 1:
            # ... or after the thing: "distributori eni", "agências itaú"
            found = _brand_beside(f.text[best.span[1]:].strip(), best, lexicon, language)
            if found is not None:
                f = _as_brand(f, found)
        elif not f.negated and not f.tags and f.span is not None:
            # a brand beside a word that adds nothing to it: "shell stations", "stacje orlen"; a brand spelled
            # like a word that is all the request asks for in a place, or beside another brand (in English
            # only a brand no word spells, ``_brand_phrase``)
            f = _brand_phrase(f, lexicon, language, alone=alone or beside, only=only)
        out.append(f)
    return tuple(out)


def _brand_phrase(f: Feature, lexicon: Lexicon, language: str, *, alone: bool = False, only: bool = False) -> Feature:
    """A phrase without tags that is a brand (``Lexicon.brand``: in any case, with a case ending where
    names inflect) beside words that add nothing to it ("opet istasyonları", "stacje orlenu"), or, where
    it is ``alone`` all the request asks for, by itself ("continente no porto", "mercadonas en sevilla").
    Where it is the ``only`` phrase of the request, a brand's short form counts too ("부산 스벅", "大阪のマクド",
    "대구 파바 매장"): elsewhere a short word is too often another word ("タグ", "通行"). The phrase
    unchanged otherwise."""
    if language == "ja" and f.text.endswith(JA_QUOTE) and len(f.text) > len(JA_QUOTE) + 1 and f.span is not None:
        # the quoting particle closes the brand's phrase: "名古屋にコメダって何軒あるの" (Komeda, how many)
        bare = dataclasses.replace(f, text=f.text[:-len(JA_QUOTE)], span=(f.span[0], f.span[1] - len(JA_QUOTE)))
        found = _brand_phrase(bare, lexicon, language, alone=alone, only=only)
        return found if found.tags else f
    generic = find_attributes(f.text, language, generic=True)
    if not generic:
        # ("瑞幸", "스벅": a word each; three letters only as the request's one phrase: "konyada bim var mı")
        long_enough = len(f.text) > SHORT_BRAND or is_spaceless_text(f.text) or only and len(f.text) == SHORT_BRAND
        found = lexicon.brand(f.text, language, short=only) if alone and len(f.text.split()) <= 2 and long_enough else None
        if found is not None and language == "en" and found.score < BRAND_SCORE:
            return f  # English words are brands' names too: "power in Zambia", "warehouse in current view"
        plural = 1 if language in PLURAL_S_LANGUAGES and f.text[-1:].lower() == "s" else 4 if language == "tr" else 0
        return _as_brand(f, found) if found is not None and _spells_brand(found, f.text, ending=plural, short=only) else f
    rest, at = f.text, 0
    for m in generic:
        rest = rest[:m.span[0] - at] + " " + rest[m.span[1] - at:]
        at += m.span[1] - m.span[0] - 1
    rest = " ".join(rest.split())
    long_enough = len(rest) >= SHORT_BRAND or only and is_spaceless_text(rest)
    found = lexicon.brand(rest, language, short=only) if 0 < len(rest.split()) <= 2 and long_enough else None
    # the brand as written, or with a case ending where names inflect ("stacje orlenu": Orlen)
    if found is None or not _spells_brand(found, rest, ending=2, short=only):
        return f
    if found.score < BRAND_SCORE and generic[0].span[0] > 0 and not (only and is_spaceless_text(rest)):
        return f  # a brand spelled like a word that opens the phrase is the word: "power stations"
    return _as_brand(f, found)


def _spells_brand(found: FeatureMatch, text: str, *, ending: int = 0, short: bool = False) -> bool:
    """Whether one of ``found``'s ``brand=`` values is ``text`` as written (folded), or it less a case
    or plural ending of up to ``ending`` letters; with ``short``, also where ``found`` is the brand's short
    form or other spelling as the request writes it ("스벅": 스타벅스)."""
    if short and found.source == "brand" and fold(found.surface) == fold(text):
        return True
    return any(t.startswith("brand=") and (fold(t[6:]) == fold(text) or ending and fold(text).startswith(fold(t[6:]))
                                           and len(text) - len(t[6:]) <= ending) for t in found.tags)


def _brand_beside(word: str, thing: FeatureMatch, lexicon: Lexicon, language: str) -> FeatureMatch | None:
    """The brand ``word`` (one or two words, as written) names where it stands beside ``thing`` of the
    brand's own kind (its main tag's key); None otherwise. A brand of two or three letters counts only
    beside a thing of its very tag: "bim marketleri", "cu 편의점", not "spa hotels"."""
    found = lexicon.brand(word, language) if 0 < len(word.split()) <= 2 and len(word) >= 2 else None
    if found is not None and (len(word) > SHORT_BRAND or found.tags[0] in thing.tags) \
            and found.tags[0].split("=")[0] == thing.tags[0].split("=")[0] and _spells_brand(found, word):
        return found
    return None


def _as_brand(f: Feature, found: FeatureMatch) -> Feature:
    """The phrase ``f`` with the brand ``found`` as its one match, over the whole phrase."""
    return dataclasses.replace(f, tags=(dataclasses.replace(found, span=(0, len(f.text)), text=f.text),))


def _joined_things(text: str, features: tuple[Feature, ...], lexicon: Lexicon, language: str) -> tuple[Feature, ...]:
    """Two phrases with one small word between them that the lexicon reads as one thing from the first
    phrase's start into the second, as one phrase: the cue tables end a phrase at the small word
    ("parcheggi per bici coperti": Italian "per" is a stop word), where the lexicon knows the thing by
    the words on both sides ("parcheggi per bici", bicycle parking). Unchanged otherwise.

    >>> from geoql.nl.lexicon import Lexicon
    >>> text = "parcheggi per bici coperti"
    >>> [f.text for f in _joined_things(text, (Feature("parcheggi", (0, 9)), Feature("bici coperti", (14, 26))),
    ...                                 Lexicon.default(), "it")]
    ['parcheggi per bici coperti']
    """
    out = list(features)
    ands = and_words(language)  # (a list is two things: "cafés and bars")
    k = 0
    while k + 1 < len(out):
        f, g = out[k], out[k + 1]
        gap = text[f.span[1]:g.span[0]] if f.span and g.span and f.span[1] <= g.span[0] else ""
        if f.negated or g.negated or len(gap.split()) != 1 or not gap.startswith(" ") or not gap.endswith(" ") \
                or fold(gap.strip()) in ands:
            k += 1
            continue
        whole = text[f.span[0]:g.span[1]]
        found = lexicon.lookup(whole, language)
        # (the thing may end inside the second phrase, an attribute's words after it: "parcheggi per bici coperti")
        if len(found) == 1 and found[0].span[0] == 0 and found[0].span[1] > g.span[0] - f.span[0] \
                and found[0].score >= SURE_THING_SCORE:
            out[k:k + 2] = [Feature(whole, (f.span[0], g.span[1]), negated=False, tags=(found[0],))]
        else:
            k += 1
    return tuple(out)


# The fewest letters a kind ending a quoted name has ("시장", "公園"): a single one is too often part of
# the name itself ("서울역" ends with station's 역, "外婆家" with 家).
KIND_LETTERS = 2


def _quoted_kind(text: str, frame: Frame, features: tuple[Feature, ...], lexicon: Lexicon) -> tuple[Feature, ...]:
    """The thing a quoted name ends with, where the request names no thing of its own: in Chinese,
    Japanese and Korean a proper name ends with its kind (부산 "자갈치시장", a market named so; 「上野公園」,
    a park), so the kind is the thing the name is on. Only the name's ending as the lexicon spells a
    thing, of two letters or more, and never the whole name; none elsewhere ("Hotel Sacher" says its
    kind in words a request reads anyway)."""
    if frame.script not in SPACELESS_SCRIPTS or len(frame.quoted) != 1 \
            or any(f.tags for f in features if not f.negated):
        return ()  # (two names, "名为“加油站”或“燃油站”", are names only)
    name = frame.quoted[0]
    at = text.find(name)
    for cut in range(1, len(name) - KIND_LETTERS + 1):
        kind = name[cut:]
        found = [m for m in lexicon.lookup(kind, frame.language)
                 if m.span == (0, len(kind)) and m.score >= SURE_THING_SCORE
                 and not any(t.startswith("brand") for t in m.tags)]
        if found:
            return (Feature(kind, (at + cut, at + len(name)) if at >= 0 else None, negated=False, tags=(found[0],)),)
    return ()


# Two things written with a slash or a middle dot between them: "bares/restaurantes", "郵便局・銀行・ATM"
# (not a katakana name's middle dot: "セブン・イレブン")
_LISTED = re.compile(r"(?<=[^\W\d_])/(?=[^\W\d_])|(?<![\u30a1-\u30fc])・(?![\u30a1-\u30fc])")


def _listed(what: list[str], frame: Frame, text: str) -> list[str]:
    """``what`` with each phrase that lists things by a slash or a middle dot split into them, their
    spans added to ``frame.spans``.

    >>> from geoql.nl.frame import read_frame
    >>> f = read_frame("bares/restaurantes en bilbao", "es")
    >>> _listed(list(f.what), f, "bares/restaurantes en bilbao"), f.spans["restaurantes"]
    (['bares', 'restaurantes'], (6, 18))
    """
    out = []
    for phrase in what:
        span = frame.spans.get(phrase)
        parts = _LISTED.split(phrase) if phrase and span is not None else [phrase]
        if len(parts) < 2 or any(not p.strip() for p in parts):
            out.append(phrase)
            continue
        at = span[0]
        for part in parts:
            start = text.find(part, at)
            start = start if start >= 0 else at
            frame.spans.setdefault(part, (start, start + len(part)))
            at = start + len(part) + 1
            out.append(part)
    return out


def _feature(phrase: str, frame: Frame, lexicon: Lexicon | None, *, negated: bool,
             prefer: frozenset[str] = frozenset()) -> Feature:
    span = frame.spans.get(phrase)
    opening = span is None or span[0] == 0
    tags = tuple(lexicon.lookup(phrase, frame.language, opening=opening, prefer=prefer)) if lexicon is not None else ()
    if not tags and lexicon is not None:
        # a word misspelt by a letter: "restaraunts with outdoor seating"
        fixed = lexicon.corrected(phrase, frame.language)
        tags = (fixed,) if fixed is not None else ()
    return Feature(phrase, span, negated=negated, tags=tags)


# The tags of "map" as a thing (an information board); in a request about the map view, the map viewed.
MAP_BOARD = ("tourism=information", "information=map")


def _brands(features: tuple[Feature, ...]) -> tuple[Feature, ...]:
    """The features the lexicon ties to a brand ("Starbucks": ``brand=Starbucks``); none without a lexicon."""
    return tuple(f for f in features if any(t.startswith(("brand=", "brand:wikidata=")) for m in f.tags for t in m.tags))
