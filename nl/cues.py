"""Cue tables: the words by which a request says where, how, when and what, per language.

The words are data (``cues/<lang>.json``, one file per language); this module reads
them once and matches them against a request's tokens. A request is read as
tokens: a run of letters of a script written with spaces is one token, a letter of a
script written without spaces (Han, kana, Hangul) is a token by itself, a number
(``49.798213``, ``1,000``) is one token. A cue is tokenised the same way, so
``"in current view"``, ``"当前视图"`` and ``"현재 화면"`` all match as token sequences;
a cue ending in ``*`` matches any ending of its last token (``"tabelle*"``).

>>> [t.fold for t in tokens("Cafés in 成都, 100 m")]
['cafes', 'in', '成', '都', '100', 'm']
>>> LANGUAGES[0], set(REQUIRED) <= set(LANGUAGES)
('en', True)
>>> m = Matcher(["in the current view", "当前视图"])
>>> [(a, b) for a, b, _ in m.find(tokens("Cafés in the current view"))]
[(1, 5)]
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Iterable, Sequence

from geoql.core.errors import GeoqlError
from geoql.nl.text import fold, script_of, spaceless

# The languages a cue table must exist for (tests/nl/test_frame.py); a request in a
# language without one is read with English's structural cues (ids, units, output
# words often stay English in any request).
REQUIRED = ("en", "de", "fr", "es", "it", "pt", "ru", "zh", "yue", "ja", "ko")


def _installed() -> tuple[str, ...]:
    names = [p.name[:-5] for p in resources.files("geoql.nl").joinpath("cues").iterdir() if p.name.endswith(".json")]
    # English first: ties in language guessing go to the table listed first
    return tuple(sorted(names, key=lambda n: (n != "en", REQUIRED.index(n) if n in REQUIRED else 99, n)))


LANGUAGES = _installed()

# Every table must have these sections (tests/nl/test_frame.py checks each file).
SECTIONS = ("language", "markers", "view", "around", "units", "output", "output_support", "negation",
            "types", "ids", "users", "names", "place", "months", "time", "filters", "stop", "joiners")

_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+")


@dataclass(frozen=True)
class Token:
    """One token of a request: its span in the (NFKC) text, folded form, first letter's case."""

    start: int
    end: int
    text: str
    fold: str
    upper: bool  # starts with an upper-case letter (a name, in scripts with case)
    spaceless: bool  # a single letter of a script without spaces
    number: bool


_fold = lru_cache(maxsize=1 << 16)(fold)  # requests repeat their words: fold each once


def tokens(text: str) -> list[Token]:
    """The tokens of ``text`` (NFKC-normalised by the caller when spans matter)."""
    fold = _fold
    out: list[Token] = []
    for m in _TOKEN.finditer(text):
        word, start = m.group(), m.start()
        if word[0].isdigit():
            out.append(Token(start, m.end(), word, word, False, False, True))
            continue
        if word.isascii() or not any(spaceless(ch) for ch in word):
            out.append(Token(start, m.end(), word, fold(word), word[0].isupper(), False, False))
            continue
        i = 0
        while i < len(word):  # split off each letter of a script without spaces
            if spaceless(word[i]):
                ch = word[i]
                out.append(Token(start + i, start + i + 1, ch, fold(ch), False, True, False))
                i += 1
                continue
            j = i
            while j < len(word) and not spaceless(word[j]):
                j += 1
            piece = word[i:j]
            out.append(Token(start + i, start + j, piece, fold(piece), piece[0].isupper(), False, False))
            i = j
    return out


def cue_tokens(cue: str) -> tuple[tuple[str, ...], bool]:
    """A cue as folded tokens, and whether its last token is a prefix (``tabelle*``)."""
    prefix = cue.endswith("*")
    return tuple(t.fold for t in tokens(fold(cue.rstrip("*")))), prefix


def _glued(toks: Sequence[Token], end: int) -> bool:
    """Whether the word before token ``end`` runs on into a number: letters then digits are one name
    ("a101", "gs25", "b27"), so their letters are no cue word (Portuguese "a", German "b")."""
    return 0 < end < len(toks) and toks[end].number and not toks[end - 1].number \
        and not toks[end - 1].spaceless and toks[end].start == toks[end - 1].end \
        and not (end > 1 and toks[end - 2].number and toks[end - 2].end == toks[end - 1].start)  # "20h40"


