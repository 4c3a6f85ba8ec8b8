"""Tag grounding: which OSM tags a request is about.

Three kinds of evidence are combined, by a learned ranker
(``retrieval.ranker``, when the index has ``ranker.json``) or by a hand-tuned
weighted sum (``fusion="linear"``) or weighted reciprocal rank (``"rrf"``):

* dense: the request's embedding against every name, synonym and training
  phrase of every tag (max over a tag's surfaces);
* lexical: BM25 over each tag's names, synonyms and key/value words;
* examples: the tags used by the gold queries of the nearest training
  requests, voted with the examples' fused scores; the learned ranker also takes the
  tags of the nearest by the multilingual embedding (``retrieval.multilingual``), which
  reads a request in its own language.

The embedding model and the training requests are English. A request in another
language is first matched against the tag names of every language of the schema
(``retrieval.lexicon``); the English names of its best matches are added to it
(its *gloss*, ``TagRetriever.gloss``), and the three sources above read the gloss. Whether
a request is English is its reading's call (``geoql.nl.Request.language``): English requests
are searched exactly as before.

A request comes read (``geoql.nl.Request``, from ``compile()``); the search takes its language
and its places from the reading and its words as text for the indexes. A plain string (scripts,
training) is read once, with :meth:`TagRetriever.read`.
"""

from __future__ import annotations

import os
import re
import threading
import unicodedata
import warnings
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from geoql.nl.cues import without_stop_words
from geoql.nl.request import Knowledge, Request, read_request
from geoql.nl.text import base_language, main_script

from . import artifacts as A
from .bm25_reader import load_bm25
from .config import RetrievalConfig
from .embedding import run_single_threaded
from .glossary import Translator
from .examples import ExampleRetriever, RetrievedExample, clean_request, has_content
from .fusion import reciprocal_rank_fusion, top_indices
from .lexicon import LexicalMatch, Lexicon
from .multilingual import MultilingualExamples
from .ranker import E5_NEIGHBOURS, NEIGHBOURS, RANKER_JSON, CascadeRanker, candidate_features, tag_quality, tag_words
from .tag_tables import load_tag_tables
from .text import split_value, tokenize, without_database_name

# The gloss of a request in another language: the English names of its GLOSS_TAGS best lexical matches
# that score at least GLOSS_SHARE of the best (tuned on the first 200 OsmNL dev requests per language,
# docs/notes/2026-12-multilingual-tags.md).
GLOSS_TAGS = 4
GLOSS_SHARE = 0.5
ENGLISH_GUESSES = frozenset({"en", "und"})  # Request.language values that keep a request as it is
# Translations kept: one compile() asks for a request's up to four times (its tag search, its neighbours
# twice, the CPU default's words), and a Japanese one takes ~1.7 ms.
TRANSLATIONS_KEPT = 256
_LATIN_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-]*")
_NUMBER = re.compile(r"(?<![^\W_])\d+(?:[.,:/-]\d+)*\.?(?![^\W_])")
# Languages whose names a request also meets because they share its words' writing: Chinese
# characters (a Cantonese request is written in the traditional ones of zh-TW and zh-HK names;
# Japanese kanji nouns are often the Chinese ones) and the Cyrillic words Russian shares with
# Ukrainian, Belarusian, Bulgarian, Serbian, Macedonian and Kazakh. Measured on OsmNL dev
# (docs/notes/2026-12-glossaries.md).
_HAN = ("zh", "yue", "ja", "gan")
_CYRILLIC = ("ru", "uk", "be", "bg", "sr", "mk", "kk")
_SAME_WRITING = {**{lang: _HAN for lang in _HAN}, **{lang: _CYRILLIC for lang in _CYRILLIC}}


