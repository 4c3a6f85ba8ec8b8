"""How sure a compilation is, in numbers a person can act on.

:func:`assess` reads what ``compile()`` already has (the query, the tag hits, the
nearest training requests, ``Compilation.unlicensed``) and adds:

* ``uncovered``: the request's content words that no part of the query accounts for
  (no tag key or value, place, name, number or construct of the query, no tag hit the
  query uses, no word the CPU default's lexicon ties to one of the query's tags);
* ``nearest`` / ``far``: the similarity of the nearest training request (the CPU
  default's character n-gram TF-IDF cosine) and whether it is below the threshold
  chosen on dev;
* ``off_topic``: the request does not look like one about places at all (no place, no
  word of OSM data, no tag hit with evidence in the request and no strong lexicon word:
  :func:`is_off_topic`);
* ``confidence``: for the CPU default, the expected OQS of the answer (0..1) from a
  logistic model over these signals, fitted on half of OverpassNL dev and checked on
  the other half (``scripts/confidence_table.py``; the fit, its data and its
  thresholds are stored in ``confidence_cpu.json`` next to this module, or in a
  ``confidence.json`` in the CPU model's folder, which takes precedence). For a
  language-model backend sampling ``n > 1`` candidates it is the minimum-Bayes-risk
  agreement of the chosen one (expected OQS against the other samples; not
  calibrated), and ``None`` for a single greedy answer.

Nothing here reads the CPU model's insides nor the request's words: the signals are the
ones ``compile()`` returns (the backend's ``Generation`` and its ``Evidence``), and the request
is the one ``compile()`` read (``geoql.nl.Request``: its content words, topic words, language
and what its reading found), so a retrained selector keeps its calibration meaning.

>>> from geoql.nl import read_request
>>> uncovered_words(read_request("benches within 100 m of a playground in Zurich"),
...     '{{geocodeArea:"Zurich"}}->.a;nwr["leisure"="playground"](area.a);out;')
['benches', '100']
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import overpassql

from geoql.core.errors import ConfigError
from geoql.core.files import write_atomic
from geoql.eval.faithfulness import Constant, query_constants
from geoql.eval.license import CORE_KINDS, Part
from geoql.nl.request import Request
from geoql.nl.text import fold, number as read_number, plain_number
from geoql.nl.words import WORD, alike, content_words, cue_words, stem

CALIBRATOR_FILE = "confidence_cpu.json"  # packaged with this module
MODEL_CALIBRATOR_FILE = "confidence.json"  # optional, in a CPU model's folder
WORDS_FILE = "confidence_words.json"
CALIBRATOR_VERSION = 1
NO_OUTPUT_WARNING = ("the query has no output statement, so it returns nothing when run: "
                     "end it with 'out;' (or 'out count;' for a count)")

# A query's words: as a request's (geoql.nl.words.WORD), numbers whole, letters apart from digits.
_WORD = WORD
_TAG = re.compile(r'\[\s*!?\s*"?([^"\]=!~]+?)"?\s*(?:(=|!=|~|!~)\s*"?([^"\]]*?)"?)?\s*(?:,\s*i)?\s*\]')
# Which constructs a query has: the words of ``constructs`` in confidence_words.json it covers.
_CONSTRUCTS = {
    "around": re.compile(r"\baround\b"),
    "count": re.compile(r"\bcount\b"),
    "view": re.compile(r"bbox|\(\s*-?\d+(?:\.\d+)?\s*,\s*-?\d+(?:\.\d+)?\s*,\s*-?\d+(?:\.\d+)?\s*,"),
    "area": re.compile(r"\barea\b|geocodeArea|nominatimArea|\bpivot\b|\bis_in\b"),
    "node": re.compile(r"\b(?:node|nwr|nw|nr)\b"),
    "way": re.compile(r"\b(?:way|nwr|nw|wr)\b"),
    "relation": re.compile(r"\b(?:relation|rel|nwr|nr|wr)\b"),
    "time": re.compile(r"\bnewer\b|\bchanged\b|\{\{\s*date|\bdate\s*:"),
    "user": re.compile(r"\buser\b|\buid\b|user_touched"),
    "meta": re.compile(r"\bmeta\b|\battribs\b"),
    "geom": re.compile(r"\bgeom\b|\bbb\b"),
    "center": re.compile(r"\bcenter\b"),
    "csv": re.compile(r"out\s*:\s*csv"),
    "name": re.compile(r"\bname\b"),
    "skel": re.compile(r"\bskel\b|\bids\b"),
    "negation": re.compile(r"!=|!~|\[\s*!"),
    "ids": re.compile(r"\(\s*(?:id\s*:\s*)?\d{3,}|\bref\b"),
}
# A lexicon entry P(tag | word) at least this high ties the word to the tag.
LEXICON_TIE = 0.2
# An answer with a part its request does not license (``Compilation.unlicensed``) is trusted no more than
# such answers scored: the CPU default's answers on OverpassNL dev before its pick preferred licensed
# candidates (main 2e0f134, 1,000 requests) averaged OQS 0.545 with one (208 answers), 0.708 without (792).
# Below the warning threshold, so the low-confidence warning fires too; the same cap for a language model's
# agreement. The calibrator alone cannot learn it: the CPU default now rarely returns such a part.
UNLICENSED_CAP = 0.55


# ------------------------------------------------------------------ words

@lru_cache(maxsize=256)
def _constants(query: str) -> tuple[Constant, ...]:
    return tuple(query_constants(query))


@lru_cache(maxsize=1)
def _words_table() -> dict:
    return json.loads(resources.files("geoql.app").joinpath(WORDS_FILE).read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _construct_words() -> dict[str, frozenset[str]]:
    own = {name: frozenset(fold(w) for w in words) for name, words in _words_table()["constructs"].items()}
    cues = cue_words()
    return {name: own.get(name, frozenset()) | cues.get(name, frozenset()) for name in set(own) | set(cues) - {"stop"}}


def _number(text: str) -> bool:
    return text[:1].isdigit()


def query_tags(query: str) -> set[str]:
    """``key=value`` of a query's equality filters and every filtered ``key``.

    >>> sorted(query_tags('node["amenity"="cafe"]["wifi"](area.a);way[!"name"];'))
    ['amenity', 'amenity=cafe', 'name', 'wifi']
    """
    out = set()
    for key, op, value in _TAG.findall(query or ""):
        key = key.strip()
        if not key or (not op and key.startswith(("out:", "timeout", "maxsize", "bbox", "date", "diff", "adiff"))):
            continue
        out.add(key)
        if op == "=" and value:
            out.add(f"{key}={value}")
    return out


def _tokens(text: str) -> set[str]:
    return set(_WORD.findall(fold(text)))


def _hit_fields(hit: Any) -> tuple[str, str, str, str, float]:
    """(tag, key, name, why, score) of a ``TagHit`` or its ``as_dict`` form."""
    get = hit.get if isinstance(hit, Mapping) else (lambda name, default=None: getattr(hit, name, default))
    return (str(get("tag", "") or ""), str(get("key", "") or ""), str(get("name", "") or ""),
            str(get("why", "") or ""), float(get("score", 0.0) or 0.0))


def _hit_in_query(tag: str, key: str, tags: set[str]) -> bool:
    return tag in tags or (tag.endswith("=*") and key in tags)


def coverage_tokens(query: str, *, hits: Iterable[Any] = (), aliases: Mapping[str, Iterable[str]] | None = None
                    ) -> tuple[set[str], set[str]]:
    """(tokens, construct words): what the query's text, the names of the hits it uses and the
    other spellings of its places put in words."""
    tokens = _tokens(query)
    tags = query_tags(query)
    for hit in hits:
        tag, key, name, why, _ = _hit_fields(hit)
        if _hit_in_query(tag, key, tags):
            tokens |= _tokens(name)
            # A preset's own name or term explains the word; "similar request: ..." explains nothing.
            if why and "request" not in why:
                tokens |= _tokens(why.split(":", 1)[-1])
    if aliases:
        for c in _constants(query):
            if c.kind == "place":
                for spelling in aliases.get(c.value, ()):
                    tokens |= _tokens(spelling)
    constructs = _construct_words()
    covered = set()
    for name, pattern in _CONSTRUCTS.items():
        if pattern.search(query or ""):
            covered |= constructs.get(name, frozenset())
    return tokens, covered


def uncovered_words(request: Request, query: str, *, hits: Iterable[Any] = (),
                    word_tags: Mapping[str, Mapping[str, float]] | None = None,
                    aliases: Mapping[str, Iterable[str]] | None = None) -> list[str]:
    """The request's content words (``Request.words``) that no part of ``query`` covers (see the
    module's docstring).

    ``word_tags``: word -> tag -> P(tag | word), the words the backend ties to tags (the CPU
    default's lexicon: ``Evidence.word_tags``).
    """
    if not query:
        return list(request.words)
    tokens, constructs = coverage_tokens(query, hits=hits, aliases=aliases)
    tags = query_tags(query)
    word_tag = word_tags or {}
    numbers = {t for t in tokens if _number(t)}
    out = []
    for w in request.words:
        if w in constructs or w in tokens:
            continue
        if _number(w):
            # "1 km" is a radius of 1000
            if _km(w) in numbers or any(alike(w, t) for t in numbers):
                continue
            out.append(w)
            continue
        if any(alike(w, t) for t in tokens if not _number(t)):
            continue
        tied = {**word_tag.get(w, {}), **word_tag.get(stem(w), {})}
        if any(p >= LEXICON_TIE and t in tags for t, p in tied.items()):
            continue
        out.append(w)
    return out


def _km(text: str) -> str:
    return plain_number(read_number(text) * 1000)


def lexicon_strength(request: Request, word_tags: Mapping[str, Mapping[str, float]] | None) -> float:
    """The strongest tie ``P(tag | word)`` of a content word (not a number) of the request in ``word_tags``."""
    word_tag = word_tags or {}
    return max((max((word_tag.get(w) or word_tag.get(stem(w)) or {"": 0.0}).values())
                for w in request.words if not _number(w)), default=0.0)


# ------------------------------------------------------------------ signals

FEATURES = ("nearest", "nearest_mean", "agreement", "hit_used", "hit_unused", "hit_max", "unlicensed_core",
            "unlicensed_other", "uncovered", "uncovered_share", "words", "query_length", "place")
# Without a tag index (a CPU model trained with --tag-hints off) the hit signals do not exist.
HIT_FEATURES = ("hit_used", "hit_unused", "hit_max")


def _example_fields(ex: Any) -> tuple[str, float]:
    if isinstance(ex, Mapping):
        return str(ex.get("query", "") or ""), float(ex.get("score", 0.0) or 0.0)
    return str(getattr(ex, "query", "") or ""), float(getattr(ex, "score", 0.0) or 0.0)


def _kind(part: Any) -> str | None:
    """A part's kind, of a ``Part`` or its ``as_dict`` form (a JSONL row)."""
    return part.get("kind") if isinstance(part, Mapping) else getattr(part, "kind", None)


def unlicensed_warning(unlicensed: Sequence[Any]) -> str:
    """The doubt sentence for the parts of a query nothing in its request licenses.

    >>> unlicensed_warning([Part("setting", "[timeout:8000]", "..."), Part("set", ".paris", "...")])
    'the query has parts your request does not ask for: [timeout:8000], .paris; check them before relying on it'
    """
    texts = [p.get("text") if isinstance(p, Mapping) else getattr(p, "text", str(p)) for p in unlicensed]
    shown = ", ".join(texts[:5]) + (f" and {len(texts) - 5} more" if len(texts) > 5 else "")
    return f"the query has parts your request does not ask for: {shown}; check them before relying on it"


def signals(request: Request, query: str, *, hits: Sequence[Any] = (), examples: Sequence[Any] = (),
            unlicensed: Sequence[Part] = (), uncovered: Sequence[str] = ()) -> dict[str, float]:
    """The numbers the confidence is computed from (all cheap: no model is asked again)."""
    tags = {t for t in query_tags(query) if "=" in t}
    sims = [s for _, s in map(_example_fields, examples)]
    # How much of the neighbours' similarity mass asks for the chosen query's tags.
    weight = agree = 0.0
    for ex_query, sim in map(_example_fields, examples[:10]):
        ex_tags = {t for t in query_tags(ex_query) if "=" in t}
        union = tags | ex_tags
        agree += sim * (len(tags & ex_tags) / len(union) if union else 1.0)
        weight += sim
    used = unused = top = 0.0
    for hit in hits:
        tag, key, _, _, score = _hit_fields(hit)
        if tag.endswith("=*"):
            continue
        top = max(top, score)
        if _hit_in_query(tag, key, tags):
            used = max(used, score)
        else:
            unused = max(unused, score)
    kinds = [_kind(p) for p in unlicensed]
    words = request.words
    # The query names a place, and the request licenses its areas.
    place = "area" not in kinds and any(c.kind == "place" for c in _constants(query)) if query else False
    return {
        "nearest": sims[0] if sims else 0.0,
        "nearest_mean": sum(sims[:5]) / len(sims[:5]) if sims else 0.0,
        "agreement": agree / weight if weight else 0.0,
        "hit_used": used,
        "hit_unused": unused,
        "hit_max": top,
        "unlicensed_core": float(min(3, sum(k in CORE_KINDS for k in kinds))),
        "unlicensed_other": float(min(3, sum(k not in CORE_KINDS for k in kinds))),
        "uncovered": float(min(5, len(uncovered))),
        "uncovered_share": len(uncovered) / len(words) if words else 1.0,
        "words": float(min(15, len(words))),
        "query_length": math.log1p(len(query or "")),
        "place": float(place),
    }


# ------------------------------------------------------------------ the calibrator

@dataclass
class Calibrator:
    """A logistic model ``P = sigmoid(b + sum w_i (x_i - mean_i) / scale_i)`` read as the expected OQS,
    one per setting (``hits``: the model uses the tag index; ``nohits``: it does not), plus the
    thresholds chosen on dev and where they came from."""

    models: dict[str, dict] = field(default_factory=dict)  # setting -> {features, mean, scale, weights, bias}
    warn_below: float = 0.0  # confidence under which compile() warns
    far_below: float = 0.0  # nearest-training-request similarity under which a request is "far"
    off_topic_hit: float = 0.0  # best tag hit under which (and no place, no known word) a request is off topic
    off_topic_lexicon: float = 0.0  # strongest lexicon tie under which (and ...) a request is off topic
    provenance: dict = field(default_factory=dict)

    def predict(self, values: Mapping[str, float], setting: str) -> float | None:
        model = self.models.get(setting) or self.models.get("nohits")
        if not model:
            return None
        z = float(model["bias"])
        for name, mean, scale, weight in zip(model["features"], model["mean"], model["scale"], model["weights"]):
            z += weight * (float(values.get(name, 0.0)) - mean) / (scale or 1.0)
        return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))

    def to_json(self) -> dict:
        return {"version": CALIBRATOR_VERSION, "models": self.models, "warn_below": self.warn_below,
                "far_below": self.far_below, "off_topic_hit": self.off_topic_hit,
                "off_topic_lexicon": self.off_topic_lexicon, "provenance": self.provenance}

    @classmethod
    def from_json(cls, data: Mapping) -> "Calibrator":
        if data.get("version") != CALIBRATOR_VERSION:
            raise ConfigError(f"confidence calibrator version {data.get('version')!r} is not {CALIBRATOR_VERSION}: "
                              "refit it with scripts/confidence_table.py --write")
        return cls(models=dict(data["models"]), warn_below=float(data["warn_below"]),
                   far_below=float(data["far_below"]), off_topic_hit=float(data["off_topic_hit"]),
                   off_topic_lexicon=float(data.get("off_topic_lexicon", 0.0)),
                   provenance=dict(data.get("provenance", {})))

    def save(self, path: Path) -> Path:
        write_atomic(Path(path), (json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n").encode())
        return Path(path)


def packaged_calibrator_path() -> Path:
    return Path(str(resources.files("geoql.app").joinpath(CALIBRATOR_FILE)))


@lru_cache(maxsize=8)
def _read_calibrator(path: str, mtime_ns: int) -> Calibrator:
    return Calibrator.from_json(json.loads(Path(path).read_text(encoding="utf-8")))


def load_calibrator(model_dir: str | Path | None = None) -> Calibrator:
    """The CPU model folder's ``confidence.json`` when there is one, else the packaged fit.

    An unreadable file gives an empty calibrator (no confidence) rather than an error:
    the query itself does not depend on it.
    """
    candidates = [Path(model_dir) / MODEL_CALIBRATOR_FILE] if model_dir else []
    candidates.append(packaged_calibrator_path())
    for path in candidates:
        try:
            return _read_calibrator(str(path), path.stat().st_mtime_ns)
        except (OSError, ValueError, KeyError, TypeError, ConfigError):
            continue
    return Calibrator()


# ------------------------------------------------------------------ assessing a compilation

@dataclass
class Assessment:
    """What :func:`assess` found (copied onto the ``Compilation``)."""

    confidence: float | None
    uncovered: list[str]
    nearest: float | None
    far: bool | None
    off_topic: bool
    low_confidence: bool
    no_output: bool
    signals: dict[str, float]
    warnings: list[str]


def grounded_hit(request: Request, hits: Iterable[Any]) -> float:
    """The best score of a controlled tag hit with evidence in the request: a hit found only
    through a similar training request counts when that request shares a word with this one
    ("hello" finds ``type=route`` through "Highways and routes ..." by embedding alone)."""
    words = request.words
    best = 0.0
    for hit in hits:
        tag, _, _, why, score = _hit_fields(hit)
        if tag.endswith("=*") or score <= best:
            continue
        if "similar request" in why:
            other = content_words(why.split(":", 1)[-1])  # the training request's words
            if not any(alike(w, o) for w in words for o in other):
                continue
        best = score
    return best


def topic_evidence(request: Request, values: Mapping[str, float], hits: Sequence[Any] = (),
                   word_tags: Mapping[str, Mapping[str, float]] | None = None) -> tuple[bool, float, float]:
    """(plainly about places or not to be judged, best grounded tag hit, strongest lexicon tie).

    Plainly about places: a place the query names and the request supports, a word of OSM
    data (``Request.topic_words``), or what the request's reading found (``Request.about_places``:
    a place, the map view, a radius, ids, element types, users, names). A request not in English
    is never judged: its tag hits come through English names and training requests and are as
    low for a real German request as for a greeting (OsmNL dev: 1-5 % of real requests per
    language flagged), so only the low confidence speaks for it.
    """
    if values.get("place", 0.0) > 0 or request.topic_words:
        return True, 0.0, 0.0
    if request.language != "en" or request.about_places:
        return True, 0.0, 0.0
    return False, grounded_hit(request, hits), lexicon_strength(request, word_tags) if word_tags is not None else 0.0


def is_off_topic(request: Request, values: Mapping[str, float], word_tags: Mapping[str, Mapping[str, float]] | None,
                 calibrator: Calibrator, *, hits: Sequence[Any] = ()) -> bool:
    """Not a request about places: no letters or digits at all, or, in English, nothing
    plainly about places (:func:`topic_evidence`), no tag hit with evidence in the request
    at ``off_topic_hit`` or above and no word the lexicon ties to a tag at
    ``off_topic_lexicon`` or above (thresholds chosen on dev). Without hits and lexicon
    there is nothing to judge by: never off topic then."""
    if not any(ch.isalnum() for ch in request.nl):
        return True
    plain, hit, tie = topic_evidence(request, values, hits, word_tags)
    if plain or not (hits or word_tags is not None):
        return False
    return hit < calibrator.off_topic_hit and tie < calibrator.off_topic_lexicon


def mbr_agreement(candidates: Sequence[Any], chosen_query: str) -> float | None:
    """The chosen candidate's MBR score among ``n > 1`` samples (1.0 when they all agree), else None."""
    if sum(getattr(c, "count", 1) for c in candidates) <= 1:
        return None
    for c in candidates:
        if c.query == chosen_query:
            return 1.0 if c.score is None else max(0.0, min(1.0, float(c.score)))
    return None


def assess(request: Request, query: str, *, hits: Sequence[Any] = (), examples: Sequence[Any] = (),
           unlicensed: Sequence[Any] = (), candidates: Sequence[Any] = (), calibrated: bool = False,
           word_tags: Mapping[str, Mapping[str, float]] | None = None,
           aliases: Mapping[str, Iterable[str]] | None = None, calibrator: Calibrator | None = None) -> Assessment:
    """Confidence, uncovered words, distance to the training data and topicality of one answer.

    ``request``: as ``compile()`` read it. ``calibrated``: the answer is one the calibrator was
    fitted on (the CPU default's: its ``examples`` are TF-IDF neighbours); otherwise the
    confidence is the samples' agreement (or None). ``word_tags``: the words the backend ties to
    tags (``Evidence.word_tags``). All three come from the backend's ``Generation``. ``unlicensed``: the
    parts of ``query`` nothing in the request licenses (``Compilation.unlicensed``): they cap the
    confidence at :data:`UNLICENSED_CAP` (any backend), and they are a doubt of their own.
    """
    calibrator = calibrator or load_calibrator()
    uncovered = uncovered_words(request, query, hits=hits, word_tags=word_tags, aliases=aliases)
    values = signals(request, query, hits=hits, examples=examples, unlicensed=unlicensed, uncovered=uncovered)
    has_hits = bool(hits)
    cpu = calibrated
    if cpu:
        confidence = calibrator.predict(values, "hits" if has_hits else "nohits")
        nearest = values["nearest"] if examples else None
        far = None if nearest is None or not calibrator.far_below else nearest < calibrator.far_below
    else:
        confidence = mbr_agreement(candidates, query)
        nearest = far = None
    if unlicensed and confidence is not None:
        confidence = min(confidence, UNLICENSED_CAP)
    words = request.words
    off_topic = is_off_topic(request, values, word_tags, calibrator, hits=hits)
    low = bool(cpu and confidence is not None and confidence < calibrator.warn_below)
    warnings = []
    if off_topic:
        warnings.append("this does not look like a request about places or map features: "
                        "the query is a guess; name what to find and where, e.g. 'cafes in Bonn'")
    else:
        if low:
            warnings.append(f"low confidence ({confidence:.2f}): check the query before relying on it")
        if unlicensed:
            warnings.append(unlicensed_warning(unlicensed))
        # Only for English: a query's tags are English, so another language's words never match them.
        if uncovered and len(uncovered) < max(2, len(words)) and request.language == "en":
            warnings.append("not covered by the query: " + ", ".join(uncovered))
        if far:
            warnings.append(f"no training request is close (nearest similarity {nearest:.2f}): the query may be off")
    # Any backend's answer: a language model can end a query before its output statement.
    no_output = bool(query) and not overpassql.has_output(query)
    if no_output:
        warnings.append(NO_OUTPUT_WARNING)
    return Assessment(confidence=None if confidence is None else round(confidence, 4), uncovered=uncovered,
                      nearest=None if nearest is None else round(nearest, 4), far=far, off_topic=off_topic,
                      low_confidence=low, no_output=no_output, signals=values, warnings=warnings)
