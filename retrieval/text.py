"""Text normalisation shared by the index builder and the retrievers.

Both sides must tokenise identically, so the one tokeniser lives here and the
index manifest records ``TOKENIZER_VERSION``: a change here makes old indexes
stale instead of silently worse.
"""

from __future__ import annotations

import re
import unicodedata

TOKENIZER_VERSION = 1

# Short, frequent words that carry no tag meaning in OverpassNL requests.
STOPWORDS = frozenset(
    """a an and are as at be by for from in into is it of on or that the their there these this those to
    with within all any every me my show find give list get where which what who whose how many much
    please i we you near nearby around inside outside""".split()
)

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def fold(text: str) -> str:
    """Lower-case and strip accents so "Café" and "cafe" meet."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


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
    """
    words = _WORD.findall(fold(text))
    return [stem(w) for w in words if keep_stopwords or w not in STOPWORDS]


def split_value(value: str) -> str:
    """Human words of an OSM key or value: ``post_box`` -> ``post box``.

    >>> split_value("recycling:glass_bottles")
    'recycling glass bottles'
    """
    return re.sub(r"[_:;]+", " ", value).strip()
