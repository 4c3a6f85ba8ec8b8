"""Word-by-word English for a request in another language, from the index's glossaries.

A glossary (``glossary.<lang>.sqlite``, written by ``geoql index build`` from a bilingual
dictionary: ``index.glossary``) maps the words of one language to the English word the
training requests use for them. ``Translator.translate`` reads a request as tokens and writes:

- each cue phrase of the language (map view, around, units, output, negation, element types,
  users, names, place prepositions, months) as the English cue of the same meaning
  (``geoql.nl.cues.aligned_cues``);
- each word of the glossary as its English word, trying the language's inflection endings
  ("Apotheken" -> "apotheke"), its dictionary forms where the glossary names a lemmatizer
  (Russian: "замки" -> "замок"; ``LEMMATIZERS``) and, where the language writes compounds, two
  known words ("Biogastankstellen" -> "biogas filling stations");
- numbers, all-capital words and unknown words (names) as they are;

and drops the language's small words (its cue table's ``stop`` and ``markers``). It is not a
translation: "Welche Bahnhöfe gibt es in Schweden?" becomes "stations within Sweden", which is
what the English sources of the index need to find ``railway=station`` and the training
requests about stations.

>>> t = Translator({"de": Glossary("de", {"apotheke": "pharmacy", "bahnhöfe": "stations"}, endings=("n",))})
>>> t.translate("Welche Bahnhöfe und Apotheken gibt es im aktuellen Kartenausschnitt?", "de")
'stations pharmacy in current view'
>>> t.translate("cafés", "fr") is None  # no glossary of that language
True
"""

from __future__ import annotations

import json
import sqlite3
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from geoql.core.files import write_atomic
from geoql.nl.cues import ALIGNED_SECTIONS, LANGUAGES, Matcher, aligned_cues, table, tokens
from geoql.nl.text import fold, script_of

from . import artifacts as A

_MIN_PART = 4  # the shortest word a compound is split into
# A bare "in" is a place preposition before it is a distance ("in 500 m"): the translation keeps the
# sentence's "in", which the training requests use, and the frame reads the distance from the request.
_CUE_SECTIONS = (("place", "prepositions"),) + tuple(s for s in ALIGNED_SECTIONS if s != ("place", "prepositions"))
_LONGEST_WORD = 12  # letters of the longest word looked up in a script without spaces
_CACHE_WORDS = 50_000  # words remembered per glossary; a long-running demo must not grow without end