def request_languages(guess: str, known) -> frozenset[str] | None:
    """The lexicon languages a request whose language is guessed ``guess`` is matched against:
    that language's variants and English's; ``None`` (every language) when the guess is English,
    undecided or has no names in the lexicon (``known``).

    Matching every language let a German "am" meet Portuguese and Welsh names ("am" for "Mast")
    and put masts into a request about a user's edits.

    >>> known = ["ca", "de", "de-CH", "en", "en-GB", "pt", "yue", "zh-CN", "zh-TW"]
    >>> sorted(request_languages("de", known)), sorted(request_languages("yue", known))
    (['de', 'de-CH', 'en', 'en-GB'], ['en', 'en-GB', 'yue', 'zh-CN', 'zh-TW'])
    >>> sorted(request_languages("ja", ["ja", "ko", "uk", "zh"])), sorted(request_languages("ru", ["ja", "ru", "uk"]))
    (['ja', 'zh'], ['ru', 'uk'])
    >>> request_languages("en", known), request_languages("und", known), request_languages("sw", known)
    (None, None, None)
    """
    if guess in ENGLISH_GUESSES:
        return None
    bases = {guess, *_SAME_WRITING.get(guess, ())}
    own = {lang for lang in known if base_language(lang) in bases}
    if not own:
        return None
    return frozenset(own | {lang for lang in known if base_language(lang) == "en"})


class IndexNames:
    """The tag index's names as names of things for a reader (``geoql.nl.request.Things``): a phrase
    names a thing when it is a tag's name in the request's languages (:func:`request_languages`)."""

    def __init__(self, retriever: "TagRetriever") -> None:
        self._retriever = retriever

    def names_a_thing(self, phrase: str, language: str) -> bool:
        return self._retriever.lexicon.names_a_tag(phrase, self._retriever._languages(language))


@dataclass(frozen=True)
class TagHit:
    tag: str  # "key=value" or "key=*"
    key: str
    value: str
    name: str
    score: float
    why: str  # the name, synonym or similar request that matched


