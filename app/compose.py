"""Composition: a query built from what a request says (``geoql.nl.Request``), not copied from a neighbour.

:func:`compose` turns a fully read request into OverpassQL through the AST (``overpassql.ast``,
printed by ``overpassql.dump``) in the house style of OverpassNL's gold queries (overpass-turbo's
wizard): ``[out:json][timeout:25];``, ``{{geocodeArea:"X"}}->.searchArea;``, one ``node``/``way``/
``relation`` statement per feature in a union, ``out;>;out skel qt;`` unless an output is asked.
It covers features with their attribute filters, unions ("X and Y"), one area per place for two
places, ``around`` a named place (``{{geocodeCoords:X}}``), around other features (a named set),
the map view, a point typed in, and the outputs asked for.

It also builds element ids, a box typed in, "since <date>" and "in the last N days" (overpass-turbo's
``{{date:N days}}``), one user, name patterns, comparisons and negated brands (``brand!=X``).

It is strict on purpose: the answer replaces a copy-edit that often carries most facts already, so
a composed query must say everything the request says and nothing else. It returns None when any
content word of the request is not accounted for (a feature, a place, a number, an attribute, a
cue word of what was read), when a feature has no tags or more than one reading, or when the request
asks for something composition does not build (element types beside features, several users, a
date range, a period beside a date, CSV, two outputs).

>>> from geoql.nl.lexicon import Lexicon
>>> from geoql.nl.request import Knowledge, read_request
>>> k = Knowledge(lexicon=Lexicon.default())
>>> compose(read_request("cafes and bakeries in Vienna", k))
'[out:json][timeout:25];{{geocodeArea:"Vienna"}}->.searchArea;(node["amenity"="cafe"](area.searchArea);way["amenity"="cafe"](area.searchArea);relation["amenity"="cafe"](area.searchArea);node["shop"="bakery"](area.searchArea);way["shop"="bakery"](area.searchArea);relation["shop"="bakery"](area.searchArea););out;>;out skel qt;'
>>> compose(read_request("edits by bob_the_mapper in the last 7 days", k))
'[out:json][timeout:25];(node(newer:"{{date:7 days}}")(user:"bob_the_mapper");way(newer:"{{date:7 days}}")(user:"bob_the_mapper");relation(newer:"{{date:7 days}}")(user:"bob_the_mapper"););out;>;out skel qt;'
>>> compose(read_request("edits by bob between 2024-01-01 and 2024-02-01", k)) is None
True
"""

from __future__ import annotations

import calendar
import dataclasses
import re
from dataclasses import dataclass
from functools import lru_cache

import overpassql
from overpassql import ast as A

from geoql.app.decoding import Candidate
from geoql.nl.attributes import Attribute, attributes
from geoql.nl.cues import all_tables, output_words, own_table, tokens
from geoql.nl.frame import ORDINAL_ENDINGS, TYPE_LETTERS
from geoql.nl.places import dictionary_form, gazetteer
from geoql.nl.request import LIST_SIGNS, SURE_THING_SCORE, Feature, FeatureMatch, Filter, Request
from geoql.nl.text import fold, number as read_number
from geoql.nl.words import cue_words, stem_fold, stopwords

# The gold queries' settings and element types (overpass-turbo's wizard writes these).
SETTINGS = (("out", "json"), ("timeout", "25"))
TYPES = ("node", "way", "relation")
AREA_SET = "searchArea"
CENTRE_SET = "centre"
# Outputs composition prints, and how (``Request.output``); CSV: ``[out:csv(...)]`` and ``out center``.
OUTPUTS = {"count": [["count"]], "geom": [["geom"]], "center": [["center"]], "meta": [["meta"]]}
DEFAULT_OUT = [[], ">", ["skel", "qt"]]  # out; >; out skel qt;
# A lexicon match below this is too unsure to go into a query by itself (a composed query replaces an
# answer that may be right): the reading's bound for a sure thing, so both judge a phrase alike.
MIN_TAG_SCORE = SURE_THING_SCORE
# Keys of things that are lines: a length compared on them is how long they are, which no tag holds.
LINEAR_KEYS = frozenset({"highway", "waterway", "railway", "power", "route", "barrier"})
# Words that say an element was changed, with a date or a user ("modified since", "geändert seit"),
# every language together: the cue tables' time section has the since-words, not the verbs.
CHANGED_WORDS = ("modified", "edited", "changed", "updated", "touched", "edits", "changes", "modifications",
                 "geändert", "bearbeitet", "verändert", "aktualisiert", "wurden", "änderungen",
                 "modifié", "modifiés", "modifiées", "modifiée", "modifs", "modifications", "édité", "édités",
                 "modificado", "modificados", "modificadas", "modificada", "editado", "editados", "cambios",
                 "modificato", "modificati", "modificate", "modificata", "modifiche",
                 "modificados", "alterados", "editados", "alterações",
                 "изменённые", "измененные", "изменены", "правки", "изменения",
                 "修改", "修改过", "编辑", "编辑过", "編集", "編集した", "変更", "수정", "수정한", "편집")
# The elements' types as OSM editors' menus name them, where the cue tables' types do not
# ("линия": a way in the Russian editors, "路径": in the Chinese ones).
EDITOR_TYPE_WORDS = ("линия", "路径", "vía", "via", "relação", "knoten", "nœud", "noeud")
# A period composition prints as overpass-turbo's {{date:...}} ("7 days", "1 month"; geoql.nl reads them so).
_PERIOD = re.compile(r"\d+ (minute|hour|day|week|month|year)s?")
# Comparison units composition converts to the tag's own (OSM heights and elevations are metres).
METRES = {None: 1.0, "m": 1.0, "km": 1000.0}
# Keys whose numbers are speeds (km/h): a "km" said of them is no length to convert.
SPEED_KEYS = frozenset({"maxspeed", "minspeed", "maxspeed:advisory"})
# The streets that carry a name: "streets without a name" is a mapper's check for these, as OverpassNL's own
# answers to it write it (a footway, a track, a driveway is rightly unnamed; a motorway or a link has a ref).
NAMED_ROADS = "^(trunk|primary|secondary|tertiary|unclassified|residential|living_street|pedestrian)$"


@dataclass(frozen=True)
class Part:
    """One thing to print: its tag filters (and an ``if:`` test) and the index of its area, if any."""

    filters: tuple
    area: int | None = None


# ------------------------------------------------------------------ public

def compose(request: Request | None) -> str | None:
    """The query ``request`` says, one line, or None when it is not fully read (see the module)."""
    if request is None:
        return None
    script = compose_script(request)
    return None if script is None else overpassql.dump(script)


