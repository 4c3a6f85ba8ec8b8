"""What a request gives a query: its folded words, numbers, dates and periods, to check constants against.

``geoql.eval.faithfulness.unsupported_constants`` asks of each constant of a query (a place,
a name, an id, a date, an output format) whether the request supports it; :class:`Support` is
the request's side of that question, read once by :func:`geoql.nl.read_request`
(``Request.support``). All text is compared case- and accent-folded (``geoql.nl.text.fold``,
after NFKC); the cue words (output words, month names, time and distance units) are those of
every language's cue table at once (``geoql.nl.cues``), since a query's constant may echo any.

>>> s = read_support("Cafés in Zürich since 1 June 2019, within 1 km")
>>> s.has_words("zurich"), s.has_words("cafes in"), s.has_words("bonn")
(True, True, False)
>>> s.dates
((2019, 6, 1),)
>>> sorted(str(v) for v, _, approx in s.numbers if approx)
['1000']
>>> s.asks_output("count"), read_support("how many cafés").asks_output("count")
(False, True)

:func:`name_spans` and :func:`place_candidates` read the spans of a request that may name a
place, for learning other spellings of places from training pairs
(``geoql.eval.faithfulness.learn_place_aliases``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Iterable

from geoql.nl import cues as nl_cues
from geoql.nl.text import fold, number, script_of, spaceless
from geoql.nl.words import within_one_edit


def words_of(folded: str) -> list[str]:
    """The words of a folded text (``\\w+`` runs): how a value and the request are compared."""
    return re.findall(r"\w+", folded)


@dataclass(frozen=True)
class Support:
    """A request's folded words, their joins, numbers, dates, periods (see the module's docstring)."""

    words: tuple[str, ...]
    joined: str  # the words without any separator, for scripts without spaces
    grams: frozenset[str]  # 2 to 4 consecutive words glued ("a1" for "A 1", "basrhin")
    numbers: tuple[tuple[Decimal, int, bool], ...]  # value, decimals, converted unit (approximate)
    digits: frozenset[str]
    dates: tuple[tuple[int, int | None, int | None], ...]
    periods: tuple[tuple[float | None, str], ...]  # (days or None, unit)
    # the request's places in their dictionary form, folded: "w lublinie" names Lublin
    place_forms: frozenset[str] = frozenset()
    # output kind -> whether a cue asks for it: the CPU default checks ~30 candidates per request
    _asks: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def asks_output(self, kind: str) -> bool:
        """Whether a cue of any language asks for this output ("count", "meta", "csv", ...)."""
        hit = self._asks.get(kind)
        if hit is None:
            hit = self._asks[kind] = any(_has_cue(self, cue) for cue in _cues()["output"].get(kind, ()))
        return hit

    def has_words(self, folded_value: str) -> bool:
        seq = words_of(folded_value)
        if not seq:
            return False
        if any(spaceless(ch) for ch in folded_value):
            return "".join(seq) in self.joined
        n = len(seq)
        words = self.words
        if any(tuple(words[i:i + n]) == tuple(seq) for i in range(len(words) - n + 1)):
            return True
        return "".join(seq) in self.grams

    def has_words_nearly(self, folded_value: str) -> bool:
        """The words with one letter wrong, missing, extra or swapped (values of 5+ letters)."""
        seq = words_of(folded_value)
        target = "".join(seq)
        if len(target) < 5 or any(spaceless(ch) for ch in target):
            return False
        n, words = len(seq), self.words
        for i in range(len(words) - n + 1):
            cand = "".join(words[i:i + n])
            if abs(len(cand) - len(target)) <= 1 and within_one_edit(cand, target):
                return True
        return False


@lru_cache(maxsize=1)
def _cues() -> dict:
    """The cue words of every language's table in geoql.nl, in this module's shapes."""
    output = {kind: [_cue(c) for c in words] for kind, words in nl_cues.output_words().items()}
    units = nl_cues.time_unit_words()
    one = {tuple(words_of(fold(w))) for w in nl_cues.one_words()}
    # units of scripts without spaces are found inside the joined words ("3天", "2週間")
    glued = sorted((w for w in units if any(spaceless(ch) for ch in w)), key=len, reverse=True)
    glued_rx = re.compile(r"(\d+)?\s*(" + "|".join(map(re.escape, glued)) + ")") if glued else None
    return {"output": output, "months": nl_cues.month_names(), "units": units, "one": one, "glued": glued_rx}


def _cue(text: str) -> tuple[tuple[str, ...], bool, bool]:
    """A cue as folded words, whether its last word is a prefix (``tabelle*``) and whether it is
    written without spaces (then it is looked for in the joined words)."""
    prefix = text.endswith("*")
    seq = tuple(words_of(fold(text.rstrip("*"))))
    return seq, prefix, bool(seq) and any(spaceless(ch) for ch in seq[0])


def _has_cue(req: Support, cue: tuple[tuple[str, ...], bool, bool]) -> bool:
    seq, prefix, glued = cue
    if not seq:
        return False
    if glued:
        return "".join(seq) in req.joined
    n, words = len(seq), req.words
    for i in range(len(words) - n + 1):
        if words[i:i + n - 1] == seq[:-1] and (
                words[i + n - 1].startswith(seq[-1]) if prefix else words[i + n - 1] == seq[-1]):
            return True
    return False


# ------------------------------------------------------------------ numbers, dates, periods

_RANGE = r"\s*(?:(?:and|to|or|und|bis|oder|et|à|ou|y|e|и|-|–|~|至|到)\s*\d+(?:[.,]\d+)?\s*)?"
_FACTORS = {"km": Decimal(1000), "mi": Decimal("1609.344"), "ft": Decimal("0.3048")}


@lru_cache(maxsize=1)
def _unit_factors() -> tuple:
    """(pattern of a unit after a number, metres per unit), from geoql.nl's unit words."""
    out = []
    for unit, factor in _FACTORS.items():
        words = sorted(nl_cues.distance_unit_words().get(unit, ()), key=len, reverse=True)
        spaced = [re.escape(w) for w in words if not any(spaceless(ch) for ch in w)]
        glued = [re.escape(w) for w in words if any(spaceless(ch) for ch in w)]
        alts = ([r"(?:" + "|".join(spaced) + r")(?!\w)"] if spaced else []) + glued
        out.append((re.compile(_RANGE + "(?:" + "|".join(alts) + ")", re.I), factor))
    return tuple(out)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_GROUPED = re.compile(r"(?<![\d.,])\d{1,3}(?:([,.\u00a0\u202f' ])\d{3})(?:\1\d{3})*(?![\d])")