class TagRetriever:
    """Hybrid tag search; ``.examples`` is the example retriever it draws evidence from."""

    def __init__(self, index_dir: Path, manifest: A.Manifest, config: RetrievalConfig | None = None) -> None:
        self.index_dir = index_dir
        self.manifest = manifest
        self.config = config or RetrievalConfig()
        # The documents without their per-language names (the lexicon holds them for search; app.explain
        # reads them from tags.jsonl), from a cache in milliseconds instead of ~0.8 s of parsing.
        tables = load_tag_tables(index_dir)
        self.docs = tables.docs
        self._lexicon: Lexicon | None = None  # loaded on first use (~0.5 s): English requests rarely need it
        self._english = tables.english  # the index's English words, for is_english
        self._doc_of = {d["tag"]: i for i, d in enumerate(self.docs)}
        self._surface_doc = tables.surface_doc
        self._surface_text = tables.surface_text
        self._surface_kind = tables.surface_kind
        self._dense = A.read_faiss(index_dir / A.TAG_SURFACES_FAISS)
        self._bm25 = load_bm25(index_dir / A.TAGS_BM25)
        if self._dense.ntotal != len(self._surface_doc) or self._bm25.scores["num_docs"] != len(self.docs):
            raise A.IndexMissingError(f"the tag files in {index_dir} disagree in size; rebuild with `{A.BUILD_COMMAND}`")
        peak = max((d.get("popularity", 0.0) for d in self.docs), default=0.0) or 1.0
        self._popularity = [d.get("popularity", 0.0) / peak for d in self.docs]  # 0..1
        self._popularity_peak = peak
        ex = tables.examples
        self.examples = ExampleRetriever(index_dir, manifest, self.config, [
            RetrievedExample(i, nl, query, 0.0, tuple(tags)) for i, nl, query, tags in zip(ex["index"], ex["nl"], ex["query"], ex["tags"])])
        # The training requests' multilingual vectors (None without them): neighbours across languages.
        self.multilingual = MultilingualExamples.load(index_dir, [e.index for e in self.examples.examples])
        # Ranker features: the tags each training request uses, and how many requests use each tag.
        self._example_docs = [tuple(sorted({self._doc_of[t] for t in ex.tags if t in self._doc_of})) for ex in self.examples.examples]
        self._train_count: dict[int, int] = {}
        for used in self._example_docs:
            for doc in used:
                self._train_count[doc] = self._train_count.get(doc, 0) + 1
        self._tag_words: dict[int, tuple] = {}  # filled as tags become candidates: tokenising all 5k up front costs ~1 s
        self._tag_quality: dict[int, tuple] = {}  # likewise, as tags become candidates
        self._translator: Translator | None = None
        self._translations: dict[str, str | None] = {}  # the newest TRANSLATIONS_KEPT, oldest first
        self._translations_lock = threading.Lock()  # the demo's worker threads share one retriever
        self._languages_of: dict[str, frozenset[str] | None] = {}  # request_languages per guessed language
        self.ranker = None
        if self.config.fusion == "learned" and (index_dir / RANKER_JSON).is_file():
            try:
                self.ranker = CascadeRanker.load(index_dir / RANKER_JSON)
            except (ValueError, KeyError, OSError) as exc:
                warnings.warn(f"ignoring {index_dir / RANKER_JSON} ({exc}); using linear fusion", stacklevel=2)

    @classmethod
    def load(cls, index_dir: str | os.PathLike | None = None, config: RetrievalConfig | None = None) -> "TagRetriever":
        path = A.resolve_index_dir(index_dir)
        return cls(path, A.load_manifest(path), config)

    def __len__(self) -> int:
        return len(self.docs)

    def __contains__(self, tag: str) -> bool:
        return tag in self._doc_of

    def doc(self, tag: str) -> dict | None:
        i = self._doc_of.get(tag)
        return self.docs[i] if i is not None else None

    @cached_property
    def names(self) -> IndexNames:
        """The index's tag names as names of things (``geoql.nl.request.Things``): a place read only because
        it opens a request is taken for the thing it names when it is a tag's name in the request's
        languages: "公园的长椅" asks for the benches of parks, "北京的博物馆" for the museums of Beijing."""
        return IndexNames(self)

    @cached_property
    def knowledge(self) -> Knowledge:
        """What the index tells a reader (``geoql.nl.read_request``): its tag names (:attr:`names`)."""
        return Knowledge(things=self.names)

    def read(self, nl: str) -> Request:
        """``nl`` read once with :attr:`knowledge`: what the string forms of the search read."""
        return read_request(nl if isinstance(nl, str) else ("" if nl is None else str(nl)), self.knowledge)

    def _request(self, request: Request | str) -> Request:
        return request if isinstance(request, Request) else self.read(request)

    def search(self, request: Request | str, k: int = 10, exclude=()) -> list[TagHit]:
        """The ``k`` tags most likely meant by the request, best first.

        ``request``: as ``compile()`` read it (a string is read here, once). ``exclude`` holds
        training indices whose examples must not vote (use the request's own index when searching
        for a training request).
        """
        request = self._request(request)
        text = without_database_name(clean_request(request.nl))
        if not isinstance(k, int) or k <= 0 or not has_content(text):
            return []
        return run_single_threaded(self._search, request, text, k, tuple(exclude or ()))

    @property
    def lexicon(self) -> Lexicon:
        """Every tag's names in every language of the index (``retrieval.lexicon``)."""
        if self._lexicon is None:
            self._lexicon = Lexicon.load(self.index_dir / A.TAG_LEXICON)
        return self._lexicon

    @property
    def translator(self) -> Translator:
        """The index's glossaries (``retrieval.glossary``); none in an index built without them."""
        if self._translator is None:
            self._translator = Translator.from_index(self.index_dir)
        return self._translator

    def translation(self, request: Request | str) -> str | None:
        """The request word by word in English when its language has a glossary in the index, else ``None``."""
        request = self._request(request)
        return self._translate(clean_request(request.nl), request.language)

    def _translate(self, text: str, language: str) -> str | None:
        """``text`` (the request's words, or its search text) in English, in ``language``'s glossary."""
        if not self.translator.languages or not has_content(text):
            return None
        with self._translations_lock:
            if text in self._translations:
                return self._translations[text]
        # A short request without cue words ("Apotheken in Berlin") is guessed English and keeps the
        # lexicon's gloss: a language guessed from single foreign words misreads English requests.
        translated = self.translator.translate(text, language)
        with self._translations_lock:
            self._translations[text] = translated
            while len(self._translations) > TRANSLATIONS_KEPT:
                del self._translations[next(iter(self._translations))]
        return translated

    def english_text(self, request: Request | str) -> str | None:
        """The request as the English sources read it when it is not English and its language has a
        glossary, else ``None``: its translation, then the English names of its best lexical matches
        ("Welche Bahnhöfe gibt es in Schweden?" -> "stations in Sweden Train Station ...")."""
        request = self._request(request)
        text = clean_request(request.nl)
        if not has_content(text) or self._is_english(request, text):
            return None
        translated = self._translate(text, request.language)
        if translated is None:
            return None
        return self._names_after(translated, self._lexical(request, text, GLOSS_TAGS)) or text

    def _names_after(self, base: str, matches: list[LexicalMatch]) -> str:
        """``base`` followed by the English names of the best ``matches`` (within GLOSS_SHARE of the best)."""
        best = matches[0].score if matches else 0.0
        names = [self.docs[m.doc]["names"][0] for m in matches[:GLOSS_TAGS] if m.score >= GLOSS_SHARE * best and self.docs[m.doc]["names"]]
        return " ".join([base] + names).strip()

    @property
    def languages(self) -> list[str]:
        """The languages whose tag names the index holds (the manifest's list; English first)."""
        return list(self.manifest.data.get("languages", ["en"]))

    def is_english(self, request: Request | str) -> bool:
        """Whether the request reads as English (or as no language at all), so that it is searched as it is.

        Its reading's language (``Request.language``: the script, then cue words and word endings)
        comes first. A short request without cue words ("Apotheken in Berlin") is read as English; it
        is not, when one of its words is no English word of the index (training requests, English names
        and terms) and alone covers tag names in other languages only ("Apotheken" covers "Apotheke";
        "drainage" covers French and English names); words of five letters or more count, not
        capitalised inside the sentence (names) nor quoted.
        """
        request = self._request(request)
        return self._is_english(request, clean_request(request.nl))

    def _is_english(self, request: Request, text: str) -> bool:
        """:meth:`is_english`, its index words looked up in ``text`` (the request's, or its search text)."""
        if request.language not in ENGLISH_GUESSES:
            return False
        for i, raw in enumerate(text.split()):
            if i and raw[:1].isupper() or any(ch in raw for ch in "\"'«»“”„"):
                continue  # a name or a quote says nothing of the sentence's language
            for word in tokenize(raw, keep_stopwords=True):
                if len(word) >= 5 and word not in self._english and not word.isdigit():
                    langs = self.lexicon.covering_languages(word)
                    if langs and not any(lang == "en" or lang.startswith("en-") for lang in langs):
                        return False
        return True

    def lexical_matches(self, request: Request | str, k: int = 10) -> list[LexicalMatch]:
        """The ``k`` tags whose name in some language the request uses most, best first, each with that name."""
        request = self._request(request)
        text = clean_request(request.nl)
        if not isinstance(k, int) or k <= 0 or not has_content(text):
            return []
        return self._lexical(request, text, k)

    def _lexical(self, request: Request, text: str, pool: int) -> list[LexicalMatch]:
        """The lexicon's ``pool`` best tags for a request's cleaned words ``text``, in its own languages
        (:func:`request_languages`)."""
        lang = request.language
        # The sentence's own small words ("gibt es", "am") name no tag but match field labels
        # ("Gibt es Essen?") and short names in other languages; its numbers (ids, dates, a uid)
        # match option titles ("8 (climbing grade uiaa)").
        words = _NUMBER.sub(" ", without_stop_words(self._without_places(request, text), lang))
        return self.lexicon.search(words, pool, self._languages(lang))

    def _languages(self, lang: str) -> frozenset[str] | None:
        if lang not in self._languages_of:  # the same few guesses every time: each read once
            self._languages_of[lang] = request_languages(lang, self.lexicon.langs)
        return self._languages_of[lang]

    @staticmethod
    def _without_places(request: Request, text: str) -> str:
        """``text`` without the places the request names (``Request.places``, read with :attr:`knowledge`):
        a place names no tag, but in most languages a country's name is a word of a cuisine's ("이탈리아"
        in "이탈리아 요리", Italian cuisine), so restaurants crept into requests about the roads of Italy."""
        text = unicodedata.normalize("NFKC", text)  # as the reading writes its places ("＝" is "=")
        for place in request.place_names:
            text = text.replace(place, " ")
        return text

    def gloss(self, request: Request | str) -> str:
        """The request as the English sources read it: unchanged when it is English; else its word-by-word
        English where the index has a glossary of its language (:meth:`translation`), or else its
        Latin-script words (all of them in a Latin-script language, only names and numbers in other
        scripts); then the English names of its best lexical matches ("Apotheken in Berlin" ->
        "Apotheken in Berlin Pharmacy ...", "西安的博物馆" -> "西 安 museum Museum ..." with the
        Chinese glossary, whose "西安" is only a cross-reference, and "Museum ..." without).
        """
        request = self._request(request)
        text = clean_request(request.nl)
        if not has_content(text) or self._is_english(request, text):
            return text
        return self._gloss(request, text, self._lexical(request, text, GLOSS_TAGS))

    def _gloss(self, request: Request, text: str, matches: list[LexicalMatch]) -> str:
        translated = self._translate(text, request.language)  # word by word where the index has a glossary
        if translated is not None:
            base = translated
        else:  # else the words a Latin-script request shares with English (names, numbers)
            base = text if main_script(text) in {"Latin", "Common"} else " ".join(_LATIN_WORD.findall(text))
        return self._names_after(base, matches) or text

    def _search(self, request: Request, text: str, k: int, exclude: tuple) -> list[TagHit]:
        if self.ranker is not None:
            return self._learned_hits(self._request_evidence(request, text, exclude, neighbours=NEIGHBOURS), exclude, k)
        evidence = self._request_evidence(request, text, exclude)
        fused = self._fuse_rrf(evidence) if self.config.fusion == "rrf" else self._fuse_linear(evidence)
        best = sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        return [self._hit(doc, score, self._why(doc, evidence)) for doc, score in best]

    def _request_evidence(self, request: Request | str, text: str | None, exclude: tuple, *, neighbours: int = 0,
                          e5_vector=None) -> dict:
        """:meth:`_evidence` of a request in any language, ``text`` its cleaned words (``None``: the request's):
        one that is not English is searched by its gloss (:meth:`gloss`), and its lexical matches in its own
        languages come along (``"lexical"``). The multilingual neighbours read ``text`` before any gloss: the
        request in its own words (or, given ``e5_vector``, that vector: scripts/ranker_headroom.py reads a
        translation with its English twin's)."""
        request = self._request(request)
        text = clean_request(request.nl) if text is None else text
        lexical: dict[int, LexicalMatch] = {}
        if e5_vector is None and neighbours > 0 and self.multilingual is not None:
            e5_vector = self.multilingual.vector(text)
        glossed = not self._is_english(request, text)
        if glossed:
            matches = self._lexical(request, text, self.config.tag_pool)
            lexical = {m.doc: m for m in matches}
            text = self._gloss(request, text, matches)
        evidence = self._evidence(text, exclude, neighbours=neighbours, e5_vector=e5_vector)
        evidence["lexical"] = lexical
        evidence["glossed"] = glossed
        return evidence

    def _learned_hits(self, evidence: dict, exclude, k: int) -> list[TagHit]:
        """Controlled tags ordered by the learned ranker; free-text ``key=*`` tags take their linear-fusion
        places moved down by ``free_text_shift`` (never the first: a request is about a kind of feature;
        names and refs qualify it).

        The ranker is fitted on controlled pairs only (it learns to push ``name=*`` and the like down);
        the keys of free-text filters still matter to the prompt, so they keep the slots the
        hand-tuned fusion gives them.
        """
        import math

        candidates, rows = self._candidate_features(evidence, exclude)
        ranker = self.ranker.for_request(bool(evidence.get("glossed")))
        prob = {doc: 1.0 / (1.0 + math.exp(-max(min(s, 50.0), -50.0))) for doc, s in zip(candidates, ranker.score(rows))}
        linear = self._fuse_linear(evidence)
        linear_top = sorted(linear.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        free = [(i, doc) for i, (doc, _) in enumerate(linear_top) if self.docs[doc]["value"] == "*"]
        if self.config.max_free_text is not None:
            free = free[: max(self.config.max_free_text, 0)]
        free_slots: dict[int, int] = {}
        place = 0
        for i, doc in free:  # moved down by free_text_shift; the best controlled tag always leads
            place = max(i + self.config.free_text_shift, place + 1, 1)
            free_slots[place] = doc
        controlled = iter(sorted((d for d in prob if self.docs[d]["value"] != "*"), key=lambda d: (-prob[d], d)))
        order: list[int] = []
        for i in range(min(k, len(candidates))):
            doc = free_slots.pop(i, None)
            if doc is None:
                doc = next(controlled, None)
            if doc is None:  # controlled tags ran out: the remaining free-text tags close the list
                order.extend(free_slots[j] for j in sorted(free_slots))
                break
            order.append(doc)
        order = order[:k]
        scores = [prob.get(doc, 0.0) for doc in order]
        for i in range(len(scores) - 2, -1, -1):  # keep scores non-increasing along the list
            scores[i] = max(scores[i], scores[i + 1])
        return [self._hit(doc, score, self._why(doc, evidence)) for doc, score in zip(order, scores)]

    def _candidate_features(self, evidence: dict, exclude) -> tuple[list[int], list[list[float]]]:
        excluded_rows = [self.examples._row_of[i] for i in exclude if i in self.examples._row_of]
        return candidate_features(
            self.docs, self._popularity, evidence, evidence["neighbours"], self._example_docs.__getitem__, self._train_count,
            [doc for r in excluded_rows for doc in self._example_docs[r]], self._words_of, self._popularity_peak,
            self._quality_of,
        )

    def _words_of(self, doc: int) -> tuple:
        words = self._tag_words.get(doc)
        if words is None:
            words = self._tag_words[doc] = tag_words(self.docs[doc])
        return words

    def _quality_of(self, doc: int) -> tuple:
        quality = self._tag_quality.get(doc)
        if quality is None:
            quality = self._tag_quality[doc] = tag_quality(self.docs[doc])
        return quality

    def _features(self, text: str, vector, exclude, e5_vector=None) -> tuple[list[int], list[list[float]]]:
        """Ranker candidates and feature rows for a request (ranker fitting): an English training request
        whose embeddings are known (``vector``, and ``e5_vector`` where the index has multilingual vectors),
        or with ``vector=None`` a request in any language, read as :meth:`search` reads it."""
        text, exclude = clean_request(text), tuple(exclude)
        if vector is None:
            evidence = self._request_evidence(self.read(text), text, exclude, neighbours=NEIGHBOURS)
        else:
            evidence = self._evidence(text, exclude, neighbours=NEIGHBOURS, vector=vector, e5_vector=e5_vector)
        return self._candidate_features(evidence, exclude)

    def _evidence(self, text: str, exclude, *, neighbours: int = 0, vector=None, e5_vector=None) -> dict:
        """Per-source scores of candidate tags: {"dense": {doc: cos}, "bm25": {doc: 0..1}, "votes": {doc: 0..1}}.

        ``neighbours`` > 0 also returns the nearest training rows with their cosines (``"neighbours"``), and
        with ``e5_vector`` (the request's multilingual vector) the nearest by that embedding (``"e5"``).
        """
        cfg = self.config
        if vector is None:
            vector = self.examples.encoder(text)
        dense: dict[int, float] = {}
        dense_why: dict[int, str] = {}
        # Leave-one-out must also hide an excluded request where it is a tag's phrase surface.
        hidden = {self.examples.examples[r].nl for r in (self.examples._row_of.get(i) for i in exclude) if r is not None}
        if cfg.tag_dense_weight > 0:
            scores, ids = self._dense.search(vector.reshape(1, -1), min(cfg.surface_pool, self._dense.ntotal))
            for score, sid in zip(scores[0], ids[0]):
                if sid < 0 or (hidden and self._surface_kind[sid] == "phrase" and self._surface_text[sid] in hidden):
                    continue
                doc = self._surface_doc[sid]
                if doc not in dense:
                    if len(dense) >= cfg.tag_pool:
                        break
                    dense[doc] = float(score)
                    kind = self._surface_kind[sid]
                    dense_why[doc] = f"{'similar request' if kind == 'phrase' else kind}: {self._surface_text[sid]}"
        bm25: dict[int, float] = {}
        tokens = tokenize(text)
        if cfg.tag_bm25_weight > 0 and tokens:
            raw = self._bm25.get_scores(tokens)
            top = top_indices(raw, cfg.tag_pool)
            if top:
                peak = float(raw[top[0]])
                bm25 = {doc: float(raw[doc]) / peak for doc in top}
        votes: dict[int, float] = {}
        voters: dict[int, str] = {}
        near: list[tuple[int, float]] = []
        if neighbours > 0 or (cfg.tag_example_weight > 0 and cfg.evidence_examples > 0):
            n = max(neighbours, cfg.evidence_examples)
            all_rows = [r for r, _ in self.examples._fused_rows(text, vector, n, exclude)]
            near = list(zip(all_rows, self.examples.cosine(vector, all_rows)))
        if cfg.tag_example_weight > 0 and cfg.evidence_examples > 0:
            rows = [r for r, _ in near[: cfg.evidence_examples]]
            for row, cos in near[: cfg.evidence_examples]:
                weight = max(cos, 0.0) ** cfg.example_vote_power / max(len(rows), 1)
                for tag in self.examples.examples[row].tags:
                    doc = self._doc_of.get(tag)
                    if doc is not None:
                        votes[doc] = votes.get(doc, 0.0) + weight
                        voters.setdefault(doc, self.examples.examples[row].nl)
        e5: list[tuple[int, float]] = []
        if neighbours > 0 and e5_vector is not None and self.multilingual is not None:
            row_of = self.examples._row_of
            e5 = [(row_of[i], cos) for i, cos in self.multilingual.search(e5_vector, E5_NEIGHBOURS, exclude) if i in row_of]
            for row, _ in e5:
                for doc in self._example_docs[row]:
                    voters.setdefault(doc, self.examples.examples[row].nl)
        return {"dense": dense, "dense_why": dense_why, "bm25": bm25, "tokens": set(tokens), "votes": votes, "voters": voters,
                "neighbours": near, "e5": e5}

    def _fuse_linear(self, ev: dict) -> dict[int, float]:
        cfg = self.config
        fused: dict[int, float] = {}
        for weight, scores in ((cfg.tag_dense_weight, ev["dense"]), (cfg.tag_bm25_weight, ev["bm25"]), (cfg.tag_example_weight, ev["votes"])):
            for doc, score in scores.items():
                fused[doc] = fused.get(doc, 0.0) + weight * score
        if cfg.popularity_weight:
            for doc in fused:
                fused[doc] += cfg.popularity_weight * self._popularity[doc]
        return fused

    def _fuse_rrf(self, ev: dict) -> dict[int, float]:
        cfg = self.config
        rank = lambda scores: sorted(scores, key=lambda d: (-scores[d], d))  # noqa: E731
        fused = reciprocal_rank_fusion(
            [(cfg.tag_dense_weight, rank(ev["dense"])), (cfg.tag_bm25_weight, rank(ev["bm25"])), (cfg.tag_example_weight, rank(ev["votes"]))],
            cfg.rrf_k,
        )
        if cfg.popularity_weight:
            for doc in fused:
                fused[doc] += cfg.popularity_weight * self._popularity[doc] / (cfg.rrf_k + 1)
        return fused

    def _why(self, doc: int, ev: dict) -> str:
        """The strongest single piece of evidence, in words."""
        cfg = self.config
        match = ev.get("lexical", {}).get(doc)
        if match is not None:  # a request in another language: the name it used says most
            return f"name ({match.lang}): {match.text}"
        parts = {
            "dense": cfg.tag_dense_weight * ev["dense"].get(doc, 0.0),
            "bm25": cfg.tag_bm25_weight * ev["bm25"].get(doc, 0.0),
            "votes": cfg.tag_example_weight * ev["votes"].get(doc, 0.0),
        }
        source = max(parts, key=parts.get)
        if source == "bm25":
            d = self.docs[doc]
            overlap = [(len(ev["tokens"] & set(tokenize(n))), -i, n) for i, n in enumerate(d["names"] + d["terms"])]
            best = max(overlap, default=(0, 0, ""))
            if best[0]:  # the name or term sharing most words with the request
                return f"name: {best[2]}"
        if source == "votes" and doc in ev["voters"]:
            return f"used for similar request: {ev['voters'][doc]}"
        return ev["dense_why"].get(doc) or (f"used for similar request: {ev['voters'][doc]}" if doc in ev["voters"] else "")

    def _hit(self, doc: int, score: float, why: str) -> TagHit:
        d = self.docs[doc]
        name = d["names"][0] if d["names"] else (split_value(d["value"]) if d["value"] != "*" else d["key"])
        return TagHit(d["tag"], d["key"], d["value"], name, round(score, 6), why)
