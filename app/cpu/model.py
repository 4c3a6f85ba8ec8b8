"""The trained CPU compiler: neighbours + lexicon + place aliases + selection model.

``geoql cpu train`` (``app.cpu.train``) makes it from the training split, or ``app.cpu.prebuilt``
from the selector GeoQL ships. Saved under :func:`default_model_dir` as data, never as a pickle
(loading a pickle runs whatever code it holds):

- ``model.json``: the training pairs, the lexicon, place aliases and frame neighbours;
- ``neighbours.npz``: the character TF-IDF vocabulary, idf and matrix (``retrieval.char_tfidf``);
- ``selector.npz``: the selector's trees (``app.cpu.lite.TreeEnsemble``);
- ``manifest.json``: the settings (config, feature names) and each file's SHA-256, sealed by its own
  (``geoql.core.checksums``).

Loading checks every digest first and reads the arrays with ``allow_pickle=False``: a damaged or
edited file is a :class:`ModelMissingError` naming the fix (the CPU backend then prepares the model
again), never a different answer. A ``model.pkl`` of an older GeoQL is refused, not unpickled.
"""

from __future__ import annotations

import io
import json
import re
import warnings
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from geoql.app.cpu.candidates import Candidate, add_composed, build_pool
from geoql.app.cpu.compose import compose, query_shape, request_shape
from geoql.app.cpu.edits import EditContext, EditOptions
from geoql.app.cpu.faithful import LEVELS, guard_pool, level_kinds, place_aliases, supported, unlicense
from geoql.app.cpu.features import FEATURE_NAMES, pool_features
from geoql.app.cpu.hints import TagHints, hint_scores
from geoql.app.cpu.lexicon import MAIN_SHARE, TagLexicon, tag_names
from geoql.app.cpu.lite import TreeEnsemble
from geoql.app.cpu.neighbours import CharTfidfNeighbours, FrameNeighbours, Neighbour, similarities
from geoql.app.cpu.request import known_places, view
from geoql.core import checksums
from geoql.core.errors import ConfigError, GeoqlError
from geoql.core.files import atomic_dir, check_writable_dir, write_atomic
from geoql.core.paths import user_dir
from geoql.eval.license import CORE_KINDS as LICENCE_CORE_KINDS
from geoql.eval.license import KINDS as LICENCE_KINDS
from geoql.eval.license import TagEvidence, unlicensed_parts
from geoql.nl.english import extract_area
from geoql.nl.request import Knowledge, Request, read_request
from geoql.nl.text import main_script
from geoql.retrieval import IndexMissingError

FORMAT_VERSION = 2  # 1: model.pkl (a pickle; refused since)
DIR_VERSION = 1  # the folder's name (cpu-default/v1): a new format replaces the old model in place
ENV_VAR = "GEOQL_CPU_MODEL_DIR"
TRAIN_COMMAND = "geoql cpu train"
MANIFEST = "manifest.json"
MODEL_JSON = "model.json"
NEIGHBOURS_NPZ = "neighbours.npz"
SELECTOR_NPZ = "selector.npz"
OLD_PICKLE = "model.pkl"  # format 1
MODEL_FILES = (MANIFEST, MODEL_JSON, NEIGHBOURS_NPZ, SELECTOR_NPZ, OLD_PICKLE)  # what a model directory may hold
# Used when nothing in the training data fits at all (no neighbour parses).
_REQUEST_COUNT = FEATURE_NAMES.index("request_count")
_QUERY_COUNT = FEATURE_NAMES.index("query_count")
FALLBACK_QUERY = "[out:json][timeout:25];nwr({{bbox}});out;"
RETRAIN_WITHOUT_INDEX = "`geoql cpu train --tag-hints off`"
INDEX_HINT = f"build the index with `geoql index build`, or train without it: {RETRAIN_WITHOUT_INDEX}"


class ModelMissingError(GeoqlError):
    """No trained CPU model at the expected place; the message names the command."""


def default_model_dir() -> Path:
    """``$GEOQL_CPU_MODEL_DIR`` if set, else a versioned folder in the user data directory."""
    return user_dir("data", "cpu-default", f"v{DIR_VERSION}", env=ENV_VAR)