def decimals(text: str) -> int:
    return len(text.split(".", 1)[1]) if "." in text else 0


def _read_numbers(text: str) -> tuple[tuple, frozenset]:
    numbers: list[tuple[Decimal, int, bool]] = []
    digits: set[str] = set()
    for run in re.findall(r"\d+", text):  # "51,-1,52,1": every run of digits is a number too
        numbers.append((Decimal(run), 0, False))
    for m in _NUMBER.finditer(text):
        raw = m.group()
        digits.update(re.findall(r"\d+", raw))
        for form in {raw.replace(",", "."), raw.replace(",", "")}:
            try:
                value = Decimal(form)
            except InvalidOperation:
                continue
            numbers.append((value, decimals(form), False))
            for unit, factor in _unit_factors():
                if unit.match(text, m.end()):
                    numbers.append((value * factor, 0, True))
    for m in _GROUPED.finditer(text):
        whole = re.sub(r"\D", "", m.group())
        digits.add(whole)
        value = Decimal(whole)
        numbers.append((value, 0, False))
        for unit, factor in _unit_factors():
            if unit.match(text, m.end()):
                numbers.append((value * factor, 0, True))
    return tuple(numbers), frozenset(digits)


def _read_dates(text: str, words: tuple[str, ...]) -> tuple:
    months = _cues()["months"]
    dates: set[tuple[int, int | None, int | None]] = set()

    def add(y, m=None, d=None):
        y, m, d = int(y), (int(m) if m else None), (int(d) if d else None)
        if 1800 <= y <= 2100 and (m is None or 1 <= m <= 12) and (d is None or 1 <= d <= 31):
            dates.add((y, m, d))

    for m in re.finditer(r"(\d{4})[-/.](\d{1,2})(?:[-/.](\d{1,2}))?", text):
        add(*m.groups())
    for m in re.finditer(r"(\d{1,2})[./-](\d{1,2})[./-](\d{4})", text):
        a, b, y = m.groups()
        add(y, b, a)
        add(y, a, b)
    for m in re.finditer(r"(\d{4})\s*[年년]\s*(?:(\d{1,2})\s*[月월]\s*(?:(\d{1,2})\s*[日일])?)?", text):
        add(*m.groups())
    for m in re.finditer(r"(?<!\d)(1[89]\d\d|20\d\d)(?!\d)", text):
        add(m.group(1))
    # Month names: "November 1, 2018", "1 November 2018", "1. November 2018", "November 2018".
    for i, w in enumerate(words):
        month = months.get(w)
        if month is None or (w == "may" and not _near_year(words, i)):
            continue
        near = words[max(0, i - 3):i + 4]
        years = [x for x in near if re.fullmatch(r"1[89]\d\d|20\d\d", x)]
        days = [x for x in (words[i - 1] if i else "", words[i + 1] if i + 1 < len(words) else "")
                if re.fullmatch(r"\d{1,2}", x) or re.fullmatch(r"\d{1,2}(?:st|nd|rd|th|er)", x)]
        for y in years:
            if not days:  # "November 2018": any day of it; "November 1, 2018": that day only
                add(y, month)
            for d in days:
                add(y, month, re.match(r"\d+", d).group())
    # "on July 15, 2019" supports that day, not any day of 2019: a year alone counts where it
    # appears more often than the dates around it ("since 2019 ... on July 15, 2019").
    for y in {y for y, mo, _ in dates if mo is None}:
        within = {date for date in dates if date[0] == y and date[1] is not None}
        if within and len(re.findall(rf"(?<!\d){y}(?!\d)", text)) <= len(within):
            dates.discard((y, None, None))
    return tuple(sorted(dates, key=lambda t: (t[0], t[1] or 0, t[2] or 0)))