def compose_script(request: Request) -> A.Script | None:
    """:func:`compose` as an AST (None: not fully read)."""
    if _unsupported(request):
        return None
    if request.ids:
        return _by_ids(request)
    covered: list[tuple[int, int]] = []
    things = _things(request, covered)
    when = _when(request)
    if when is None:
        return None
    if not things and (when or request.users):
        things = [_Thing((), None)]  # "edits by bob since 2024-01-01": every element they touched
    elif not things and _one_name(request):
        things = [_Thing((), None)]  # '"Central Library" in Leeds': whatever bears that name
    if not things or any(not t.tags for t in things) and not (when or request.users or _one_name(request)):
        return None
    filters = _filters(request, things, covered)
    if filters is None:
        return None
    things = _named_roads(things, filters)
    areas = _areas(request)
    covered += [p.span for p in request.places if p.span is not None]
    covered += [n.span for n in request.numbers if n.span is not None]
    statements: list = []
    scope: list = []
    if request.around is not None:
        around = _around(request, covered, statements)
        if around is None:
            return None
        scope.append(around)
    elif request.in_view:
        scope.append(A.PlaceholderFilter("{{bbox}}"))
    elif request.bbox is not None:
        scope.append(A.BBox(*(f"{x:g}" for x in request.bbox)))
    scope += when + ([A.User([u]) for u in request.users[:1]] if len(request.users) == 1 else [])
    if request.around is None and request.coords is not None:
        return None
    if not areas and not scope and not (_one_name(request) and request.filters[0].op == "equals" and (
            all(not t.tags for t in things) or request.filters[0].value in request.quoted)):
        # where? the whole planet is no answer nobody asked for; but a name alone is a search for it,
        # wherever it is ('"Kurfürstendamm"', "「哲学の道」を地図に出して"): the name's index answers it; so is
        # a thing's name in quotes ('pub "The Crown"'; unquoted, the name may have taken the place's
        # words: "magasins nommés Vögele aux Pays-Bas")
        return None
    if _overlaps_attribute(request):
        return None
    if not _accounted(request, covered):
        return None
    by_place = [f.place for f in things]
    if len(areas) > 1 and any(p is None for p in by_place):
        # two places narrowing one area ("in Dendermonde, Belgium") or the same things in each place
        # ("hospitals in Leeds and in York"): the same features in each
        parts = [Part(tags + filters, k) for k in range(len(areas)) for tags in (t.tags for t in things)]
    else:
        parts = [Part(t.tags + filters, (t.place if len(areas) > 1 else 0) if areas else None) for t in things]
    names = [AREA_SET] if len(areas) == 1 else [f"{AREA_SET}{k + 1}" for k in range(len(areas))]
    head = [A.Placeholder(f"{{{{geocodeArea:{_quoted(a)}}}}}", into=n) for a, n in zip(areas, names)]
    body = []
    for part in parts:
        where = ([A.AreaFilter(names[part.area])] if part.area is not None else []) + scope
        body += [A.Query(t, list(part.filters) + where) for t in TYPES]
    settings = [A.Setting(k, v) for k, v in SETTINGS]
    if "csv" in request.output:
        # "as CSV (with name and website)": a table of id, type, position and the columns named; the
        # position of a way or relation is its centre
        columns = ",".join(["::id", "::type", "::lat", "::lon", *(_quoted(c) for c in _csv_columns(request)[0])])
        settings[0] = A.Setting("out", "csv", config=f"({columns})")
        outs = [["center"]]
    else:
        outs = OUTPUTS[next(iter(request.output))] if request.output else DEFAULT_OUT
    tail = [A.Recurse(o) if isinstance(o, str) else A.Out(list(o)) for o in outs]
    return A.Script(settings, head + statements + [A.Union_(body)] + tail)


def _named_roads(things: list[_Thing], filters: tuple) -> list[_Thing]:
    """Any road (``highway=*``: "streets", "roads") said to lack a name is one of :data:`NAMED_ROADS`.

    >>> unnamed = _named_roads([_Thing((A.Tag("highway", op="exists"),), None)], (A.Tag("name", op="not_exists"),))
    >>> overpassql.dump(A.Query("way", list(unnamed[0].tags))).startswith('way["highway"~"^(trunk|')
    True
    """
    if not any(isinstance(f, A.Tag) and f.key == "name" and f.op == "not_exists" for f in filters):
        return things
    road = A.Tag("highway", NAMED_ROADS, op="~")
    return [dataclasses.replace(t, tags=tuple(road if g.key == "highway" and g.op == "exists" else g for g in t.tags))
            for t in things]


def _one_name(r: Request) -> bool:
    """The request asks for one name and nothing else it reads ("'Central Library' in Leeds"); two names
    ("'Zamenhof' or 'Esperanto'") are two answers, which one statement of filters cannot be."""
    return len(r.filters) == 1 and r.filters[0].kind == "name" and not any(f.negated for f in r.features)


def _csv_columns(r: Request) -> tuple[list[str], list[tuple[int, int]]]:
    """The columns a CSV request names ("as CSV with name and website": name, website), name always
    first, and where their words stand: the keys of the attributes that are only a key. ([], []) for a
    request that asks no CSV."""
    if "csv" not in r.output:
        return [], []
    columns, spans = ["name"], []
    for m in r.attribute_words:
        if not m.attribute.yes and m.attribute.key:
            spans.append(m.span)
            if m.attribute.key not in columns:
                columns.append(m.attribute.key)
    return columns, spans


# ------------------------------------------------------------------ what is not composed

def _unsupported(r: Request) -> bool:
    """Parts of a request composition does not build: copy-edits keep them."""
    return bool(r.area_ids or r.uids or len(r.users) > 1 or r.types and not r.ids
                or r.ids and (any(not _link_words(f.text) for f in r.features) or r.places or r.around or r.in_view or r.bbox or r.users or r.dates)
                or any(not f.negated for f in r.brands) and any(f.negated for f in r.features) or len(r.output) > 1
                # a table is composed only where the request says "CSV" ("tables et aires de pique-nique")
                or r.output - set(OUTPUTS) - {"csv"} or "csv" in r.output and "csv" not in r.text.casefold() or r.in_view and (r.places or r.around) or r.bbox and (r.places or r.around))


def _when(r: Request) -> list | None:
    """"since 1 March 2024": ``newer`` than that day; "in the last 7 days": ``newer`` than overpass-turbo's
    ``{{date:7 days}}`` (the day the query runs, less the period); "between January and March 2024":
    ``changed`` from the first day to the end of the last (of its month where it names no day); [] without
    any; None for what is not built (a date with no since-cue, a period beside a date).

    >>> from geoql.nl.request import Request
    >>> _when(Request("", "", dates=("2024-01-01", "2024-03-01"), month_dates=("2024-03-01",)))
    [Changed(since='2024-01-01T00:00:00Z', until='2024-03-31T23:59:59Z', line=0)]
    """
    if r.periods:
        if r.dates or len(r.periods) != 1 or not _PERIOD.fullmatch(r.periods[0]):
            return None
        return [A.Newer(f"{{{{date:{r.periods[0]}}}}}")]
    if not r.dates:
        return []
    if not all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", d) for d in r.dates):
        return None
    if len(r.dates) == 2 and r.dates[0] < r.dates[1]:  # ("from 2024-01-01 to 2024-02-15": a since-cue, two ends)
        first, last = r.dates
        if last in r.month_dates:  # the whole month: its last day
            y, m = int(last[:4]), int(last[5:7])
            last = f"{y:04d}-{m:02d}-{calendar.monthrange(y, m)[1]:02d}"
        return [A.Changed(f"{first}T00:00:00Z", f"{last}T23:59:59Z")]
    if len(r.dates) != 1 or not r.since:
        return None
    return [A.Newer(f"{r.dates[0]}T00:00:00Z")]