def write_glossary(path: str | Path, language: str, words: dict[str, str], source: dict, *, endings=(),
                   compounds: bool = False, lemmatizer: str = "", derivations=()) -> Path:
    """Write a glossary file: SQLite, so that a request reads the few words it needs instead of
    loading 280,000 (a loaded German glossary was 157 MB of a cold ``geoql compile``)."""
    if lemmatizer and lemmatizer not in LEMMATIZERS:
        raise ValueError(f"unknown lemmatizer {lemmatizer!r}; known: {', '.join(LEMMATIZERS)}")
    db = sqlite3.connect(":memory:")  # built in memory, then written whole or not at all
    try:
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("CREATE TABLE words (word TEXT PRIMARY KEY, english TEXT NOT NULL) WITHOUT ROWID")
        meta = {"language": language, "endings": list(endings), "compounds": bool(compounds), "source": source,
                "longest": max((len(w) for w in words), default=0), "lemmatizer": lemmatizer,
                "derivations": [list(d) for d in derivations]}
        db.executemany("INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v, ensure_ascii=False)) for k, v in meta.items()])
        db.executemany("INSERT INTO words VALUES (?, ?)", sorted(words.items()))
        db.commit()
        data = db.serialize()
    finally:
        db.close()
    return write_atomic(path, data)


class _StoredWords(Mapping):
    """The words table of a glossary file, read word by word (``Mapping``: ``get``, ``in``)."""

    def __init__(self, db: sqlite3.Connection):
        self._db = db
        self._lock = threading.Lock()  # one connection, shared by the demo's worker threads

    def __getitem__(self, word: str) -> str:
        with self._lock:
            row = self._db.execute("SELECT english FROM words WHERE word = ?", (word,)).fetchone()
        if row is None:
            raise KeyError(word)
        return row[0]

    def __iter__(self):
        return (w for (w,) in self._db.execute("SELECT word FROM words ORDER BY word"))

    def __len__(self) -> int:
        return self._db.execute("SELECT count(*) FROM words").fetchone()[0]


@dataclass
class Glossary:
    language: str
    words: Mapping[str, str]  # lower-case word -> English (a dict, or a glossary file's table)
    endings: tuple[str, ...] = ()
    compounds: bool = False
    lemmatizer: str = ""  # a key of LEMMATIZERS: an unknown word is also looked up in its dictionary forms
    # (ending, replacement) pairs tried last on an unknown word and its dictionary forms: the word it is made
    # from ("трамвайный" -> "трамвай", "парковочный" -> "парковка": a Russian adjective names its noun)
    derivations: tuple[tuple[str, str], ...] = ()
    _cache: dict[str, str | None] = field(default_factory=dict, repr=False)
    _longest: int = field(default=0, repr=False)

    @classmethod
    def load(cls, path: str | Path) -> "Glossary":
        """A glossary file written by :func:`write_glossary`; its words stay on disk."""
        try:
            # read-only; check_same_thread off: the demo compiles on worker threads (_StoredWords locks)
            db = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True, check_same_thread=False)
            meta = {k: json.loads(v) for k, v in db.execute("SELECT key, value FROM meta")}
            glossary = cls(meta["language"], _StoredWords(db), tuple(meta.get("endings", ())), bool(meta.get("compounds")),
                           str(meta.get("lemmatizer") or ""), tuple((str(a), str(b)) for a, b in meta.get("derivations", ())))
        except (sqlite3.Error, ValueError, KeyError) as e:
            raise A.IndexMissingError(f"{path} is no readable glossary ({e}); rebuild the index with `{A.BUILD_COMMAND}`") from None
        glossary._longest = min(int(meta.get("longest") or 0), _LONGEST_WORD)
        return glossary

    def longest_at(self, letters: list[str], i: int) -> tuple[int, str] | None:
        """For a script written without spaces: ``(end, English)`` of the longest word of the glossary
        spelled by ``letters[i:end]`` (two letters or more: a single Han letter is too often part of a
        transliterated name), else ``None``.

        >>> Glossary("zh", {"博物馆": "museum", "博物": "natural science"}).longest_at(list("西安博物馆"), 2)
        (5, 'museum')
        """
        if not self._longest:
            self._longest = min(max((len(w) for w in self.words), default=1), _LONGEST_WORD)
        for end in range(min(len(letters), i + self._longest), i + 1, -1):
            english = self.words.get("".join(letters[i:end]))
            if english:
                return end, english
        return None

    def english(self, word: str) -> str | None:
        """The English of one word (any case), or ``None`` when the glossary does not know it.

        >>> g = Glossary("de", {"biogas": "biogas", "tankstelle": "filling station"}, endings=("n",), compounds=True)
        >>> g.english("Tankstellen"), g.english("Biogastankstellen"), g.english("Heidelberg")
        ('filling station', 'biogas filling station', None)
        """
        w = word.lower()
        if w in self._cache:
            return self._cache[w]
        # The answer is returned from here, not read back: another thread (the demo's workers share
        # one glossary) may clear the cache in between.
        english = self._known(w) or (self._compound(w) if self.compounds else None)
        if len(self._cache) >= _CACHE_WORDS:
            self._cache.clear()
        self._cache[w] = english
        return english

    def _known(self, w: str) -> str | None:
        english = self.words.get(w)
        if english is not None:
            return english
        for ending in self.endings:
            if w.endswith(ending) and len(w) - len(ending) >= 3:
                english = self.words.get(w[: -len(ending)])
                if english is not None:
                    return english
        forms = lemmas(self.lemmatizer, w, self.language) if self.lemmatizer else []
        for lemma in forms:
            english = self.words.get(lemma)
            if english is not None:
                return english
        for form in (w, *forms):
            for ending, replacement in self.derivations:
                if form.endswith(ending) and len(form) - len(ending) >= 3:
                    english = self.words.get(form[: -len(ending)] + replacement)
                    if english is not None:
                        return english
        return None

    def _compound(self, w: str) -> str | None:
        """Two known words, the longest known tail first; the head may carry a linking "s"."""
        if len(w) < 2 * _MIN_PART:
            return None
        for i in range(_MIN_PART, len(w) - _MIN_PART + 1):
            tail = self._known(w[i:])
            if not tail:
                continue
            head = w[:i]
            for form in (head, head[:-1] if head.endswith("s") else None, head + "e"):
                english = self.words.get(form) if form else None
                if english is not None:
                    return f"{english} {tail}"
        return None


