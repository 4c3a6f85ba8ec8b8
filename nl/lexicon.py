"""The feature lexicon: a request's words -> the OSM tags they name, through inflection; brands.

The words are data (``nl/data/lexicon/``, built by ``scripts/build_nl_lexicon.py`` from
the pinned id-tagging-schema and Name Suggestion Index): iD's preset names, aliases and terms in
every language of ``LANGUAGES``, and the brands of many countries. A request's words reach a
surface through their Snowball stems (a few irregular forms through a table of their lemmas:
"Museen" -> "Museum", "музеев" -> "музей"), so plurals and cases find their tags; a phrase
matches as a phrase and the longest match wins ("car park" is not "park"). Chinese, Cantonese,
Japanese and Korean surfaces match anywhere in the text (two letters or more), particles and all.

>>> [(m.text, m.tags) for m in lookup("Tankstellen in Stuttgart", "de")]
[('Tankstellen', ('amenity=fuel',))]
>>> [(m.text, m.tags) for m in lookup("car parks in Dublin", "en")]
[('car parks', ('amenity=parking',))]
>>> [(m.text, m.tags, m.source, m.ref) for m in lookup("Starbucks in Seoul", "en")]
[('Starbucks', ('amenity=cafe', 'brand=Starbucks'), 'brand', 'Q37158')]
>>> place_lemmas("Krakowie", "pl")[0], place_lemmas("Москве", "ru")[0], place_lemmas("İstanbul'da", "tr")[0]
('Kraków', 'Москва', 'İstanbul')

Precision comes first: the reader puts these tags straight into a query, and a wrong tag is
worse than none. Spans the caller already read as places or names can be left out (``skip``).
"""

from __future__ import annotations

import dataclasses
import gzip
import importlib
import json
import re
import threading
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Iterable, Sequence

from geoql.core.errors import GeoqlError
from geoql.nl.attributes import words_of as attribute_words
from geoql.nl.cues import Token, tokens
from geoql.nl.text import base_language, fold, script_of, spaceless

FORMAT = 1
# The languages the lexicon reads: those of the cue tables, and Turkish and Polish (no cue table:
# the caller names the language).
LANGUAGES = ("en", "de", "es", "fr", "it", "pt", "ru", "tr", "pl", "nl", "zh", "yue", "ja", "ko")
# Snowball algorithm per language; None: the language is matched by substring (no spaces, or
# Korean, whose particles are glued to the word).
STEMMERS = {"en": "english", "de": "german", "es": "spanish", "fr": "french", "it": "italian",
            "pt": "portuguese", "ru": "russian", "tr": "turkish", "pl": "polish", "nl": "dutch"}
# How strongly a surface names its preset: iD's name, an alias, a search term, a part of its name
# ("school" of "School Grounds").
ROLE_WEIGHT = {"name": 1.0, "alias": 0.9, "term": 0.6, "part": 0.6}
# A brand match; a brand whose name is also a common word ("Shell", "Next") counts only written
# with its capital, and for less.
BRAND_SCORE, COMMON_BRAND_SCORE = 0.9, 0.6
# A brand written in another case ("пятерочки" of Пятёрочка) in the languages that inflect names: found by
# the stem, of names this long or longer, and weaker than any preset the same word names.
INFLECTED_BRAND_LANGUAGES = {"ru": "Cyrillic", "pl": "Latin"}  # language -> the script of its brands' names
INFLECTED_BRAND_LETTERS, INFLECTED_BRAND_SCORE = 5, 0.55
SHORT_BRAND = 3
# Languages whose plural of a chain's name adds "s" ("mercadonas", "albert heijns"), read by ``Lexicon.brand``
# (the reading takes such a plural only where the brand is all the request asks for: "excluding garages" is
# no Garage).
PLURAL_S_LANGUAGES = ("en", "es", "pt", "fr", "nl", "it", "de")
# Turkish plural (and its possessive) after a chain's name: "bimler", "migrosları".
_TR_PLURAL = re.compile(r"['’]?(?:ler|lar)(?:i|ı)?$", re.IGNORECASE)
# The fewest characters of a brand's abbreviation in a script without spaces ("スタバ", "瑞幸").
ABBREVIATION_LETTERS = 2
# A word misspelt by one letter is read as the surface word it is one edit from when it is this long or
# longer (``Lexicon.corrected``): shorter words are too often other words ("bars"/"bark", "parks"/"parts").
TYPO_LETTERS = 7
# ... by two letters when it is this long or longer ("restaraunts").
TYPO_TWO_LETTERS = 9
# A brand named with an "'s" ("McDonald's", "Sainsbury's") is found without it too when what is left is this long.
POSSESSIVE_BRAND_LETTERS = 5
# Matches scoring less are not returned by default (tuned on OverpassNL train and OsmNL dev:
# scripts/lexicon_accuracy.py).
MIN_SCORE = 0.5
# A match through a stem, not the surface's own words, counts for a little less.
STEM_DISCOUNT = 0.95
# ... and, to choose between candidates, for less still (the score it reports keeps STEM_DISCOUNT).
STEM_PREFERENCE = 0.85


class LexiconError(GeoqlError):
    """The lexicon's data file is missing or malformed (a packaging fault: reinstall geoql)."""