# the words of an element's link pasted as the request ("openstreetmap.org/way/30123456")
_LINK_WORDS = frozenset({"http", "https", "www", "openstreetmap", "osm", "org"})


def _link_words(text: str) -> bool:
    """Whether ``text`` is words of an element's link only ("openstreetmap.org").

    >>> _link_words("openstreetmap org"), _link_words("ways")
    (True, False)
    """
    words = [t.fold for t in tokens(text) if not t.number]
    return bool(words) and all(w in _LINK_WORDS for w in words)


def _by_ids(r: Request) -> A.Script | None:
    """"way 50637691", "nodes 1 and 2": the elements by type and id, nothing else in the request."""
    cues = _cue_tokens(r.language)
    allowed = cues["ids"] | cues["stop"] | stopwords(r.language) | _LINK_WORDS | set(TYPE_LETTERS)
    for kind in r.output:
        allowed |= cues.get(kind, frozenset())
    if any(not t.number and t.fold not in allowed for t in tokens(r.text)):
        return None
    by_type: dict[str, list[str]] = {}
    for kind, number in r.ids:
        by_type.setdefault(kind, []).append(str(number))
    body = [A.Query(kind, [A.Ids(ids, short=len(ids) == 1)]) for kind, ids in by_type.items()]  # "(1,2)" is no QL
    outs = OUTPUTS[next(iter(r.output))] if r.output else [[]]
    statement = body[0] if len(body) == 1 else A.Union_(body)
    return A.Script([A.Setting(k, v) for k, v in SETTINGS], [statement] + [A.Out(list(o)) for o in outs])


# ------------------------------------------------------------------ features

@dataclass(frozen=True)
class _Thing:
    tags: tuple
    place: int | None


def _things(r: Request, covered: list) -> list[_Thing] | None:
    out = []
    cues = _cue_tokens(r.language)
    edits = cues["time"] | cues["stop"] | stopwords(r.language) if r.users or r.dates or r.periods else frozenset()
    # "whose name ends in station": the name cue and operation before the value are no thing
    # ... and a filter's own cue read apart ("와이파이 되는 카페": "되" of "되는", with)
    naming = cues["filters"] | cues["stop"] | stopwords(r.language) \
        if sum(f.kind == "name" for f in r.filters) == 1 or r.filters and all(f.kind == "yes" for f in r.filters) \
        else frozenset()
    columns = _csv_columns(r)[1]
    covered += columns  # each column's words are the table's header ("약국 이름이랑 전화번호 csv로")
    table_words = cues["csv"] | cues["stop"] | stopwords(r.language) if columns or "csv" in r.output else frozenset()
    for f in r.things:
        if f.span is not None and (f.span in columns or table_words and not f.tags and all(
                t.fold in table_words or any(a <= f.span[0] + t.start and f.span[0] + t.end <= b for a, b in columns)
                for t in tokens(f.text))):
            # "as CSV with name and website": a column; "CSV로 이름, 위도, 경도": a column after a particle,
            # the coordinates every table has
            covered.append(f.span)
            continue
        if edits and f.span is not None and all(t.fold in edits for t in tokens(f.text)) \
                and not any(m.score >= MIN_TAG_SCORE for m in f.tags):
            # "edits by bob since ...", "kim_osm이 ... 수정한 것": the edits are no thing (a thing the
            # lexicon is sure of is one, whatever its letters: "建物", a building, holds "物" of "もの")
            covered.append(f.span)
            continue
        # (in a script without spaces a token is one letter: "도서관" is no "도" + "서" + "관" of cue words)
        if naming and f.span is not None and all(t.fold in naming for t in tokens(f.text)) \
                and (len(tokens(f.text)) == 1 or not all(t.spaceless for t in tokens(f.text))
                     or _in_cue(r.text, f.span, cues["phrases"])):
            covered.append(f.span)
            continue
        if f.span is not None and any(g.kind == "name" for g in r.filters) and any(
                m.attribute.key == "name" and m.span[0] <= f.span[0] and f.span[1] <= m.span[1] for m in r.attribute_words):
            covered.append(f.span)  # the word "name" of a name pattern, read apart: "улицы, название которых начинается с"
            continue
        if not f.tags and f.span is not None and any(flt.kind == "compare" for flt in r.filters) \
                and any(m.span == f.span and not m.attribute.yes for m in r.attribute_words):
            continue  # the measure a comparison compares, read as a phrase of its own ("高度超过300米的建筑"): _compare's
        tags = _feature_tags(r, f, covered)
        if tags is None:
            return None
        out.append(_Thing(tuple(_tag(t) for t in tags), f.place))
    return out


def _in_cue(text: str, span: tuple[int, int], phrases: frozenset[str]) -> bool:
    """Whether a phrase written without spaces is a cue phrase, or part of one the text around it
    completes ("入っ" of "が入っている": the name holds it)."""
    phrase = text[span[0]:span[1]]
    if "".join(t.fold for t in tokens(phrase)) in phrases:
        return True
    # (cue phrases are kept without spaces; the request may space them: "'행복'으로 시작하는")
    start = max(0, span[0] - MAX_CUE_LETTERS)
    around = _SPACES.sub("", text[start:span[1] + MAX_CUE_LETTERS])
    at = len(_SPACES.sub("", text[start:span[0]]))
    phrase = _SPACES.sub("", phrase)
    for p in phrases:
        k = p.find(phrase)
        if len(p) > len(phrase) and k >= 0 and around[at - k:at - k + len(p)] == p:
            return True
    return False


_SPACES = re.compile(r"\s+")


# The longest cue phrase of a script without spaces looked for after a phrase (letters).
MAX_CUE_LETTERS = 12


def _feature_tags(r: Request, f: Feature, covered: list) -> tuple[str, ...] | None:
    """The tags of one feature phrase: exactly one sure lexicon match, besides generic words
    ("Lidl stores", "dm Märkte"), or None. Marks its words covered."""
    if f.span is None:
        return None
    generic = {(a - f.span[0], b - f.span[0]) for a, b in r.generic_words if f.span[0] <= a and b <= f.span[1]}
    sure = [m for m in f.tags if m.score >= MIN_TAG_SCORE]
    # a match inside an attribute's words is theirs, beside another: "saat" of "24 saat açık eczaneler",
    # "drive-through" (a fast food place to iD) of "drive-through restaurants"
    words = [(a - f.span[0], b - f.span[0]) for a, b in (w.span for w in r.attribute_words)
             if (a, b) != tuple(f.span) and any(flt.span == (a, b) or flt.span and flt.span[0] <= a and b <= flt.span[1]
                                                for flt in r.filters if flt.kind in ("yes", "no", "absent"))]
    sure = [m for m in sure if not any(a <= m.span[0] and m.span[1] <= b for a, b in words)] or sure
    # a generic word beside a name adds nothing ("Lidl stores"); alone it is the thing ("tiendas": shops)
    matches = [m for m in sure if tuple(m.span) not in generic] or sure
    brand = _brand_of_thing(matches)
    if brand is not None:
        matches = [brand]
    head = _head_of_compound(f.text, matches, r.language)
    if head is not None:
        covered.append((f.span[0] + matches[0].span[0], f.span[0] + matches[0].span[1]))
        matches = [head]
    if len(matches) != 1:
        return None
    m = matches[0]
    end = m.span[1]
    if f.text[end:end + 1] in ("'", "’"):
        # a suffix after an apostrophe is the word's ending: Turkish "atm'ler" (ATMs)
        end += 1 + len(re.match(r"\w*", f.text[end + 1:]).group())
    covered += [(f.span[0] + m.span[0], f.span[0] + end)]
    covered += [(f.span[0] + a, f.span[0] + b) for a, b in generic]
    return tuple(m.tags)