def check_model_dir(model_dir: Path) -> None:
    """Fail now, not after minutes of training, when ``model_dir`` cannot take a model: it is not writable,
    or it holds files of something else, which saving (a whole new directory swapped in) would remove."""
    check_writable_dir(model_dir)
    if Path(model_dir).is_dir():
        foreign = sorted(p.name for p in Path(model_dir).iterdir() if p.name not in MODEL_FILES and not p.name.startswith("."))
        if foreign:
            raise ConfigError(f"{model_dir} holds files that are no part of a GeoQL CPU model ({', '.join(foreign[:3])}"
                              f"{', ...' if len(foreign) > 3 else ''}): choose an empty or new directory for the model")


# The languages whose requests the licence check can judge tag filters in: a request's words license a tag
# by spelling its (English) key or value, or through the English-trained lexicon and tag hits. On OsmNL dev
# the check flags 41-53 % of the gold's own tag filters for de, fr, ru, zh, yue, ja and ko requests (10 % on
# OverpassNL dev), and a pick that avoids them lost 2.0 (de) and 3.5 (zh) OQS on 300 requests; without the
# tag kind, 0.2 and 0.3. A multilingual reading of features (Request.features) would lift this.
TAG_LICENCE_LANGUAGES = ("en",)

@dataclass
class CpuConfig:
    """How candidates are made and chosen."""

    k: int = field(default=10, metadata={"help": "neighbours per request (each gives the query as is and edited)"})
    edits: str = field(default="all", metadata={"help": "edit groups: all, none or e.g. 'area,tags'"})
    select: bool = field(default=True, metadata={"help": "choose with the trained model (False: nearest neighbour)"})
    partial: bool = field(default=False, metadata={"help": "also offer each neighbour with only the place edited"})
    fix_place: bool = field(default=True, metadata={
        "help": "never offer a neighbour's query with another place as it is: offer it with the request's place"})
    add_tags: bool = field(default=True, metadata={
        "help": "also offer each edited query with the tags the request's new words call for added"})
    drop_tags: bool = field(default=True, metadata={
        "help": "also offer each edited query without the extra tags only the example's words explain"})
    tag_hints: bool = field(default=False, metadata={
        "help": "use the tag index's retriever (set by training: a model trained with it needs the index)"})
    frame: bool = field(default=True, metadata={
        "help": "read the request's intent frame (geoql.nl.frame) too: its place, map view, counting, types "
                "where the English rules find none"})
    frame_k: int = field(default=3, metadata={
        "help": "more neighbours picked by the request's tag hints and shape (needs the tag index)"})
    example_k: int = field(default=5, metadata={
        "help": "more neighbours from the tag index's search of the training requests (sentence embedding, BM25 "
                "and character n-grams fused), which finds rephrased requests that share few letters (needs the index)"})
    e5_k: int = field(default=5, metadata={
        "help": "more neighbours from the multilingual embedding of the request as written (multilingual-e5-small, "
                "retrieval.multilingual), which meets a request in any language (needs an index built with it)"})
    compose: bool = field(default=True, metadata={
        "help": "also offer the query composed from the request alone (app.cpu.compose)"})
    gloss_words: bool = field(default=False, metadata={
        "help": "a request read through a glossary gives the lexicon, the tag edits and the word features the "
                "words of its translation (TagRetriever.translation) instead of its own"})
    faithful: str = field(default="all", metadata={
        "help": "never offer a query with a constant the request does not support (repaired, else dropped): "
                "all (place, name, id, user, date, output format), formats (all but out meta), core (no output "
                "format), off"})
    licensed: str = field(default="all", metadata={
        "help": "the answer is the best-ranked candidate with no part the request does not license "
                "(geoql.eval.license) where the pool has one: all (every kind), core (the kinds that change the "
                "elements: area, around, tag, name, id, user, date), a comma list of kinds, or off"})

    def __post_init__(self) -> None:
        if not 1 <= self.k <= 100:
            raise ConfigError(f"k must be between 1 and 100 (got {self.k}): 10 is a good default")
        if not 0 <= self.frame_k <= 20:
            raise ConfigError(f"frame_k must be between 0 and 20 (got {self.frame_k}): 3 is a good default")
        if not 0 <= self.example_k <= 20:
            raise ConfigError(f"example_k must be between 0 and 20 (got {self.example_k}): 5 is a good default")
        if not 0 <= self.e5_k <= 20:
            raise ConfigError(f"e5_k must be between 0 and 20 (got {self.e5_k}): 5 is a good default")
        if self.faithful not in LEVELS:
            raise ConfigError(f"faithful must be one of {', '.join(LEVELS)} (got {self.faithful!r}): use all")
        self.licensed_kinds  # validates the spec early
        self.edit_options  # validates the spec early

    @property
    def edit_options(self) -> EditOptions:
        return EditOptions.parse(self.edits)

    @property
    def extra_edits(self) -> tuple[str, ...]:
        names = tuple(n for n in ("add_tags", "drop_tags") if getattr(self, n))
        return names + (("hint_tags",) if self.tag_hints else ())

    @property
    def licensed_kinds(self) -> tuple[str, ...]:
        """The kinds of unlicensed part the final pick avoids (``licensed``; a model pickled before the option: all)."""
        spec = getattr(self, "licensed", "all")
        kinds = {"all": LICENCE_KINDS, "core": LICENCE_CORE_KINDS, "off": ()}.get(spec)
        if kinds is None:
            kinds = tuple(k.strip() for k in spec.split(",") if k.strip())
            unknown = [k for k in kinds if k not in LICENCE_KINDS]
            if unknown or not kinds:
                raise ConfigError(f"licensed must be all, core, off or kinds of {', '.join(LICENCE_KINDS)} "
                                  f"(got {spec!r}): use all")
        return kinds

    @property
    def faithful_kinds(self) -> tuple[str, ...]:
        return level_kinds(self.faithful)