@dataclass(frozen=True)
class FeatureMatch:
    """One span of a request that names a feature.

    ``span`` is in the NFKC form of the text (``unicodedata.normalize("NFKC", text)``, which is
    the text itself for nearly every request); ``text`` the request's words there; ``surface``
    the lexicon's spelling (iD's preset name or term, or the brand); ``tags`` ``key=value``
    strings (``key=*``: any value); ``score`` in (0, 1]; ``source`` ``"preset"`` or ``"brand"``;
    ``ref`` the iD preset id or the brand's Wikidata id; ``lang`` the surface's language
    (``""`` for a brand).
    """

    span: tuple[int, int]
    text: str
    surface: str
    tags: tuple[str, ...]
    score: float
    source: str
    ref: str
    lang: str


def stemmer_version() -> str:
    from importlib.metadata import version

    return version("snowballstemmer")


_STEM_LOCK = threading.Lock()  # a Snowball stemmer object keeps its state between calls


@lru_cache(maxsize=None)
def _stemmer(lang: str):
    name = STEMMERS[lang]
    module = importlib.import_module(f"snowballstemmer.{name}_stemmer")
    return getattr(module, "".join(part.title() for part in name.split("_")) + "Stemmer")()


@lru_cache(maxsize=1 << 16)
def word_keys(word: str, lang: str) -> str:
    """The Snowball stem of one folded word (the word itself in a language without a stemmer).

    >>> word_keys("tankstellen", "de"), word_keys("peaks", "en"), word_keys("camiler", "tr")
    ('tankstell', 'peak', 'cami')
    """
    if STEMMERS.get(lang) is None or not word.isalpha():
        return word
    stemmer = _stemmer(lang)
    with _STEM_LOCK:
        return stemmer.stemWord(word)


def is_spaceless_text(text: str) -> bool:
    return any(spaceless(ch) for ch in text)


def shortens(short: str, name: str) -> bool:
    """Whether ``short`` is a shorter ``name``'s first letter and then some more of its letters in order,
    as people in Japan, Korea and China shorten names ("スタバ" of "スターバックス", "파바" of "파리바게뜨"):
    the rule both the lexicon build (NSI's short forms) and :meth:`Lexicon.brand` read.

    >>> shortens("スタバ", "スターバックス"), shortens("サンクス", "ファミリーマート"), shortens("ママ", "マクドナルド")
    (True, False, False)
    """
    if not short or len(name) <= len(short) or short[0] != name[0]:
        return False
    rest = iter(name[1:])
    return all(ch in rest for ch in short[1:])


def _substring_language(lang: str) -> bool:
    return STEMMERS.get(lang) is None


def key_of(text: str, lang: str, forms: dict[str, str] | None = None) -> str:
    """The lookup key of a surface or phrase: its words' stems (after ``forms``: irregular form ->
    lemma), space-separated; in Chinese, Cantonese, Japanese and Korean the folded text without
    spaces.

    >>> key_of("Car Parks", "en"), key_of("ガソリン スタンド", "ja")
    ('car park', 'ガソリンスタンド')
    """
    folded = fold(text)
    if _substring_language(lang):
        return "".join(folded.split())
    forms = forms or {}
    return " ".join(word_keys(forms.get(t.fold, t.fold), lang) for t in tokens(folded))


# Rows of a language file: [surface, tags, score, ref, role]; of the brands file: [surface, tags, ref, common].
_SURFACE, _TAGS, _SCORE, _REF, _ROLE = range(5)
# A Latin-script request in which its language finds nothing is read in the other Latin languages
# too, its unknown words only (a request guessed English may be German: "Tankstellen in
# Stuttgart"), by names and aliases only, for less.
FOREIGN_DISCOUNT = 0.8
_LATIN = ("en", "de", "fr", "es", "it", "pt", "pl", "tr", "nl")
# A surface of one letter ("駅", station; "寺", temple) names a thing only standing alone: between
# the ends of the phrase, punctuation and these particles (it is part of longer words elsewhere).
PARTICLES = {"ja": "のはがをにでとへやもか", "zh": "的在和与與及或有里裡", "yue": "嘅喺同與和及或有"}


@dataclass
class _Table:
    """One file of the lexicon: a language's surfaces by key, or the brands."""

    lang: str
    keys: dict[str, list]
    forms: dict[str, str]
    max_words: int
    max_letters: int
    stemmed: bool
    # brands: local brands spelled like a word, read only by Lexicon.brand ("continente")
    words: dict[str, list] = field(default_factory=dict)
    # brands: short forms NSI lists ("ファミマ", "сбер"), read only by Lexicon.brand where a brand is meant
    short: dict[str, list] = field(default_factory=dict)

    def key(self, token: Token) -> str:
        return word_keys(self.forms.get(token.fold, token.fold), self.lang)

    def known_words(self) -> frozenset[str]:
        words = self.__dict__.get("_words")
        if words is None:
            words = self.__dict__["_words"] = frozenset(w for k in self.keys for w in k.split())
        return words

    def spaceless_by_initial(self) -> dict[str, tuple[tuple[str, list], ...]]:
        """The keys in a script without spaces with their rows, by their first letter, in the file's
        order (built on first use): what :func:`shortens` can match, which begins at a name's first letter."""
        index = self.__dict__.get("_by_initial")
        if index is None:
            grouped: dict[str, list[tuple[str, list]]] = {}
            for name, row in self.keys.items():
                if is_spaceless_text(name):
                    grouped.setdefault(name[0], []).append((name, row))
            index = self.__dict__["_by_initial"] = {k: tuple(v) for k, v in grouped.items()}
        return index