def _near_year(words, i) -> bool:
    return any(re.fullmatch(r"1[89]\d\d|20\d\d", x) for x in words[max(0, i - 3):i + 4])


PERIOD_DAYS = {"minute": 1 / 1440, "hour": 1 / 24, "day": 1, "week": 7, "month": 30.4, "year": 365.25}


def _read_periods(words: tuple[str, ...], joined: str) -> tuple:
    cues = _cues()
    units, one = cues["units"], cues["one"]
    periods: set[tuple[float | None, str]] = set()
    for i, w in enumerate(words):
        unit = units.get(w)
        if unit is None:
            continue
        before = words[max(0, i - 2):i]
        count = None
        if before and re.fullmatch(r"\d+(?:[.,]\d+)?", before[-1]):
            count = number(before[-1])
        elif any(tuple(before[j:]) in one for j in range(len(before))):
            count = 1.0
        periods.add((count * PERIOD_DAYS[unit] if count is not None else None, unit))
    for m in (cues["glued"].finditer(joined) if cues["glued"] else ()):
        unit = units.get(m.group(2))
        if unit:
            periods.add((float(m.group(1)) * PERIOD_DAYS[unit] if m.group(1) else None, unit))
    return tuple(periods)


def read_support(nl: str, place_forms: Iterable[str] = ()) -> Support:
    """The request's side of the faithfulness check (see the module's docstring); ``place_forms`` the
    dictionary forms of the places the reading found (``geoql.nl.places.dictionary_form``)."""
    text = unicodedata.normalize("NFKC", nl)
    folded = fold(text)
    words = tuple(words_of(folded))
    grams = {"".join(words[i:i + n]) for n in range(2, 5) for i in range(len(words) - n + 1)}
    numbers, digits = _read_numbers(text)
    joined = "".join(words)
    return Support(words=words, joined=joined, grams=frozenset(grams), numbers=numbers, digits=digits,
                   dates=_read_dates(text, words), periods=_read_periods(words, joined),
                   place_forms=frozenset(fold(p) for p in place_forms if isinstance(p, str)))