def learn_aliases(nls: list[str], queries: list[str], *, min_count: int = 2,
                  places: dict[str, str] | None = None) -> dict[str, str]:
    """Place names as the requests write them -> as the queries write them ("Germany" -> "Deutschland").

    >>> learn_aliases(["bars in Germany", "pubs in Germany", "cafes in Bonn"],
    ...     ['{{geocodeArea:"Deutschland"}}->.a;', '{{geocodeArea:"Deutschland"}}->.a;', '{{geocodeArea:"Bonn"}}->.a;'])
    {'Germany': 'Deutschland'}
    """
    pattern = re.compile(r"\{\{(?:geocodeArea|nominatimArea):\s*\"?(.*?)\"?\s*\}\}")
    seen: dict[str, Counter] = defaultdict(Counter)
    for nl, query in zip(nls, queries):
        names = pattern.findall(query)
        span = extract_area(nl, places)
        if len(names) == 1 and span:
            seen[span][names[0]] += 1
    aliases = {}
    for span, counts in seen.items():
        (name, n), = counts.most_common(1)
        if name != span and n >= min_count and n > counts.get(span, 0):
            aliases[span] = name
    return dict(sorted(aliases.items()))


@dataclass(frozen=True)
class Retrieved:
    """What one request's candidate pool is built from, searched once per request."""

    neighbours: list[Neighbour]  # the nearest training requests, best first
    hits: list | None = None  # the tag index's ``TagHit`` list; None: the model works without the index

    @property
    def hints(self) -> dict[str, float] | None:
        """The hits as the selector's features read them (``None`` without the index)."""
        return None if self.hits is None else hint_scores(self.hits)