def _head_of_compound(text: str, matches: list, language: str) -> FeatureMatch | None:
    """Of two things of one key named side by side, the second, where a compound's head comes last and
    the first names what the second belongs to: its value begins the second's ("고속도로 나들목", a
    motorway's junction: ``highway=motorway_junction``) or is any value of the key. Not two things
    listed without a comma ("청주 약국 병원": pharmacies and hospitals), nor in the languages whose head
    comes first ("sortie d'autoroute").

    >>> from geoql.nl.model import FeatureMatch
    >>> road, junction = FeatureMatch((0, 4), ("highway=motorway",), 1.0), FeatureMatch((5, 8), ("highway=motorway_junction",), 1.0)
    >>> _head_of_compound("고속도로 나들목", [road, junction], "ko").tags, _head_of_compound("고속도로 나들목", [road, junction], "fr")
    (('highway=motorway_junction',), None)
    >>> pharmacy, hospital = FeatureMatch((3, 5), ("amenity=pharmacy",), 1.0), FeatureMatch((6, 8), ("amenity=hospital",), 1.0)
    >>> _head_of_compound("청주 약국 병원", [pharmacy, hospital], "ko") is None
    True
    """
    if len(matches) != 2 or language not in HEAD_LAST_LANGUAGES:
        return None
    first, second = sorted(matches, key=lambda m: m.span)
    if len(first.tags) != 1 or len(second.tags) != 1 or text[first.span[1]:second.span[0]].strip():
        return None
    (key, _, value), (head_key, _, head_value) = first.tags[0].partition("="), second.tags[0].partition("=")
    if key != head_key or head_value == "*" or not (value == "*" or head_value.startswith(value + "_")):
        return None
    return second


# Languages whose compound nouns end in their head ("bus station", "Autobahnausfahrt", "高速公路出口"); in the
# Romance and Slavic ones a compound's head comes first ("sortie d'autoroute", "развязки автомагистралей").
HEAD_LAST_LANGUAGES = frozenset({"en", "de", "nl", "zh", "yue", "ja", "ko", "tr"})


def _brand_of_thing(matches: list) -> FeatureMatch | None:
    """A brand and the thing it is named beside, as one match: the thing's tags and the brand's ("CU
    편의점": ``shop=convenience`` + ``brand=CU``; "Shell petrol stations": ``amenity=fuel`` + ``brand=Shell``,
    not the convenience shop NSI files Shell under). None unless the phrase is exactly those two."""
    if len(matches) != 2:
        return None
    # the brand as the brand writes it ("points" is no "Point S")
    brands = [m for m in matches if any(t.startswith("brand=") for t in m.tags)
              and [t.fold for t in tokens(m.text)] == [t.fold for t in tokens(m.surface)]]
    if len(brands) != 1 or any(any(t.startswith("brand=") for t in m.tags) for m in matches if m is not brands[0]):
        return None
    brand, thing = brands[0], next(m for m in matches if m is not brands[0])
    a, b = min(brand.span[0], thing.span[0]), max(brand.span[1], thing.span[1])
    tags = (*thing.tags, *(t for t in brand.tags if t.startswith("brand=")))
    return dataclasses.replace(thing, span=(a, b), tags=tags)


def _tag(text: str, op: str = "=") -> A.Tag:
    key, tilde, pattern = text.partition("~")
    if tilde and "=" not in key:  # an attribute's values as a pattern: "surface~^(unpaved|gravel|...)$"
        return A.Tag(key, pattern, op="!~" if op == "!=" else "~")
    key, _, value = text.partition("=")
    if value == "*":
        return A.Tag(key, op="exists" if op == "=" else "not_exists")
    return A.Tag(key, value, op=op)


# ------------------------------------------------------------------ attributes

def _filters(r: Request, things: list[_Thing], covered: list) -> tuple | None:
    """Every filter of the request as tag filters for each thing, or None when one is not read."""
    out: list = []
    columns = _csv_columns(r)[1]
    seen: set = set()
    for flt in r.filters:
        if flt.span is not None and any(a <= flt.span[0] and flt.span[1] <= b for a, b in columns):
            covered.append(flt.span)  # a CSV column, not a filter
            continue
        if (flt.kind, flt.span) in seen and flt.span is not None:
            # one attribute over several phrases ("24時間営業": "時", "営業"): one filter, all its phrases
            if flt.feature is not None and r.features[flt.feature].span is not None:
                covered.append(r.features[flt.feature].span)
            continue
        seen.add((flt.kind, flt.span))
        made = _filter(r, flt, things, covered)
        if made is None:
            return None
        # (a range tests its key twice: "between 50 and 100 m tall" has it once, with both bounds)
        out += [x for x in made if x not in out]
        if flt.span is not None:
            covered.append(flt.span)
        if flt.feature is not None and r.features[flt.feature].span is not None:
            covered.append(r.features[flt.feature].span)
    return tuple(out)


def _attribute(r: Request, flt: Filter) -> Attribute | None:
    """The one attribute the filter's words name, all of them, else None."""
    if flt.span is None:
        return None
    found = [m for m in r.attribute_words if flt.span[0] <= m.span[0] and m.span[1] <= flt.span[1]]
    if len(found) != 1 or fold(found[0].text) != fold(flt.text.strip()):
        return None
    return found[0].attribute


