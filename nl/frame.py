"""The intent frame: a request, in any language, read into a small typed structure.

:func:`read_frame` finds what a request asks for (``what``, ``negated``), where (a
named place, the map view, around N m of something, a box, coordinates, an area id),
which element types, which output (only when asked), when (dates, turbo periods),
and its ids, users and quoted names. The cue words are data, one table per language
(``geoql.nl.cues``); the language is guessed from the script and the table words a
request uses (:func:`guess_language`).

>>> f = read_frame("benches within 100 m of a playground in Zurich")
>>> f.language, f.what, f.around, f.place
('en', ['benches'], Around(radius_m=100.0, of='a playground', beyond=False), 'Zurich')
>>> f = read_frame("Wie viele Apotheken gibt es im aktuellen Kartenausschnitt?")
>>> f.language, f.in_view, f.output, f.what
('de', True, {'count'}, ['Apotheken'])
>>> f = read_frame("成都有哪些博物馆？")
>>> f.language, f.script, f.place, f.what
('zh', 'Han', '成都', ['博物馆'])
>>> read_frame("nodes edited by user 'HK2002' since November 1, 2018").dates
['2018-11-01']
>>> read_frame("ways without a name in the last 3 days").periods, read_frame("x").place
(['3 days'], None)
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

from geoql.nl.attributes import find as find_attributes, number_words, words_of
from geoql.nl.cues import LANGUAGES, REQUIRED, Matcher, Token, all_tables, table, tokens
from geoql.nl.places import gazetteer, word_cities
from geoql.nl.text import SPACELESS_SCRIPTS, fold, in_dictionary, main_script, number, plain_number, script_of, scripts
from geoql.nl.words import stem_fold

# Long input is read up to here: requests are a sentence or two; a pasted page must
# not cost more than a glance.
MAX_CHARS = 4000

_UNIT_METRES = {"m": 1.0, "km": 1000.0, "mi": 1609.344, "ft": 0.3048}
_PERIOD_UNITS = ("minute", "hour", "day", "week", "month", "year")


@dataclass(frozen=True)
class Around:
    """"within 100 m of a playground": ``Around(100.0, "a playground")``; ``of`` is
    ``None`` when the centre is written as coordinates (see ``Frame.coords``) or not named."""

    radius_m: float
    of: str | None
    beyond: bool = False  # "离主要道路超过 700 米": farther than the distance, not within it


@dataclass
class Frame:
    nl: str
    language: str = "und"
    script: str = "Common"
    what: list[str] = field(default_factory=list)
    negated: list[str] = field(default_factory=list)
    place: str | None = None
    places: list[str] = field(default_factory=list)
    in_view: bool = False
    around: Around | None = None
    bbox: tuple[float, float, float, float] | None = None
    coords: tuple[float, float] | None = None
    area_ids: list[int] = field(default_factory=list)  # Overpass area ids (3600000000 + a relation id)
    ids: list[tuple[str, int]] = field(default_factory=list)
    types: set[str] = field(default_factory=set)
    output: set[str] = field(default_factory=set)
    dates: list[str] = field(default_factory=list)
    month_dates: list[str] = field(default_factory=list)  # dates written without a day ("March 2024"): the month
    periods: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)
    edited: bool = False  # a word of editing ("edited", "gemappt", "правил"): the request is about edits
    names: list[str] = field(default_factory=list)
    # Added beside the shared interface: numeric user ids ("user with ID 7725447"),
    # every quoted span (names and tag keys alike), and the cue language used.
    uids: list[int] = field(default_factory=list)
    quoted: list[str] = field(default_factory=list)
    # A since-cue leads a date ("since November 1, 2018", "nach dem 1. Juni 2019"): the date
    # starts a period rather than naming the day itself ("am 15. Juli 2019").
    since: bool = False
    # A place read only because it opens the request before a weak link ("北京的博物馆",
    # "東京の駅", "서울의 공원"): a thing can stand there too ("公园的长椅", park benches).
    # A caller that knows the tag names can tell them apart (geoql.retrieval.TagRetriever.read_frame).
    opening_place: str | None = None
    # Where each phrase of ``what``, ``negated`` and ``places`` stands in the NFKC text (the first
    # place it was read), as (start, end) character offsets: geoql.nl.request's spans.
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)
    # Where the cue of each ``output`` kind stands (its first cue), as ``spans``.
    output_spans: dict[str, tuple[int, int]] = field(default_factory=dict)
    # Attribute filters read from the phrases and the cues around them (the ``filters`` section of
    # the cue tables): (kind, phrase, (start, end), op, value, unit), kind "yes" ("with wifi"),
    # "absent" ("without a name"), "no" ("not private"), "compare" ("more than 10 floors"), "name"
    # ("whose name contains Pizza": op contains / starts / ends / equals, value the name).
    filters: list[tuple] = field(default_factory=list)
    # Numbers that are no date, id or coordinate: (value, text, (start, end), unit or None).
    numbers: list[tuple] = field(default_factory=list)


# ------------------------------------------------------------------ language

@lru_cache(maxsize=1)
def _yue_markers() -> tuple[str, ...]:
    """Cantonese words that Mandarin does not write (嘅, 喺, 咗, 邊度...): yue.json's markers."""
    return tuple(table("yue")["markers"]) if "yue" in LANGUAGES else ()