@dataclass
class CpuModel:
    train_nls: list[str]
    train_queries: list[str]
    neighbours: CharTfidfNeighbours
    lexicon: TagLexicon
    aliases: dict[str, str]
    selector: object | None = None  # a TreeEnsemble over feature_names (app.cpu.lite); None: nearest neighbour
    feature_names: tuple[str, ...] = FEATURE_NAMES
    config: CpuConfig = field(default_factory=CpuConfig)
    stats: dict = field(default_factory=dict)
    places: dict[str, str] = field(default_factory=dict)  # folded place name -> spelling (lower-case places)
    index_fingerprint: str = ""  # the tag index the model was trained with (config.tag_hints)
    # Place spellings learned from the training pairs (app.cpu.faithful.place_aliases): what
    # counts as the request's place when a candidate is checked for invented constants.
    faith_aliases: dict | None = None
    frame_neighbours: FrameNeighbours | None = None
    # The loaded app.cpu.hints.TagHints (FAISS inside: never pickled; attached by load()).
    hints: object | None = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["hints"] = None
        return state

    @classmethod
    def fit_retrieval(cls, nls: list[str], queries: list[str], config: CpuConfig | None = None) -> "CpuModel":
        """Everything except the selection model (seconds)."""
        places = known_places(queries)
        aliases = learn_aliases(nls, queries, places=places)
        return cls(
            train_nls=list(nls),
            train_queries=list(queries),
            neighbours=CharTfidfNeighbours(list(nls)),
            lexicon=TagLexicon.fit(nls, queries),
            aliases=aliases,
            config=config or CpuConfig(),
            places=places,
            faith_aliases=place_aliases(nls, queries, aliases),
            frame_neighbours=FrameNeighbours(list(queries), tag_names, query_shape),
        )

    def place_spellings(self) -> dict:
        """:attr:`faith_aliases`, learned from the model's own training pairs when it was made without them."""
        if self.faith_aliases is None:
            self.faith_aliases = place_aliases(self.train_nls, self.train_queries, self.aliases)
        return self.faith_aliases

    # -- inference ------------------------------------------------------------
    def _tag_hints(self) -> TagHints:
        if self.hints is None:
            raise ModelMissingError(f"this CPU model was trained with the tag index; load it with "
                                    f"CpuModel.load() or attach app.cpu.hints.TagHints ({INDEX_HINT})")
        return self.hints

    def knowledge(self, places: dict | None = None) -> Knowledge:
        """What the model knows beyond the cue tables, for ``geoql.nl.read_request``: the place names of
        its training queries (``places``: another set's, in training), and with the index its tag names
        (a request's opening word is no place when it names a tag: "公园的长椅", park benches)."""
        return Knowledge(things=self.hints.retriever.names if self.hints is not None else None,
                         places=(self.places or {}) if places is None else places)

    def read(self, nl: str) -> Request:
        """``nl`` read with what the model knows (:meth:`knowledge`): the request ``compile`` takes."""
        return read_request(nl, self.knowledge())

    def _request(self, request: Request | str) -> Request:
        # Scripts and tests may pass the words: read them once, here.
        return request if isinstance(request, Request) else self.read(request)

    def neighbour_text(self, request: Request | str) -> str:
        """What the nearest training requests are searched by: the request, or, when the attached index
        has a glossary of its language, its English word by word (``TagRetriever.english_text``)."""
        request = self._request(request)
        if self.hints is None:
            return request.nl
        return self.hints.retriever.english_text(request) or request.nl

    def retrieve(self, request: Request | str, config: CpuConfig | None = None) -> Retrieved:
        """The request's nearest training requests and, when the model uses the index, its tag hits."""
        config = config or self.config
        request = self._request(request)
        hits = self._tag_hints().hits(request) if config.tag_hints else None
        return Retrieved(self.neighbours.search(self.neighbour_text(request), config.k), hits)

    def pool(self, request: Request | str, *, exclude=frozenset(), config: CpuConfig | None = None,
             lexicon: TagLexicon | None = None, aliases: dict | None = None, neighbours=None,
             hints: dict | None = None, faith_aliases: dict | None = None, hint_exclude: tuple = ()):
        """The request's view (``app.cpu.request.view``) and its candidate pool (with features).

        ``request`` is read with the model's knowledge (:meth:`read`; in training, with the other folds'
        place names). ``hints`` (training) are the request's tag hints; by default they come from the
        attached index. ``faith_aliases`` (training: the other folds') are the place spellings the
        faithfulness check accepts. ``exclude`` (training requests) are left out of the neighbours,
        ``hint_exclude`` out of any more tag searches (the text an ``around`` request measures from).
        """
        config = config or self.config
        request = self._request(request)
        nl = request.nl
        if hints is None and config.tag_hints:
            hints = self._tag_hints()(request)
        english = self.neighbour_text(request)
        gloss = None
        if english != nl and config.gloss_words:
            gloss = self.hints.retriever.translation(request) or english
        info = view(request, frame=config.frame, gloss=gloss)
        if neighbours is None:
            neighbours = self.neighbours.search(english, config.k, exclude)
        lex = lexicon or self.lexicon
        al = self.aliases if aliases is None else aliases
        place = al.get(info.area, info.area) if info.area else None
        shape = request_shape(info, request, place)
        frame_k = config.frame_k
        if frame_k and self.frame_neighbours is not None and hints:
            seen = set(exclude) | {nb.index for nb in neighbours}
            frame_picks = [i for i, _ in self.frame_neighbours.search(hints, shape.where, shape.count, frame_k, seen)]
        else:
            frame_picks = []
        example_k = config.example_k
        # The index's sentence embedding (all-MiniLM-L6-v2) reads English: a request it sees in Hangul (Korean in an
        # index built without its glossary) meets the same few training requests whatever it asks (measured: ko OQS -1.0).
        readable = self.hints is not None and main_script(english) in ("Latin", "Common")
        if example_k and readable:
            seen = set(exclude) | set(hint_exclude) | {nb.index for nb in neighbours} | set(frame_picks)
            # The index's requests are the split's; a model trained on some of them (a quick model, a test's) uses those only.
            example_picks = [ex.index for ex in self.hints.retriever.examples.search(english, example_k, tuple(seen))
                             if self._indexed(ex.index)]
        else:
            example_picks = []
        # The multilingual embedding reads the request as written, in any script: no glossary in between.
        multilingual = self.hints.retriever.multilingual if self.hints is not None else None
        e5_k = config.e5_k
        e5_vector = multilingual.vector(nl) if multilingual is not None and e5_k else None
        if e5_vector is not None:
            seen = set(exclude) | set(hint_exclude) | {nb.index for nb in neighbours} | set(frame_picks) | set(example_picks)
            e5_picks = [i for i, _ in multilingual.search(e5_vector, e5_k, tuple(seen)) if self._indexed(i)]
        else:
            e5_picks = []
        # One TF-IDF product for every kind of extra neighbour.
        extra = frame_picks + example_picks + e5_picks
        sims = dict(zip(extra, similarities(self.neighbours, english, extra)))
        neighbours = (list(neighbours) + [Neighbour(i, sims[i], frame=True) for i in frame_picks]
                      + [Neighbour(i, sims[i], example=True) for i in example_picks]
                      + [Neighbour(i, sims[i], e5=True) for i in e5_picks])

        wanted = lex.best_tags(info.stems, limit=8)

        def ctx(example_nl: str) -> EditContext:
            return EditContext(info=info, example_nl=example_nl, lexicon=lex, aliases=al, _wanted=wanted, hints=hints)

        cands = build_pool(info, neighbours, self.train_nls, self.train_queries, ctx, config.edit_options, config.partial,
                           config.fix_place, config.extra_edits)
        if config.compose:
            cands = add_composed(cands, self._composed(info, request, place, hints, wanted, lex, hint_exclude))
        kinds = config.faithful_kinds
        if kinds:
            spellings = self.place_spellings() if faith_aliases is None else faith_aliases
            # A place the English rules miss ("博物馆 in 西安", "in Москве") is still the request's own.
            target = place or (None if info.in_view else request.place)
            cands = guard_pool(request, cands, place=target, aliases=spellings, kinds=kinds)
        dense = e5 = None
        sources = sorted({c.source for c in cands if c.source >= 0})
        if readable:  # how close each candidate's example is in meaning, not in letters
            dense = dict(zip(sources, self.hints.retriever.examples.cosines(english, sources)))
        if e5_vector is not None:
            e5 = dict(zip(sources, multilingual.cosines(e5_vector, sources)))
        return info, cands, pool_features(info, cands, lex, place, hints, shape=shape.where,
                                          latin=request.script in ("Latin", "Common"), dense=dense, e5=e5)

    def _indexed(self, index: int) -> bool:
        """Whether the index's training request ``index`` is this model's too (a quick model, a test's, has fewer):
        only then may a search of the index offer it as a neighbour."""
        return index < len(self.train_nls) and self.train_nls[index] == self.hints.retriever.examples.nl_of(index)

    def _composed(self, info, request: Request, place, hints, wanted, lex, hint_exclude) -> list[str]:
        """The request's own query (``app.cpu.compose``): main tags from the hints and the lexicon."""
        hinted = sorted((hints or {}).items(), key=lambda kv: (-kv[1], kv[0]))
        main = [(t, p) for t, p in hinted if lex.main_share(t.split("=", 1)[0]) >= MAIN_SHARE]
        learned = [(t, p) for t, p in wanted if p >= 0.3 and lex.main_share(t.split("=", 1)[0]) >= MAIN_SHARE]
        what: list[tuple[str, float]] = []
        for pair in [*main[:1], *learned[:1], *main[1:], *learned[1:]]:
            if pair[0] not in {t for t, _ in what}:
                what.append(pair)
        qualifiers = [(t, p) for t, p in hinted if lex.main_share(t.split("=", 1)[0]) < MAIN_SHARE]
        of = []
        around = request.around
        if around is not None and around.of and self.hints is not None:
            of_hints = self.hints(around.of_request, exclude=hint_exclude)
            of = sorted(((t, p) for t, p in of_hints.items() if lex.main_share(t.split("=", 1)[0]) >= MAIN_SHARE),
                        key=lambda kv: (-kv[1], kv[0]))
            if not of:
                of = lex.best_tags(around.of_request.stems, limit=1)
        return compose(info, request, place=place, what=what, of=of, qualifiers=qualifiers)

    def rank(self, cands: list[Candidate], features: np.ndarray, config: CpuConfig | None = None) -> list[int]:
        """Candidate indices, best first (deterministic: ties keep neighbour order)."""
        config = config or self.config
        if not cands:
            return []
        if config.select and self.selector is not None:
            names = tuple(self.feature_names)
            own = features if names == FEATURE_NAMES else features[:, [FEATURE_NAMES.index(n) for n in names]]
            scores = self.selector.predict(own)  # a TreeEnsemble: numpy, no OpenMP threads to start
        else:
            # Nearest neighbour; its edited version first when edits are on.
            scores = np.array([-c.rank + (0.5 if c.edits else 0.0) for c in cands])
        scores = np.asarray(scores, dtype=np.float64)
        if config.edit_options.output:
            # "How many ...": a listing is never the answer while a counting candidate exists.
            req, counts = features[:, _REQUEST_COUNT], features[:, _QUERY_COUNT]
            if req.size and req[0] > 0 and (counts > 0).any():
                scores = np.where(counts > 0, scores, -np.inf)
        return sorted(range(len(cands)), key=lambda i: (-float(scores[i]), cands[i].rank, len(cands[i].edits) == 0, i))

    def compile(self, request: Request | str, n: int = 1, config: CpuConfig | None = None,
                retrieved: Retrieved | None = None) -> list[str]:
        """The best ``n`` queries for a request (at least one, always parseable).

        ``request``: as :meth:`read` reads it (words are read here). ``retrieved``: what :meth:`retrieve`
        found for it with ``config`` (searched here when not given).
        """
        config = config or self.config
        request = self._request(request)
        found = retrieved if retrieved is not None else self.retrieve(request, config)
        _, cands, feats = self.pool(request, config=config, neighbours=found.neighbours, hints=found.hints)
        order = self.rank(cands, feats, config)
        return self.pick(request, [cands[i].query for i in order], n, config, found) or [FALLBACK_QUERY]

    def pick(self, request: Request, ranked: list[str], n: int, config: CpuConfig, found: Retrieved) -> list[str]:
        """The best ``n`` of ``ranked`` (best first): never one with a constant the request does not give
        (``faithful``), and the best-ranked with no part the request does not license (``licensed``:
        ``geoql.eval.license``, with the tag evidence this model answers from, its hits and its lexicon),
        as it is or with those parts taken out (``faithful.unlicense``), before any with one. Tag filters
        weigh only in a request in :data:`TAG_LICENCE_LANGUAGES`."""
        kinds, licence = config.faithful_kinds, config.licensed_kinds
        if request.language not in TAG_LICENCE_LANGUAGES:
            licence = tuple(k for k in licence if k != "tag")
        spellings = self.place_spellings()
        evidence = TagEvidence.of(request, hits=found.hits or (), word_tags=self.lexicon.word_tag) if licence else None

        def unlicensed(query: str) -> list:
            return [p for p in unlicensed_parts(request, query, aliases=spellings, evidence=evidence) if p.kind in licence]

        clean: list[str] = []
        rest: list[str] = []
        for query in ranked:
            # The last word, whatever the ranking: no answer with a constant the request does not give.
            if kinds and not supported(request, query, spellings, kinds):
                continue
            parts = unlicensed(query) if licence else []
            if parts:
                fixed = unlicense(query, parts)
                if fixed is None or unlicensed(fixed):
                    if len(rest) < n:
                        rest.append(query)
                    continue
                query = fixed
            if query not in clean:
                clean.append(query)
            if len(clean) == n:
                break
        return (clean + rest)[:n]

    # -- persistence ----------------------------------------------------------
    def save(self, model_dir: Path) -> Path:
        """Write the model as data into ``model_dir``, atomically: the whole directory is built beside it and
        swapped in, so a failed save leaves the previous model as it was (and no ``model.pkl`` of an older GeoQL)."""
        model_dir = Path(model_dir)
        check_model_dir(model_dir)

        def write(staging: Path) -> None:
            write_atomic(staging / MODEL_JSON, json.dumps(self._data(), ensure_ascii=False, separators=(",", ":")))
            _write_npz(staging / NEIGHBOURS_NPZ, self.neighbours.to_arrays())
            if self.selector is not None:
                if not isinstance(self.selector, TreeEnsemble):
                    raise TypeError(f"a {type(self.selector).__name__} selector cannot be saved: convert it with "
                                    "TreeEnsemble.from_sklearn")
                _write_npz(staging / SELECTOR_NPZ, self.selector.to_arrays())
            manifest = {**self.manifest(), "files": checksums.digest_folder(staging, skip=(MANIFEST,))}
            write_atomic(staging / MANIFEST, json.dumps(checksums.seal(manifest), indent=2, ensure_ascii=False) + "\n")

        atomic_dir(model_dir, write)
        checksums.remember(model_dir, [n for n in (MODEL_JSON, NEIGHBOURS_NPZ, SELECTOR_NPZ) if (model_dir / n).is_file()])
        return model_dir

    def _data(self) -> dict:
        """Everything of the model that is no array and no setting (``model.json``)."""
        return {
            "train_nls": self.train_nls, "train_queries": self.train_queries, "aliases": self.aliases,
            "places": self.places, "index_fingerprint": self.index_fingerprint,
            "faith_aliases": {k: sorted(v) for k, v in self.place_spellings().items()},
            "lexicon": asdict(self.lexicon),
            "frame_neighbours": self.frame_neighbours.to_json() if self.frame_neighbours is not None else None,
        }

    def manifest(self) -> dict:
        return {
            "format_version": FORMAT_VERSION,
            "feature_names": list(self.feature_names),
            "config": asdict(self.config),
            "train_size": len(self.train_nls),
            "selector": type(self.selector).__name__ if self.selector is not None else None,
            "tag_index": self.index_fingerprint or None,
            "stats": self.stats,
        }

    @classmethod
    def load(cls, model_dir: Path | None = None, index_dir=None) -> "CpuModel":
        """The model in ``model_dir``, with the tag index attached when it was trained with one.

        Raises :class:`ModelMissingError`, naming the command that fixes it, when the model
        (or the index it needs) is missing, damaged or made by another version.
        """
        model = cls._read(model_dir)
        if model.config.tag_hints:
            try:
                model.hints = TagHints.load(index_dir)
            except (IndexMissingError, ImportError) as exc:  # ImportError: installed without the `index` extra
                raise ModelMissingError(f"the CPU model was trained with the tag index, which is not usable: {exc}; "
                                        f"or retrain without it: {RETRAIN_WITHOUT_INDEX}") from None
            if model.hints.fingerprint != model.index_fingerprint:
                warnings.warn(f"the tag index ({model.hints.fingerprint}) is not the one the CPU model was trained with "
                              f"({model.index_fingerprint}); retrain with `{TRAIN_COMMAND}` for its best choices",
                              stacklevel=2)
        return model

    @classmethod
    def _read(cls, model_dir: Path | None = None) -> "CpuModel":
        """The saved model without its index, every file checked against the manifest's SHA-256 first."""
        model_dir = Path(model_dir) if model_dir else default_model_dir()
        command = TRAIN_COMMAND + (f" --out {model_dir}" if model_dir != default_model_dir() else "")
        hint = f"run `{command}`"
        manifest_path = model_dir / MANIFEST
        if not manifest_path.is_file():
            if (model_dir / OLD_PICKLE).is_file():
                raise ModelMissingError(_pickle_refused(model_dir, hint))
            raise ModelMissingError(f"no trained CPU model in {model_dir}: {hint}")
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ModelMissingError(f"unreadable {manifest_path} ({exc}): {hint}") from None
        if not isinstance(manifest, dict) or manifest.get("format_version") != FORMAT_VERSION:
            if isinstance(manifest, dict) and manifest.get("format_version") == 1:
                raise ModelMissingError(_pickle_refused(model_dir, hint))
            raise ModelMissingError(f"the CPU model in {model_dir} was made by another GeoQL version: {hint}")
        files = manifest.get("files")
        if not checksums.is_sealed(manifest) or not isinstance(files, dict) or MODEL_JSON not in files:
            raise ModelMissingError(f"{manifest_path} does not match its own checksum (damaged or edited): {hint}")
        bad = checksums.mismatches(model_dir, files)
        if bad:
            raise ModelMissingError(f"the CPU model in {model_dir} does not match its manifest ({', '.join(bad)}: damaged "
                                    f"or changed since it was saved): {hint}")
        # Columns go by name (rank()): a model whose selector reads some of today's features still works.
        names = manifest.get("feature_names")
        if not isinstance(names, list) or not set(names) <= set(FEATURE_NAMES):
            raise ModelMissingError(f"the CPU model in {model_dir} reads features this GeoQL does not compute: {hint}")
        try:
            model = cls._from_files(model_dir, manifest)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:  # a consistent but foreign writer
            raise ModelMissingError(f"could not read the CPU model in {model_dir} ({type(exc).__name__}: {exc}): {hint}") from None
        if "example_pick" not in names:
            # Trained before the example search offered neighbours: its selector never saw such candidates.
            model.config = replace(model.config, example_k=0)
        if "e5_pick" not in names:  # likewise before the multilingual picks
            model.config = replace(model.config, e5_k=0)
        return model

    @classmethod
    def _from_files(cls, model_dir: Path, manifest: dict) -> "CpuModel":
        data = json.loads((model_dir / MODEL_JSON).read_text(encoding="utf-8"))
        with np.load(model_dir / NEIGHBOURS_NPZ, allow_pickle=False) as arrays:
            neighbours = CharTfidfNeighbours.from_arrays(arrays)
        selector = None
        if manifest["selector"] is not None:
            with np.load(model_dir / SELECTOR_NPZ, allow_pickle=False) as arrays:
                selector = TreeEnsemble.from_arrays(arrays)
            if selector.n_features_in_ != len(manifest["feature_names"]):
                raise ValueError(f"the selector reads {selector.n_features_in_} features, the manifest names "
                                 f"{len(manifest['feature_names'])}")
        nls, queries = [str(t) for t in data["train_nls"]], [str(t) for t in data["train_queries"]]
        if not (len(nls) == len(queries) == neighbours.size):
            raise ValueError("the training pairs and the neighbours' matrix differ in size")
        frames = data["frame_neighbours"]
        return cls(
            train_nls=nls, train_queries=queries, neighbours=neighbours, lexicon=TagLexicon(**data["lexicon"]),
            aliases=dict(data["aliases"]), selector=selector, feature_names=tuple(manifest["feature_names"]),
            config=CpuConfig(**manifest["config"]), stats=dict(manifest.get("stats") or {}), places=dict(data["places"]),
            index_fingerprint=str(data["index_fingerprint"] or ""),
            faith_aliases={k: set(v) for k, v in data["faith_aliases"].items()},
            frame_neighbours=FrameNeighbours.from_json(frames) if frames is not None else None,
        )


def _pickle_refused(model_dir: Path, hint: str) -> str:
    return (f"the CPU model in {model_dir} was saved by an older GeoQL as a pickle ({OLD_PICKLE}), which GeoQL no "
            f"longer loads: loading a pickle runs whatever code it holds. {hint[0].upper()}{hint[1:]} to make it again "
            "(the demo and `geoql compile` do so by themselves, in seconds where the selector GeoQL ships fits)")


def _write_npz(path: Path, arrays: dict) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    write_atomic(path, buffer.getvalue())