def _filter(r: Request, flt: Filter, things: list[_Thing], covered: list) -> list | None:
    if flt.kind == "name":
        # the word "name" itself ("whose name contains Pizza") is the filter's key
        covered += [m.span for m in r.attribute_words if m.attribute.key == "name"]
        return _name_filter(flt)
    if flt.kind == "compare":
        return _compare(r, flt, things, covered)
    if flt.kind == "yes" and flt.span is not None and any(
            f.kind == "compare" and f.span is not None and f.span[0] < flt.span[1] and flt.span[0] < f.span[1]
            for f in r.filters):
        return []  # "con limite di velocità superiore a 90": the comparison's own attribute, read twice
    if flt.kind == "yes" and flt.span is not None and any(f.kind == "name" for f in r.filters):
        words = [m for m in r.attribute_words if flt.span[0] <= m.span[0] and m.span[1] <= flt.span[1]]
        if words and all(m.attribute.key == "name" for m in words):
            return []  # "with a name starting with bio": the name filter's own words, read apart
    attribute = _attribute(r, flt)
    if attribute is None:
        # "shops except supermarkets": a negated feature the lexicon ties to one tag
        negated = r.features[flt.feature] if flt.feature is not None else None
        if flt.kind in ("no", "absent") and negated is not None and negated.negated:
            tags = _feature_tags(r, negated, covered)
            wanted = _thing_tags(things)
            # "petrol stations that are not Shell": a brand is left out by its brand tag, whatever it sells
            brand = [t for t in tags or () if t.startswith("brand=")]
            if len(brand) == 1:
                return [_tag(brand[0], "!=")]
            # "restaurants that are not pizzerias": the lexicon gives both one tag; nothing would be left
            if tags is not None and len(tags) == 1 and not tags[0].endswith("=*") and tags[0] not in wanted:
                return [_tag(tags[0], "!=")]
            # "restaurants sauf les pizzerias" (amenity=fast_food + cuisine=pizza): the one tag of a key the
            # things do not test is what sets them apart
            keys = {str(t.key) for th in things for t in th.tags}
            own = [t for t in tags or () if t.partition("=")[0] not in keys and not t.endswith("=*")]
            if tags is not None and len(tags) > 1 and len(own) == 1 and any(t.partition("=")[0] in keys for t in tags):
                return [_tag(own[0], "!=")]
        return None
    if flt.kind == "yes":
        return [_tag(t) for t in attribute.yes] if len(attribute.yes) == 1 else (
            [A.Tag(_key_of(attribute, things))] if not attribute.yes else None)
    # "without wheelchair access", "ohne WLAN": a property with a tag for not having it says so; a key
    # without one ("without a name", "sans adresse") is missing; a value of a key ("sin comida china",
    # "que no sean chinos") is the key holding another value
    if flt.kind in ("absent", "no") and not attribute.no and not attribute.yes or flt.op == "unrecorded":
        return [A.Tag(_key_of(attribute, things), op="not_exists")]
    if attribute.no:
        return [_tag(t) for t in attribute.no] if len(attribute.no) == 1 else None
    return [_tag(t, "!=") for t in attribute.yes]


def _thing_tags(things: list[_Thing]) -> set[str]:
    """The things' tags as ``key=value`` (``key=`` for a key alone): what ``Attribute.key_for`` reads."""
    return {str(t.key) + "=" + str(t.value) for th in things for t in th.tags}


def _key_of(attribute: Attribute, things: list[_Thing]) -> str:
    """The key ``attribute`` tests on every one of ``things`` (a road's postcode is its ``postal_code``, a
    peak's height its ``ele``), where they agree; else its own key."""
    keys = {attribute.key_for(_thing_tags([th])) for th in things}
    return keys.pop() if len(keys) == 1 else attribute.key


def _name_filter(flt: Filter) -> list | None:
    value = (flt.value or "").strip()
    if not value:
        return None
    # "not_contains": a name that lacks the value ("whose name does not contain Coffee"): a name there is,
    # which ["name"!~...] alone does not say (it holds for elements with no name too)
    negated, op = (flt.op or "").startswith("not_"), (flt.op or "").removeprefix("not_")
    named = [A.Tag("name", op="exists")] if negated else []
    if op == "equals":
        return named + [A.Tag("name", value, op="!=" if negated else "=")]
    pattern = {"contains": "{}", "starts": "^{}", "ends": "{}$"}.get(op)
    if pattern is None:
        return None
    return named + [A.Tag("name", pattern.format(re.escape(value)), op="!~" if negated else "~", case_insensitive=True)]


def _compare(r: Request, flt: Filter, things: list[_Thing], covered: list) -> list | None:
    """"more than 10 floors", "peaks higher than 4000 m": ``if:`` on the attribute's key, in its unit."""
    if flt.value is None or flt.op not in (">", ">=", "<", "<=", "=") or flt.unit not in METRES:
        return None
    words = [m for m in r.attribute_words if not m.attribute.yes]
    if len({m.attribute.id for m in words}) > 1:
        # the comparison's own word names an attribute too ("higher" of "10 kattan yüksek", higher than
        # 10 floors): the noun it compares decides
        cue = _cue_tokens(r.language)["filters"]
        nouns = [m for m in words if not all(t.fold in cue for t in tokens(m.text))]
        if len({m.attribute.id for m in nouns}) != 1:
            return None
        covered += [m.span for m in words if m not in nouns]
        words = nouns
    tags = _thing_tags(things)
    if words:
        attribute = words[0].attribute
        covered += [m.span for m in words]
    elif flt.unit is not None and "height" in attributes() and (flt.op in (">", ">=") or any(
            g is not flt and g.kind == "compare" and g.op in (">", ">=") and g.unit == flt.unit for g in r.filters)) \
            and not any(str(t.key) in LINEAR_KEYS for th in things for t in th.tags):
        # "Berggipfel über 3000 m": a length with no attribute word is a height (a peak's is its ele); not
        # below one ("短過 300 米嘅道路", roads shorter than 300 m), but for a range's upper bound ("peaks
        # between 1000 and 2000 m"), nor of a line: that is its length
        attribute = attributes()["height"]
    else:
        return None
    key = attribute.key_for(tags)
    # a speed's kilometres are per hour, as its tag writes them ("制限速度60キロ超": over 60 km/h)
    value = read_number(flt.value) * (1.0 if key in SPEED_KEYS else METRES[flt.unit])
    if attribute.digits is not None:
        # "at least 4 stars": stars are "4", "4S", "3.5"; number() reads no "4S", the first digit does
        low, high = attribute.digits
        if value != int(value) or not low <= value <= high:
            return None
        first = {">": int(value) + 1, ">=": int(value), "<": low, "<=": low, "=": int(value)}[flt.op]
        last = {">": high, ">=": high, "<": int(value) - 1, "<=": int(value), "=": int(value)}[flt.op]
        if first > last:
            return None
        digits = str(first) if first == last else f"[{first}-{last}]"
        if flt.op in (">", ">=") and first <= 9:
            # at least: no cap at the scale's top, a value above it ("10") is more too
            digits = f"([{first}-9]|[1-9][0-9])" if first < 9 else "(9|[1-9][0-9])"
        return [A.Tag(key, f"^{digits}", op="~")]
    number = f"{value:g}"
    if flt.op == "=" and (flt.unit is None or METRES[flt.unit] == 1 or key in SPEED_KEYS):
        # that much, as mappers write it: ["maxspeed"="30"] ("a speed limit of 30", "Tempolimit 30")
        return [A.Tag(key, number, op="=")]
    script = overpassql.parse(f"nwr(if:number(t[{_quoted(key)}]){'==' if flt.op == '=' else flt.op}{number});")
    test = next(f for f in script.statements[0].filters if isinstance(f, A.IfFilter))
    return [A.Tag(key), test]


# ------------------------------------------------------------------ where

def _areas(r: Request) -> list[str]:
    """The areas of the request, in order: places written one after the other with only a comma
    between them are one area, as geocoding takes it ("Saint-Étienne, France", "Montevideo,Uruguay":
    the second narrows the first); places joined by a word ("Leeds and York") are one area each, and so
    are the places of a list that ends with one ("Bonn, Köln and Düsseldorf")."""
    out: list[str] = []
    last = None
    places = [p for p in r.places if p.role != "centre"]
    ands = _and_words(r.language)
    joined = [k > 0 and p.span and places[k - 1].span and p.role == places[k - 1].role == "area"
              and not r.text[places[k - 1].span[1]:p.span[0]].strip(" ,") for k, p in enumerate(places)]
    for k in range(len(places) - 1, 0, -1):
        if joined[k] and k + 1 < len(places) and not joined[k + 1] and places[k + 1].span and places[k].span \
                and places[k + 1].role == "area" and fold(r.text[places[k].span[1]:places[k + 1].span[0]].strip(" ,")) in ands:
            # the list's last comma ends at a word: "A, B and C" is three places, back to its first
            j = k
            while j > 0 and joined[j]:
                joined[j] = False
                j -= 1
    for k, p in enumerate(places):
        if last is not None and joined[k]:
            start = r.text.rfind(out[-1], 0, last.span[1]) if out[-1] in r.text else last.span[0]
            out[-1] = r.text[start:p.span[1]]
        else:
            out.append(_place_name(p.name, r.language))
        last = p
    return out