class Matcher:
    """Finds cues (with an optional payload each) in a token list, longest match first.

    ``cues`` is an iterable of strings or of ``(string, payload)`` pairs.
    """

    def __init__(self, cues: Iterable):
        self._by_first: dict[str, list[tuple[tuple[str, ...], bool, object]]] = {}
        self._prefixed: list[tuple[tuple[str, ...], bool, object]] = []
        for cue in cues:
            text, payload = (cue, cue) if isinstance(cue, str) else cue
            seq, prefix = cue_tokens(text)
            if not seq:
                continue
            entry = (seq, prefix, payload)
            if prefix and len(seq) == 1:
                self._prefixed.append(entry)
            else:
                self._by_first.setdefault(seq[0], []).append(entry)
        for entries in self._by_first.values():
            entries.sort(key=lambda e: -len(e[0]))
        self._prefixed.sort(key=lambda e: -len(e[0][0]))

    def __bool__(self) -> bool:
        return bool(self._by_first or self._prefixed)

    def match_at(self, toks: Sequence[Token], i: int, taken: Sequence[bool] | None = None):
        """``(end, payload)`` of the longest cue starting at token ``i``, else ``None``."""
        if not 0 <= i < len(toks):
            return None
        first = toks[i].fold
        for seq, prefix, payload in self._by_first.get(first, ()):
            n = len(seq)
            if i + n > len(toks):
                continue
            ok = True
            for j in range(1, n):
                t = toks[i + j].fold
                if not (t == seq[j] or (prefix and j == n - 1 and t.startswith(seq[j]))):
                    ok = False
                    break
            if ok and (taken is None or not any(taken[i:i + n])) and not _glued(toks, i + n):
                return i + n, payload
        for seq, _prefix, payload in self._prefixed:
            if first.startswith(seq[0]) and (taken is None or not taken[i]) and not _glued(toks, i + 1):
                return i + 1, payload
        return None

    def find(self, toks: Sequence[Token], taken: Sequence[bool] | None = None) -> list[tuple[int, int, object]]:
        """Non-overlapping ``(start, end, payload)`` matches, left to right (token indexes)."""
        out = []
        i = 0
        by_first, prefixed = self._by_first, self._prefixed
        while i < len(toks):
            if not prefixed and toks[i].fold not in by_first:
                i += 1
                continue
            hit = self.match_at(toks, i, taken)
            if hit:
                out.append((i, hit[0], hit[1]))
                i = hit[0]
            else:
                i += 1
        return out


class CueError(GeoqlError):
    """A cue table is missing or malformed (a packaging fault: reinstall geoql)."""


@lru_cache(maxsize=None)
def table(lang: str) -> dict:
    """The cue table of ``lang`` as stored (``cues/<lang>.json``)."""
    if lang not in LANGUAGES:
        raise CueError(f"no cue table for language {lang!r}; known: {', '.join(LANGUAGES)}")
    try:
        text = resources.files("geoql.nl").joinpath("cues", f"{lang}.json").read_text(encoding="utf-8")
        return json.loads(text)
    except (OSError, ValueError) as e:
        raise CueError(f"cue table {lang}.json unreadable ({e}); reinstall geoql") from e


@lru_cache(maxsize=None)
def plural_endings(lang: str) -> tuple[str, ...]:
    """The endings of a plural noun in ``lang`` (its table's ``language.plural_endings``), folded; none
    for a language without a table or without the list.

    >>> plural_endings("it"), plural_endings("ja"), plural_endings("sw")
    (('i',), (), ())
    """
    if lang not in LANGUAGES:
        return ()
    return tuple(fold(e) for e in table(lang)["language"].get("plural_endings", ()))


@lru_cache(maxsize=None)
def list_words(lang: str) -> frozenset[str]:
    """The words that list things in ``lang`` (its table's ``place.and``: "and", "or", "や"), folded;
    none without a table.

    >>> sorted(list_words("de")), list_words("sw")
    (['oder', 'sowie', 'und'], frozenset())
    """
    if lang not in LANGUAGES:
        return frozenset()
    return frozenset(fold(w).strip() for w in table(lang)["place"].get("and", ())) - {""}


@lru_cache(maxsize=None)
def _stop_matcher(lang: str) -> Matcher:
    return Matcher(table(lang)["stop"])


def without_stop_words(text: str, lang: str) -> str:
    """``text`` with the stop words and phrases of ``lang``'s cue table blanked out (unchanged when
    there is no table): what is left names things. In scripts without spaces a stop phrase counts
    only with two letters or more, since a single letter is as often part of a longer word.

    >>> without_stop_words("Welche Bars gibt es in den Niederlanden?", "de")
    'Bars Niederlanden?'
    >>> without_stop_words("瑞典有哪些火车站", "zh"), without_stop_words("Museen", "sw")
    ('瑞典 火车站', 'Museen')
    """
    if lang not in LANGUAGES:
        return text
    toks = tokens(text)
    cut = [(toks[i].start, toks[j - 1].end) for i, j, _ in _stop_matcher(lang).find(toks)
           if not (toks[i].spaceless and j - i == 1)]
    if not cut:
        return text
    out, at = [], 0
    for start, end in cut:
        out.append(text[at:start])
        at = end
    out.append(text[at:])
    return " ".join(" ".join(out).split())


