"""Text normalisation shared by the index builder and the retrievers.

Both sides must tokenise identically, so the one tokeniser lives here and the
index manifest records ``TOKENIZER_VERSION``: a change here makes old indexes
stale instead of silently worse.

Two tokenisers: ``tokenize`` (English words, stopwords out, plurals stemmed) for the
English BM25 indexes, and ``lexical_tokens`` (any language) for the tag names and
terms in every language of the schema. Both fold with ``geoql.nl.text.fold`` and cut
scripts written without spaces (CJK, kana, Hangul, Thai...) into character bigrams.
"""

from __future__ import annotations

import math
import re
from itertools import groupby

from geoql.nl.text import fold, spaceless
from geoql.nl.words import DATABASE_NAMES

__all__ = ["TOKENIZER_VERSION", "STOPWORDS", "DATABASE_NAMES", "fold", "stem", "tokenize", "lexical_tokens", "segments", "split_value",
           "PREFIX_MIN", "PREFIX_SHARE", "bigrams", "without_database_name"]

TOKENIZER_VERSION = 2  # 2: geoql.nl.text.fold, bigrams for spaceless scripts, lexical_tokens

# Short, frequent words that carry no tag meaning in OverpassNL requests.
STOPWORDS = frozenset(
    """a an and are as at be by for from in into is it of on or that the their there these this those to
    with within all any every me my show find give list get where which what who whose how many much
    please i we you near nearby around inside outside""".split()
)

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

# The database's own name says where the elements live, not which ones: "What OpenStreetMap features are in
# Sumy Oblast?", "OSM-Objekte", "OpenStreetMap要素" ask for every element. As a tag cue it only ever met
# map_source=OpenStreetMap, which two training requests ask for ("Maps based on OpenStreetMap").
# DATABASE_NAMES (the folded words) is geoql.nl.words', a stop word of the CPU default's stems too.
_DATABASE_NAME = re.compile(r"(?<![A-Za-z])(?:open\s*street\s*map|osm)(?![A-Za-z])", re.IGNORECASE)


def without_database_name(text: str) -> str:
    """``text`` without "OpenStreetMap" or "OSM", in any script around them (what the tag search reads).

    >>> without_database_name("What OpenStreetMap features are in Sumy Oblast?")
    'What features are in Sumy Oblast?'
    >>> without_database_name("OSM-Objekte in Kiew"), without_database_name("OpenStreetMap要素"), without_database_name("Osmania")
    ('-Objekte in Kiew', '要素', 'Osmania')
    """
    return " ".join(_DATABASE_NAME.sub(" ", text).split())

# Inflection without a stemmer per language: a word of a script with spaces also stands for its
# prefixes down to max(PREFIX_MIN, ceil(PREFIX_SHARE * length)) letters, so "apotheken" and "apotheke",
# "аптеки" and "аптека", "spielplätze" and "spielplatz" share most of their tokens (measured on the
# OsmNL dev requests, docs/notes/2026-12-multilingual-tags.md).
PREFIX_MIN = 4
PREFIX_SHARE = 0.6


def segments(text: str):
    """(run, spaceless?) for each maximal run of letters/digits of one kind in the folded text.

    >>> list(segments("Museen in 成都!"))
    [('museen', False), ('in', False), ('成都', True)]
    """
    for match in _WORD.finditer(fold(text)):
        word = match.group()
        if word.isascii():
            yield word, False
            continue
        for is_spaceless, chars in groupby(word, key=spaceless):
            yield "".join(chars), is_spaceless


def bigrams(run: str) -> list[str]:
    return [run] if len(run) < 2 else [run[i:i + 2] for i in range(len(run) - 1)]


def stem(word: str) -> str:
    """A deliberately tiny English plural stemmer.

    Tag names are mostly singular nouns ("bench", "post box") while requests use
    plurals ("benches", "post boxes"); full stemmers also conflate words that
    mean different tags (e.g. "parking"/"park"), which hurts more than it helps.

    >>> [stem(w) for w in ["benches", "libraries", "cafes", "bus", "glass", "shoes"]]
    ['bench', 'library', 'cafe', 'bus', 'glass', 'shoe']
    """
    if len(word) <= 3 or word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "sses", "zes")):
        return word[:-2]
    if word.endswith("s"):
        return word[:-1]
    return word


def tokenize(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Words of ``text`` for BM25: folded, split on ``_``/``:``/punctuation, stemmed.

    >>> tokenize("Post boxes in the Forlì-Cesena area; amenity=post_box")
    ['post', 'box', 'forli', 'cesena', 'area', 'amenity', 'post', 'box']
    >>> tokenize("Museums in 西安市")
    ['museum', '西安', '安市']
    """
    out: list[str] = []
    for run, is_spaceless in segments(text):
        if is_spaceless:
            out.extend(bigrams(run))
        elif keep_stopwords or run not in STOPWORDS:
            out.append(stem(run))
    return out


def lexical_tokens(text: str) -> list[str]:
    """Tokens for matching names in any language: folded words with their prefixes (``PREFIX_MIN``,
    ``PREFIX_SHARE``), character bigrams for scripts without spaces; no stopwords, no stemming.

    >>> lexical_tokens("Apotheken")
    ['apotheken', 'apothe', 'apothek', 'apotheke']
    >>> lexical_tokens("西安的博物馆"), lexical_tokens("약국")
    (['西安', '安的', '的博', '博物', '物馆'], ['약국'])
    >>> lexical_tokens("Bar 24")
    ['bar', '24']
    """
    out: list[str] = []
    for run, is_spaceless in segments(text):
        if is_spaceless:
            out.extend(bigrams(run))
            continue
        out.append(run)
        if len(run) > PREFIX_MIN and not run.isdigit():
            shortest = max(PREFIX_MIN, math.ceil(PREFIX_SHARE * len(run)))
            out.extend(run[:n] for n in range(shortest, len(run)))
    return out


def split_value(value: str) -> str:
    """Human words of an OSM key or value: ``post_box`` -> ``post box``.

    >>> split_value("recycling:glass_bottles")
    'recycling glass bottles'
    """
    return re.sub(r"[_:;]+", " ", value).strip()
