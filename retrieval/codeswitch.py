"""Code-switched copies of training requests, so that what learns from the training split also learns from
requests that are not English: the CPU default's selector (``geoql.app.cpu.train``) and the tag ranker's
model of glossed requests (``retrieval.ranker``).

The training split's requests are English. A German or Chinese request shares few words with its English
neighbours, so every text feature (similarity, votes, word overlap) sits where English training requests
rarely go, and a model fitted on them trusts the wrong signals there. A code-switched copy of a training request
replaces:

- each phrase that names an iD preset (its English name or a term, singular or plural)
  by the preset's name in another language (id-tagging-schema's translations, as the tag
  index stores them in ``tags.jsonl``);
- each cue phrase (map view, around, units, output, negation, element types, users,
  names, place prepositions, months) by the first cue of the same meaning in that
  language's cue table (``geoql.nl.cues``);

and drops the remaining English function words. ``"pharmacies in the current view of
Heidelberg"`` becomes ``"Apotheke im aktuellen kartenausschnitt Heidelberg"`` or
``"药房当前视图中Heidelberg"``: not a translation, but a request whose words no longer
match the English neighbours while the tag retriever still reads them, as a real
translated request does. Its gold query is the original's.

>>> sw = CodeSwitcher({"de": {"pharmacy": "Apotheke"}})
>>> sw.switch("Pharmacies in the current view", "de")
'Apotheke im aktuellen kartenausschnitt'
>>> sw.switch("Cafes in Bonn", "de") is None  # no preset named: no copy
True
"""

from __future__ import annotations

from pathlib import Path

from geoql.nl.cues import Matcher, aligned_cues, table, tokens
from geoql.nl.text import fold, spaceless
from geoql.retrieval.artifacts import TAGS_JSONL, read_jsonl

# (cue table, id-tagging-schema language) of the languages the copies are written in.
LANGUAGES = {"de": "de", "fr": "fr", "ru": "ru", "zh": "zh-CN", "yue": "yue", "ja": "ja", "ko": "ko"}
# Written without spaces between words. Not Korean: Hangul letters are tokens of their own
# (geoql.nl.text.spaceless) but Korean puts spaces between words.
_NO_SPACES = ("zh", "yue", "ja")

def _plural_forms(word: str) -> tuple[str, ...]:
    """English plural spellings of a folded word ("pharmacy" -> "pharmacies")."""
    forms = {word + "s"}
    if word.endswith(("s", "x", "z", "ch", "sh")):
        forms.add(word + "es")
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        forms.add(word[:-1] + "ies")
    return tuple(sorted(forms))


def _clean_name(name: str) -> str:
    """A preset name as a user writes it: without a bracketed remark or a second spelling
    ("薬局・ドラッグストア（薬剤師が居る店）" -> "薬局")."""
    for mark in ("（", "(", "・", "/", "／", "，", ","):
        name = name.split(mark)[0]
    return name.strip()


class CodeSwitcher:
    """Writes a training request with another language's preset names and cue words."""

    def __init__(self, preset_names: dict[str, dict[str, str]]):
        """``preset_names``: cue-table language -> English preset phrase (singular) -> its name there."""
        english = table("en")
        self._drop = {fold(w) for w in english["stop"]} | {fold(w) for w in english["markers"]}
        self._matchers: dict[str, Matcher] = {}
        for lang, names in preset_names.items():
            cues = aligned_cues("en", lang)
            pairs = []
            for phrase, name in names.items():
                words = fold(phrase).split()
                if words:  # singular and plural spellings of the phrase's last word
                    pairs += [(" ".join([*words[:-1], form]), ("preset", name))
                              for form in (words[-1], *_plural_forms(words[-1]))]
            pairs += [(phrase, ("cue", cue)) for phrase, cue in cues.items()]
            self._matchers[lang] = Matcher(pairs)

    @classmethod
    def from_index(cls, index_dir: Path, languages=LANGUAGES) -> "CodeSwitcher":
        """Preset names from an index's ``tags.jsonl`` (iD presets with translations)."""
        names: dict[str, dict[str, str]] = {lang: {} for lang in languages}
        docs = read_jsonl(Path(index_dir) / TAGS_JSONL)
        docs.sort(key=lambda d: -float(d.get("usage_count") or 0))  # a phrase two presets share: the more used
        # A preset's own name before any preset's search term ("restaurant" is a term of fast food too).
        for field in ("names", "terms"):
            for doc in docs:
                _add_phrases(names, doc, field, languages)
        return cls(names)

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(self._matchers)

    def switch(self, nl: str, lang: str) -> str | None:
        """``nl`` written with ``lang``'s preset names and cue words, or ``None`` when it names no preset."""
        toks = tokens(nl)
        pieces: list[str] = []
        named = False
        i = 0
        matcher = self._matchers[lang]
        while i < len(toks):
            hit = matcher.match_at(toks, i)
            if hit:
                end, (kind, text) = hit
                named |= kind == "preset"
                pieces.append(text)
                i = end
                continue
            tok = toks[i]
            if tok.number or tok.upper or tok.fold not in self._drop:
                pieces.append(tok.text)
            i += 1
        if not named:
            return None
        return _join(pieces, spaceless_language=lang in _NO_SPACES)


def _add_phrases(names: dict, doc: dict, field: str, languages: dict) -> None:
    by_lang = doc.get("names_by_lang") or {}
    phrases = [fold(p) for p in doc.get(field, ()) if p]
    for lang, schema_lang in languages.items():
        target = [t for t in (_clean_name(n) for n in by_lang.get(schema_lang, ())) if t]
        if not target:
            continue
        for phrase in phrases:
            names[lang].setdefault(phrase, target[0])


def _join(pieces: list[str], *, spaceless_language: bool) -> str:
    """Pieces with spaces between them, except where a script written without spaces meets one."""
    out = ""
    for piece in pieces:
        if out and not (spaceless_language and (spaceless(out[-1]) or spaceless(piece[0]))):
            out += " "
        out += piece
    return out


def code_switched_copies(switcher: CodeSwitcher, requests, positions=None) -> list[tuple[int, str]]:
    """``(position, copy)`` for the requests at ``positions`` (default: all) that name a preset, the
    switcher's languages in turn (one turn per position, copy or not).

    >>> sw = CodeSwitcher({"de": {"pharmacy": "Apotheke"}, "fr": {"pharmacy": "Pharmacie"}})
    >>> code_switched_copies(sw, ["pharmacies in Bonn", "cafes", "pharmacies"])  # de, (fr: no preset), de
    [(0, 'Apotheke in Bonn'), (2, 'Apotheke')]
    >>> code_switched_copies(sw, ["pharmacies in Bonn", "pharmacies"])
    [(0, 'Apotheke in Bonn'), (1, 'Pharmacie')]
    """
    languages = switcher.languages
    if not languages:
        return []
    positions = range(len(requests)) if positions is None else positions
    out = []
    for turn, i in enumerate(positions):
        text = switcher.switch(requests[i], languages[turn % len(languages)])
        if text:
            out.append((int(i), text))
    return out