@lru_cache(maxsize=16)
def _and_words(lang: str) -> frozenset[str]:
    """The words that join places in any table and in ``lang``'s own ("and", "und", "oder", "&")."""
    own = own_table(lang)
    return frozenset(fold(w) for t in (*all_tables().values(), *([own] if own is not None else []))
                     for w in t["place"]["and"])


def _place_name(name: str, lang: str) -> str:
    """A place in its dictionary form where the language inflects it ("Krakowie" -> "Kraków")."""
    return dictionary_form(name, lang)


def _quoted(text: str) -> str:
    return overpassql.ql.quote(text)


def _around(r: Request, covered: list, statements: list) -> A.Around | None:
    """around N m of a named place, of a point, or of other features (a named set)."""
    a = r.around
    if a.beyond:
        return None  # farther than the distance: a difference of sets, not composed
    radius = f"{a.radius_m:g}"
    if a.centre == "coords" and r.coords is not None:
        return A.Around(radius, [f"{r.coords[0]:g}", f"{r.coords[1]:g}"])
    if a.centre == "place" and a.place:
        return A.Around(radius, [f"{{{{geocodeCoords:{_quoted(_place_name(a.place, r.language))}}}}}"])
    if a.centre == "features" and a.of_request is not None and a.of:
        inner = a.of_request
        # a place in the centre phrase is the request's own ("名古屋の駅": the stations of Nagoya, in Nagoya)
        if inner.filters or inner.around or len(inner.things) != 1 \
                or any(p.name not in r.place_names for p in inner.places):
            return None
        sub: list = [p.span for p in inner.places if p.span is not None]
        tags = _feature_tags(inner, inner.things[0], sub)
        if tags is None or not _accounted(inner, sub):
            return None
        start = r.text.find(a.of)
        if start < 0:
            return None
        covered.append((start, start + len(a.of)))
        areas = _areas(r)
        if len(areas) > 1:
            return None  # the centres of which of the areas: not composed ("…в районе Эшампле в Барселоне")
        area = [A.AreaFilter(AREA_SET)] if areas else []
        statements.append(A.Query("nwr", [_tag(t) for t in tags] + area, into=CENTRE_SET))
        return A.Around(radius, set=CENTRE_SET)
    return None


def _overlaps_attribute(r: Request) -> bool:
    """A place read over attribute or negation words ("non accessibles en fauteuil roulant à Nice"
    reads a place "fauteuil roulant", "上海不是星巴克的咖啡馆" one "上海不"): the reading is wrong
    there, so nothing is composed."""
    spans = [m.span for m in r.attribute_words]
    negation = _cue_tokens(r.language)["negation"]
    # (a landmark an around is centred on was read by the around's own cues, only a negation's own words
    # tell a misreading there: "dal duomo di milano" is one, "from resorts without piste type" none)
    # (a particle of a name that is a word of a negation cue is none: "val di fassa", "serra da estrela")
    suspect = [p for p in r.places
               if (any(t.fold in negation for t in tokens(p.name) if not t.spaceless)
                   and not (p.role != "centre" and _particle_name(p.name, r.language))
                   if p.role != "centre" else _holds_negation([t.fold for t in tokens(p.name) if not t.spaceless]))
               or any(cue in "".join(fold(p.name).split()) for cue in _spaceless_negation())]
    # a place the gazetteer knows is one, whatever its words ("são" of São Paulo also ends a negation's
    # scope); the gazetteer is read only for a suspect
    return any(p.span and a < p.span[1] and p.span[0] < b and (a, b) != p.span for p in r.places for a, b in spans) or \
        any(stem_fold(p.name) not in gazetteer() for p in suspect)


def _particle_name(name: str, language: str) -> bool:
    """Whether ``name`` is words joined by a place name's particles only ("val di fassa", "serra da
    estrela"), with no whole negation cue in it.

    >>> _particle_name("val di fassa", "it"), _particle_name("bars sans wifi", "fr"), _particle_name("Val di Fassa", "it")
    (True, False, False)
    """
    words = [t.fold for t in tokens(name) if not t.spaceless]
    particles = _cue_tokens(language)["particles"]
    # (lower case only: a user's typing; a name-cased one was read by its capitals, and the composed
    # answer to a name-cased OverpassNL request scored below its pick's: "Hoya de Huesca", -2.1 OQS summed)
    return len(words) >= 3 and name == name.lower() and all(w in particles for w in words[1:-1:2]) \
        and not _holds_negation(words)


def _holds_negation(words: list[str]) -> bool:
    """Whether a whole negation cue ("without", "privo di", "sans") stands in ``words``, not only a word
    that ends a negation's scope ("di", "de", "and")."""
    return any(tuple(words[i:i + len(cue)]) == cue for cue in _negation_cues() for i in range(len(words)))


@lru_cache(maxsize=1)
def _negation_cues() -> frozenset[tuple[str, ...]]:
    """The negation cues written with spaces, as folded token tuples, every table's."""
    return frozenset(cue for t in all_tables().values()
                     for phrase in _phrases([t["negation"]["before"], t["negation"]["after"]])
                     if (cue := tuple(tok.fold for tok in tokens(phrase) if not tok.spaceless)))


@lru_cache(maxsize=1)
def _spaceless_negation() -> frozenset[str]:
    """Negation cues written without spaces, whole ("不是", "아닌", "じゃない"): a syllable of one ("제" of
    "제외", except) is no negation inside a name ("제주")."""
    out: set[str] = set()
    for t in all_tables().values():
        for cue in _phrases(t["negation"]):
            folded = "".join(fold(cue).split())
            if folded and all(tok.spaceless for tok in tokens(folded)):
                out.add(folded)
    return frozenset(out)


