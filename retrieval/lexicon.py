"""Tag names in every language, matched word for word: the index's ``tag_lexicon.npz``.

Every name, term and alias of a tag, in English and in each language of the
schema, is one *surface*. A request matches a surface through the tokens they
share (``text.lexical_tokens``: folded words with their prefixes, character
bigrams for scripts without spaces). A surface scores the inverse document
frequency of the tokens it shares with the request, times the share of its own
tokens that the request covers: "Apotheke" is fully covered by "Apotheken in
Berlin", the field label "Gibt es Essen?" only half by "Welche Bahnhöfe gibt es".
A tag scores its best surface.

Stored as plain numpy arrays (an inverted index in CSR form, the token list and
the surface texts as newline-joined UTF-8), so loading needs neither pickles nor
a JSON parser over half a million strings.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from geoql.nl.text import fold

from .text import lexical_tokens

LEXICON_FILE = "tag_lexicon.npz"
COVER_SHARE = 0.7  # covering_languages: the share of a surface's token weight that counts as covering it


@dataclass(frozen=True)
class LexicalMatch:
    doc: int
    score: float
    text: str  # the surface that matched
    lang: str  # its language ("en" for the English names and terms)


def _join(items: list[str]) -> bytes:
    return "\n".join(items).encode("utf-8")


def _split(blob) -> list[str]:
    return bytes(blob).decode("utf-8").split("\n") if len(blob) else []


class Lexicon:
    """Inverted index from lexical tokens to tag surfaces."""

    def __init__(self, vocab: list[str], indptr, indices, idf, total, surface_doc, surface_lang, langs: list[str],
                 texts: list[str]) -> None:
        self.vocab = vocab
        self._token_id = {t: i for i, t in enumerate(vocab)}
        self.indptr, self.indices, self.idf, self.total = indptr, indices, idf, total
        self.surface_doc, self.surface_lang = surface_doc, surface_lang
        self.langs = langs
        self.texts = texts
        self._language_ids: dict = {}  # language_ids per set of codes

    def __len__(self) -> int:
        return len(self.surface_doc)

    @classmethod
    def build(cls, surfaces: list[tuple[int, str, str]], *, progress: bool = False) -> "Lexicon":
        """From (doc, lang, text) surfaces; deterministic for the same input."""
        import numpy as np
        from tqdm import tqdm

        langs = sorted({lang for _, lang, _ in surfaces})
        lang_id = {lang: i for i, lang in enumerate(langs)}
        vocab: dict[str, int] = {}
        rows: list[list[int]] = []
        for _, _, text in tqdm(surfaces, desc="lexicon", unit="name", disable=not progress, mininterval=1.0):
            rows.append(sorted({vocab.setdefault(t, len(vocab)) for t in lexical_tokens(text)}))
        lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        flat_tokens = np.fromiter((t for r in rows for t in r), dtype=np.int64, count=int(lengths.sum()))
        flat_surfaces = np.repeat(np.arange(len(rows), dtype=np.int64), lengths)
        df = np.bincount(flat_tokens, minlength=len(vocab)).astype(np.float64)
        idf = np.log1p(len(rows) / np.maximum(df, 1.0)).astype(np.float32)
        total = np.bincount(flat_surfaces, weights=idf[flat_tokens], minlength=len(rows)).astype(np.float32)
        order = np.argsort(flat_tokens, kind="stable")  # postings by token, surfaces ascending within each
        indices = flat_surfaces[order].astype(np.int32)
        indptr = np.concatenate([[0], np.cumsum(np.bincount(flat_tokens, minlength=len(vocab)))]).astype(np.int64)
        return cls(list(vocab), indptr, indices, idf, total,
                   np.asarray([d for d, _, _ in surfaces], dtype=np.int32),
                   np.asarray([lang_id[lang] for _, lang, _ in surfaces], dtype=np.int16),
                   langs, [" ".join(t.split()) for _, _, t in surfaces])

    def save(self, path: Path) -> None:
        import numpy as np

        with open(path, "wb") as f:
            np.savez(f, indptr=self.indptr, indices=self.indices, idf=self.idf, total=self.total,
                     surface_doc=self.surface_doc, surface_lang=self.surface_lang,
                     vocab=np.frombuffer(_join(self.vocab), dtype=np.uint8),
                     langs=np.frombuffer(_join(self.langs), dtype=np.uint8),
                     texts=np.frombuffer(_join(self.texts), dtype=np.uint8))

    @classmethod
    def load(cls, path: Path) -> "Lexicon":
        import numpy as np

        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
        return cls(_split(arrays["vocab"]), arrays["indptr"], arrays["indices"], arrays["idf"], arrays["total"],
                   arrays["surface_doc"], arrays["surface_lang"], _split(arrays["langs"]), _split(arrays["texts"]))

    def surface_scores(self, text: str):
        """(surface ids, scores) of every surface sharing a token with ``text``."""
        import numpy as np

        ids = sorted({self._token_id[t] for t in lexical_tokens(text) if t in self._token_id})
        if not ids:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        postings = [self.indices[self.indptr[t]:self.indptr[t + 1]] for t in ids]
        surfaces = np.concatenate(postings)
        weights = np.repeat(self.idf[ids], [len(p) for p in postings])
        hit, inverse = np.unique(surfaces, return_inverse=True)
        matched = np.bincount(inverse, weights=weights).astype(np.float32)
        return hit, matched * (matched / np.maximum(self.total[hit], 1e-6))

    def names_a_tag(self, text: str, languages=None) -> bool:
        """``text`` is, folded, a whole surface: the name, term or alias of a tag, in one of ``languages``
        (``None``: any). "公园" is (leisure=park), "北京" is not.

        >>> lexicon = Lexicon.build([(0, "zh-CN", "公园"), (1, "de", "Apotheke")])
        >>> lexicon.names_a_tag("公园"), lexicon.names_a_tag("公园的长椅"), lexicon.names_a_tag("apotheke", ["fr"])
        (True, False, False)
        """
        import numpy as np

        hit, _ = self.surface_scores(text)
        if languages is not None and len(hit):
            hit = hit[np.isin(self.surface_lang[hit], self.language_ids(languages))]
        wanted = fold(text)
        return any(fold(self.texts[int(s)]) == wanted for s in hit)

    def covering_languages(self, text: str, share: float = COVER_SHARE) -> set[str]:
        """The languages of the surfaces ``text`` covers: it has ``share`` of their tokens' weight
        ("Apotheken" -> {"de", ...}: the name "Apotheke" lacks only its shortest prefix)."""
        hit, scores = self.surface_scores(text)
        covered = hit[scores >= self.total[hit] * share * share]  # score = matched * (matched / total)
        return {self.langs[int(i)] for i in set(self.surface_lang[covered].tolist())}

    def language_ids(self, languages) -> "np.ndarray":
        """The lexicon's ids of ``languages`` (codes absent from the lexicon are left out); kept per set,
        since every search of a request asks again for the same few sets."""
        import numpy as np

        wanted = frozenset(languages)
        ids = self._language_ids.get(wanted)
        if ids is None:
            ids = np.asarray([i for i, lang in enumerate(self.langs) if lang in wanted], dtype=self.surface_lang.dtype)
            self._language_ids[wanted] = ids
        return ids

    def search(self, text: str, pool: int = 100, languages=None) -> list[LexicalMatch]:
        """The ``pool`` best tags for ``text``, each with its best surface, best first (ties by surface id).

        ``languages``: match only the surfaces in these languages (``None``: every language).
        """
        import numpy as np

        hit, scores = self.surface_scores(text)
        if languages is not None and len(hit):
            keep = np.isin(self.surface_lang[hit], self.language_ids(languages))
            hit, scores = hit[keep], scores[keep]
        if not len(hit):
            return []
        order = np.lexsort((hit, -scores))
        out: list[LexicalMatch] = []
        seen: set[int] = set()
        for j in order:
            doc = int(self.surface_doc[hit[j]])
            if doc in seen:
                continue
            seen.add(doc)
            s = int(hit[j])
            out.append(LexicalMatch(doc, float(scores[j]), self.texts[s], self.langs[int(self.surface_lang[s])]))
            if len(out) >= pool:
                break
        return out