# ------------------------------------------------------------------ spans that may name a place


_QUOTED = re.compile(r"[\"“”„«»「『]([^\"“”„«»」』]{2,60})[\"“”„«»」』]")
_WORD = re.compile(r"(?<![\w'’])(\w+(?:[-'’.]\w+)*)")
# Lowercase words inside a place name ("Frankfurt am Main", "Saint-Pierre de la Réunion").
_PARTICLES = {"de", "del", "della", "di", "da", "do", "du", "des", "la", "le", "les", "am", "sur", "upon",
              "y", "van", "von", "der", "den", "het", "el", "al"}
# Words after which a request names its place, and words that end the name.
_LOCATIVE = {"in", "near", "around", "at", "of", "from", "within", "inside", "across", "throughout", "im",
             "bei", "um", "en", "au", "aux", "dans", "nahe"}
_STOP = {"with", "that", "which", "where", "and", "or", "but", "having", "tagged", "without", "who", "whose",
         "is", "are", "not", "for", "to", "by", "on", "in", "near", "the", "a", "an", "of", "from", "as",
         "mit", "und", "oder", "ohne", "die", "der", "das", "et", "ou", "avec", "sans", "qui", "le", "la", "les",
         "were", "was", "has", "have", "than", "within", "along", "inside", "around", "at", "all", "only",
         "current", "selected", "specified", "this", "my", "view", "area", "map", "window", "name", "names",
         "housenumber", "street"}


def _latin(token: str) -> bool:
    return all(not ch.isalpha() or script_of(ch) == "Latin" for ch in token)


def name_spans(nl: str, *, quoted: bool = True) -> list[str]:
    """Name-like spans of a request: quoted text, runs of capitalised words (with
    particles such as "de" or "am" inside, not the request's first word alone), and
    runs of letters outside the Latin script (Cyrillic, Greek, CJK...)."""
    if not isinstance(nl, str):
        return []
    text = unicodedata.normalize("NFKC", nl)
    spans = [m.group(1).strip() for m in _QUOTED.finditer(text)] if quoted else []
    run: list[str] = []
    first = True

    def flush():
        while run and run[-1].lower() in _PARTICLES:
            run.pop()
        if run and not (len(run) == 1 and run[0] == first_word):
            spans.append(" ".join(run))
        run.clear()

    first_word = ""
    for m in _WORD.finditer(text):
        tok = m.group(1)
        if first:
            first_word, first = tok, False
        if tok[:1].isupper() and _latin(tok):
            run.append(tok)
        elif run and tok.lower() in _PARTICLES:
            run.append(tok)
        else:
            flush()
    flush()
    spans.extend(m.group() for m in re.finditer(r"[^\W\d_](?:[^\W\d_]|[\s'’-](?=[^\W\d_]))*", text)
                 if not _latin(m.group()))
    return list(dict.fromkeys(s for s in spans if s))


def place_candidates(nl: str) -> set[str]:
    """Folded spans that may name the request's place: the name-like spans, and the
    first one to four words after "in", "near", "around"... up to a word such as
    "with" or "and" (requests are often written in lower case)."""
    # Quoted text in these requests is mostly a tag ("name", "primary"), not a place.
    found = {fold(s) for s in name_spans(nl, quoted=False)}
    words = words_of(fold(unicodedata.normalize("NFKC", nl)))
    for i, w in enumerate(words):
        if w not in _LOCATIVE:
            continue
        j = i + 1
        if j < len(words) and words[j] == "the":
            j += 1
        for k in range(j, min(j + 4, len(words))):
            if words[k] in _STOP or words[k].isdigit():
                break
            found.add(" ".join(words[j:k + 1]))
    return found

