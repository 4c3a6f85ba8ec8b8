"""Folding and scripts: the one home for how GeoQL compares the words of a request.

>>> fold("Zürich") == fold("ZURICH")
True
>>> script_of("博"), script_of("ж"), script_of("a"), script_of("ك")
('Han', 'Cyrillic', 'Latin', 'Arabic')
>>> spaceless("成"), spaceless("é")
(True, False)
>>> scripts("Museen in 成都")
{'Latin': 8, 'Han': 2}
>>> plain_number(2000.0), plain_number(float("9" * 309))
('2000', '')
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from functools import lru_cache

# Scripts written without spaces between words: word boundaries must come from
# character n-grams or a segmenter, never from whitespace.
SPACELESS_SCRIPTS = frozenset({"Han", "Hiragana", "Katakana", "Hangul", "Thai", "Lao", "Khmer", "Myanmar", "Tibetan"})

# unicodedata has no script property; a character's name starts with its script's
# name for every script GeoQL meets in OSM requests ("CJK UNIFIED IDEOGRAPH-535A",
# "CYRILLIC SMALL LETTER ZHE", "HANGUL SYLLABLE ..."). Order matters: first match wins.
_NAME_PREFIXES = (
    ("CJK", "Han"), ("IDEOGRAPHIC", "Han"), ("KANGXI", "Han"), ("HIRAGANA", "Hiragana"),
    ("KATAKANA", "Katakana"), ("HALFWIDTH KATAKANA", "Katakana"), ("HANGUL", "Hangul"),
    ("LATIN", "Latin"), ("CYRILLIC", "Cyrillic"), ("GREEK", "Greek"), ("ARABIC", "Arabic"),
    ("HEBREW", "Hebrew"), ("DEVANAGARI", "Devanagari"), ("BENGALI", "Bengali"), ("THAI", "Thai"),
    ("LAO", "Lao"), ("KHMER", "Khmer"), ("MYANMAR", "Myanmar"), ("TIBETAN", "Tibetan"),
    ("GEORGIAN", "Georgian"), ("ARMENIAN", "Armenian"), ("ETHIOPIC", "Ethiopic"), ("TAMIL", "Tamil"),
    ("TELUGU", "Telugu"), ("KANNADA", "Kannada"), ("MALAYALAM", "Malayalam"), ("GUJARATI", "Gujarati"),
    ("GURMUKHI", "Gurmukhi"), ("SINHALA", "Sinhala"), ("FULLWIDTH LATIN", "Latin"),
)


def plain_number(value: float) -> str:
    """A number read from a request as a query writes it (``2000.0`` -> ``"2000"``, ``2.5`` -> ``"2.5"``),
    or ``""`` when it is not finite.

    ``float()`` reads a number of 309 digits or more as infinity (float's range ends near 1.8e308), and
    ``int()`` of that raises ``OverflowError``. No distance, count or period is that long: such a number is
    no number at all for a query, and every place that turns a request's number into query text asks here.

    >>> plain_number(2.5), plain_number(1e3 * 2), plain_number(float("inf")), plain_number(float("nan"))
    ('2.5', '2000', '', '')
    """
    if not math.isfinite(value):
        return ""
    return str(int(value)) if value == int(value) else str(value)


def base_language(lang: str) -> str:
    """A language tag without its region or variant: the language whose words it writes.

    >>> base_language("zh-CN"), base_language("be@tarask"), base_language("de")
    ('zh', 'be', 'de')
    """
    return lang.replace("@", "-").split("-", 1)[0]


def fold(text: str) -> str:
    """NFKC, case-folded, accents removed: ``"Zürich"`` and ``"ZURICH"`` fold alike.

    Marks are removed from letters of scripts with spaces only: in kana a mark makes
    another sound (``"が"`` is not ``"か"``), and Hangul syllables must stay whole.

    >>> fold("Ｃａｆé"), fold("Straße"), fold("が"), fold("Adında")
    ('cafe', 'strasse', 'が', 'adinda')
    """
    text = unicodedata.normalize("NFKC", text).casefold()
    if text.isascii():
        return text
    return "".join(ch if spaceless(ch) else _strip_marks(ch) for ch in text)


# Letters that are a plain letter with a mark by sight, which NFD does not take apart: Turkish dotless
# "ı" is typed "i" on keyboards without it ("adinda" for "adında"), as "ş" is typed "s".
_BARE = {"ı": "i"}


@lru_cache(maxsize=65536)
def _strip_marks(ch: str) -> str:
    return _BARE.get(ch) or "".join(c for c in unicodedata.normalize("NFD", ch) if unicodedata.category(c) != "Mn")


@lru_cache(maxsize=65536)
def script_of(ch: str) -> str:
    """The script of one character ("Common" for digits, punctuation, symbols, emoji)."""
    if not ch.isalpha():
        return "Common"
    name = unicodedata.name(ch, "")
    for prefix, script in _NAME_PREFIXES:
        if name.startswith(prefix):
            return script
    return "Other"


def spaceless(ch: str) -> bool:
    """A letter of a script written without spaces between words (CJK, kana, Thai...)."""
    return script_of(ch) in SPACELESS_SCRIPTS


def scripts(text: str) -> dict[str, int]:
    """Letters per script, most frequent first (``Common`` characters not counted)."""
    counts = Counter(script_of(ch) for ch in text)
    counts.pop("Common", None)
    return dict(counts.most_common())


def main_script(text: str) -> str:
    """The script of most letters in ``text`` ("Common" when it has none).

    >>> main_script("成都的博物馆"), main_script("🏛️ 123"), main_script("Музеи в Москве")
    ('Han', 'Common', 'Cyrillic')
    """
    counts = scripts(text)
    return next(iter(counts), "Common")


@lru_cache(maxsize=4096)
def in_dictionary(word: str, language: str) -> bool:
    """Whether ``word`` is a word of ``language``'s dictionary (simplemma's word-form tables, read on
    first use, for the few readings that ask: a user's name, a lower-case place after a weak preposition);
    False for a language simplemma has no table for.

    >>> in_dictionary("poisson", "fr"), in_dictionary("honfleur", "fr"), in_dictionary("poisson", "xx")
    (True, False, False)
    """
    import simplemma  # (heavy: its tables load per language on first use)

    try:
        return bool(simplemma.is_known(word.casefold(), lang=language))
    except (ValueError, KeyError):
        return False


_THOUSANDS = re.compile(r"[1-9]\d{0,2}(?:([.,])\d{3})(?:\1\d{3})*")


def number(text: str) -> float:
    """A number as written, the one reading of the frame's distances and counts and the composition's
    comparisons: groups of three digits after a point or comma are thousands ("100.000", "1,000,000",
    "1.500 m"; not "0.500"); one point or comma otherwise is a decimal one ("1,5"); what does not read
    as a number is its whole part, or 0.

    >>> number("100.000"), number("1,000,000"), number("1,5"), number("2500"), number("0.500"), number("1.500")
    (100000.0, 1000000.0, 1.5, 2500.0, 0.5, 1500.0)
    >>> number("3.2.1"), number("km")
    (3.0, 0.0)
    """
    if _THOUSANDS.fullmatch(text):
        return float(re.sub(r"[.,]", "", text))
    try:
        return float(text.replace(",", "."))
    except ValueError:
        whole = re.match(r"\d+", text)
        return float(whole.group()) if whole else 0.0