def _words_of(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [w for k, v in value.items() if k not in ("code", "name", "scripts", "endings", "plural_endings",
                                                         "not_words", "name_chars", "apostrophe_suffixes")
                for w in ([k] if k.isalpha() and k not in _SECTION_KEYS else []) + _words_of(v)]
    if isinstance(value, list):
        return [w for v in value for w in _words_of(v)]
    return []


_SECTION_KEYS = frozenset({"before", "after", "of_after", "of_before", "of_start", "scope_end", "prepositions",
                           "postpositions", "articles", "nouns", "particles", "not_places", "and", "strong",
                           "lead", "suffixes", "needs_capital", "units", "one", "last", "relative", "since", "ago",
                           "count", "geom", "center", "csv", "meta", "node", "way", "relation", "id", "area", "uid",
                           "changeset", "minute", "hour", "day", "week", "month", "year", "m", "km", "mi", "ft",
                           "strategy", "word_end"})


@lru_cache(maxsize=1)
def _latin_markers() -> tuple[dict[str, dict[str, float]], dict[str, tuple[str, ...]]]:
    """Folded word -> {language: weight}, from every Latin-script table: a marker (a
    function word) weighs 1, another stop word 0.7, any other cue word 0.4, each shared
    among the languages that list it; and each language's word endings.

    The guess was tuned on the tables of ``REQUIRED``: a table added since (Polish, Turkish,
    Dutch) never lowers the weight a tuned language gives its own words ("in", "de", "na"), so the
    tuned languages' scores stay what they were; its own share of a word is counted among every
    language listing it, so a shared word tells it as little as it tells the others."""
    raw: dict[str, dict[str, float]] = {}
    endings: dict[str, tuple[str, ...]] = {}
    for lang in LANGUAGES:
        t = table(lang)
        if "Latin" not in t["language"]["scripts"]:
            continue
        endings[lang] = tuple(fold(e) for e in t["language"].get("endings", ()))
        # The attribute filters' cues came after the guess was tuned on these words: they do not count.
        for weight, words in ((0.4, _words_of({k: v for k, v in t.items() if k not in ("markers", "stop", "filters")})),
                              (0.7, t["stop"]), (1.0, t["markers"])):
            for w in words:
                for tok in tokens(fold(w.rstrip("*"))):
                    if not tok.number:
                        raw.setdefault(tok.fold, {})[lang] = weight
    out: dict[str, dict[str, float]] = {}
    for w, by in raw.items():
        tuned = [lang for lang in by if lang in REQUIRED]
        added = [lang for lang in by if lang not in REQUIRED]
        out[w] = {**{lang: by[lang] / len(tuned) for lang in tuned}, **{lang: by[lang] / len(by) for lang in added}}
    return out, endings


_OTHER_SCRIPTS = {"Arabic": "ar", "Hebrew": "he", "Greek": "el", "Thai": "th", "Devanagari": "hi",
                  "Georgian": "ka", "Armenian": "hy", "Bengali": "bn", "Tamil": "ta", "Ethiopic": "am"}


def guess_language(text: str, toks: list[Token] | None = None) -> str:
    """ISO 639 code of ``text``'s language by rules: the script, then (Latin) the
    cue-table words and word endings of each language; ``"und"`` when nothing tells.
    Words that look like names (capitalised inside the sentence) do not count, and a
    request in a Latin-script language that names a place in another script
    ("bus stops in Сахалинская область") stays in its own language.

    >>> guess_language("Museen in der Stadt"), guess_language("博物館喺邊度"), guess_language("東京の美術館")
    ('de', 'yue', 'ja')
    >>> guess_language("Entities in Житомирська область"), guess_language("مطاعم")
    ('en', 'ar')
    """
    counts = scripts(text)
    if not counts:
        return "und"
    toks = toks if toks is not None else tokens(text)
    latin = _latin_scores(toks, text) if counts.get("Latin") else {}
    main = next(iter(counts))
    spaceless_letters = sum(n for sc, n in counts.items() if sc in SPACELESS_SCRIPTS)
    if latin and max(latin.values()) >= 0.3 and main != "Latin" and spaceless_letters <= 6:
        # the sentence's own small words are Latin-script ones: the rest is a name
        own = [t for i, t in enumerate(toks) if not t.spaceless and not t.number
               and script_of(t.text[0]) == "Latin" and (i == 0 or not t.upper)]
        if len(own) >= 2 and sum(len(t.text) for t in own) * 2 >= sum(counts.values()) - counts.get("Latin", 0):
            return _best(latin)
    if counts.get("Hangul", 0) and counts["Hangul"] >= counts.get("Han", 0) / 2:
        return "ko"
    kana = counts.get("Hiragana", 0) + counts.get("Katakana", 0)
    if kana and kana >= counts.get("Hangul", 0):
        if counts.get("Han", 0) + kana >= counts.get("Latin", 0) / 3 or not counts.get("Latin"):
            return "ja"
    if main == "Latin" and spaceless_letters >= 4 and (counts.get("Han", 0) * 3 >= counts["Latin"]
                                                        or max(latin.values(), default=0) < 1.0):
        # Latin names and tags in a CJK sentence ("名称包含 'DROSSELSANGWEG'"): the sentence decides
        main = max((sc for sc in counts if sc in SPACELESS_SCRIPTS), key=counts.get)
        if main in ("Hiragana", "Katakana"):
            return "ja"
        if main == "Hangul":
            return "ko"
    if main == "Han":
        return "yue" if any(m in text for m in _yue_markers()) else "zh"
    if main == "Cyrillic":
        return "uk" if any(ch in "іїєґІЇЄҐ" for ch in text) else "ru"
    if main == "Latin":
        return _best(latin) if latin else ("en" if toks else "und")
    return _OTHER_SCRIPTS.get(main, "und")


_ACCENTS = (("ß", "de"), ("ä", "de"), ("ö", "de"), ("ü", "de"), ("ñ", "es"), ("ã", "pt"), ("õ", "pt"),
            ("ç", "fr pt"), ("è", "fr it"), ("ê", "fr pt"), ("œ", "fr"), ("ì", "it"), ("ò", "it"), ("ù", "it fr"),
            ("¿", "es"), ("¡", "es"), ("à", "fr it"), ("é", "fr es pt"), ("í", "es pt"), ("ó", "es pt"),
            ("ú", "es pt"), ("á", "es pt"), ("â", "fr pt"),
            # letters of the added tables alone (see _latin_markers): they raise no tuned language's score
            ("ł", "pl"), ("ą", "pl"), ("ę", "pl"), ("ś", "pl"), ("ź", "pl"), ("ż", "pl"), ("ń", "pl"),
            ("ş", "tr"), ("ğ", "tr"), ("ı", "tr"), ("ö", "tr"), ("ü", "tr"))


# Turkish case and plural endings written after an apostrophe on a name ("mardin'deki", "bim'ler")
_TR_APOSTROPHE_ENDINGS = frozenset({"de", "da", "te", "ta", "deki", "daki", "teki", "taki", "den", "dan", "ten",
                                    "tan", "ler", "lar", "nin", "nın", "nun", "nün", "in", "ın", "un", "ün",
                                    "ye", "ya", "yi", "yı", "yu", "yü", "e", "a", "i", "ı", "u", "ü"})


def _latin_scores(toks: list[Token], text: str = "") -> dict[str, float]:
    markers, endings = _latin_markers()
    score: dict[str, float] = {}
    for i, t in enumerate(toks):
        if i and text and t.start == toks[i - 1].end + 1 and text[t.start - 1] in "'’" \
                and t.text.casefold() in _TR_APOSTROPHE_ENDINGS:
            score["tr"] = score.get("tr", 0) + 1.0  # (a Turkish ending on a name: "ankara'da", "bim'ler")
            continue
        if t.number or t.spaceless or (t.upper and i > 0):
            continue  # a name ("Münster", "Forlì") says nothing of the sentence's language
        hits = markers.get(t.fold, {})
        for lang, weight in hits.items():
            score[lang] = score.get(lang, 0) + weight
        if len(t.fold) > 3:
            # a word no table of its group lists is read by its ending (the tuned and the
            # added tables apart: a word an added table lists leaves the tuned ones' reading as it was)
            tuned_hit = any(lang in REQUIRED for lang in hits)
            added_hit = any(lang not in REQUIRED for lang in hits)
            for lang, ends in endings.items():
                if not (tuned_hit if lang in REQUIRED else added_hit) and t.fold.endswith(ends):
                    score[lang] = score.get(lang, 0) + 0.3
        if not t.text.isascii():
            low = t.text.casefold()
            for chars, langs in _ACCENTS:
                if chars in low:
                    for lang in langs.split():
                        score[lang] = score.get(lang, 0) + 0.5 / len(langs.split())
    return score


def latin_scores(text: str) -> dict[str, float]:
    """How strongly the cue words of ``text`` tell each Latin-script language (a language none of
    whose words appear is missing): what :func:`guess_language` picks the best of.

    >>> latin_scores("place in Bochum")["en"] > 0, latin_scores("otogar ankara")
    (True, {})
    >>> max(latin_scores("mardin'deki bim'ler").items(), key=lambda kv: kv[1])[0]
    'tr'
    """
    return _latin_scores(tokens(text), text)


def latin_rivals(score: dict[str, float], language: str, margin: float) -> list[str]:
    """Latin-script languages other than ``language`` whose :func:`latin_scores` ``score`` is within
    ``margin`` of ``language``'s (every one of them when no cue word tells), likeliest first: the
    languages a guess made on a few small words might have missed ("hospitales en madrid y
    barcelona": French's "en" outweighs Spanish's "y").

    >>> latin_rivals(latin_scores("hospitales en madrid y barcelona"), "fr", 0.5)[:1]
    ['es']
    """
    own = score.get(language, 0.0)
    latin = _latin_markers()[1]  # the Latin-script tables, in LANGUAGES' order
    return sorted((lang for lang in latin if lang != language and score.get(lang, 0.0) >= own - margin),
                  key=lambda lang: -score.get(lang, 0.0))


def _best(score: dict[str, float]) -> str:
    best = max(score.values())
    return next(lang for lang in LANGUAGES if score.get(lang) == best)  # ties: English first


def cue_language(language: str) -> str:
    """The cue table that reads ``language`` (a language without its own reads English's)."""
    for lang in (language, {"uk": "ru", "be": "ru", "yue": "zh"}.get(language)):
        if lang in LANGUAGES:
            return lang
    return "en"


# ------------------------------------------------------------------ lexicon


class _NotPlaces(frozenset):
    """Folded words that never name a place, and word endings that make a word one of them
    (German "Kreisebene", "Vorwärtsrichtung": a level, a direction, after "auf" or "in")."""

    def __new__(cls, words=(), endings=()):
        self = super().__new__(cls, words)
        self.endings = tuple(endings)
        return self

    def __init__(self, words=(), endings=()) -> None:  # frozenset's contents are set in __new__
        super().__init__()

    def __contains__(self, word) -> bool:
        return super().__contains__(word) or (bool(self.endings) and isinstance(word, str) and word.endswith(self.endings))


@dataclass
class _Lexicon:
    lang: str
    spaced: bool
    view: Matcher
    box_words: frozenset  # the nouns of the view cues ("bereich", "riquadro", "zone"): a box's name
    around_before: Matcher
    around_after: Matcher
    of_after: Matcher
    of_before: Matcher
    near_words: frozenset  # "근처" (near) between a centre and its distance: "강남역 근처 500m"
    of_start: Matcher
    compare: Matcher
    units: Matcher
    spelled: Matcher  # a number in words before a unit, with its value ("half a", "un", "two"): read after an around cue
    speed: Matcher
    output: Matcher
    neg_before: Matcher
    neg_after: Matcher
    scope_end: Matcher
    types: Matcher
    # type words that name a kind only right before an id ("nó 4455667788", "caminho 30112233": a path too)
    id_types: Matcher
    # words between an id and its type where the type follows ("2219871 numaralı ilişki")
    id_after: Matcher
    ids: Matcher
    users: Matcher
    names: Matcher
    preps: Matcher
    posts: Matcher
    post_priority: bool
    post_word_end: bool
    strong: Matcher
    weak_at_start: bool
    bare_phrase: bool
    strip_after: tuple
    soft_starts: bool
    user_first: bool
    lowercase_end: bool
    # weak prepositions after which a lower-case name that ends the request is a place too
    # ("farmacia a torino"): a place name ends a request far more often than a thing after them
    lowercase_end_weak: frozenset
    links: Matcher
    lead: Matcher
    suffixes: tuple
    # case endings written after an apostrophe ("Ankara'da", "trabzon'daki"): the word before is a place
    apostrophe_suffixes: frozenset
    name_chars: frozenset
    spaced_words: bool
    articles: frozenset
    nouns: Matcher
    particles: frozenset
    not_places: _NotPlaces
    place_and: frozenset
    trailing: frozenset
    months: dict
    time_units: Matcher
    last: Matcher
    one: frozenset  # words for "one" before a unit ("한 달", "un mois")
    edited: Matcher  # words of editing ("edited", "geändert", "düzenlenen"): a bare year beside one is a period
    relative: Matcher
    since: Matcher
    stop: Matcher
    stop_words: frozenset
    joiners: frozenset
    weak_preps: Matcher
    with_cues: Matcher
    with_after: bool
    absent_cues: Matcher
    more_less: Matcher
    range_start: Matcher  # "between" of "between 50 and 100 m": at least the first, at most the second
    range_and: frozenset
    range_after: Matcher  # "arası" of "1000 ile 2000 metre arası": a range's cue after its second number
    name_ops: Matcher
    name_in: Matcher  # "in the name" ("after"), "名字里有" ("before" the value): the value is in the name


def _sections(lang: str) -> list[dict]:
    # Requests in any language keep English words for OSM things ("ID", "node", "csv"):
    # English's structural cues are read beside the language's own.
    return [table(lang)] if lang == "en" else [table(lang), table("en")]


@lru_cache(maxsize=None)
def _lexicon(lang: str) -> _Lexicon:
    own = table(lang)
    both = _sections(lang)

    def cues(get, tables=both):
        out = []
        for t in tables:
            out.extend(get(t))
        return out

    def payload(get, tables=both):
        out = []
        for t in tables:
            for key, words in get(t).items():
                out.extend((w, key) for w in words)
        return out

    place = own["place"]
    months: dict[str, int] = {}
    for t in both:
        for i, forms in enumerate(t["months"]):
            for f in forms:
                months.setdefault(fold(f), i + 1)
    return _Lexicon(
        lang=lang,
        spaced=own["language"].get("spaced", True),
        view=Matcher(cues(lambda t: t["view"])),
        box_words=frozenset(tok.fold for w in own["view"] for tok in tokens(fold(w)) if len(tok.fold) > 2)
        - {fold(x) for x in own["stop"]},
        around_before=Matcher(cues(lambda t: t["around"]["before"])),
        around_after=Matcher(cues(lambda t: t["around"]["after"])),
        of_after=Matcher(cues(lambda t: t["around"]["of_after"])),
        of_before=Matcher(own["around"]["of_before"]),
        near_words=frozenset(fold(w) for w in own["around"].get("near", [])),
        of_start=Matcher(own["around"]["of_start"]),
        compare=Matcher(own["around"].get("compare", [])),
        units=Matcher(payload(lambda t: t["units"])),
        # (half first: "einem halben" before "einem"; the Matcher takes the longest at a token)
        spelled=Matcher([(w, 0.5) for w in own["around"].get("half", [])] + [(w, 1.0) for w in own["around"].get("one", [])]
                        + [(w, float(v)) for w, v in number_words(lang).items()]),
        speed=Matcher(cues(lambda t: t["filters"]["speed"])),
        output=Matcher(payload(lambda t: t["output"])),
        neg_before=Matcher(own["negation"]["before"]),
        neg_after=Matcher(own["negation"]["after"]),
        scope_end=Matcher(own["negation"]["scope_end"]),
        types=Matcher(payload(lambda t: t["types"])),
        id_types=Matcher(payload(lambda t: t.get("id_types", {}), [own])),
        id_after=Matcher(own.get("id_after", [])),
        ids=Matcher(payload(lambda t: t["ids"])),
        users=Matcher(cues(lambda t: t["users"])),
        names=Matcher(cues(lambda t: t["names"])),
        preps=Matcher(place["prepositions"]),
        posts=Matcher([(w, i) for i, w in enumerate(place["postpositions"])]),
        post_priority=place.get("strategy") == "priority",
        post_word_end=bool(place.get("word_end")),
        strong=Matcher(place.get("strong", [])),
        links=Matcher(place.get("links", [])),
        weak_at_start=bool(place.get("weak_at_start")),
        bare_phrase=bool(place.get("bare_phrase")),
        strip_after=tuple(place.get("strip_after", [])),
        soft_starts=bool(place.get("soft_starts")),
        user_first=bool(own["language"].get("user_first")),
        lowercase_end=bool(place.get("lowercase_end")),
        lowercase_end_weak=frozenset(fold(w) for w in place.get("lowercase_end_weak", [])),
        lead=Matcher(place.get("lead", [])),
        suffixes=tuple(place.get("suffixes", [])),
        apostrophe_suffixes=frozenset(fold(w) for w in place.get("apostrophe_suffixes", [])),
        name_chars=frozenset(place.get("name_chars", "")),
        spaced_words=own["language"].get("spaced_words", False),
        articles=frozenset(fold(w) for w in place["articles"]),
        nouns=Matcher(place["nouns"]),
        # place names cross languages ("Rio Grande do Sul" in a German request)
        particles=frozenset(fold(w) for t in both for w in t["place"]["particles"])
        # a table added since: its own "and" joins two names ("Utrecht en Arnhem"), though English
        # lists "en" among the particles of names
        - (frozenset(fold(w) for w in place["and"]) if lang not in REQUIRED else frozenset()),
        not_places=_NotPlaces((fold(w) for t in both for w in t["place"]["not_places"]),
                              (fold(w) for w in place.get("not_place_endings", []))),
        place_and=frozenset(fold(w) for w in place["and"]),
        # "bus stops in Сахалинская область": a name's trailing nouns in any language
        trailing=frozenset(fold(w) for t in all_tables().values() for w in t["place"].get("trailing", [])),
        months=months,
        time_units=Matcher(payload(lambda t: t["time"]["units"])),
        last=Matcher(cues(lambda t: t["time"]["last"])),
        one=frozenset(fold(w) for w in own["time"]["one"] if not w.isdigit()),
        edited=Matcher(cues(lambda t: t["time"].get("edited", []))),
        relative=Matcher([(k, v) for t in both for k, v in t["time"]["relative"].items()]),
        since=Matcher(cues(lambda t: t["time"]["since"])),
        stop=Matcher(own["stop"] + ([] if lang == "en" else table("en")["stop"])),
        stop_words=frozenset(fold(w) for w in own["stop"]),
        joiners=frozenset(fold(w) for w in own["joiners"]),
        weak_preps=Matcher(place.get("needs_capital", [])),
        # (English's "w/" is a letter of one in another language's words: Polish "w", in)
        with_cues=Matcher([w for t in both for w in t["filters"]["with"]
                           if t is own or any(len(tok.fold) > 1 for tok in tokens(w))]),
        with_after=bool(own["filters"].get("with_after")),
        absent_cues=Matcher(cues(lambda t: t["filters"]["absent"])),
        more_less=Matcher(payload(lambda t: t["filters"]["compare"])),
        range_start=Matcher(own["filters"].get("range", {}).get("between", [])),
        range_and=frozenset(fold(w) for w in own["filters"].get("range", {}).get("and", [])),
        range_after=Matcher(own["filters"].get("range", {}).get("after", [])),
        name_ops=Matcher(payload(lambda t: t["filters"]["name"])),
        name_in=Matcher([(w, "after") for w in own["filters"].get("name_in", [])]
                        + [(w, "before") for w in own["filters"].get("name_in_before", [])]),
    )


# ------------------------------------------------------------------ reading


_QUOTES = re.compile(r"\"([^\"]{1,120})\"|“([^”]{1,120})”|„([^“”\"]{1,120})[“”\"]|«\s?([^»]{1,120}?)\s?»|»([^«»]{1,120})«|"
                     r"「([^」]{1,120})」|『([^』]{1,120})』|‘([^’]{1,120})’|(?<![A-Za-z0-9])'([^']{1,120})'(?![A-Za-z0-9])")
_TAGLIKE = re.compile(r"[a-z0-9_:.\-]+(?:=[^\s]*)?")
# A decimal number standing alone: "01.06.2018" is a date, not the point (1.0, 6.2018)
_DECIMAL = r"(?<![\d.])[-−]?\d{1,3}\.\d+(?![\d.]*\d)"
_SEP = r"\s*[,，;/]\s*|\s+"
_BBOX = re.compile(rf"({_DECIMAL})\s*[,，;]\s*({_DECIMAL})\s*[,，;]\s*({_DECIMAL})\s*[,，;]\s*({_DECIMAL})")
_COORDS = re.compile(rf"({_DECIMAL})(?:{_SEP})({_DECIMAL})")
_ISO = re.compile(r"(?<!\d)(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ]\d{1,2}:\d{2}(?::\d{2})?Z?)?(?!\d)")
_DMY = re.compile(r"(?<![\d.])(\d{1,2})[./](\d{1,2})[./](\d{4})(?!\d)")
# A date written year first with slashes or points: "2024/4/1", "2023.10.01" (Japan, Korea, China)
_YMD = re.compile(r"(?<![\d.])(\d{4})[./](\d{1,2})[./](\d{1,2})(?![\d])")
_CJK_DATE = re.compile(r"(\d{4})\s*[年년]\s*(\d{1,2})\s*[月월]\s*(?:(\d{1,2})\s*[日일号號])?")
_CJK_RANGE_END = re.compile(r"\s*(?:から|至|到|~|〜|-|–|－|부터|에서)\s*(?:(\d{1,2})\s*[月월])?\s*(\d{1,2})\s*[日일号號]")
# Japanese's quoting particle, glued to the word it follows ("コメダって", "「中央」って").
JA_QUOTE = "って"
# Particles that quote what comes before them, never a name's value themselves ("「中央」って入ってる").
_QUOTING_PARTICLES = frozenset({JA_QUOTE, "と"})
_DATE_ARTICLES = frozenset({"le", "the", "dem", "den", "der", "el", "il", "lo", "l"})
# The endings of an ordinal day written in digits ("1er", "2nd", "3rd", "4th"): tokens of their own.
ORDINAL_ENDINGS = frozenset({"er", "re", "st", "nd", "rd", "th"})
_RANGE_WORDS = frozenset({"and", "to", "und", "bis", "et", "au", "y", "al", "a", "e", "и", "по", "до", "en", "tot", "ve", "ile",
                          "i", "do"})
_YEAR = re.compile(r"^(1[89]\d\d|20\d\d)$")
# The word between a day and its month in the Romance languages ("1 de enero", "1 di marzo").
_DAY_OF = frozenset({"de", "di", "del"})
_BREAK = re.compile(r"[,;:?!.()\[\]{}，。；：？！、（）「」『』\"“”„«»]|(?<!\S)[&+](?!\S)")  # (" & " and " + " join two things)
_HARD_BREAK = re.compile(r"[;?!.()\[\]{}。；？！（）]")
_LIST_BREAK = re.compile(r"[,，、]")


class _Reader:
    """One request being read: its tokens, which of them are taken, and the frame."""

    def __init__(self, nl: str, language: str | None = None, known: tuple[tuple[int, int], ...] = ()):
        text = unicodedata.normalize("NFKC", nl)[:MAX_CHARS]
        self.text = text
        self.toks = tokens(text)
        self.n = len(self.toks)
        self.taken = [False] * self.n
        self.phrases: list[tuple[int, int, str, bool]] = []  # (first token, end, text, negated) of what and negated
        self.not_numbers: set[int] = set()  # number tokens of coordinates, dates and ids
        self.output_tokens: set[int] = set()  # the tokens of output cues ("as points")
        self.named_tokens: set[int] = set()  # the tokens of quoted names (a name is no cue: "Gran Vía")
        self.speed_units: dict[int, int] = {}  # each speed's unit: its first token -> its end ("km/h" of "30 km/h")
        self.negated_ops: set[int] = set()  # the first tokens of name operations a negation opens ("no empieza por")
        language = language or guess_language(text, self.toks)
        self.frame = Frame(nl=nl, language=language, script=main_script(text))
        self.lex = _lexicon(cue_language(language))
        self.known = known  # places the caller knows (read_frame)

    # -- helpers
    def gap(self, i: int) -> str:
        """Text between token i-1 and token i (i == n: the rest)."""
        start = self.toks[i - 1].end if i > 0 else 0
        end = self.toks[i].start if i < self.n else len(self.text)
        return self.text[start:end]

    def _word_start(self, k: int, end: int) -> int:
        """Token ``k`` moved back over the letters of its word in a script without spaces written with
        spaces between words (Korean), to the word's first, never past a taken token nor more than ten
        letters before ``end``."""
        toks = self.toks
        while k > 0 and toks[k].spaceless and toks[k - 1].spaceless and not self.gap(k) \
                and not self.taken[k - 1] and end - k < 10:
            k -= 1
        return k

    def span(self, i: int, j: int) -> str:
        return self.text[self.toks[i].start:self.toks[j - 1].end].strip()

    def find(self, matcher: Matcher, skip_taken: bool, end_only: bool = False) -> list[tuple[int, int, object]]:
        """The matcher's cues in the request; in Korean only those that start a word (a
        stem: "노드와") or end one (a particle: "7725447이"): a syllable is a token, and
        "수" inside "호수는" is no cue."""
        hits = matcher.find(self.toks, self.taken if skip_taken else None)
        if self.lex.post_word_end:
            hits = [h for h in hits if self._word_end(h[1]) or (not end_only and self._word_end(h[0]))]
        return hits

    def _locate(self, phrase: str, k: int) -> None:
        """Note where ``phrase``, read from token ``k`` on, stands in the text (``Frame.spans``)."""
        if phrase and phrase not in self.frame.spans:
            start = self.text.find(phrase, self.toks[k].start if k < self.n else 0)
            if start >= 0:
                self.frame.spans[phrase] = (start, start + len(phrase))

    def take(self, i: int, j: int) -> None:
        for k in range(max(i, 0), min(j, self.n)):
            self.taken[k] = True

    def tokens_in(self, start: int, end: int) -> tuple[int, int]:
        i = next((k for k in range(self.n) if self.toks[k].end > start), self.n)
        j = next((k for k in range(i, self.n) if self.toks[k].start >= end), self.n)
        return i, j

    # -- steps
    def read(self) -> Frame:
        if not self.n:
            return self.frame
        for start, end in self.known:
            i, j = self.tokens_in(start, end)
            if i < j and not any(self.taken[i:j]) and self.text[start:end].strip():
                self.frame.places.append(self.text[start:end])
                self._locate(self.text[start:end], i)
                self.take(i, j)
        self.quotes()
        self.coordinates()
        self.dates()
        self.not_numbers = {k for k in range(self.n) if self.taken[k] and self.toks[k].number}  # coordinates, dates
        self.periods()
        self.view()  # before distances: "현재 화면에서 X로부터 100미터" has the view first
        before = list(self.taken)
        self.identifiers()
        self.not_numbers |= {k for k in range(self.n) if self.taken[k] and not before[k] and self.toks[k].number}
        self.speeds()
        self.distances()
        self.outputs()
        self.edit_words()
        self.types()
        self.name_in()
        self.unquoted_names()
        self.place()
        if self.frame.opening_place not in self.frame.places:  # read, then set aside (not_places, digits)
            self.frame.opening_place = None
        self.content()
        self.attributes()
        self.numbers()
        return self.frame

    def quotes(self) -> None:
        f, lex = self.frame, self.lex
        for m in _QUOTES.finditer(self.text):
            inner = next(g for g in m.groups() if g is not None).strip()
            if not inner:
                continue
            i, j = self.tokens_in(m.start(), m.end())
            f.quoted.append(inner)
            before = self._cue_before(lex.users, i, 0 if lex.user_first else 3)
            after = lex.users.match_at(self.toks, j) if lex.user_first and j < self.n else None
            if before is not None or after:
                f.users.append(inner)  # "by user 'HK2002'", "'rowers2' 사용자가"
                self.take(before if before is not None else i, after[0] if after else j)
                continue
            cue_start = self._cue_before(lex.names, i, 3)
            cue_after = self._cue_after(lex.names, j, 3)
            if cue_start is not None or cue_after is not None or not _TAGLIKE.fullmatch(inner):
                f.names.append(inner)
                self.take(i, j)
                self.named_tokens.update(range(i, j))
                if cue_start is not None:
                    self.take(cue_start, lex.names.match_at(self.toks, cue_start)[0])
                elif cue_after is not None:
                    self.take(cue_after, lex.names.match_at(self.toks, cue_after)[0])
            # a quoted tag key ('note', "piste:type") stays a content word

    def _cue_before(self, matcher: Matcher, i: int, window: int) -> int | None:
        """Start of a cue ending at most ``window`` tokens before token ``i``."""
        for s in range(i - 1, max(-1, i - window - 8), -1):  # cues are up to ~8 tokens long
            hit = matcher.match_at(self.toks, s)
            if hit and i - window <= hit[0] <= i:
                return s
        return None

    def _cue_after(self, matcher: Matcher, j: int, window: int) -> int | None:
        for s in range(j, min(self.n, j + window)):
            if matcher.match_at(self.toks, s):
                return s
        return None

    def coordinates(self) -> None:
        f = self.frame
        for m in _BBOX.finditer(self.text):
            s, w, n, e = (float(g.replace("−", "-")) for g in m.groups())
            if abs(s) <= 90 and abs(n) <= 90 and abs(w) <= 180 and abs(e) <= 180:
                f.bbox = (s, w, n, e)
                a, b = self.tokens_in(m.start(), m.end())
                # the box's name before it: "im Bereich 53.54,9.98,...", "nel riquadro 41.89,..."
                if a > 0 and self.toks[a - 1].fold in self.lex.box_words:
                    a -= 1
                    while a > 0 and (self.toks[a - 1].fold in self.lex.articles
                                     or (hit := self.lex.preps.match_at(self.toks, a - 1)) and hit[0] == a):
                        a -= 1
                self.take(a, b)
                after = self.lex.around_after.match_at(self.toks, b, self.taken) if b < self.n else None
                if after:  # ... or after it: "31.22,121.46,31.24,121.50 范围内的公厕", "…の範囲の交番"
                    self.take(b, after[0])
                return
        points = []
        for m in _COORDS.finditer(self.text):
            lat, lon = (float(g.replace("−", "-")) for g in m.groups())
            if abs(lat) <= 90 and abs(lon) <= 180:
                points.append((lat, lon))
                self.take(*self.tokens_in(m.start(), m.end()))
                if len(points) == 2:
                    break
        if len(points) == 2:  # "within the coordinates A, B and C, D": two corners of a box
            (a, b), (c, d) = points
            f.bbox = (min(a, c), min(b, d), max(a, c), max(b, d))
        elif points:
            f.coords = points[0]

    def dates(self) -> None:
        f, toks = self.frame, self.toks
        found: list[tuple[int, str]] = []
        ends: set[int] = set()  # the token right after a date written in digits

        def add(pos, y, mo=1, d=1):
            y, mo, d = int(y), int(mo or 1), int(d or 1)
            if 1800 <= y <= 2100 and 1 <= mo <= 12 and 1 <= d <= 31:
                found.append((pos, f"{y:04d}-{mo:02d}-{d:02d}"))
                return True
            return False

        for rx, order in ((_ISO, (0, 1, 2)), (_YMD, (0, 1, 2)), (_CJK_DATE, (0, 1, 2)), (_DMY, (2, 1, 0))):
            for m in rx.finditer(self.text):
                g = m.groups()
                i, j = self.tokens_in(m.start(), m.end())
                if any(self.taken[i:j]):
                    continue
                if add(m.start(), g[order[0]], g[order[1]], g[order[2]]):
                    self.take(i, j)
                    ends.add(j)
                    if rx is _CJK_DATE and not g[2]:
                        f.month_dates.append(found[-1][1])  # "2024年3月"
                    if rx is _CJK_DATE and g[2]:  # "2017年11月16日から17日", "2018年9月14日至9月16日"
                        r = _CJK_RANGE_END.match(self.text, m.end())
                        if r and add(r.start(2), g[0], r.group(1) or g[1], r.group(2)):
                            self.take(*self.tokens_in(r.start(), r.end()))
        months = self.lex.months
        for i, t in enumerate(toks):
            month = months.get(t.fold)
            if month is None or self.taken[i] or t.number:
                continue
            window = list(range(max(0, i - 3), min(self.n, i + 4))) + list(range(i + 4, min(self.n, i + 8)))
            # (farther ahead: "between November 16 and November 17, 2017")
            years = [k for k in window if toks[k].number and _YEAR.match(toks[k].text) and not self.taken[k]]
            if not years:
                continue
            y = years[0]
            day = None
            # (the day's ordinal ending and "of" may stand between: "the 1st of March")
            ordinal = i >= 3 and toks[i - 1].fold == "of" and toks[i - 2].fold in ORDINAL_ENDINGS
            for k in (i - 1, i + 1, i - 2, i + 2) + ((i - 3,) if ordinal else ()):
                if 0 <= k < self.n and k != y and toks[k].number and toks[k].text.isdigit() \
                        and 1 <= int(toks[k].text) <= 31 and len(toks[k].text) <= 2 and not self.taken[k]:
                    day = k
                    break
            if add(t.start, toks[y].text, month, toks[day].text if day is not None else 1):
                if day is None:
                    f.month_dates.append(found[-1][1])
                # (a year after another month is that month's too: "between January and March 2024")
                shared = y > i and any(months.get(toks[k].fold) for k in range(i + 1, y))
                near = [i] + ([day] if day is not None else []) + ([y] if abs(y - i) <= 3 and not shared else [])
                self.take(min(near), max(near) + 1)  # a far year stays for the next date of a range
                ends.add(max(near) + 1)  # "1 Ocak 2024'ten beri": the since-cue after it
                # "zwischen dem 10. und 11. Mai 2018", "between 14 and 16 September 2018"
                if day is not None and day < i:
                    k = day - 1
                    while k > 0 and toks[k].fold in _DATE_ARTICLES:
                        k -= 1
                    if k > 0 and toks[k].fold in _RANGE_WORDS:
                        k -= 1
                        while k > 0 and toks[k].fold in _DATE_ARTICLES:
                            k -= 1
                        if toks[k].number and toks[k].text.isdigit() and not self.taken[k] \
                                and add(toks[k].start, toks[y].text, month, toks[k].text):
                            self.take(k, day)  # "entre le 16 et le 17 novembre 2017"
        # "since 2020", "seit 2020", "2020年以来": a year after (or before) a since-cue
        for s, e, _ in self.find(self.lex.since, False):
            for k in (e, e + 1, s - 1, s - 2):
                if 0 <= k < self.n and toks[k].number and _YEAR.match(toks[k].text) and not self.taken[k] \
                        and not (k + 1 < self.n and self.lex.units.match_at(toks, k + 1)):  # "2000メートルから"
                    add(toks[k].start, toks[k].text)
                    self.take(k, k + 1)
                    self.take(s, e)
                    f.since = True
                    break
        starts = {pos for pos, _ in found}
        for s, e, _ in self.find(self.lex.since, True):
            k = e
            while k < self.n and toks[k].fold in _DATE_ARTICLES:
                k += 1
            if k + 1 < self.n and toks[k].number and toks[k + 1].start in starts:
                k += 1  # the day before its month: "nach dem 1. Juni 2019"
            elif k + 2 < self.n and toks[k].number and toks[k + 1].fold in _DAY_OF and toks[k + 2].start in starts:
                k += 2  # ... and "of" between: "desde 1 de janeiro de 2025"
            elif k + 2 < self.n and toks[k].number and toks[k + 1].fold in ORDINAL_ENDINGS:
                # ... with its ordinal ending: "depuis le 1er mars 2025", "since the 1st of March"
                k += 3 if k + 3 < self.n and toks[k + 2].fold == "of" and toks[k + 3].start in starts else 2
            if k < self.n and toks[k].start in starts:  # "since November 1, 2018"
                self.take(s, e)
                f.since = True
            elif s in ends:  # the cue after the date: "2024-04-01以降", "2024-01-01 이후", "2024-01-01以来"
                self.take(s, e)
                f.since = True
        if not found and self.find(self.lex.edited, False):
            # a bare year in a request about edits is that year: "restaurants edited in 2023", "2023 yılında
            # düzenlenen restoranlar" (from its first day to its last)
            # (two years are a range, "between 2010 and 2014"; a year run on from letters is a name's, "Virgile1994")
            years = [k for k, t in enumerate(toks) if t.number and _YEAR.match(t.text) and not self.taken[k]
                     and not (k > 0 and toks[k - 1].end == t.start and not toks[k - 1].number)
                     and not (k + 1 < self.n and self.lex.units.match_at(toks, k + 1))][:2]
            if years and add(toks[years[0]].start, toks[years[0]].text):
                add(toks[years[-1]].end, toks[years[-1]].text, 12, 31)
                for k in years:
                    year = self.lex.time_units.match_at(toks, k + 1, self.taken) if k + 1 < self.n else None
                    self.take(k, year[0] if year and year[1] == "year" else k + 1)  # "2023年", "2023 yılında"
        found.sort()
        f.dates = list(dict.fromkeys(d for _, d in found))

    def periods(self) -> None:
        lex, toks, f = self.lex, self.toks, self.frame
        for s, e, _ in self.find(lex.last, True):
            k = e
            count = 1.0
            if s > 0 and toks[s - 1].number and not self.taken[s - 1]:  # "les 3 derniers jours"
                count = number(toks[s - 1].text)
                s -= 1
            elif k < self.n and toks[k].number and not self.taken[k]:
                count = number(toks[k].text)
                k += 1
            elif k + 1 < self.n and toks[k].fold in lex.one and not self.taken[k] \
                    and lex.time_units.match_at(toks, k + 1, self.taken):
                k += 1  # "최근 한 달": the last one month
            hit = lex.time_units.match_at(toks, k, self.taken) if k < self.n else None
            if hit:
                unit = hit[1]
                n = plain_number(count)
                if unit in _PERIOD_UNITS and n:  # not a 309-digit number of days
                    f.periods.append(f"{n} {unit}{'s' if n != '1' else ''}")
                    self.take(s, hit[0])
        for s, e, period in self.find(lex.relative, True):
            f.periods.append(period)
            self.take(s, e)
        f.periods = list(dict.fromkeys(f.periods))

    def edit_words(self) -> None:
        """The verb of a request about edits in time ("parchi aggiornati nell'ultima settimana", "straten
        bewerkt sinds 2024") says what the date or period is of: no thing."""
        hits = self.find(self.lex.edited, True)
        self.frame.edited = bool(hits)
        if self.frame.dates or self.frame.periods:
            for s, e, _ in hits:
                self.take(s, e)

    def speeds(self) -> None:
        """"30 km/h", "50 mph", "60 км/ч": a speed's unit is no distance ("limitées à 30 km/h" is no radius
        of 30 km); the number stays for a comparison."""
        for i, t in enumerate(self.toks):
            if t.number and not self.taken[i] and i + 1 < self.n:
                hit = self.lex.speed.match_at(self.toks, i + 1, self.taken)
                if hit:
                    self.take(i + 1, hit[0])
                    self.speed_units[i + 1] = hit[0]

    def distances(self) -> None:
        """"within 100 m of X", "im Umkreis von 100 m um X", "X から100メートル以内": the
        first distance with an around cue next to it."""
        lex, toks, f = self.lex, self.toks, self.frame
        for i, t in enumerate(toks):
            if self.taken[i] or i + 1 >= self.n:
                continue
            # a number in words: the cue table's one and half ("within half a mile of", "à un kilomètre
            # de") and the number words of nl/data/number_words.json, not a letter of a script without spaces
            spelled = None if t.number or t.spaceless else lex.spelled.match_at(toks, i)
            if not t.number and spelled is None:
                continue
            value, u = (number(t.text), i + 1) if t.number else (spelled[1], spelled[0])
            hit = lex.units.match_at(toks, u, self.taken) if u < self.n else None
            if not hit:
                continue
            end, unit = hit
            radius = value * _UNIT_METRES[unit]
            if not plain_number(radius):
                continue  # a number past float's range is no distance
            before = self._cue_before(lex.around_before, i, 2)
            if spelled is not None and before is None:
                continue  # a number in words is a distance only after its cue: "within half a mile of"
            after = lex.around_after.match_at(toks, end, self.taken) if end < self.n else None
            marker = next((s for s in range(max(0, i - 3), i)
                           if (h := lex.of_before.match_at(toks, s, self.taken)) and h[0] == i), None)
            compared = None
            if marker is None and before is None:
                compared = self._compared(i)  # "距离水体超过10米": centre, comparison, distance
                if compared is None and after is None:
                    continue  # "shorter than 300 m": a length, not a distance from something
            s0, e0, of = (before if before is not None else i), end, None
            beyond = False
            if compared is not None:
                s0, of, op = compared
                beyond = op in (">", ">=")
            link = lex.of_after.match_at(toks, end, self.taken) if end < self.n else None
            if link:
                j = k = link[0]
                while k < self.n and not self.taken[k] and (k == j or not _BREAK.search(self.gap(k))) \
                        and not (lex.scope_end.match_at(toks, k) and not (k == j and toks[k].fold in lex.articles)) \
                        and k - j < 6 \
                        and not (lex.preps.match_at(toks, k) and toks[k].fold not in lex.joiners):
                    k += 1
                if k > j:
                    of = self.span(j, k)
                e0 = max(k, j)
            elif marker is not None:
                # the centre comes first: "遊び場から100メートル以内", "在操场的100米范围内"
                k = marker
                while k > 0 and not self.taken[k - 1] and not _BREAK.search(self.gap(k)) \
                        and not lex.of_start.match_at(toks, k - 1) and marker - k < 10 \
                        and not (k < marker and self._strong_post_ends(k)):
                    k -= 1
                if marker > k:
                    of = self.span(k, marker)
                s0 = min(s0, k - 1 if k > 0 and lex.of_start.match_at(toks, k - 1) else k)
            elif after and before is None and compared is None and lex.of_before and i > 0 and not f.coords \
                    and not self.taken[i - 1] and not _BREAK.search(self.gap(i)) \
                    and (lex.spaced_words or not toks[i - 1].spaceless):
                # the centre first without its particle, one word: "서울 지하철역 100m 이내", "plajlara
                # 100 m mesafedeki" (an inflected word). Not in Chinese or Japanese: there the word
                # before the number has no edge ("距离X", "X半径", "X方圆" are their own constructions)
                end, k = i, self._word_start(i - 1, i)
                if fold("".join(t.text for t in toks[k:i])) in lex.near_words and k > 0 and not self.taken[k - 1] \
                        and not _BREAK.search(self.gap(k)):
                    # a "near" word is no centre; the word before it is: "강남역 근처 500m 안에"
                    end, k = k, self._word_start(k - 1, k)
                of, s0 = self.span(k, end), k
            if after:
                e0 = max(e0, after[0])
            if of is not None:
                of = of.strip(" ,.;:?!，。、") or None
            if of is not None and (any(stem in fold(of) for stem in _COORD_STEMS)
                                   or (f.coords and any(ch.isdigit() for ch in of))):
                of = None  # the centre is the coordinates (Frame.coords)
            f.around = Around(radius, of, beyond)
            self.take(s0, e0)
            return

    def _compared(self, i: int) -> tuple[int, str, str | None] | None:
        """Chinese "距离X超过/不到 N 米": a comparison word just before the number and a
        distance word ("距离", "离") earlier in the clause; (start, centre, the comparison's op, None
        where the comparison words do not say) or None."""
        lex, toks = self.lex, self.toks
        cmp_start = next((s for s in range(max(0, i - 3), i)
                          if (h := lex.compare.match_at(toks, s, self.taken)) and h[0] == i), None)
        if cmp_start is None:
            return None
        # which way it compares: the filters' comparison words say ("超过": more than)
        way = lex.more_less.match_at(toks, cmp_start)
        op = way[1] if way else None
        for q in range(cmp_start - 1, max(-1, cmp_start - 14), -1):
            if self.taken[q] or _BREAK.search(self.gap(q + 1)):
                return None
            hit = lex.of_start.match_at(toks, q, self.taken)
            if hit and hit[0] < cmp_start:
                longer = lex.of_start.match_at(toks, q - 1, self.taken) if q else None
                if longer and longer[0] >= hit[0]:  # "距离", not its "离"
                    q = q - 1
                return q, self.span(hit[0], cmp_start), op
        return None

    def identifiers(self) -> None:
        """Numbers that a type, id or user cue names: "way 1", "ways with the IDs 1, 2",
        "user with ID 5", "area 3600062422", "ID为7725447的用户"; then user names."""
        lex, toks, f = self.lex, self.toks, self.frame
        cue_at: list[tuple[str, int, int] | None] = [None] * self.n
        for matcher, prefix in ((lex.ids, "id:"), (lex.types, ""), (lex.users, "")):
            for s, e, kind in self.find(matcher, False):
                for k in range(s, e):
                    if cue_at[k] is None:
                        cue_at[k] = (prefix + kind if prefix else (kind if matcher is lex.types else "user"), s, e)
        for k in range(self.n - 1):
            # OSM's one-letter types before an id, opening the request or a list item: "w 155117890",
            # "n 5143882207 and w 23908731" (not "w 2024", Polish "in 2024": an id has many digits)
            nxt = toks[k + 1]
            if cue_at[k] is None and toks[k].fold in TYPE_LETTERS and nxt.number and nxt.text.isdigit() \
                    and len(nxt.text) >= _TYPE_LETTER_DIGITS and (k == 0 or toks[k - 1].fold in _LIST_WORDS
                                                                  or "," in self.gap(k)):
                cue_at[k] = (TYPE_LETTERS[toks[k].fold], k, k + 1)
        for s, e, kind in self.find(lex.id_types, False):
            if e < self.n and all(cue_at[k] is None for k in range(s, e)) and toks[e].text.isdigit() \
                    and len(toks[e].text) >= _TYPE_LETTER_DIGITS:
                for k in range(s, e):
                    cue_at[k] = (kind, s, e)
                self.frame.types.add(kind)  # (the type it names, as a type word's: "Der Weg 613126639")
        last_kind, last_end = None, -1
        for i, t in enumerate(toks):
            if not t.number or self.taken[i] or not t.text.isdigit() \
                    or (i + 1 < self.n and lex.units.match_at(toks, i + 1)):
                continue  # "100 m" is a distance
            found = None
            if last_kind and last_end == i and not _HARD_BREAK.search(self.gap(i)):
                found = (last_kind, i)  # the next number of a list ("1, 2 and 3")
            if found is None:
                found = self._entity(cue_at, i, -1)
            if found is None and (not lex.spaced or i + 1 < self.n and lex.id_after.match_at(toks, i + 1)):
                found = self._entity(cue_at, i, +1)
                if found is None:
                    found = self._list_then_entity(cue_at, i)
            if found is None:
                last_kind = None
                continue
            kind, reach = found
            n = int(t.text)
            if kind == "user":
                f.uids.append(n)
            elif kind == "area" or (kind == "relation" and (n > 3600000000 or self._as_area(i))):
                # Overpass area ids: "area 1800899" and "relation 62422 as an area" are relations
                f.area_ids.append(n if n >= 2400000000 else 3600000000 + n)
            elif kind in ("node", "way", "relation"):
                f.ids.append((kind, n))
            elif kind != "changeset":
                last_kind = None
                continue
            self.take(min(i, reach), max(i, reach) + 1)
            if i and cue_at[i - 1] is not None and cue_at[i - 1][0].startswith("id:"):
                self.take(cue_at[i - 1][1], i)  # "ID为7725447的用户": the id cue too
            last_kind = kind
            j = i + 1
            while j < self.n and not toks[j].number and toks[j].fold in _LIST_WORDS and j - i < 3:
                j += 1
            last_end = j
        # a user name after a user cue: the next token (names with spaces come quoted)
        for s, e, _ in self.find(lex.users, False):
            if e < self.n and not self.taken[e] and not toks[e].number:
                nxt = toks[e]
                if nxt.fold in lex.stop_words or nxt.fold in _LIST_WORDS or nxt.spaceless \
                        or lex.ids.match_at(toks, e):
                    continue
                raw = self._user_token(e)
                if raw:
                    f.users.append(raw)
                    # the whole name: "ivan_osm" is two tokens
                    self.take(s, max(e + 1, self.tokens_in(nxt.start, nxt.start + len(raw))[1]))
        if lex.user_first:  # "RichRico 사용자가", "DaveF 사용자의"
            for s, e, _ in self.find(lex.users, False):
                if s > 0 and not self.taken[s - 1] and not toks[s - 1].spaceless and not toks[s - 1].number:
                    k = s - 1
                    while k > 0 and not self.taken[k - 1] and not toks[k - 1].spaceless \
                            and not re.search(r"[\s,;:、，()]", self.gap(k)):
                        k -= 1
                    raw = self.text[toks[k].start:toks[s - 1].end]
                    if re.search(r"[A-Z0-9_]", raw):
                        f.users.append(raw)
                        self.take(k, e)
        # "edits by bob_the_mapper in the last 7 days", "tanaka_taroが2024-04-01以降に編集した": a name joined
        # by underscores in a request about edits (a date or a period) is a user's, cue or not
        # (or a word of editing: "jeju_mapper가 편집한 카페", "cafés edited by osm_jh")
        if f.dates or f.periods or self.find(lex.edited, False):
            for m in _UNDERSCORE_NAME.finditer(self.text):
                i, j = self.tokens_in(m.start(), m.end())
                # "with opening_hours", "without addr_street": a key after a filter cue
                keyed = any(hit and hit[0] == i for s in range(max(0, i - 3), i)
                            for hit in (self.lex.with_cues.match_at(self.toks, s), self.lex.absent_cues.match_at(self.toks, s)))
                if i < j and not any(self.taken[i:j]) and not keyed:
                    f.users.append(m.group())
                    self.take(i, j)
        f.ids = list(dict.fromkeys(f.ids))
        f.uids = list(dict.fromkeys(f.uids))
        f.area_ids = list(dict.fromkeys(f.area_ids))
        f.users = list(dict.fromkeys(f.users))

    def _as_area(self, i: int) -> bool:
        """"relation 62422 as an area": an area cue right after the number."""
        j = i + 1
        while j < self.n and j - i <= 3 and self.toks[j].fold in ("as", "an", "a", "als", "comme", "como"):
            j += 1
        hit = self.lex.ids.match_at(self.toks, j) if j > i + 1 else None
        return bool(hit and hit[1] == "area")

    def _list_then_entity(self, cue_at, i: int) -> tuple[str, int] | None:
        """"ID 为 264199819、2045820592 和 577258918 的节点": after an id cue, a list of
        numbers whose kind comes after the last one."""
        toks = self.toks
        if not any(c is not None and c[0] == "id:id" for c in cue_at[max(0, i - 3):i]):
            return None
        last = i
        k = i + 1
        while k < self.n:
            if toks[k].number and not _HARD_BREAK.search(self.gap(k)):
                last = k
                k += 1
            elif toks[k].fold in _LIST_WORDS and k + 1 < self.n and (toks[k + 1].number or toks[k + 1].fold in _LIST_WORDS):
                k += 1  # "和", "同埋", "或者"
            else:
                break
        found = self._entity(cue_at, last, +1)
        return (found[0], i) if found else None

    def _entity(self, cue_at, i: int, step: int) -> tuple[str, int] | None:
        """The kind named by the cues next to number ``i`` (before it, ``step=-1``, or
        after it in CJK order) and the farthest token used; fillers ("with the") may
        stand between, an id cue alone ("ID 5") looks one entity further."""
        fillers = _ID_FILLERS if step < 0 else _ID_FILLERS_CJK
        k, reach, id_seen = i + step, i, False
        while 0 <= k < self.n and abs(k - i) <= 6:
            if _HARD_BREAK.search(self.gap(max(k, k - step) if step < 0 else k)):
                break
            cue = cue_at[k]
            if cue is not None:
                kind, s, e = cue
                reach = s if step < 0 else e - 1
                if kind.startswith("id:"):
                    sub = kind[3:]
                    if sub in ("area", "changeset"):
                        return sub, reach
                    if sub == "uid":
                        return "user", reach
                    id_seen = True
                else:
                    return kind, reach
                k = (s - 1) if step < 0 else e
                continue
            if self.toks[k].fold in fillers or self.toks[k].fold in self.lex.stop_words and id_seen \
                    or step > 0 and self.lex.id_after.match_at(self.toks, k):
                k += step
                continue
            break
        return None

    def _user_token(self, k: int) -> str | None:
        """The user name starting at token ``k``, as written (``MassGIS_Import``, ``HK2002``)."""
        start = self.toks[k].start
        m = re.match(r"[^\s,;:?!.()，。、\"“”«»]+", self.text[start:])
        if not m:
            return None
        word = m.group()
        if script_of(word[0]) == "Latin":  # "DaveF가": the particle is not part of the name
            word = re.sub(r"[^\x00-\u024f]+$", "", word).strip("'’\"")
        if not word or not re.search(r"[A-Z0-9_]", word[1:]) and not word[:1].isupper():
            return None  # a lower-case word after "user" is a verb or noun, not a name
        return word

    def view(self) -> None:
        for s, e, _ in self.find(self.lex.view, True):
            if e < self.n and self.toks[e].number and not _BREAK.search(self.gap(e)):
                continue  # "dans la zone 3600114938", "in the bounding box 51.0,-1.0,...": not the view
            self.frame.in_view = True
            self.take(s, e)

    def outputs(self) -> None:
        for s, e, kind in self.find(self.lex.output, True):
            self.frame.output.add(kind)
            self.frame.output_spans.setdefault(kind, (self.toks[s].start, self.toks[e - 1].end))
            self.take(s, e)
            self.output_tokens.update(range(s, e))

    def types(self) -> None:
        # read past other steps: "ways with the IDs 1, 2" names ways as ids do; not an output's words
        # ("jako punkty": as points, a centre, not nodes)
        for s, e, kind in self.find(self.lex.types, False):
            if self.output_tokens.issuperset(range(s, e)) or self.named_tokens.issuperset(range(s, e)):
                continue  # (nor a quoted name's words: 'la calle "Gran Vía"')
            self.frame.types.add(kind)
            self.take(s, e)

    def name_in(self) -> None:
        """"cafes with coffee in the name", "улицы в названии которых есть ленин": the cue is no thing of
        its own (the value next to it is a name pattern: :meth:`_name_pattern`)."""
        for s, e, _ in self.find(self.lex.name_in, True):
            self.take(s, e)

    def unquoted_names(self) -> None:
        """"toy shops named Bart Smit", "addresses called Leutersdorf": a name-cased run
        right after a name cue, in scripts with case."""
        if not self.lex.spaced:
            return
        for s, e, _ in self.find(self.lex.names, True):
            if e < self.n and self._is_name_token(e) and not self.toks[e].spaceless \
                    and not _BREAK.search(self.gap(e)) and self.toks[e].fold not in self.lex.not_places:
                j = self._name_run(e, False)
                if j <= e:
                    continue
                # "areas with the name Essen", "area with name Szeged": the area's name is a place
                area = any((h := self.lex.ids.match_at(self.toks, k)) and h[1] == "area" for k in range(max(0, s - 4), s))
                (self.frame.places if area else self.frame.names).append(self.span(e, j))
                self._locate(self.span(e, j), e)
                self.take(s, j)
        self.frame.names = list(dict.fromkeys(self.frame.names))

    # -- place
    def place(self) -> None:
        if self.lex.spaced:
            self._place_spaced()
        else:
            self._place_spaceless()
        f = self.frame
        f.places = list(dict.fromkeys(p for p in f.places if p))
        f.place = f.places[0] if f.places else None

    def _is_name_token(self, k: int) -> bool:
        t = self.toks[k]
        if t.number or self.taken[k]:
            return False
        if t.spaceless:
            return True
        return t.upper or (not t.text.isascii() and script_of(t.text[0]) not in ("Latin", "Cyrillic", "Greek"))

    def _name_run(self, k: int, lowercase_ok: bool) -> int:
        """End of the place name starting at token ``k`` (``k`` when there is none)."""
        lex, toks = self.lex, self.toks
        if k >= self.n or self.taken[k] or toks[k].fold in lex.not_places:
            return k
        if toks[k].spaceless:
            j = k
            while j < self.n and toks[j].spaceless and not self.taken[j] and (j == k or not self.gap(j)):
                j += 1
            return j
        j = k
        while j < self.n:
            if j > k and _BREAK.search(self.gap(j)) and "-" not in self.gap(j):
                break
            if j > k and re.search(r"[,;:?!()]", self.gap(j)):
                break
            if self._is_name_token(j) and toks[j].fold not in lex.not_places:
                j += 1
                continue
            if j > k and toks[j].fold in lex.particles and j + 1 < self.n and self._is_name_token(j + 1):
                j += 1
                continue
            # "République démocratique du Congo": a lower-case word before a particle and a name
            if j > k and j + 2 < self.n and not toks[j].number and toks[j].fold not in lex.stop_words \
                    and toks[j + 1].fold in lex.particles and self._is_name_token(j + 2) \
                    and not _BREAK.search(self.gap(j + 1) + self.gap(j + 2)):
                j += 2
                continue
            break
        if j > k:  # "в Винницкой области", "в Ивано-Франковском городском совете"
            for _ in range(2):
                if j < self.n and toks[j].fold in lex.trailing and not _BREAK.search(self.gap(j)):
                    j += 1
        if j == k and lowercase_ok:
            while j < self.n and j - k < 3 and not self.taken[j] and not toks[j].number \
                    and toks[j].fold not in lex.stop_words and toks[j].fold not in lex.not_places \
                    and not lex.stop.match_at(toks, j) and not lex.preps.match_at(toks, j) \
                    and not lex.neg_before.match_at(toks, j) and not lex.more_less.match_at(toks, j) \
                    and (j == k or not _BREAK.search(self.gap(j))):
                j += 1  # (a negation ends the name: "w poznaniu oprócz orlenu"; a comparison too:
                #            "w warszawie powyżej 40 pięter", "in berlin over 10 floors")
            # a particle inside a lower-case name that ends the request: "in val di fassa", "na serra da estrela"
            if k < j < self.n - 1 and toks[j].fold in lex.particles and toks[j].fold not in lex.place_and \
                    and not toks[j].spaceless and not _BREAK.search(self.gap(j) + self.gap(j + 1)) \
                    and not toks[j + 1].number and toks[j + 1].fold not in lex.stop_words and not self.taken[j + 1] \
                    and not self.text[toks[j + 1].end:].strip(" ?.!"):
                j += 2
        return j

    def _place_spaced(self) -> None:
        lex, toks, f = self.lex, self.toks, self.frame
        # a request written all in lower case ("cafes in heidelberg") names places in lower case too
        # (a quoted name, read and taken before, keeps its own case: 'biergarten "Augustiner-Keller" in münchen')
        # a preposition that ends a name operation is none: "whose name ends in station"
        ops = self.find(lex.name_ops, True)
        in_ops = {q: op for a, b, op in ops for q in range(a, b)}
        # the capitals right after one are the name's value, no place ("whose name ends with Academy",
        # "dont le nom commence par Grande Pharmacie"): a request in lower case but for them is in lower case
        valued = set()
        for _, b, _ in ops:
            while b < self.n and toks[b].upper and not self.taken[b]:
                valued.add(b)
                b += 1
        lowercase = not any(t.upper for k, t in enumerate(toks) if not self.taken[k] and k not in valued)
        found: list[tuple[int, int]] = []
        preps = self.find(lex.preps, True)
        for s, e, _ in preps:
            if self.gap(s).endswith("-") or (e < self.n and self.gap(e).startswith("-")):
                continue  # "in-patient", "Rhein-in-..." : part of a word
            if s in in_ops and (self._cue_near(lex.names, s, s, before=True, after=False, reach=6)
                                # without a name cue, before one word and another preposition:
                                # "streets ending in lane in oxford"
                                or in_ops[s] in ("starts", "ends") and any(s2 == e + 1 for s2, _, _ in preps)):
                continue
            k = e
            while k < self.n and toks[k].fold in lex.articles and not self.taken[k]:
                k += 1
            if k + 1 < self.n and not toks[k].upper and lex.nouns.match_at(toks, k + 1, self.taken):
                k += 1  # "in der niederländischen Provinz Limburg": an adjective before the noun
            noun = lex.nouns.match_at(toks, k, self.taken) if k < self.n else None
            if noun and noun[0] < self.n and self._is_name_token(noun[0]):
                k = noun[0]
            weak = lex.weak_preps.match_at(toks, s)
            strong = not (weak and weak[0] == e)
            j = self._name_run(k, lowercase and strong)
            end_ok = lex.lowercase_end if strong else fold(self.span(s, e)) in lex.lowercase_end_weak
            if j == k and end_ok and k < self.n and not toks[k].upper and not self.taken[k]:
                # "Count of trees in paraguay": a lower-case word that ends the request
                end = self._name_run(k, True)
                if end > k and end - k <= 2 and not self.text[toks[end - 1].end:].strip(" ?.!") \
                        and (strong or self._weak_end_place(s, k, end)):
                    j = end
            if j > k:
                found.append((s, k, j))
        if lex.apostrophe_suffixes:
            found += self._apostrophe_places(lowercase)
        if not found and lex.lang != "de":
            # "florist Forlì-Cesena": a name-cased run that is not the request's first word
            for k in range(1, self.n):
                if self._is_name_token(k) and not toks[k].spaceless and not self._is_name_token(k - 1) \
                        and toks[k].fold not in lex.not_places and toks[k].fold not in lex.stop_words and k not in valued:
                    j = self._name_run(k, False)
                    # only a name that ends the request ("florist Forlì-Cesena"): inside
                    # a sentence a capitalised word is more often a term ("ISCED level")
                    if j > k and not self.text[self.toks[j - 1].end:].strip(" ?.!"):
                        found.append((k, k, j))
                    break
        for s, k, j in found:
            self._add_place(s, k, j)
            # "in Dendermonde, Belgium" / "in Berlin and Hamburg": one more name after it
            while j < self.n:
                nxt = j
                if toks[nxt].fold in lex.place_and and not re.search(r"[;:?!()]", self.gap(nxt)):
                    nxt += 1
                elif not re.fullmatch(r"\s*[,，]\s*", self.gap(j)):
                    break
                again = lex.preps.match_at(toks, nxt) if nxt > j else None
                if again:
                    nxt = again[0]  # "a milano e a torino": the preposition again
                if nxt >= self.n or toks[nxt].fold in lex.not_places:
                    break
                if self._is_name_token(nxt):
                    j2 = self._name_run(nxt, False)
                elif lowercase and nxt > j:
                    # all in lower case, "pubs in cork and galway": a name that ends the request
                    j2 = self._name_run(nxt, True)
                    if j2 <= nxt or j2 - nxt > 2 or self.text[toks[j2 - 1].end:].strip(" ?.!"):
                        break
                else:
                    break
                if j2 <= nxt:
                    break
                self._add_place(j, nxt, j2)
                j = j2

    def _strong_post_ends(self, k: int) -> bool:
        """Whether a strong postposition ends right before token ``k``: the centre of an around that comes
        first stops there, the place before it is the request's area ("福岡で駅から200m以内": stations in
        Fukuoka, not a centre "福岡で駅")."""
        return any((hit := self.lex.strong.match_at(self.toks, q)) and hit[0] == k for q in range(max(0, k - 4), k))

    def _weak_end_place(self, s: int, k: int, end: int) -> bool:
        """Whether the lower-case words ``k..end`` that end the request after the weak preposition at ``s``
        are its place: a city's name ("farmacie a bari"), or words of neither the language's dictionary nor
        its attributes, which after a weak preposition are more often a thing's ("restaurants de poisson",
        "restrictions d'accès") than a place's ("boulangeries de honfleur", "fietsverhuur op texel"); not
        where another preposition opens a name just before ("en ciudad de mexico", "da torre de belém")."""
        if any(stem_fold(self.span(q, end)) in gazetteer() for q in range(max(0, s - 2), s)):
            return False  # the end of a longer name: "en ciudad de mexico"
        if s > 0 and self.toks[s - 1].fold in self.lex.place_and:
            return False  # the last of a list the request's reading takes whole: "gasolineras de murcia y de alicante"
        key = stem_fold(self.span(k, end))
        if key in gazetteer() or key in word_cities():
            return True
        if any(s - 3 <= a < s for a, _, _ in self.find(self.lex.preps, False)):  # (an around's too: "a 300 m da")
            return False
        return not any(in_dictionary(self.toks[q].text, self.lex.lang) or self.toks[q].fold in words_of(self.lex.lang)
                       for q in range(k, end))

    def _apostrophe_places(self, lowercase: bool) -> list[tuple[int, int, int]]:
        """Turkish: a place takes its case ending after an apostrophe ("Ankara'da", "Kocaeli'deki",
        "trabzon'daki"): the name-cased run before it (in a request all in lower case, the one word),
        with the ending taken too. An ending written without an apostrophe is not split."""
        lex, toks, out = self.lex, self.toks, []
        for k in range(1, self.n):
            if toks[k].fold not in lex.apostrophe_suffixes or self.gap(k) not in ("'", "’") \
                    or self.taken[k] or self.taken[k - 1] or toks[k - 1].number:
                continue
            start = k - 1
            if toks[start].fold in lex.not_places or toks[start].fold in lex.stop_words:
                continue
            if not lowercase and toks[start].upper:
                while start > 0 and self._is_name_token(start - 1) and toks[start - 1].fold not in lex.not_places \
                        and re.fullmatch(r"[ -]", self.gap(start)):
                    start -= 1
            self.take(k, k + 1)
            out.append((start, start, k))
            # "bursa ve kocaeli'deki hastaneler": the one word that opens the request before "ve" too
            if start == 2 and toks[1].fold in lex.place_and and not self.taken[0] and not toks[0].number \
                    and toks[0].fold not in lex.not_places and toks[0].fold not in lex.stop_words:
                out.insert(len(out) - 1, (0, 0, 1))
        return out

    def _add_place(self, s: int, k: int, j: int) -> None:
        name = self.span(k, j).strip(" ,.;:-'’")
        if not name or fold(name) in self.lex.not_places:
            return
        self.frame.places.append(name)
        self._locate(name, k)
        self.take(k, j)
        if s < k:
            self.take(s, k)

    def _place_spaceless(self) -> None:
        """Chinese, Japanese, Korean: a place opens a clause ("成都有哪些", "ドイツにある",
        "독일에 있는") or follows a preposition ("在西安的"); it ends at a postposition
        of the table, or at the clause's end where it looks like a name (a place suffix
        such as 省/県/도, or mostly transliteration characters)."""
        lex, toks, f = self.lex, self.toks, self.frame
        starts = {0}
        soft = set()  # after a date or a cue: only a strong postposition makes a place there
        for k in range(1, self.n):
            if _BREAK.search(self.gap(k)):
                starts.add(k)
            elif lex.soft_starts and self.taken[k - 1] and not self.taken[k]:
                soft.add(k)
        starts |= soft
        after_prep = set()
        for s, e, _ in self.find(lex.preps, True):
            starts.add(e)
            after_prep.add(e)
        # Korean: a word ending in a particle that is not a place's ends a name ("번호가 있는")
        stop_ends = {e - 1 for s, e, _ in self.find(lex.stop, True, end_only=True)
                     if not (lex.posts.match_at(toks, s) or (0, 0))[0] == e} if lex.spaced_words else set()
        later: list[int] = []
        queue = sorted(starts)
        while queue or later:
            k = later.pop(0) if later else queue.pop(0)
            was_soft = k in soft
            while k < self.n and not self.taken[k]:  # "请列出", "显示", "在" at the clause start
                hit = lex.lead.match_at(toks, k, self.taken) or lex.preps.match_at(toks, k, self.taken) \
                    or (was_soft and lex.stop.match_at(toks, k, self.taken))  # "2017年…日の間にフランスで"
                if not hit:
                    break
                if lex.preps.match_at(toks, k, self.taken):
                    after_prep.add(hit[0])
                k = hit[0]
            if k >= self.n or self.taken[k] or not self._place_char(k):
                continue
            end = k
            while end < min(self.n, k + 40) and self._place_char(end) and not self.taken[end] \
                    and (end == k or not _BREAK.search(self.gap(end))) \
                    and (end == k or lex.spaced_words or self.gap(end).strip() in ("", "-", "·", "・", "‧", "=")
                         and not (self.gap(end).isspace() and script_of(toks[end - 1].text[0]) == "Han"
                                  and script_of(toks[end].text[0]) == "Han")) \
                    and not (end > k and self.gap(end) and end - 1 in stop_ends) \
                    and not (end > k and not lex.spaced_words and (neg := lex.neg_before.match_at(toks, end))
                             and neg[0] - end > 1) \
                    and not (end > k and not lex.spaced_words and (neg := lex.neg_after.match_at(toks, end))
                             and neg[0] - end > 1):
                end += 1  # (a space typed between two Han letters ends it: "京都 禁煙のカフェ";
                #            Korean: a word ending in a particle ends the name: "번호가 있는"; a negation of
                #            two characters or more ends one: "上海不是星巴克", not "那不勒斯"; one after a
                #            name too: "スタバ以外で", but Starbucks)
            chosen = self._place_end(k, end, after_prep, strong_only=was_soft and k not in after_prep)
            if chosen is None:
                continue
            p, post_end, name, found = chosen
            if fold(name) in lex.not_places or len(name) < 2 or any(ch.isdigit() for ch in name):
                continue
            names = [name]
            if lex.place_and:  # "柏林和勃兰登堡": two places
                parts = [x for x in re.split("|".join(map(re.escape, sorted(lex.place_and, key=len, reverse=True))),
                                             name) if x]
                if len(parts) > 1 and all(self._looks_like_place(x) or len(x) >= 2 for x in parts):
                    names = parts
            f.places.extend(names)
            for name in names:
                self._locate(name, k)
            self.take(k, p)
            if not lex.neg_before.match_at(toks, p):  # "蒙鲁日没有...": the negation stays
                self.take(p, post_end)
            if found and lex.links.match_at(toks, p) and post_end < self.n \
                    and not _BREAK.search(self.gap(post_end)):
                later.append(post_end)  # "ベルギーのデンデルモンデ行政区内で": a second place

    def _place_end(self, k: int, end: int, after_prep: set, strong_only: bool = False) -> tuple | None:
        """Where the place opening at token ``k`` ends (a run of name letters up to
        ``end``): the first postposition whose rule accepts it (a strong one; a weak
        link after a name-like run), else the run's end when the run looks like a name.
        ``(end, end of the postposition, name, postposition found)`` or None."""
        lex, toks = self.lex, self.toks
        hits = []
        for p in range(k + 1, min(end + 1, self.n)):
            hit = lex.posts.match_at(toks, p)
            if not hit or p - k < 2 and script_of(toks[k].text[0]) == "Han":
                continue
            if lex.neg_after.match_at(toks, p):
                continue  # "トイレのない", "ラウンドアバウトではない": a thing negated, not a place
            if (w := lex.with_cues.match_at(toks, p)) and w[0] > hit[0]:
                continue  # a with-cue that opens like one: "で" of "テイクアウトできる" (can be taken away)
            if lex.post_word_end and (p < self.n and self.gap(p).strip() or not self._word_end(hit[0])):
                continue  # a Korean particle ends a word: "독일에" is, "에너지" is not
            hits.append((hit[1] if lex.post_priority else 0, p, hit[0]))
        bare = self._bare_phrase(k, hits, strong_only)
        if bare is not None:
            return bare
        for _, p, post_end in sorted(hits):
            name = self.span(k, p).strip()
            if fold(name) in lex.not_places or any(ch.isdigit() for ch in name):
                continue
            strong = lex.strong.match_at(toks, p) is not None
            # a weak link ("的", "の", "의", "里") needs a name-like run
            name_like = strong or not strong_only and self._looks_like_place(name, 0.6 if k in after_prep or k == 0 else 0.8)
            if name_like or (k == 0 and lex.weak_at_start):
                for tail in lex.strip_after:  # "라이테 지역의": the place is "라이테"
                    if name.endswith(" " + tail):
                        name = name[:-len(tail)].rstrip()
                if not name_like:
                    self.frame.opening_place = name
                return p, post_end, name, True
        name = self.span(k, end).strip() if end > k else ""
        if not strong_only and self._looks_like_place(name, 1.0, min_len=3):
            return end, end, name, False
        return None

    def _bare_phrase(self, k: int, hits: list, strong_only: bool) -> tuple | None:
        """The request is "X的Y" and at most a question (``bare_phrase`` languages: "北京的博物馆",
        "上海的医院有哪些", "東京の駅はどこですか"): X, one name, is the place whatever its spelling,
        and Y the thing, not a second place. Read before the postposition rules, which took "上海的医院"
        whole. Marked ``Frame.opening_place`` unless X looks like a name, since a thing can stand
        there too ("公园的长椅"). Only such a request: in a sentence, the first words before a link are
        as often a topic ("过去三天的…", "德国有哪些著名的…") as a place."""
        lex, toks = self.lex, self.toks
        if not lex.bare_phrase or k != 0 or strong_only or lex.neg_before.match_at(toks, k) or lex.lead.match_at(toks, k):
            return None
        links = [(p, post_end) for _, p, post_end in hits if lex.links.match_at(toks, p)]
        if not links:
            return None
        p, post_end = min(links)
        name = self.span(k, p).strip()
        # X is one name: no postposition ("境内的"), clause ("有哪些著名的"), question word ("哪里", "邊度";
        # a single letter that is also a stop word is no word: "上海") or break inside it
        for q in range(k, p):
            word = lex.stop.match_at(toks, q)
            if self.taken[q] or word and word[0] - q >= 2 or q > k and (
                    lex.posts.match_at(toks, q) or lex.preps.match_at(toks, q) or _BREAK.search(self.gap(q))):
                return None  # (a name may start with a letter that is also a postposition: "上海")
        if len(name) < 2 or fold(name) in lex.not_places or any(ch.isdigit() for ch in name) \
                or not self._thing_then_question(post_end):
            return None
        if not self._looks_like_place(name):  # "北京", not "成都" (都) or "南チロル" (katakana): only the position says place
            self.frame.opening_place = name
        return p, post_end, name, False  # what follows the link is the thing, not a second place

    def _thing_then_question(self, q: int) -> bool:
        """From token ``q`` on, the request is one thing ("博物馆") and then, at most, a question made
        of stop words, postpositions and cues read already ("在哪里", "有哪些", "有多少", "はどこですか")."""
        lex, toks = self.lex, self.toks
        start = q
        while q < self.n and not (self.taken[q] or toks[q].number or lex.posts.match_at(toks, q)
                                  or lex.stop.match_at(toks, q) or q > start and _BREAK.search(self.gap(q))):
            q += 1
        if q == start:
            return False
        while q < self.n:
            hit = lex.stop.match_at(toks, q) or lex.posts.match_at(toks, q) or lex.preps.match_at(toks, q)
            if hit:
                q = hit[0]
            elif self.taken[q]:
                q += 1
            else:
                return False
        return True

    def _looks_like_place(self, name: str, share: float = 0.6, min_len: int = 2) -> bool:
        """A place suffix (省, 県, 도...), or at least ``share`` of the letters are
        transliteration characters (马格尼托哥尔斯克)."""
        lex = self.lex
        letters = [ch for ch in name if not ch.isspace()]
        if len(letters) < 2:
            return False
        # (in Korean a suffix marks its own word: "식당 대구" is a restaurant and Daegu, not one place)
        if any(name.endswith(sfx) for sfx in lex.suffixes) and len(letters) > 1 \
                and not (self.frame.script == "Hangul" and len(name.split()) > 1):
            return True
        if len(letters) >= min_len and lex.name_chars \
                and sum(ch in lex.name_chars for ch in letters) >= share * len(letters):
            return True
        # Japanese writes foreign names in katakana (and many loanwords: only with a postposition)
        return lex.lang == "ja" and min_len < 3 and all(script_of(ch) == "Katakana" or ch in "ー・=" for ch in letters)

    def _place_char(self, k: int) -> bool:
        t = self.toks[k]
        if t.number:
            return False
        if self.lex.lang == "ja":
            return script_of(t.text[0]) in ("Han", "Katakana") or (not t.spaceless and t.upper)
        if self.lex.lang == "ko":
            return script_of(t.text[0]) == "Hangul" or (not t.spaceless and t.upper)
        return t.spaceless or t.upper

    # -- what remains
    def content(self) -> None:
        lex, toks, f = self.lex, self.toks, self.frame
        is_stop = [False] * self.n
        stops = [(s, e) for s, e, _ in self.find(lex.stop, True, end_only=True)]  # "이" in "7725447이", not in "이름"
        # in a script without spaces a stop word inside an attribute's word is a letter of it: "も" of "背もたれ"
        inside = [m.span for m in find_attributes(self.text, lex.lang)] if not lex.spaced and self.frame.script in SPACELESS_SCRIPTS else []
        for s, e in stops:
            for k in range(s, e):
                is_stop[k] = not any(a < toks[k].start and toks[k].end < b for a, b in inside)
        for k in range(self.n - 1):  # "100 米", "3 km": a measure, not a thing asked for
            if toks[k].number and not self.taken[k + 1]:
                hit = lex.units.match_at(toks, k + 1, self.taken)
                if hit:
                    for j in range(k + 1, hit[0]):
                        is_stop[j] = True
        neg = self.neg = [False] * self.n
        # a negation word inside a comparison or a distance is none: "al menos 4" (at least), "a menos de 500 m"
        # ("no less than 4": the negation opens the comparison)
        # a negation inside a name operation is the operation's: "dont le nom ne contient pas pizza"
        named = [(a, b) for a, b, op in self.find(lex.name_ops, False) if op.startswith("not_")]
        wider = [(a, b) for a, b, _ in (*self.find(lex.more_less, False), *self.find(lex.around_before, False))]
        negations = self.find(lex.neg_before, True)
        for s, e, _ in negations:
            if any(a <= s and e <= b for a, b in named):
                continue
            for k in range(s, e):
                is_stop[k] = True
            if e < self.n and lex.name_ops.match_at(toks, e) and self._cue_near(lex.names, s, s, before=True, after=False, reach=4):
                # right before a name operation the negation is the operation's: "cuyo nombre no empieza por
                # Calle", "il cui nome non inizia con Via" (the name lacks it; the value is no negated thing); a
                # name's word just before: "不包括自行车道" excludes cycleways
                self.negated_ops.add(e)
                continue
            if any(a <= s and e <= b and (a, b) != (s, e) for a, b in wider):
                continue
            if any(a <= s and e <= b and (a, b) != (s, e) for a, b in stops):
                continue  # a question's words: "附近有没有充电桩" (is there a charger nearby), "有冇"
            k = e
            while k < self.n:
                if k > e and _HARD_BREAK.search(self.gap(k)):
                    break
                if k > e and lex.scope_end.match_at(toks, k, self.taken):
                    break
                neg[k] = True
                k += 1
        after_neg = self.after_neg = [False] * self.n
        before = {(s, e) for s, e, _ in negations}
        for s, e, _ in self.find(lex.neg_after, True):
            if any(a <= s and e <= b for a, b in named):
                continue
            # a word that negates either way ("missing") negates what follows when a word of it follows:
            # "hotels missing a phone number", but "phone number missing", "house number missing in bonn"
            if (s, e) in before and e < self.n and not _HARD_BREAK.search(self.gap(e)) \
                    and not self.taken[e] and not lex.scope_end.match_at(toks, e):
                continue
            for k in range(s, e):
                is_stop[k] = True
                after_neg[k] = True
        for k in range(1, self.n - 1):  # "immeubles de bureaux", "cours d'eau": one phrase
            if is_stop[k] and toks[k].fold in lex.joiners and not self.taken[k - 1] and not is_stop[k - 1] \
                    and not self.taken[k + 1] and not is_stop[k + 1] and not _BREAK.search(self.gap(k)) \
                    and not _BREAK.search(self.gap(k + 1).replace("'", "").replace("’", "")):
                is_stop[k] = False
        phrases: list[tuple[int, int]] = []
        i = 0
        while i < self.n:
            if self.taken[i] or is_stop[i] or toks[i].number and not _part_of_word(self, i):
                i += 1
                continue
            j = i + 1
            while j < self.n and not self.taken[j] and not is_stop[j] and neg[j] == neg[i] \
                    and not (_BREAK.search(self.gap(j)) and not re.fullmatch(r"[-:'’_/]", self.gap(j).strip() or " ")) \
                    and not (lex.spaced and len(self.gap(j)) > 3):
                j += 1
            phrases.append((i, j))
            i = j
        split = []
        for i, j in phrases:
            # in a language written without spaces (not Korean, whose words are spaced), a negation after a
            # phrase negates what follows its last space: "コンビニ ローソン以外" (convenience stores but Lawson)
            if j < self.n and not neg[i] and toks[i].spaceless and not lex.spaced_words \
                    and self._neg_follows(j, after_neg, is_stop):
                k = next((k for k in range(j - 1, i, -1) if " " in self.gap(k)), None)
                if k is not None:
                    split += [(i, k), (k, j)]
                    continue
            split.append((i, j))
        for i, j in split:
            text = self.span(i, j).strip(" -:'’_/")
            if not text or (len(text) == 1 and not toks[i].spaceless):
                continue
            negated = neg[i] or (j < self.n and self._neg_follows(j, after_neg, is_stop))
            (f.negated if negated else f.what).append(text)
            self._locate(text, i)
            self.phrases.append((i, j, text, negated))
        f.what = list(dict.fromkeys(f.what))
        f.negated = list(dict.fromkeys(f.negated))

    # -- attribute filters and numbers (for composing a query; read last, they take no token)
    def attributes(self) -> None:
        """Attribute filters: a phrase after a with-cue ("cafes with wifi", "Cafés mit WLAN"; before one
        in Japanese and Korean: "Wi-Fiのあるカフェ") asks for elements that have it; a negated phrase
        for elements without it ("without a name": absent) or not so ("not private": no); a number after
        a comparison cue ("more than 10 floors", "10층 이상") compares; a name after a name cue, or a
        phrase after a name cue and a name operation ("whose name ends with strasse"), is a name
        pattern (op contains / starts / ends; else equals)."""
        lex, toks, f = self.lex, self.toks, self.frame
        phrase_at = {k: n for n, (i, j, _, _) in enumerate(self.phrases) for k in range(i, j)}
        done: set[int] = set()
        for k, t in enumerate(toks):
            if not t.number or k in self.not_numbers or (self.taken[k] and k not in phrase_at):
                continue  # a date, id or coordinate; a distance read by an around cue
            found = self._comparison(k)
            if found is None:
                continue
            op, cue, unit, unit_end = found
            start, end = min(cue.start, k), max(cue.stop, unit_end)  # the comparison's tokens: cue, number, unit
            # the attribute: the phrase with the number in it ("least 4 stars"), between the number and a
            # cue after it ("10层以上": 层), or right after the comparison ("more than 10 floors")
            n = phrase_at.get(k)
            if n is None:
                n = next((m for m, (i, _, _, neg) in enumerate(self.phrases) if k < i <= end + 2 and not neg), None)
            if n is not None and n not in done:
                done.add(n)
                i, j, text, _ = self.phrases[n]
                kept = [q for q in range(i, j) if q not in cue and not k <= q < unit_end]
                words = self.span(kept[0], kept[-1] + 1) if kept else text
                f.filters.append(("compare", words, f.spans.get(text), op, t.text, unit))
            else:
                f.filters.append(("compare", self.span(start, end), (toks[start].start, toks[end - 1].end), op, t.text, unit))
        for n, (i, j, text, negated) in enumerate(self.phrases):
            if n in done:
                continue
            named = self._name_pattern(i, j)
            if named is not None and named[1] in _QUOTING_PARTICLES:
                named = None  # a quoting particle before the operation: "名前に「中央」って入ってる" (the quoted name's)
            if named is not None:
                # "whose name does not contain Coffee", "without pizza in the name": the name lacks it
                op = _negated_op(named[0], negated)
                f.filters.append(("name", named[1], f.spans.get(text), op, named[1], None))
            elif negated:
                absent = self._cue_near(lex.absent_cues, i, j, before=True, after=bool(lex.neg_after))
                f.filters.append(("absent" if absent else "no", text, f.spans.get(text), None, None, None))
            elif lex.with_after:
                if n + 1 < len(self.phrases) and self._cue_near(lex.with_cues, i, j, before=False, after=True):
                    f.filters.append(("yes", text, f.spans.get(text), None, None, None))
            elif (n > 0 or lex.spaced and i > 1 and any(
                    self.frame.spans.get(p, (0, 0))[1] <= toks[i - 1].start for p in self.frame.places)) \
                    and self._cue_near(lex.with_cues, i, j, before=True, after=False, phrase_at=phrase_at):
                # (the first phrase too, after a place that may hold the thing: "in Bonn Cafés mit WLAN"; not
                # without spaces, where "有" is also "there are": "乍得有哪些银行")
                f.filters.append(("yes", text, f.spans.get(text), None, None, None))
        values = {x[4] for x in f.filters if x[0] == "name"}
        for name in f.names:
            at = self.text.find(name)
            if at < 0 or name in values:
                continue
            i, j = self.tokens_in(at, at + len(name))
            # (in Japanese and Korean the operation closes the clause, past a name cue: "「喫茶」って名前に入ってる")
            ops = [_negated_op(hit[1], s in self.negated_ops)
                   for s in range(max(0, i - 6), min(self.n, j + (7 if lex.with_after else 3))) if not i <= s < j
                   for hit in [lex.name_ops.match_at(toks, s)] if hit]
            # "'venue' in their name", "„venue“ im Namen": the name holds it
            inside = j < self.n and lex.name_in.match_at(toks, j + (1 if j + 1 < self.n and not toks[j].fold.isalnum() else 0))
            if not ops and inside and inside[1] == "after":
                ops = ["contains"]
            op = ops[0] if ops else "equals"
            # a negation before the name or closing its clause: "in dem nicht 'Coffee' vorkommt", "「駅」を含まない"
            op = _negated_op(op, bool(ops) and (any(self.neg[max(0, i - 1):i + 1])
                                                or any(self.after_neg[j:min(self.n, j + 4)])))
            f.filters.append(("name", name, (at, at + len(name)), op, name, None))
        f.filters = list(dict.fromkeys(f.filters))

    def _name_pattern(self, i: int, j: int) -> tuple[str, str] | None:
        """(op, value) when the phrase ``i..j`` is a name pattern, a name cue first: a name operation right
        before the value ("name ends with strasse", "name contains pizza") or closing it ("deren Name mit
        Pizza beginnt")."""
        lex, toks = self.lex, self.toks
        # "with coffee in the name" (the cue right after the value), "в названии которых есть ленин",
        # "名字里有人民" (right before it): the name contains the value
        after = lex.name_in.match_at(toks, j) if j < self.n else None
        if after and after[1] == "after" or \
                any(hit and hit[1] == "before" and i - 1 <= hit[0] <= i
                    for s in range(max(0, i - 8), i) for hit in [lex.name_in.match_at(toks, s)]):
            # (a name cue opening the value is no part of it: "со словом море в названии")
            cue = lex.names.match_at(toks, i)
            start = cue[0] if cue and cue[0] < j else i
            # a name operation inside the phrase ends the value: "名前に珈琲ってつく", "이름에 한강 들어가는"
            # (the verb glued to the value, with no stop word between)
            end = next((s for s in range(start, j) if lex.name_ops.match_at(toks, s)), j)
            # (one opening the phrase has its value before the cue, a quoted name: "「喫茶」って名前に入ってる")
            return ("contains", self.span(start, end).strip()) if end > start else None
        for s in range(max(0, i - 3), j):
            hit = lex.name_ops.match_at(toks, s)
            if not hit or hit[0] < i - 1:
                continue
            if not (self._cue_near(lex.names, s, s, before=True, after=False, reach=6)
                    or any(lex.names.match_at(toks, q) for q in range(i, s))):
                # without a name cue, a beginning or an end of one word is still a name's ("streets
                # starting with Kirch", "Straßen, die mit Kirch beginnen"); "containing" is too often
                # something else ("shops containing an ATM")
                # (not beside a quoted name, which is read as one: "start with the letter 'K'"; not in a
                # script without spaces, where a token is one letter)
                one = (hit[0] < j and j - max(hit[0], i) == 1) if not (s > i) else (s - i == 1 and hit[0] == j)
                if hit[1] not in ("starts", "ends") or not one or lex.with_after or self.frame.names \
                        or toks[s].spaceless:
                    continue
            op = _negated_op(hit[1], s in self.negated_ops)
            if hit[0] < j and not lex.with_after:  # the value follows the operation
                # (past a name cue: "cuyo nombre lleve la palabra playa")
                v = max(hit[0], i)
                cue = lex.names.match_at(toks, v)
                return op, self.span(cue[0] if cue and cue[0] < j else v, j)
            if s == i and lex.with_after:
                continue  # Korean, Turkish: the value is before the operation ("한강이 들어간"), read there
            if s > i:  # the operation closes the phrase: the value is before it, after a name cue inside
                first = max((e for q in range(i, s) for e in [lex.names.match_at(toks, q)] if e and e[0] <= s),
                            key=lambda e: e[0], default=(i, None))[0]
                return (op, self.span(first, s)) if first < s else None
        if lex.with_after and toks[i].spaceless and j < self.n \
                and self._cue_near(lex.names, i, i, before=True, after=False, reach=2):
            # Japanese: the operation right after the value, a name cue right before it ("名前が通りで終わる")
            hit = lex.name_ops.match_at(toks, j)
            if hit:
                return hit[1], self.span(i, j)
        return None

    def _comparison(self, k: int) -> tuple[str, range, str | None, int] | None:
        """(op, the cue's tokens, unit, end of the number and its unit) of a comparison of the number at token
        ``k``: a cue ending at it ("more than 10", "mindestens 4"), or one after it ("10 or more"; in a
        script without spaces one word may stand between: "10층 이상")."""
        lex, toks = self.lex, self.toks
        unit, end = None, k + 1
        hit = lex.units.match_at(toks, k + 1) or lex.time_units.match_at(toks, k + 1) if k + 1 < self.n else None
        if k + 1 in self.speed_units:  # "30 km/h or less": the value as maxspeed holds it, the cue after the unit
            end = self.speed_units[k + 1]
        elif hit:
            end, unit = hit
        for s in range(max(0, k - 4), k):
            cue = lex.more_less.match_at(toks, s)
            if cue and cue[0] == k:
                return cue[1], range(s, k), unit, end
        if self.text[toks[k].end:toks[k].end + 1] == "+" and (end == self.n or toks[end].start > toks[k].end + 1):
            # "4+ star hotels": at least 4 (not a sum glued to its next number, "4+5")
            return ">=", range(k + 1, k + 1), unit, end
        # a range, "between 50 and 100 m", "zwischen 50 und 100 Meter": at least the first number (in the
        # second's unit when it has none of its own), at most the second
        if k > 0 and (cue := lex.range_start.match_at(toks, k - 1)) and cue[0] == k:
            if end + 1 < self.n and toks[end].fold in lex.range_and and toks[end + 1].number:
                if self.taken[end + 1]:
                    return None  # a distance's range: "between 100 and 300 km away from Moscow"
                hit2 = lex.units.match_at(toks, end + 2) if end + 2 < self.n else None
                unit = unit or (hit2[1] if hit2 else None)
            return ">=", range(k - 1, k), unit, end
        first = k - 2 if k >= 2 and toks[k - 2].number else (k - 3 if k >= 3 and toks[k - 3].number else None)
        if first is not None and toks[k - 1].fold in lex.range_and and first > 0 \
                and (cue := lex.range_start.match_at(toks, first - 1)) and cue[0] == first:
            return "<=", range(k - 1, k), unit, end
        # a range whose cue closes it ("1000 ile 2000 metre arası", "1000到2000米之间"): the same bounds
        if lex.range_after:
            if end + 1 < self.n and toks[end].fold in lex.range_and and toks[end + 1].number and not self.taken[end + 1]:
                hit2 = lex.units.match_at(toks, end + 2) if end + 2 < self.n else None
                if lex.range_after.match_at(toks, hit2[0] if hit2 else end + 2):
                    return ">=", range(end, end + 1), unit or (hit2[1] if hit2 else None), end
            if first is not None and toks[k - 1].fold in lex.range_and and (after := lex.range_after.match_at(toks, end)):
                return "<=", range(end, after[0]), unit, end
        # after it: "10 or more" right after the number (or its unit); in a script without spaces one
        # more word may stand between ("10层以上": 10 floors or more)
        for s in range(end, min(self.n, end + (2 if not lex.spaced or lex.with_after else 1))):
            cue = lex.more_less.match_at(toks, s)
            # Turkish puts the comparison after the noun too: "10 kattan yüksek" (higher than 10 floors)
            if cue and (not lex.spaced or toks[s].fold in _OR_WORDS or lex.with_after and s > end):
                return cue[1], range(s, cue[0]), unit, end
        return None

    def _cue_near(self, matcher: Matcher, i: int, j: int, *, before: bool, after: bool, phrase_at=None,
                  reach: int = 3) -> bool:
        """A cue of ``matcher`` ending at most ``reach`` tokens before the phrase ``i..j`` (no other phrase
        between), or with ``after`` starting at most two tokens after it."""
        if before:
            for s in range(i - 1, max(-1, i - reach - 2), -1):
                hit = matcher.match_at(self.toks, s)
                if hit and s < hit[0] <= i and hit[0] >= i - reach \
                        and not any(k in (phrase_at or {}) for k in range(hit[0], i)):
                    return True
        if after:
            for s in range(j, min(self.n, j + 3)):
                if matcher.match_at(self.toks, s):
                    return True
        return False

    def numbers(self) -> None:
        """Every number that is no date, id or coordinate, with its unit when one follows."""
        lex, toks, f = self.lex, self.toks, self.frame
        for k, t in enumerate(toks):
            if not t.number or k in self.not_numbers:
                continue
            hit = lex.units.match_at(toks, k + 1) or lex.time_units.match_at(toks, k + 1) \
                if k + 1 < self.n and k + 1 not in self.speed_units else None
            f.numbers.append((number(t.text), t.text, (t.start, t.end), hit[1] if hit else None))

    def _word_end(self, e: int) -> bool:
        """Token ``e`` starts a new word (or the text ends there)."""
        return e <= 0 or e >= self.n or bool(self.gap(e)) or self.toks[e].spaceless != self.toks[e - 1].spaceless

    def _neg_follows(self, j: int, after_neg, is_stop) -> bool:
        """A negation after its phrase ("名前のない", "이름 없는"), past particles."""
        for k in range(j, min(self.n, j + 3)):
            if after_neg[k]:
                return True
            if not is_stop[k]:
                return False
        return False


def _negated_op(op: str, negated: bool) -> str:
    """A name operation with its negation: ``not_`` before it where ``negated``, once ("ne commence pas
    par" is ``not_starts`` already).

    >>> _negated_op("starts", True), _negated_op("not_starts", True), _negated_op("contains", False)
    ('not_starts', 'not_starts', 'contains')
    """
    return "not_" + op if negated and not op.startswith("not_") else op


def _part_of_word(reader: _Reader, i: int) -> bool:
    """A number glued to letters ("A1", "U2") belongs to its phrase."""
    t = reader.toks[i]
    return (i > 0 and reader.toks[i - 1].end == t.start and not reader.toks[i - 1].number
            and not reader.toks[i - 1].spaceless) or \
        (i + 1 < reader.n and reader.toks[i + 1].start == t.end and not reader.toks[i + 1].spaceless)


_ID_FILLERS = frozenset({"with", "the", "id", "ids", "of", "following", "given", "these", "listed", "having", "number", "numbers", "mit", "der", "den", "dem", "die",
                         "avec", "l", "le", "la", "les", "d", "de", "du", "con", "el", "il", "lo", "com", "o", "a",
                         "с", "номером", "номерами", "id", "osm", "#", "nr", "no", "n", "nummer", "numéro", "numero",
                         "identifiant", "identifiants", "identifier", "identifiers", "kennung", "к", "为", "為", "是",
                         "係", "가", "이", "는", "인", "號", "号", "번", "が", "は"})
_ID_FILLERS_CJK = frozenset({"的", "の", "嘅", "인", "번", "号", "號", "이", "가", "는", "으", "로", "번의"})
# A user name joined by underscores ("bob_the_mapper", "kim_osm"); a tag key ("opening_hours") has no
# date or period beside it, and one written "addr:street" or "key=value" is left alone.
_UNDERSCORE_NAME = re.compile(r"(?<![A-Za-z0-9_:=])[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+(?![A-Za-z0-9_:=])")
_OR_WORDS = frozenset({"or", "oder", "ou", "o", "или"})  # a comparison after its number: "10 or more", "10 oder mehr"
_LIST_WORDS = frozenset({"and", "or", "und", "oder", "et", "ou", "y", "o", "e", "и", "или", "和", "或", "與", "埋", "者",
                         "与", "及", "同", "、", "と", "및", "또는", "과", "와",
                         "ve", "veya", "ile", "i", "lub", "oraz", "en", "ed", "oppure"})
# OSM's one-letter element types ("w 155117890"), read before ids of this many digits or more
TYPE_LETTERS, _TYPE_LETTER_DIGITS = {"n": "node", "w": "way", "r": "relation"}, 5
# "within 20 m of the coordinates 49.79, 5.52": the centre is Frame.coords, not a thing
_COORD_STEMS = ("coordinat", "coordonn", "coordenad", "koordinat", "координат", "坐标", "座標", "좌표")


def read_frame(nl: str, language: str | None = None, known: tuple[tuple[int, int], ...] = ()) -> Frame:
    """The intent frame of ``nl`` (see the module's docstring), read in ``language``
    (default: :func:`guess_language`'s); ``known``: character spans the caller knows are
    places (a gazetteer's city opening a request written without spaces, "上海不是星巴克的咖啡馆",
    whose "上" the cue tables would read apart), read as places before anything else. Never
    raises: a request that is not text, empty, emoji or in a script without a cue table gives
    a frame with what it could read (at worst only ``nl``, ``language="und"``)."""
    if not isinstance(nl, str):
        nl = "" if nl is None else str(nl)
    try:
        return _Reader(nl, language, known).read()
    except (ValueError, IndexError, KeyError):  # a reading fault must not sink the caller's request
        return Frame(nl=nl, language="und", script=main_script(nl[:MAX_CHARS]))