def all_tables() -> dict[str, dict]:
    """The cue table of every language of ``REQUIRED``: what is read for a request whatever its
    language (its content and stop words, composition's accounted words, faithfulness' output,
    month and unit words) was measured with these. A table added since (Polish, Turkish, Dutch)
    is read only for a request in its own language (``table(lang)``): its words ("ile", "er",
    "gmina") would otherwise change how every other language's requests are read."""
    return {lang: table(lang) for lang in LANGUAGES if lang in REQUIRED}


def own_table(lang: str) -> dict | None:
    """``lang``'s table where :func:`all_tables` leaves it out (a language added since), else ``None``."""
    return table(lang) if lang in LANGUAGES and lang not in REQUIRED else None


def script_is_spaceless(text: str) -> bool:
    return any(spaceless(ch) for ch in text)


def is_latin(text: str) -> bool:
    return all(script_of(ch) in ("Latin", "Common") for ch in text)


# ------------------------------------------------------------------ every language at once
# What geoql.eval.faithfulness asks: does a request support a constant of a query? It
# reads the words of every table, since a request's language is not known there.


@lru_cache(maxsize=1)
def output_words() -> dict[str, tuple[str, ...]]:
    """Output kind (``count``, ``geom``, ``center``, ``csv``, ``meta``) -> every cue word
    that asks for it or supports it, in every language (``output`` and ``output_support``)."""
    out: dict[str, list[str]] = {}
    for t in all_tables().values():
        for section in ("output", "output_support"):
            for kind, words in t[section].items():
                out.setdefault(kind, []).extend(words)
    return {kind: tuple(dict.fromkeys(words)) for kind, words in out.items()}


@lru_cache(maxsize=1)
def month_names() -> dict[str, int]:
    """Folded month name (any language, any listed form) -> month number."""
    out: dict[str, int] = {}
    for t in all_tables().values():
        for i, forms in enumerate(t["months"]):
            for form in forms:
                out.setdefault(fold(form), i + 1)
    return out


@lru_cache(maxsize=1)
def time_unit_words() -> dict[str, str]:
    """Folded word of a time unit (any language) -> ``minute``, ``hour``, ``day``, ``week``,
    ``month`` or ``year``."""
    out: dict[str, str] = {}
    for t in all_tables().values():
        for unit, words in t["time"]["units"].items():
            for w in words:
                out.setdefault(fold(w), unit)
    return out


@lru_cache(maxsize=1)
def one_words() -> tuple[str, ...]:
    """Words that mean one unit before a time unit ("a", "last", "letzte", "上", "지난")."""
    return tuple(dict.fromkeys(w for t in all_tables().values() for w in t["time"]["one"]))


@lru_cache(maxsize=1)
def distance_unit_words() -> dict[str, tuple[str, ...]]:
    """Distance unit (``m``, ``km``, ``mi``, ``ft``) -> its words in every language."""
    out: dict[str, list[str]] = {}
    for t in all_tables().values():
        for unit, words in t["units"].items():
            out.setdefault(unit, []).extend(words)
    return {unit: tuple(dict.fromkeys(words)) for unit, words in out.items()}


# Cue sections whose entries mean the same in every table (a list: any entry -> the first; a
# dict: the same key; months: the same position). Markers, stop words and the place-name
# heuristics are not meanings.
ALIGNED_SECTIONS = (("view",), ("around", "before"), ("around", "after"), ("units",), ("output",), ("negation", "before"),
                    ("types",), ("users",), ("names",), ("months",), ("place", "prepositions"))


def _section(cues, path: tuple[str, ...]):
    for key in path:
        cues = cues.get(key) if isinstance(cues, dict) else None
    return cues


def _aligned_pairs(src, dst) -> list[tuple[str, str]]:
    """Each cue of ``src`` -> ``dst``'s first cue of the same meaning, for one section."""
    if isinstance(src, dict) and isinstance(dst, dict):
        return [pair for key in src if key in dst for pair in _aligned_pairs(src[key], dst[key])]
    if isinstance(src, list) and isinstance(dst, list) and dst:
        if all(isinstance(x, list) for x in src) and all(isinstance(x, list) for x in dst):
            return [(word, o[0]) for e, o in zip(src, dst) if o for word in e]  # months: by position
        first = dst[0]
        if isinstance(first, str):
            return [(word, first) for word in src if isinstance(word, str) and not word.endswith("*")]
    return []


@lru_cache(maxsize=None)
def aligned_cues(src: str, dst: str, sections: tuple[tuple[str, ...], ...] = ALIGNED_SECTIONS) -> dict[str, str]:
    """Folded cue of language ``src`` -> the cue of the same meaning in ``dst`` (the first listed).
    A cue listed in two sections takes its meaning from the first of ``sections``.

    >>> aligned_cues("de", "en")["im aktuellen kartenausschnitt"]
    'in current view'
    >>> aligned_cues("en", "de")["in current view"]
    'im aktuellen kartenausschnitt'
    """
    a, b = table(src), table(dst)
    out: dict[str, str] = {}
    for path in sections:
        for cue, other in _aligned_pairs(_section(a, path), _section(b, path)):
            out.setdefault(fold(cue), other)
    return out