def _phrases(value) -> list[str]:
    """Every cue phrase of a cue-table entry: a phrase, a list of them, or a dict of lists (its values)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [w for v in value.values() for w in _phrases(v)]
    return [w for v in value for w in _phrases(v)] if isinstance(value, (list, tuple)) else []


# ------------------------------------------------------------------ every word accounted for

@lru_cache(maxsize=16)
def _cue_tokens(lang: str = "en") -> dict[str, frozenset[str]]:
    """Folded tokens of the cue phrases a composed query accounts for, by what was read: every
    table of ``all_tables`` and ``lang``'s own where it leaves it out ("w promieniu", "görünümdeki",
    "huidige kaartweergave" account for a Polish, Turkish or Dutch request's words)."""
    def toks(phrases) -> set[str]:
        return {t.fold for phrase in _phrases(phrases) for t in tokens(phrase)}

    def whole(phrases) -> set[str]:
        return {"".join(t.fold for t in tokens(phrase)) for phrase in _phrases(phrases)}

    own = own_table(lang)
    tables = [*all_tables().values(), *([own] if own is not None else [])]
    words = cue_words()
    return {
        # whole cue phrases, their letters run together: a phrase of a script without spaces is one
        # of them or none ("이름이" is a name cue; "도서관" is no run of cue letters)
        "phrases": frozenset(whole([[t["filters"], t["names"], t["stop"], t["markers"], t["joiners"]] for t in tables])),
        "stop": frozenset(toks([t["stop"] for t in tables]) | toks([t["markers"] for t in tables])
                          | toks([t["place"]["prepositions"] for t in tables])
                          | toks([t["place"].get("postpositions", []) for t in tables])
                          | toks([t["place"]["articles"] for t in tables]) | toks([t["joiners"] for t in tables])
                          | toks([t["place"]["and"] for t in tables]) | words["stop"]),
        "view": frozenset(toks([t["view"] for t in tables])),
        "around": frozenset(toks([t["around"] for t in tables]) | toks([t["units"] for t in tables])),
        "filters": frozenset(toks([t["filters"] for t in tables])),
        "negation": frozenset(toks([t["negation"] for t in tables])),
        "particles": frozenset(toks([t["place"].get("particles", []) for t in tables])),
        "ids": frozenset(toks([[t["types"], t.get("id_types", {}), t["ids"]["id"], t.get("id_after", [])] for t in tables])
                         | toks(EDITOR_TYPE_WORDS)),
        "time": frozenset(toks([[t["time"]["since"], t["months"]] for t in tables]) | toks(CHANGED_WORDS)
                          | toks([[t["time"].get(k, []) for k in ("last", "one", "units", "edited")]
                                  + [list(t["time"].get("relative", {}))] for t in tables])),
        # the words of editing that end on a prefix ("aggiornat*": "aggiornati", "aggiornate")
        "time_prefixes": frozenset(fold(w[:-1]) for t in tables for w in t["time"].get("edited", []) if w.endswith("*")),
        "users": frozenset(toks([t["users"] for t in tables])),
        "names": frozenset(toks([t["names"] for t in tables])),
        # (output_words' kinds: those of every table; the words: these tables')
        **{kind: frozenset(toks([t[section].get(kind, []) for t in tables for section in ("output", "output_support")]))
           for kind in output_words()},
    }


def _accounted(r: Request, covered: list) -> bool:
    """Every token of the request is covered by a part of the query or is a cue word of what was read."""
    cues = _cue_tokens(r.language)
    allowed = set(cues["stop"]) | stopwords(r.language)
    if r.in_view:
        allowed |= cues["view"]
    if r.around is not None or any(f.unit for f in r.filters):
        allowed |= cues["around"]  # "within 50 m", "higher than 4000 m": the distance words and units
    if r.filters:
        allowed |= cues["filters"]
    if any(f.negated for f in r.features) or any(f.kind in ("absent", "no") for f in r.filters):
        allowed |= cues["negation"]  # (a filter's own negation: "toilets that arent free")
    if sum(not f.negated for f in r.features) > 1:
        allowed |= {w for w in LIST_SIGNS if w.isalpha()}  # "pubs n bars": the list's sign
    if any(f.kind == "name" for f in r.filters):
        allowed |= cues["names"]  # "restaurante llamado \"Casa Lucio\"": the name's cue word
    prefixes: frozenset[str] = frozenset()
    if r.dates or r.periods:
        allowed |= cues["time"] | ORDINAL_ENDINGS  # "le 1er mars": the day's ordinal ending
        prefixes = cues["time_prefixes"]
    if r.users:
        allowed |= cues["users"] | cues["time"]
        covered += [m.span() for u in r.users for m in re.finditer(re.escape(u), r.text)]
    if r.bbox is not None:
        # the box's name: "im Bereich 53.54,9.98,53.56,10.01", "31.22,121.46,31.24,121.50 范围内的公厕"
        allowed |= cues["view"] | cues["around"]
    if r.bbox is not None or r.dates:
        # the box's or date's numbers, and a box typed without spaces ("52.50,13.35,52.54,13.42": one token)
        covered += [(t.start, t.end) for t in tokens(r.text)
                    if t.number or r.bbox is not None and t.text and all(ch.isdigit() or ch in ".,-" for ch in t.text)]
    for kind in r.output:
        allowed |= cues.get(kind, frozenset())
    return not _unaccounted(r, covered, allowed, prefixes)


def _unaccounted(r: Request, covered: list, allowed: set, prefixes: frozenset[str] = frozenset()) -> list[str]:
    """The tokens of ``r`` no part of the query covers and no cue of what was read allows (as a word, or
    one of the cues' ``prefixes`` as its start)."""
    out = []
    # a place's case ending after an apostrophe is the place ("kocaeli'deki", "Trabzon'daki", "Paris's")
    ends = {p.span[1] + 1 for p in r.places if p.span is not None and r.text[p.span[1]:p.span[1] + 1] in "'’"}
    # ... and so is a user's ("mehmet_k'nin son 30 günde yaptığı değişiklikler")
    ends |= {m.end() + 1 for u in r.users for m in re.finditer(re.escape(u), r.text) if r.text[m.end():m.end() + 1] in "'’"}
    for t in tokens(r.text):
        if any(a <= t.start and t.end <= b for a, b in covered) or t.start in ends:
            continue
        if t.number and r.coords is not None:
            continue  # the point's coordinates ("around 40.7128,-74.0060"): the around's centre
        if t.fold in allowed or not any(ch.isalnum() for ch in t.fold) or any(t.fold.startswith(p) for p in prefixes):
            continue
        out.append(t.text)
    return out


# ------------------------------------------------------------------ the gate

def prefer_composed(request: Request | None, candidates: list[Candidate], best: Candidate | None) -> Candidate | None:
    """The answer of ``compile()``: the composed query when ``request`` is fully read, unless the
    backend's pick ``best`` already says the same (:func:`same_facts`: then it stays, so a pick in the
    benchmark's own style keeps its form); ``best`` otherwise. The composed query joins ``candidates``
    first, marked ``source="composed"``.

    >>> from geoql.nl.request import Knowledge, read_request
    >>> from geoql.nl.lexicon import Lexicon
    >>> r = read_request("museums in Dresden", Knowledge(lexicon=Lexicon.default()))
    >>> cands = [Candidate('area[name="Dresden"]->.a;nwr[shop=bakery](area.a);out;', True)]
    >>> prefer_composed(r, cands, cands[0]).source, [c.source for c in cands]
    ('composed', ['composed', 'backend'])
    >>> same = Candidate('{{geocodeArea:"Dresden"}}->.a;nwr["tourism"="museum"](area.a);out;', True)
    >>> prefer_composed(r, [same], same).source
    'backend'
    """
    query = compose(request)
    if query is None:
        return best
    if best is not None and best.valid and same_facts(query, best.query):
        return best
    composed = Candidate(query, True, source="composed")
    candidates.insert(0, composed)
    return composed


_AREA_NAME = re.compile(r'\{\{geocodeArea:\s*"?([^"}]*)"?\s*\}\}')