class Lexicon:
    """The feature lexicon of one data folder (``nl/data/lexicon/``: ``<lang>.json.gz`` per language,
    ``brands.json.gz``); each file is read on first use. ``Lexicon.default()`` is the shipped one."""

    def __init__(self, folder):
        self._folder = folder
        self._tables: dict[str, _Table | None] = {}
        self._inflected: dict[str, dict[str, list]] = {}  # language -> its brands by stem (_inflected_brands)
        self._typo_words: dict[str, tuple] = {}  # language -> its surfaces' words (_surface_words)
        self._letters: dict[str, frozenset[str]] = {}  # language -> its spaceless surfaces' letters (letters)
        self._lock = threading.Lock()

    @staticmethod
    @lru_cache(maxsize=1)
    def default() -> "Lexicon":
        return Lexicon(resources.files("geoql.nl").joinpath("data", "lexicon"))

    @property
    def sources(self) -> dict:
        try:
            return json.loads(self._folder.joinpath("sources.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise LexiconError(f"{self._folder}/sources.json unreadable ({e}); reinstall geoql") from e

    @property
    def files_read(self) -> tuple[str, ...]:
        """The files read so far, by name ("de", "brands")."""
        return tuple(sorted(self._tables))

    def read_all(self) -> "Lexicon":
        """Read every file now, not on first use: a server does it before its first visitor (a
        request in a language not read yet would read its file, ~10-20 ms each, while others wait)."""
        for name in (*LANGUAGES, "brands"):
            self._table(name)
        return self

    def _language_table(self, lang) -> _Table | None:
        """The table of ``lang``'s surfaces: English's for a language without one (or no language)."""
        name = base_language(lang) if isinstance(lang, str) else "en"
        return self._table(name if name in LANGUAGES else "en")

    def _table(self, name: str) -> _Table | None:
        if name in self._tables:
            return self._tables[name]
        with self._lock:
            if name not in self._tables:
                self._tables[name] = self._read(name)
        return self._tables[name]

    def _read(self, name: str) -> _Table | None:
        path = self._folder.joinpath(f"{name}.json.gz")
        if not path.is_file():
            return None
        try:
            data = json.loads(gzip.decompress(path.read_bytes()))
            if data.get("format") != FORMAT:
                raise ValueError(f"format {data.get('format')!r}, expected {FORMAT}")
            keys = data["keys"]
            if name == "brands":  # "McDonald's" is also written "McDonalds", and "mcdonald" where a request's "'s" is read apart
                keys.update({k.replace(" ", ""): v for k, v in list(keys.items()) if " " in k and k.replace(" ", "") not in keys})
                keys.update({k[:-2]: v for k, v in list(keys.items())
                             if k.endswith(" s") and len(k) - 2 >= POSSESSIVE_BRAND_LETTERS and k[:-2] not in keys})
            return _Table(name, keys, data.get("forms", {}), data["max_words"], data["max_letters"],
                          STEMMERS.get(name) is not None, data.get("words", {}), data.get("short", {}))
        except (OSError, ValueError, KeyError) as e:
            raise LexiconError(f"lexicon file {path} unreadable ({e}); reinstall geoql or rebuild it with "
                               "scripts/build_nl_lexicon.py") from e

    def lookup(self, text: str, lang: str, *, skip: Iterable[tuple[int, int]] = (),
               min_score: float = MIN_SCORE, opening: bool = True,
               prefer: frozenset[str] = frozenset()) -> list[FeatureMatch]:
        """The features ``text`` names, left to right, each span once (the longest match wins).

        ``lang`` is the request's language (``geoql.nl.frame.guess_language``; a regional tag
        such as ``zh-TW`` reads as its language); a language the lexicon lacks reads English's
        surfaces. Brands are read in any language; where a Latin-script request's language finds
        nothing, the words it does not know are read in the other Latin-script languages (names
        and aliases only). ``skip``: character spans (of the NFKC text) not to read, such as what
        the frame took for places, names and cue words. Matches under ``min_score`` are left out.
        ``opening``: whether ``text`` opens the request (a phrase from inside it does not: there a
        capital tells a brand spelled like a word, "Supermärkte außer Aldi"). ``prefer``: tags a surface
        that names several things means where it names one of them (the things an attribute of the
        request belongs to: "bancos sin respaldo" are benches, not banks).
        """
        if not isinstance(text, str) or not text.strip():
            return []
        text = unicodedata.normalize("NFKC", text)[:4000]
        table = self._language_table(lang)
        brands = self._table("brands")
        blocked = sorted(skip)
        found: list[FeatureMatch] = []
        if table is not None and not table.stemmed:
            found += self._substring_matches(text, table, brands, blocked, prefer)
        found += self._token_matches(text, table if table is not None and table.stemmed else None, brands,
                                     blocked + [m.span for m in found], opening=opening, prefer=prefer)
        if table is not None and not table.stemmed:
            # a word in Latin letters in a request written without spaces is read in English ("大阪の駅から
            # 100m以内のATM", "서울 ATM")
            latin = [(t.start, t.end) for t in tokens(text) if not t.spaceless and not t.number]
            english = self._table("en") if latin else None
            if english is not None:
                found += [m for m in self._token_matches(text, english, None, blocked + [m.span for m in found],
                                                         opening=opening)
                          if any(a <= m.span[0] and m.span[1] <= b for a, b in latin)]
        if not found and table is not None and table.lang in _LATIN:
            # only when the request's language read nothing: a request misread as English names its
            # things in its own language ("Tankstellen in Stuttgart"), one read right is left alone
            found += self._foreign_matches(text, table, brands, blocked)
        found.sort(key=lambda m: m.span)
        return [m for m in _merge_adjacent(text, found) if m.score >= min_score]

    def brand(self, text: str, lang: str, *, short: bool = False) -> FeatureMatch | None:
        """The brand ``text`` is as a whole, in any case, or less an ending of one or two letters in
        the languages that inflect names ("orlenu": Orlen), or less a plural "s" (``PLURAL_S_LANGUAGES``:
        "mercadonas"); with ``short``, also the one brand a word in a script without spaces shortens
        ("スタバ", "스벅", "瑞幸"); None when it is none. For a reading that knows a brand is meant ("fuel
        stations except bp"): :meth:`lookup` reads a brand spelled like a word only with its capital.

        >>> m = Lexicon.default().brand("bp", "en")
        >>> m.surface, m.tags
        ('BP', ('amenity=fuel', 'brand=BP'))
        """
        stem = _TR_PLURAL.sub("", text) if lang == "tr" else text
        if stem != text and len(stem) >= SHORT_BRAND:  # "bimler", "migrosları": the chain's shops
            found = self.brand(stem, lang, short=short)
            return dataclasses.replace(found, span=(0, len(text)), text=text) if found is not None else None
        variants = [text.upper(), text.title()]
        if lang in INFLECTED_BRAND_LANGUAGES:
            variants += [text[:-k].title() for k in (1, 2) if len(text) - k >= INFLECTED_BRAND_LETTERS]
        elif lang in PLURAL_S_LANGUAGES and text[-1:].lower() == "s" and len(text) - 1 >= INFLECTED_BRAND_LETTERS:
            variants.append(text[:-1].title())  # a chain's shops in the plural: "mercadonas", "lidls"
        for variant in variants:
            for m in self.lookup(variant, lang, opening=False):
                if m.source == "brand" and m.span == (0, len(variant)):
                    return dataclasses.replace(m, span=(0, len(text)), text=text)
        # a short brand whose capitals the variants miss ("bim" is "BİM"); a local brand spelled like a
        # word, which the lookup never reads ("continente")
        brands = self._table("brands")
        key = " ".join(t.fold for t in tokens(text)) if brands is not None and text.strip() else ""
        if key and is_spaceless_text(key):
            key = "".join(fold(text).split())  # keyed as written, without spaces: "다이소"
        # (in the plural too where a chain's shops take an "s": "oxxos", "continentes")
        keys = [key] + ([key[:-1]] if key and lang in PLURAL_S_LANGUAGES and key.endswith("s")
                        and len(key) - 1 >= INFLECTED_BRAND_LETTERS else [])
        for k in keys:
            row = brands.keys.get(k) if k else None
            if row is not None and len(row[0]) <= SHORT_BRAND:
                return FeatureMatch((0, len(text)), text, row[0], tuple(row[1]),
                                    COMMON_BRAND_SCORE if row[3] else BRAND_SCORE, "brand", row[2], "")
            row = brands.words.get(k) if k else None
            if row is not None:
                return FeatureMatch((0, len(text)), text, row[0], tuple(row[1]), COMMON_BRAND_SCORE, "brand", row[2], "")
        row = None
        if short and key:
            # a short form NSI lists, with a case ending where names inflect ("отделения сбера"), or one of a
            # name written without spaces
            bare = "".join(key.split())
            ends = (0, 1, 2) if lang in INFLECTED_BRAND_LANGUAGES else (0,)
            row = next((brands.short[bare[:len(bare) - k]] for k in ends
                        if len(bare) - k >= ABBREVIATION_LETTERS + 2 * (k > 0) and bare[:len(bare) - k] in brands.short), None)
            if row is None and is_spaceless_text(key):
                row = self._abbreviated(key, brands)
        if row is not None:
            # the surface is the abbreviation as typed: it is what the request spells
            return FeatureMatch((0, len(text)), text, text, tuple(row[1]), COMMON_BRAND_SCORE, "brand", row[2], "")
        return None

    def _abbreviated(self, key: str, brands: _Table) -> list | None:
        """The one brand ``key`` (in a script without spaces) shortens: its letters in order in the brand's
        name, from its first ("スタバ": スターバックス, "파바": 파리바게뜨, "瑞幸": 瑞幸咖啡), as people in Japan,
        Korea and China shorten names; None where none or several brands fit."""
        if len(key) < ABBREVIATION_LETTERS:
            return None
        found: dict[str, list] = {}
        for name, row in brands.spaceless_by_initial().get(key[0], ()):
            if shortens(key, name):
                found.setdefault(row[2], row)
        return next(iter(found.values())) if len(found) == 1 else None

    def corrected(self, text: str, lang: str) -> FeatureMatch | None:
        """The one thing ``text`` names with its words misspelt ("libarary" -> "library", "restaraunts" ->
        "restaurant"), where each such word is ``TYPO_LETTERS`` letters or more, no word of ``lang``'s
        surfaces, and nearer to one of them than to any other, within one edit (two from
        ``TYPO_TWO_LETTERS`` letters on), with the same first letter; the match covers ``text`` whole,
        for 0.9 of its score. None otherwise: a short word is too often another word.

        >>> m = Lexicon.default().corrected("restaraunts", "en")
        >>> m.tags, m.text
        (('amenity=restaurant',), 'restaraunts')
        >>> Lexicon.default().corrected("restaurants", "en"), Lexicon.default().corrected("bars", "en")
        (None, None)
        """
        table = self._language_table(lang)
        if table is None or not isinstance(text, str) or not text.strip():
            return None
        words = self._surface_words(table)
        toks = [t for t in tokens(text) if not t.spaceless]
        fixed, changed = [], 0
        for t in toks:
            if t.number or len(t.fold) < TYPO_LETTERS or t.fold in words[0]:
                fixed.append(t.fold)
                continue
            most = 1 if len(t.fold) < TYPO_TWO_LETTERS else 2
            near = sorted((d, w) for n in range(len(t.fold) - most, len(t.fold) + most + 1)
                          for w in words[1].get((t.fold[0], n), ()) if (d := _edits(t.fold, w, most)) <= most)
            if not near or len(near) > 1 and near[1][0] == near[0][0]:
                return None  # (none, or two as near: no telling which was meant)
            fixed.append(near[0][1])
            changed += 1
        if not changed:
            return None
        found = self.lookup(" ".join(fixed), lang, opening=False)
        if len(found) != 1 or found[0].span != (0, len(" ".join(fixed))) or found[0].source == "brand":
            return None
        return dataclasses.replace(found[0], span=(0, len(text)), text=text, score=round(found[0].score * 0.9, 3))

    def surface_words(self, lang: str) -> frozenset[str]:
        """The folded words of ``lang``'s surfaces (English's for a language without a table): the words
        a request may use that are no typo.

        >>> "restaurants" in Lexicon.default().surface_words("en")
        True
        """
        table = self._language_table(lang)
        return self._surface_words(table)[0] if table is not None else frozenset()

    def _surface_words(self, table: _Table) -> tuple[frozenset[str], dict]:
        """The folded words of ``table``'s surfaces, and them by (first letter, length) (built on first use)."""
        got = self._typo_words.get(table.lang)
        if got is None:
            words = frozenset(w for rows in table.keys.values() for row in rows for w in fold(row[_SURFACE]).split())
            index: dict = {}
            for w in words:
                if len(w) >= TYPO_LETTERS - 2:
                    index.setdefault((w[0], len(w)), set()).add(w)
            got = self._typo_words.setdefault(table.lang, (words, index))
        return got

    def letters(self, lang: str) -> frozenset[str]:
        """The letters of the surfaces of ``lang`` written without spaces (its Han, kana, Hangul...): which
        letters a language's own names use, to tell Japanese kanji from Chinese characters (built on first use).

        >>> lex = Lexicon.default()
        >>> "図" in lex.letters("ja"), "図" in lex.letters("zh"), "图" in lex.letters("zh")
        (True, False, True)
        """
        name = base_language(lang) if isinstance(lang, str) else ""
        got = self._letters.get(name)
        if got is None:
            table = self._table(name) if name in LANGUAGES else None
            got = frozenset(ch for key in (table.keys if table is not None else ()) for ch in key if is_spaceless_text(ch))
            got = self._letters.setdefault(name, got)
        return got

    def known_words(self, text: str, lang: str) -> int:
        """How many words of ``text`` the surfaces of ``lang`` itself name (no brands, no other
        language's surfaces, matches under ``MIN_SCORE`` left out): how well ``lang`` reads the
        request, for a language guess the cue words leave open. 0 for a language without a stemmed table.

        >>> lex = Lexicon.default()
        >>> lex.known_words("hospitales en madrid", "es"), lex.known_words("hospitales en madrid", "fr")
        (1, 0)
        """
        name = base_language(lang) if isinstance(lang, str) else ""
        table = self._table(name) if name in LANGUAGES else None
        if table is None or not table.stemmed or not isinstance(text, str):
            return 0
        text = unicodedata.normalize("NFKC", text)[:4000]
        spans = [m.span for m in self._token_matches(text, table, None, []) if m.score >= MIN_SCORE]
        # a brand's name says nothing of the language (Polish iD lists "lidl" as a supermarket's term),
        # nor does a word in capitals ("DROP TABLE": code, a shout, an acronym), nor one of one or two
        # letters: its stem is too short to tell ("à" stems to Turkish "ada", an island)
        brands = self._table("brands")
        return sum(1 for t in tokens(text) if not t.spaceless and any(a <= t.start and t.end <= b for a, b in spans)
                   and len(t.fold) > 2
                   and (brands is None or t.fold not in brands.keys) and not (len(t.text) > 1 and t.text.isupper()))

    # -- spaced scripts: token sequences by stem ---------------------------------------------
    def _token_matches(self, text: str, table: _Table | None, brands: _Table | None, blocked, *,
                       foreign: bool = False, opening: bool = True,
                       prefer: frozenset[str] = frozenset()) -> list[FeatureMatch]:
        toks = [t for t in tokens(text) if not t.spaceless]
        free = [not _overlaps((t.start, t.end), blocked) for t in toks]
        keys = [table.key(t) if table is not None and not t.number else t.fold for t in toks]
        longest = max(brands.max_words if brands else 1, table.max_words if table else 1)
        out: list[FeatureMatch] = []
        i = 0
        while i < len(toks):
            best = None
            for n in range(min(longest, len(toks) - i), 0, -1):
                if not all(free[i:i + n]):
                    continue
                window = toks[i:i + n]
                folds = [t.fold for t in window]
                cands = []
                if table is not None:
                    for row in table.keys.get(" ".join(keys[i:i + n]), ()):
                        if foreign and row[_ROLE] in ("t", "p"):
                            continue
                        score = _score(row, folds) * (FOREIGN_DISCOUNT if foreign else 1.0)
                        cands.append((score, row[_SURFACE], tuple(row[_TAGS]), "preset", row[_REF], table.lang,
                                      folded_surface(row[_SURFACE]) == " ".join(folds)))
                if brands is not None and not foreign:
                    row = brands.keys.get(" ".join(folds))
                    if row and _brand_ok(row, window, i if opening else i + 1):
                        score = COMMON_BRAND_SCORE if row[3] else BRAND_SCORE
                        cands.append((score, row[0], tuple(row[1]), "brand", row[2], "", True))
                    elif not row and n == 1 and table is not None and table.lang in INFLECTED_BRAND_LANGUAGES:
                        # a brand in another case: "кроме пятерочки", "oprócz kauflandu"
                        row = self._inflected_brands(table).get(keys[i])
                        if row:
                            cands.append((INFLECTED_BRAND_SCORE, row[0], tuple(row[1]), "brand", row[2], "", False))
                if cands:
                    # a surface the request spells exactly is preferred to one it only shares stems with
                    # ("parking": amenity=parking, not "park")
                    best = max(cands, key=lambda c: (bool(prefer.intersection(c[2])),
                                                     c[0] * (1.0 if c[6] else STEM_PREFERENCE)))[:6]
                    break
            if best is None:
                i += 1
                continue
            score, surface, tags, source, ref, lang = best
            start, end = window[0].start, window[-1].end
            out.append(FeatureMatch((start, end), text[start:end], surface, tags, round(score, 3), source, ref, lang))
            i += len(window)
        return out

    def _inflected_brands(self, table: _Table) -> dict[str, list]:
        """The brands of one word, by the stem ``table``'s language gives them (built on first use); not
        a brand spelled like a word the language's surfaces or attribute words use ("адрес": an address,
        and an estate agent)."""
        if table.lang not in self._inflected:
            brands = self._table("brands")
            own = table.known_words() | {word_keys(w, table.lang) for w in attribute_words(table.lang)}
            out: dict[str, list] = {}
            script = INFLECTED_BRAND_LANGUAGES[table.lang]
            for key, row in (brands.keys.items() if brands is not None else ()):
                if " " not in key and len(key) >= INFLECTED_BRAND_LETTERS and not row[3] and key.isalpha() \
                        and script_of(key[0]) == script and (stem := word_keys(key, table.lang)) not in own:
                    out.setdefault(stem, row)
            with self._lock:  # two threads may build it; the first one's stays
                self._inflected.setdefault(table.lang, out)
        return self._inflected[table.lang]

    def _foreign_matches(self, text: str, table: _Table, brands: _Table | None, blocked) -> list[FeatureMatch]:
        """Words the request's language does not know, read in the other Latin-script languages."""
        known = table.known_words()
        unknown = [t for t in tokens(text) if not t.spaceless and not t.number and len(t.fold) > 2
                   and not _overlaps((t.start, t.end), blocked) and table.key(t) not in known]
        if not unknown:
            return []
        best: dict[tuple[int, int], FeatureMatch] = {}
        for other in _LATIN:
            other_table = self._table(other) if other != table.lang else None
            if other_table is None:
                continue
            for m in self._token_matches(text, other_table, None, blocked, foreign=True):
                if any(t.start >= m.span[0] and t.end <= m.span[1] for t in unknown):
                    if m.span not in best or m.score > best[m.span].score:
                        best[m.span] = m
        out: list[FeatureMatch] = []
        for m in sorted(best.values(), key=lambda m: (-(m.span[1] - m.span[0]), -m.score)):
            if not _overlaps(m.span, [o.span for o in out]):
                out.append(m)
        return out

    # -- CJK and Korean: substrings of the folded text ----------------------------------------
    def _substring_matches(self, text: str, table: _Table, brands: _Table | None, blocked,
                           prefer: frozenset[str] = frozenset()) -> list[FeatureMatch]:
        # letters only, each with its offset: a surface may run across a space ("이슬람교 모스크")
        letters = [(i, c) for i, ch in enumerate(text) if not ch.isspace() for c in fold(ch)]
        chars = "".join(c for _, c in letters)
        particles = PARTICLES.get(table.lang, "")
        out = []
        i = 0
        longest = max(table.max_letters, brands.max_letters if brands else 1)
        while i < len(chars):
            hit = None
            for n in range(min(longest, len(chars) - i), 0, -1):
                start, end = letters[i][0], letters[i + n - 1][0] + 1
                if _overlaps((start, end), blocked):
                    continue
                piece = chars[i:i + n]
                if not all(spaceless(c) or c == "·" for c in piece):
                    continue  # Latin words in the request are read as tokens
                if n == 1 and not (_alone(text, start, end, blocked, particles) and spaceless(piece)):
                    continue
                if start > 0 and text[start - 1].isalpha() and any(ch.isspace() for ch in text[start:end]):
                    continue  # across a space only from a word's start: "가능한 식당" holds no "한식당"
                cands = [(row[_SCORE], row[_SURFACE], tuple(row[_TAGS]), "preset", row[_REF], table.lang)
                         for row in table.keys.get(piece, ())]
                row = brands.keys.get(piece) if brands is not None and n > 1 \
                    and not _inside_katakana_word(text, start, end) else None
                if row:
                    cands.append((COMMON_BRAND_SCORE if row[3] else BRAND_SCORE, row[0], tuple(row[1]), "brand",
                                  row[2], ""))
                if cands:
                    score, surface, tags, source, ref, lang = max(cands, key=lambda c: (bool(prefer.intersection(c[2])), c[0]))
                    hit = FeatureMatch((start, end), text[start:end], surface, tags, score, source, ref, lang)
                    break
            if hit is None:
                i += 1
                continue
            out.append(hit)
            i += n
        return out


def _edits(a: str, b: str, most: int) -> int:
    """Levenshtein distance of ``a`` and ``b``, two neighbours swapped counting one, or ``most + 1`` once
    it is past ``most``.

    >>> _edits("restaraunts", "restaurants", 2), _edits("libarary", "library", 1), _edits("cafe", "bar", 1)
    (2, 1, 2)
    """
    if abs(len(a) - len(b)) > most:
        return most + 1
    prev2, prev = None, list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
            if prev2 is not None and i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > most:
            return most + 1
        prev2, prev = prev, cur
    return min(prev[-1], most + 1)


def _katakana(ch: str) -> bool:
    # letters and the long-vowel mark, not the middle dot that parts two names ("ファミマ・ローソン")
    return "\u30a1" <= ch <= "\u30fa" or ch == "\u30fc" or "\uff66" <= ch <= "\uff9f"


def _inside_katakana_word(text: str, start: int, end: int) -> bool:
    """Whether text[start:end], all katakana, runs on into more katakana: one loanword, whose first
    letters are no brand ("シェル" of Shell in "シェルター", a shelter).

    >>> _inside_katakana_word("シェルター", 0, 3), _inside_katakana_word("シェルのスタンド", 0, 3)
    (True, False)
    """
    piece = text[start:end]
    return bool(piece) and all(_katakana(c) for c in piece) and (
        start > 0 and _katakana(text[start - 1]) or end < len(text) and _katakana(text[end]))


def _alone(text: str, start: int, end: int, blocked, particles: str) -> bool:
    """Whether text[start:end] stands alone: each side is an end, a non-letter, a particle or skipped."""
    def edge(at: int) -> bool:
        return (at < 0 or at >= len(text) or not text[at].isalpha() or text[at] in particles
                or _overlaps((at, at + 1), blocked))
    return edge(start - 1) and edge(end)


def _overlaps(span: tuple[int, int], spans: Iterable[tuple[int, int]]) -> bool:
    a, b = span
    return any(a < d and c < b for c, d in spans)


def _brand_ok(row: list, window: Sequence[Token], i: int) -> bool:
    """A brand of three letters or fewer counts only written as the brand writes it ("dm", "ING", not
    "ing"); one that is also a common word only with its capital, not opening the request."""
    if len(row[0]) <= SHORT_BRAND:
        return " ".join(t.text for t in window) == row[0]
    if not row[3]:
        return True
    return i > 0 and window[0].text[:1] == row[0][:1] and window[0].upper


@lru_cache(maxsize=1 << 14)
def folded_surface(surface: str) -> str:
    """A surface as the lexicon compares it: its folded words, one space between ("Point S" -> "point s").

    >>> folded_surface("E.Leclerc"), folded_surface("McDonald's")
    ('e leclerc', 'mcdonald s')
    """
    return " ".join(t.fold for t in tokens(fold(surface)))


def _score(row: list, folds: Sequence[str]) -> float:
    """A row's score, a little less when the request reaches it through stems, not its words."""
    written, surface = " ".join(folds), folded_surface(row[_SURFACE])
    if written == surface:
        return row[_SCORE]
    # of two surfaces with the same stems, the one spelled most like the request ("parking", not "park")
    same = 0
    for a, b in zip(written, surface):
        if a != b:
            break
        same += 1
    return row[_SCORE] * (STEM_DISCOUNT + 0.05 * same / max(len(written), len(surface)))


def _merge_adjacent(text: str, found: list[FeatureMatch]) -> list[FeatureMatch]:
    """Neighbouring spans naming the same tags are one feature ("mountain peaks")."""
    out: list[FeatureMatch] = []
    for m in found:
        prev = out[-1] if out else None
        if prev and prev.tags == m.tags and not text[prev.span[1]:m.span[0]].strip():
            start, end = prev.span[0], m.span[1]
            best = max(prev, m, key=lambda x: x.score)
            out[-1] = FeatureMatch((start, end), text[start:end], best.surface, best.tags, best.score, best.source,
                                   best.ref, best.lang)
        else:
            out.append(m)
    return out


def lookup(text: str, lang: str, *, skip: Iterable[tuple[int, int]] = (), min_score: float = MIN_SCORE) -> list[FeatureMatch]:
    """``Lexicon.default().lookup(text, lang, skip=skip, min_score=min_score)``."""
    return Lexicon.default().lookup(text, lang, skip=skip, min_score=min_score)


# ------------------------------------------------------------------------------ place names


@lru_cache(maxsize=1)
def _place_rules() -> dict:
    try:
        text = resources.files("geoql.nl").joinpath("data", "place_inflection.json").read_text(encoding="utf-8")
        return json.loads(text)["languages"]
    except (OSError, ValueError, KeyError) as e:
        raise LexiconError(f"nl/data/place_inflection.json unreadable ({e}); reinstall geoql") from e


def place_lemmas(token: str, lang: str) -> list[str]:
    """Spellings a place name written as ``token`` may have in its dictionary form, likeliest
    first, the token itself among them: "Krakowie" (Polish locative) -> "Kraków", "Москве"
    (Russian prepositional) -> "Москва", "İstanbul'da" -> "İstanbul". Rules per language are
    data (``nl/data/place_inflection.json``): ``before`` rules give forms likelier than the
    token itself (the cases that follow a place preposition), ``after`` rules less likely ones.

    >>> place_lemmas("Petersburg", "de"), place_lemmas("", "ru")
    (['Petersburg'], [])
    >>> place_lemmas("Петербурге", "ru")[:2], place_lemmas("Gdańsku", "pl")[:1]
    (['Петербург', 'Петербурга'], ['Gdańsk'])
    """
    if not isinstance(token, str):
        return []
    token = unicodedata.normalize("NFC", token.strip())
    if not token:
        return []
    rules = _place_rules().get(base_language(lang), {})
    out: list[str] = []
    for mark in rules.get("apostrophes", ()):
        if mark in token[1:]:  # Turkish: İstanbul'da, Ankara'nın
            out.append(token[:token.index(mark, 1)])
    out += _apply(token, rules.get("before", ()))
    out.append(token)
    out += _apply(token, rules.get("after", ()))
    return [s for s in dict.fromkeys(out) if len(s) >= 2 or s == token]


def phrase_lemma(name: str, lang: str) -> str | None:
    """The dictionary form of a place name of several words that no gazetteer knows, a landmark, where
    ``lang``'s ``phrase`` rules (``nl/data/place_inflection.json``) tell it; None where they do not.
    Russian: an adjective and its noun, both in the case the preposition took ("Красной площади" ->
    "Красная площадь", "Исаакиевского собора" -> "Исаакиевский собор"); Polish: the head noun first,
    its complement keeping its case ("Pałacu Kultury" -> "Pałac Kultury").

    >>> phrase_lemma("Красной площади", "ru"), phrase_lemma("Исаакиевского собора", "ru")
    ('Красная площадь', 'Исаакиевский собор')
    >>> phrase_lemma("pałacu kultury", "pl"), phrase_lemma("starym mieście", "pl"), phrase_lemma("tower bridge", "en")
    ('pałac kultury', None, None)
    """
    rules = _place_rules().get(base_language(lang), {})
    phrase = rules.get("phrase")
    words = name.split() if isinstance(name, str) else []
    if not phrase or len(words) < 2:
        return None
    first = words[0].lower()
    if phrase.get("head"):
        if first.endswith(tuple(phrase.get("not_head", ()))) or \
                any(w.lower().endswith(tuple(phrase.get("not_complement", ()))) for w in words[1:]):
            return None  # an adjective ("starym mieście", "Rynku Głównego"): which words agree the rules cannot tell
        head = _apply(words[0], rules.get("before", ()))
        return " ".join([head[0], *words[1:]]) if head else None
    if len(words) != 2:
        return None
    for gender, endings in phrase.get("adjectives", {}).items():
        adjective = _apply(words[0], [e for e in endings if first.endswith(e[0])][:1])
        if adjective:
            noun = _apply(words[1], phrase.get("nouns", {}).get(gender, ()))
            return f"{adjective[0]} {noun[0] if noun else words[1]}"
    return None


def _apply(token: str, rules: Sequence[Sequence[str]]) -> list[str]:
    out = []
    lower = token.lower()
    for suffix, replacement in rules:
        if lower.endswith(suffix) and len(token) > len(suffix):
            stem = token[:len(token) - len(suffix)]
            if token.isupper():  # "МОСКВЕ" -> "МОСКВА"
                replacement = replacement.upper()
            out.append(stem + replacement)
    return out