def _pymorphy3_lemmas(word: str, language: str = "ru") -> list[str]:
    analyser = _ANALYSERS.get("pymorphy3")
    if analyser is None:
        with _ANALYSER_LOCK:
            analyser = _ANALYSERS.get("pymorphy3")
            if analyser is None:
                import pymorphy3  # OpenCorpora's Russian dictionary, ~0.15 s to load; only for Russian requests

                analyser = _ANALYSERS["pymorphy3"] = pymorphy3.MorphAnalyzer()
    return list(dict.fromkeys(p.normal_form for p in analyser.parse(word)))


def _simplemma_lemmas(word: str, language: str) -> list[str]:
    import simplemma  # word-form tables of ~50 languages, read per language on first use

    lemma = simplemma.lemmatize(word, lang=language).lower()
    return [lemma] if lemma != word else []


# Morphological analysers by name, for languages that inflect beyond a few endings. Each gives a word's
# dictionary forms in a language, most likely first ("замки" -> ["замок"], "Германии" -> ["германия"],
# "administratives" -> ["administratif"]).
LEMMATIZERS = {"pymorphy3": _pymorphy3_lemmas, "simplemma": _simplemma_lemmas}
_ANALYSERS: dict = {}
_ANALYSER_LOCK = threading.Lock()
_MISSING_WARNED: set[str] = set()


def lemmas(lemmatizer: str, word: str, language: str) -> list[str]:
    """The dictionary forms of ``word`` (in ``language``) by ``lemmatizer``; none when it is unknown or
    not installed (a warning says so once: the glossary then knows the dictionary forms only).

    >>> lemmas("pymorphy3", "школы", "ru"), lemmas("simplemma", "administratives", "fr"), lemmas("none", "школы", "ru")
    (['школа'], ['administratif'], [])
    """
    find = LEMMATIZERS.get(lemmatizer)
    if find is None or lemmatizer in _MISSING_WARNED:
        return []
    try:
        return find(word, language)
    except ImportError as e:
        _MISSING_WARNED.add(lemmatizer)
        warnings.warn(f"{lemmatizer} is not installed ({e}); inflected words are looked up as written: "
                      f"pip install 'geoql[index]'", stacklevel=2)
        return []


def _stop_end(toks, i: int, stop: set[str], longest: int) -> int:
    """In a script written without spaces: the end of the longest stop phrase of two letters or more that
    starts at token ``i`` ("教えてください", "有哪些"), else ``i``. Each letter is a token there, so the
    phrases of the cue table's stop list are matched across letters."""
    end = i
    while end < len(toks) and end - i < longest and toks[end].spaceless:
        end += 1
    for stop_at in range(end, i + 1, -1):
        if fold("".join(t.text for t in toks[i:stop_at])) in stop:
            return stop_at
    return i


def _katakana_end(toks, i: int) -> int:
    """The end of the run of katakana letters that starts at token ``i`` (``i`` when there is none)."""
    end = i
    while end < len(toks) and len(toks[end].text) == 1 and script_of(toks[end].text) == "Katakana" \
            and (end == i or toks[end].start == toks[end - 1].end):
        end += 1
    return end


def _cover(glossary: "Glossary", letters: list[str], i: int) -> list[str] | None:
    """The English of words of two letters or more that spell ``letters[i:]`` whole, longest first; ``None``
    when some letter is left over."""
    out: list[str] = []
    while i < len(letters):
        word = glossary.longest_at(letters, i)
        if word is None:
            return None
        i, english = word
        out.append(english)
    return out


def _lone_han(toks, i: int) -> bool:
    """Whether token ``i`` is a Han letter whose neighbours are no Han letters ("の城を", "川は")."""
    han = lambda j: 0 <= j < len(toks) and script_of(toks[j].text[:1]) == "Han"  # noqa: E731
    return han(i) and len(toks[i].text) == 1 and not han(i - 1) and not han(i + 1)