@lru_cache(maxsize=256)
def _parsed(query: str) -> A.Script | None:
    """``query`` parsed once for the gate's checks (:func:`query_facts`, :func:`_repeats`,
    :func:`_drops_result` read the same pick); None where it does not parse. Read only: shared."""
    try:
        return overpassql.parse(query)
    except Exception:  # an unparsable pick carries no facts
        return None


def query_facts(query: str) -> tuple | None:
    """What a query selects, without its style: the tag filters of each statement (as a set of sets,
    each with whether it is measured by an around), the folded names of its areas (with the boxes it
    types and the map view), its around radii and its out options; an element's id counts as a
    filter, with its type. None: it does not parse.

    >>> query_facts("(node(1);way(2););out;")[0] == query_facts("way(id:1,2);out;")[0]
    False
    >>> query_facts("(node(1);node(2););out;")[0] == query_facts("node(id:1,2);out;")[0]
    True
    """
    script = _parsed(query)
    if script is None or script.errors:
        return None
    selects, areas, radii, outs, ids = set(), set(), set(), set(), set()
    for node in A.walk(script):
        # a box typed in and the map view are places too ("bus stops in 52.5,13.35,52.54,13.42" is no view)
        if isinstance(node, A.BBox):
            areas.add(("box", node.south, node.west, node.north, node.east))
        elif isinstance(node, A.PlaceholderFilter) and "{{bbox}}" in node.text \
                or isinstance(node, A.Setting) and "{{bbox}}" in node.value:
            areas.add(("view",))
        if isinstance(node, A.Placeholder):
            areas.update(fold(m) for m in _AREA_NAME.findall(node.text))
        elif isinstance(node, A.Query):
            tags = frozenset(overpassql.ql.Dumper().dump(f) for f in node.filters
                             if isinstance(f, (A.Tag, A.IfFilter, A.Newer, A.Changed, A.User, A.Uid)))
            # elements by id, each of its type, however the statements group them: "node(id:1,2)" is
            # "node(1);node(2)", not "way(1);way(2)"
            ids.update((node.type, i) for f in node.filters if isinstance(f, A.Ids) for i in f.ids)
            if node.type == "area":
                areas.update(fold(f.value) for f in node.filters if isinstance(f, A.Tag) and f.key.startswith("name"))
            else:
                # which side of an around a statement is on: "playgrounds near schools" is not "schools
                # near playgrounds"; a statement with no tag selects everything there ("node(area.a)")
                selects.add((tags, any(isinstance(f, A.Around) for f in node.filters)))
            radii.update(float(f.radius) for f in node.filters if isinstance(f, A.Around))
            # the point an around is measured from, where a placeholder names it: "{{geocodeCoords:Ayasofya}}"
            # is not "{{center}}" (the map's centre)
            areas.update(("centre", fold(re.sub(r'["{}]', "", c))) for f in node.filters if isinstance(f, A.Around)
                         for c in f.coords if c.startswith("{{"))
        elif isinstance(node, A.Out):
            # a number is a limit ("out 2"): a pick that prints two of them is not what was asked
            outs.update(o for o in node.options if o in ("count", "geom", "center", "meta", "tags") or o.isdigit())
    if ids:
        selects.add(("ids", frozenset(ids)))
    return frozenset(selects), frozenset(areas), frozenset(radii), frozenset(outs)


def _repeats(query: str) -> bool:
    """Whether a union of ``query`` holds the same statement twice (a copy-edit that wrote the ids
    asked into each of its neighbour's statements: "(node(id:1,2);node(id:1,2);…)").

    >>> _repeats("(node(id:1,2);node(id:1,2););out;"), _repeats("(node(id:1);>;way(id:1);>;);out;")
    (True, False)
    """
    script = _parsed(query)
    if script is None:
        return False
    for union in (s for s in script.statements if isinstance(s, A.Union_)):
        # (queries only: a recursion after each, "(node…;>;way…;>;)", is the house style of some gold queries)
        queries = [overpassql.dump(A.Script([], [b])) for b in union.body if isinstance(b, A.Query)]
        if len(set(queries)) < len(queries):
            return True
    return False


def _drops_result(query: str) -> bool:
    """Whether ``query`` selects elements into the default set and selects again before printing them,
    with a statement that does not read them: the first result is never printed ("(node[bar]);
    (node[restaurant]);out;" prints restaurants only).

    >>> _drops_result('(node["amenity"="bar"];);(node["amenity"="pub"];);out;')
    True
    >>> _drops_result('(node["amenity"="bar"];);out;(node["amenity"="pub"];);out;')
    False
    >>> _drops_result('node["amenity"="bar"];(._;>;);out;'), _drops_result('area["name"="Bonn"];node(area);out;')
    (False, False)
    """
    script = _parsed(query)
    if script is None:  # (an unparsable pick is judged elsewhere)
        return False
    pending = False
    for stmt in script.statements:
        if isinstance(stmt, A.Out):
            if stmt.set in (None, "_"):
                pending = False
            continue
        if _reads_default(stmt):
            pending = False  # (read on, whatever the statement writes: "map_to_area->.b", "node(w)->.a")
        if getattr(stmt, "into", None) != "_":
            continue
        if pending:
            return True
        # (a union that also fills named sets is kept for them: "(way[…];node(w)->.a;…);node.a.b;")
        pending = isinstance(stmt, (A.Query, A.Union_)) and not (isinstance(stmt, A.Query) and stmt.type == "area") \
            and not any(getattr(n, "into", "_") != "_" for n in A.walk(stmt) if n is not stmt)
    return False


def _reads_default(stmt) -> bool:
    """Whether a statement reads the default set ``_`` (``._``, ``>``, ``(area)``, ``(around:…)``…)."""
    if isinstance(stmt, (A.Make, A.Block)) or isinstance(stmt, (A.MapToArea, A.Recurse)) \
            and getattr(stmt, "set", None) in (None, "_"):
        return True  # (a loop or a "make" reads the default set: "for (user())", "make stat …")
    for node in A.walk(stmt):
        if isinstance(node, A.Item) and node.set == "_" or isinstance(node, A.SetFilter) and node.name == "_":
            return True
        if isinstance(node, (A.Recurse, A.AreaFilter, A.Pivot, A.RecurseFilter)) and node.set in (None, "_") \
                and not (isinstance(node, A.AreaFilter) and node.ref):
            return True
        if isinstance(node, A.Around) and node.set in (None, "_") and not node.coords:
            return True
    return False


def same_facts(composed: str, pick: str) -> bool:
    """Whether ``pick`` selects what ``composed`` selects, in the same places and radii, and prints
    it as asked (:func:`query_facts`): the outputs of ``composed``, a count only where it counts and
    tags without geometry only where asked (an unasked centre, geometry or metadata is harmless)."""
    a, b = query_facts(composed), query_facts(pick)
    if a is None or b is None or a[:3] != b[:3] or _repeats(pick) or _drops_result(pick):
        return False
    # (an "out tags" the composed query lacks prints no geometry: nothing to show on a map)
    # (a limit prints fewer elements: the same limit only)
    return a[3] <= b[3] and ("count" in a[3]) == ("count" in b[3]) and ("tags" in b[3]) <= ("tags" in a[3]) \
        and {o for o in a[3] if o.isdigit()} == {o for o in b[3] if o.isdigit()}