def _spaceless_run(toks, i: int) -> int:
    """How many letters of a script written without spaces follow from token ``i`` on (at most 2 counted)."""
    n = 0
    while i + n < len(toks) and toks[i + n].spaceless and n < 2:
        n += 1
    return n


class Translator:
    """Every glossary of an index, by cue-table language (a glossary given as a path is read on first use:
    German's holds 280,000 words, and an English request never needs it)."""

    def __init__(self, glossaries: dict[str, Glossary | Path]):
        self.glossaries = dict(glossaries)
        self._cues: dict[str, Matcher] = {}
        self._stop: dict[str, set[str]] = {}
        self._stop_longest: dict[str, int] = {}

    @classmethod
    def from_index(cls, index_dir: str | Path) -> "Translator":
        """The glossaries found in ``index_dir`` (none: a translator that translates nothing)."""
        out: dict[str, Glossary | Path] = {}
        for path in sorted(Path(index_dir).glob(f"{A.GLOSSARY_PREFIX}*{A.GLOSSARY_SUFFIX}")):
            lang = path.name[len(A.GLOSSARY_PREFIX):-len(A.GLOSSARY_SUFFIX)]
            if lang in LANGUAGES:
                out[lang] = path
        return cls(out)

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(self.glossaries)

    def glossary(self, lang: str) -> Glossary | None:
        found = self.glossaries.get(lang)
        if isinstance(found, Path):
            found = self.glossaries[lang] = Glossary.load(found)
        return found

    def translate(self, text: str, lang: str) -> str | None:
        """``text`` (in ``lang``) in English words, or ``None`` without a glossary of ``lang``."""
        glossary = self.glossary(lang)
        if glossary is None:
            return None
        if lang not in self._cues:
            self._cues[lang] = Matcher(aligned_cues(lang, "en", _CUE_SECTIONS).items())
            cues = table(lang)
            self._stop[lang] = {fold(w) for w in cues["stop"]} | {fold(w) for w in cues["markers"]}
            self._stop_longest[lang] = max((len(w) for w in self._stop[lang]), default=0)
        matcher, stop = self._cues[lang], self._stop[lang]
        toks = tokens(text)
        letters = [t.text for t in toks]
        out: list[str] = []
        glued = (-1, -1)  # (len(out), end) after an unknown Hangul letter was written
        i = 0
        while i < len(toks):
            hit = matcher.match_at(toks, i)
            if hit:
                i, english = hit
                out.append(english)
                continue
            tok = toks[i]
            run = _katakana_end(toks, i)
            if run > i + 1:
                # A katakana run is one word or a name: read as words only where words cover all of it
                # ("ガソリンスタンド"), else kept whole ("ドレスデン" is no "dress" and "デン")
                parts = _cover(glossary, letters[:run], i)
                out.extend(parts if parts is not None else ["".join(letters[i:run])])
                i = run
                continue
            if tok.spaceless:
                word = glossary.longest_at(letters, i) if _spaceless_run(toks, i) >= 2 else None
                # A stop phrase at least as long as the word found here is the sentence's frame, not its
                # content: "教えてください" (please tell me) is no "teaching wiles".
                skip = _stop_end(toks, i, stop, self._stop_longest[lang])
                if skip > i and (word is None or skip >= word[0]):
                    i = skip
                    continue
                if word:
                    i, english = word
                    out.append(english)
                    continue
                i += 1
                if tok.fold not in stop:
                    # A Han letter alone between kana is a word ("ドイツの城", "川は"), not a letter of a name;
                    # only a glossary that keeps single letters (Japanese) knows it.
                    lone = _lone_han(toks, i - 1) and glossary.words.get(tok.text)
                    hangul = not lone and script_of(tok.text) == "Hangul"
                    if hangul and glued == (len(out), tok.start):
                        # Korean writes words with spaces: the unknown letters of one word stay one word
                        # ("독일에" is no "독 일 에"), as names are written
                        out[-1] += tok.text
                    else:
                        out.append(lone or tok.text)
                    glued = (len(out), tok.end) if hangul else (-1, -1)
                continue
            i += 1
            if tok.number or (len(tok.text) > 1 and tok.text.isupper()):
                out.append(tok.text)
            elif tok.fold not in stop:
                out.append(glossary.english(tok.text) or tok.text)
        return " ".join(out)
