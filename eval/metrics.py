"""The official OverpassNL query metrics, reproduced offline.

Definitions (Staniek et al., TACL 2024; the benchmark's evaluation code):

* **EM** — the two queries are equal after setting every ``out:<fmt>`` to
  ``out:json``, every ``timeout:<n>`` to ``timeout:300`` and deleting all
  whitespace.
* **chrF** — sacrebleu chrF with character order 6, no word n-grams, beta 2,
  case-sensitive, whitespace ignored, effective-order averaging (no epsilon
  smoothing), computed on the raw query strings, as a fraction.
* **KVS** — the set of keys, values and (key, value) pairs in the
  ``k``/``regk`` and ``v``/``regv`` attributes of the converter XML; overlap
  divided by the larger set (1.0 when both are empty).
* **TreeS** — the share of reference XML subtrees (every element counts) that
  also occur in the prediction, after dropping the ``into from timeout k v
  regk regv`` attributes.  A reference subtree counts when some predicted
  element has the same tag, the same attributes in the same order and the same
  text, and equal subtrees below it (children compared by tag, attributes and
  shape, not text).
* **OQS** — the mean of chrF, KVS and TreeS.

The XML is what Overpass's converter prints for the query after the
benchmark's placeholder substitution; when that output is not well-formed XML
the official code scores an empty ``<osm-script>`` instead, and so does this
module.  The converter is pluggable (:class:`Scorer`); the default one is
``overpassql.to_xml(overpassql.replace_turbo_vars(query))``.

Everything derived from a query string (n-grams, key/value set, subtree
signatures) is computed once and cached, so scoring a candidate against many
others (MBR decoding, n² calls) costs a few set and dict look-ups per pair.
"""

from __future__ import annotations

import itertools
import re
import threading
import xml.etree.ElementTree as ET
from collections import Counter, OrderedDict
from dataclasses import asdict, dataclass
from typing import Callable, Iterable, Sequence

import overpassql

__all__ = [
    "Scores",
    "Scorer",
    "QueryFeatures",
    "score",
    "score_many",
    "corpus",
    "kvs",
    "tree",
    "chrf",
    "em",
    "oqs",
    "normalize_for_em",
    "default_xml_source",
    "get_scorer",
    "aggregate",
]

# query -> converter XML, or (XML, converter error messages)
XmlSource = Callable[[str], "str | tuple[str, Sequence[str]]"]

# The converter output the official code scores when the real output is not XML.
EMPTY_SCRIPT_XML = '<osm-script output="json" output-config="" timeout="300"></osm-script>'
TREE_IGNORED_ATTRIBUTES = ("into", "from", "timeout", "k", "v", "regk", "regv")
CHAR_ORDER = 6
BETA = 2

_OUT_FORMAT = re.compile(r"out:[a-z]+")
_TIMEOUT = re.compile(r"timeout:\d+")
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Scores:
    """Per-example scores, all fractions in [0, 1] (``em`` is 0.0 or 1.0)."""

    oqs: float
    kvs: float
    tree: float
    chrf: float
    em: float

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class QueryFeatures:
    """What the XML metrics need from one query, computed once per string."""

    xml_ok: bool  # False: the converter output was not XML (empty-script fallback)
    errors: tuple  # the converter's error messages (its stderr), when the source reports them
    kv: frozenset
    subtrees: dict  # subtree signature id -> how many elements have it
    n_elements: int
    epoch: int = 0  # the intern-table generation the ids belong to


def normalize_for_em(query: str) -> str:
    """The exact-match normal form.

    >>> normalize_for_em('[out:xml][timeout:25];\\nnode["a"="b"];out;')
    '[out:json][timeout:300];node["a"="b"];out;'
    """
    query = _OUT_FORMAT.sub("out:json", query)
    query = _TIMEOUT.sub("timeout:300", query)
    return _WHITESPACE.sub("", query)


def same_query_key(query: str) -> str:
    """The key under which two gold queries are "the same query": their exact-match normal form.

    Leave-one-query-out (the tag ranker's fitting, the CPU default's training, the
    training prompts) leaves out every request whose gold has this key. It is the
    metric's notion of the same answer, and the dataset's split follows it: one dev
    gold of 1,000 (none of test) has a training twin under it.

    >>> same_query_key('[out:xml][timeout:25];\\nnode["a"="b"];out;') == same_query_key('[out:json][timeout:9]; node["a"="b"]; out;')
    True
    """
    return normalize_for_em(query)


def default_xml_source(query: str) -> tuple[str, list[str]]:
    """Converter XML of a raw dataset query and the converter's error messages,
    via the ``overpassql`` package."""
    try:
        converter_input = overpassql.replace_turbo_vars(query)
    except Exception:  # the official code also converts the raw query if the step fails
        converter_input = query
    with_errors = getattr(overpassql, "to_xml_with_errors", None)
    try:
        if with_errors is None:
            return overpassql.to_xml(converter_input), []
        text, diagnostics = with_errors(converter_input)
        return text, [str(d) for d in diagnostics]
    except overpassql.ParseError as exc:
        # No partial output to score: same as unparsable converter output.
        return "", [str(e) for e in exc.errors] or [str(exc)]
    except (RecursionError, MemoryError, ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        # A converter bug must not abort a whole evaluation: score the query
        # like unparsable output and say so in the failure analysis.
        return "", [f"converter failed: {type(exc).__name__}: {exc}"]


def _char_ngrams(text: str) -> tuple[frozenset, ...]:
    """Character n-grams of orders 1..6, one set per order.

    A gram's first occurrence is the gram itself, its k-th one ``gram + "\\x00" + str(k)``
    (longer than any order-n gram, so no key of one kind equals one of the other):
    that turns the clipped match count sum(min(h, r)) into the size of a set
    intersection, which runs in C; this is what makes n² chrF calls cheap.
    """
    text = "".join(text.split())
    length = len(text)
    orders = []
    for n in range(1, CHAR_ORDER + 1):
        grams = [text[i : i + n] for i in range(length - n + 1)]
        counts = Counter(grams)
        if len(counts) != len(grams):
            grams = list(counts)
            # str keys, not (gram, k) tuples: tuples are GC-tracked, and the
            # collector's passes over them cost more than building them
            grams += [f"{g}\x00{k}" for g, m in counts.items() if m > 1 for k in range(2, m + 1)]
        orders.append(frozenset(grams))
    return tuple(orders)


def _chrf_from_ngrams(hyp: Sequence[frozenset], ref: Sequence[frozenset]) -> float:
    # sacrebleu's CHRF(6, 0, 2, lowercase=False, whitespace=False,
    # eps_smoothing=False) on a single segment, in the same float operation
    # order so that results agree bit for bit, then /100 as the official code.
    factor = BETA**2
    avg_prec = avg_rec = 0.0
    effective_order = 0
    for h, r in zip(hyp, ref):
        n_hyp = len(h)
        n_ref = len(r)
        if n_hyp > 0 and n_ref > 0:
            n_match = len(h & r)
            avg_prec += n_match / n_hyp
            avg_rec += n_match / n_ref
            effective_order += 1
    if effective_order == 0:
        return 0.0
    avg_prec /= effective_order
    avg_rec /= effective_order
    if not avg_prec + avg_rec:
        return 0.0
    f_score = (1 + factor) * avg_prec * avg_rec
    f_score /= (factor * avg_prec) + avg_rec
    return (100 * f_score) / 100


class _LRU:
    """A small thread-safe LRU map (functools.lru_cache cannot be per-instance and bounded cleanly)."""

    def __init__(self, maxsize: int):
        self.maxsize = maxsize
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key, compute):
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
                return value
        value = compute(key)
        with self._lock:
            self._data[key] = value
            if len(self._data) > self.maxsize:
                self._data.popitem(last=False)
        return value

    def put(self, key, value) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            if len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


class Scorer:
    """Scores queries with a given converter and caches everything per query string.

    ``xml_source(query)`` turns a raw dataset query into the converter's XML,
    or ``(xml, error messages)`` (default: :func:`default_xml_source`).
    ``cache_size`` bounds the number of queries whose XML features are kept
    (about 3 KB each), ``ngram_cache_size`` those whose chrF n-grams are kept
    (about 100 KB each); ``max_interned`` bounds the table that maps subtree
    signatures to ints.
    """

    def __init__(
        self,
        xml_source: XmlSource | None = None,
        cache_size: int = 50_000,
        ngram_cache_size: int = 4096,
        max_interned: int = 5_000_000,
    ):
        if cache_size < 1 or ngram_cache_size < 1:
            raise ValueError("cache_size and ngram_cache_size must be at least 1; pass e.g. cache_size=50_000")
        if max_interned < 1:
            raise ValueError("max_interned must be at least 1; pass e.g. max_interned=1_000_000")
        self.xml_source = xml_source or default_xml_source
        self.max_interned = max_interned
        self._xml_cache = _LRU(cache_size)
        self._ngram_cache = _LRU(ngram_cache_size)
        self._em_cache = _LRU(cache_size)
        # Subtree signatures are interned to ints so that comparing two
        # queries looks up ints, not nested tuples.  Ids come from one counter
        # that is never reset, so ids of different epochs never collide; an
        # epoch ends when the table grows past max_interned (long training
        # runs see endless new queries), and older features are recomputed.
        self._ids = itertools.count()
        self._subtree_ids: dict = {}
        self._epoch = 0
        self._intern_lock = threading.Lock()

    # -- per-query features -------------------------------------------------
    def features(self, query: str) -> QueryFeatures:
        return self._xml_cache.get(_check_query(query), self._compute_features)

    def ngrams(self, query: str) -> tuple[frozenset, ...]:
        return self._ngram_cache.get(_check_query(query), _char_ngrams)

    def _current(self, cache: _LRU, compute, query: str):
        entry = cache.get(_check_query(query), compute)
        if entry.epoch != self._epoch:
            entry = compute(query)
            cache.put(query, entry)
        return entry

    def _new_epoch_if_full(self) -> None:
        # Only called at the start of a comparison, never between computing
        # its two sides, so a single thread always sees one epoch per pair.
        if len(self._subtree_ids) > self.max_interned:
            with self._intern_lock:
                if len(self._subtree_ids) > self.max_interned:
                    self._subtree_ids.clear()
                    self._epoch += 1

    def _em_form(self, query: str) -> str:
        return self._em_cache.get(_check_query(query), normalize_for_em)

    def _compute_features(self, query: str) -> QueryFeatures:
        text = self.xml_source(query)
        errors: tuple = ()
        if isinstance(text, tuple):
            text, errors = text[0], tuple(text[1])
        try:
            root = ET.fromstring(text)
            xml_ok = True
        except ET.ParseError:
            root = ET.fromstring(EMPTY_SCRIPT_XML)
            xml_ok = False
        kv = _key_values(root)
        subtrees: Counter = Counter()
        with self._intern_lock:
            self._collect_subtrees(root, subtrees)
            epoch = self._epoch
        return QueryFeatures(xml_ok, errors, frozenset(kv), dict(subtrees), sum(subtrees.values()), epoch)

    def _collect_subtrees(self, root: ET.Element, out: Counter) -> None:
        """Count the signatures of ``root`` and all its descendants (caller holds the lock).

        Iterative post-order, so that absurdly deep predictions cannot hit the
        recursion limit.
        """
        intern, ids = self._subtree_ids.setdefault, self._ids
        shape_of: dict = {}
        stack = [(root, False)]
        while stack:
            node, children_done = stack.pop()
            if not children_done:
                stack.append((node, True))
                stack.extend((child, False) for child in node)
                continue
            attrib = tuple((k, v) for k, v in node.attrib.items() if k not in TREE_IGNORED_ATTRIBUTES)
            children = tuple(shape_of.pop(id(child)) for child in node)
            # Shape: what the official element comparison looks at (attributes
            # as a dict, so unordered; children in order; no text).
            shape = intern((node.tag, tuple(sorted(attrib)), children), next(ids))
            # Signature: the official candidate key (tag + attribute dict in
            # insertion order + text) together with the shape.
            signature = intern((node.tag, attrib, node.text, shape), next(ids))
            out[signature] += 1
            shape_of[id(node)] = shape

    # -- metrics ------------------------------------------------------------
    def kvs(self, pred: str, gold: str) -> float:
        a, b = self.features(pred).kv, self.features(gold).kv
        largest = max(len(a), len(b))
        if largest == 0:
            return 1.0
        overlap = len(a & b)
        if overlap == 0:
            return 0.0
        return overlap / largest

    def tree(self, pred: str, gold: str) -> float:
        self._new_epoch_if_full()
        while True:
            out = self._current(self._xml_cache, self._compute_features, pred)
            ref = self._current(self._xml_cache, self._compute_features, gold)
            if out.epoch == ref.epoch:
                break  # else another thread began a new epoch in between
        pred_subtrees = out.subtrees
        matched = sum(count for sig, count in ref.subtrees.items() if sig in pred_subtrees)
        return matched / ref.n_elements

    def chrf(self, pred: str, gold: str) -> float:
        return _chrf_from_ngrams(self.ngrams(pred), self.ngrams(gold))

    def em(self, pred: str, gold: str) -> float:
        return 1.0 if self._em_form(pred) == self._em_form(gold) else 0.0

    def oqs(self, pred: str, gold: str) -> float:
        return self.score(pred, gold).oqs

    def score(self, pred: str, gold: str) -> Scores:
        k = self.kvs(pred, gold)
        t = self.tree(pred, gold)
        c = self.chrf(pred, gold)
        return Scores(oqs=(k + t + c) / 3, kvs=k, tree=t, chrf=c, em=self.em(pred, gold))

    def score_many(self, preds: Sequence[str], golds: Sequence[str], progress: bool = False) -> list[Scores]:
        if len(preds) != len(golds):
            raise ValueError(f"{len(preds)} predictions for {len(golds)} references; give one prediction per reference")
        pairs: Iterable = zip(preds, golds)
        if progress:
            from tqdm import tqdm

            pairs = tqdm(pairs, total=len(preds), desc="scoring", unit="q", leave=False, disable=None)
        return [self.score(p, g) for p, g in pairs]

    def corpus(self, preds: Sequence[str], golds: Sequence[str]) -> dict:
        return aggregate(self.score_many(preds, golds))

    def clear_cache(self) -> None:
        with self._intern_lock:
            self._xml_cache.clear()
            self._ngram_cache.clear()
            self._em_cache.clear()
            self._subtree_ids.clear()
            self._epoch += 1


def _check_query(query) -> str:
    if not isinstance(query, str):
        raise TypeError(f"queries must be str, got {type(query).__name__}; convert None/bytes to str first")
    return query


def _key_values(root: ET.Element) -> set:
    found: set = set()
    for node in root.iter():
        attrib = node.attrib
        key = attrib.get("regk", attrib.get("k"))
        value = attrib.get("regv", attrib.get("v"))
        # Empty strings count as absent, as in the official code.
        if key:
            found.add(key)
        if value:
            found.add(value)
        if key and value:
            found.add((key, value))
    return found


def aggregate(scores: Sequence[Scores]) -> dict:
    """Corpus figures in percent (the mean of the per-example fractions × 100)."""
    import numpy as np

    if not scores:
        return {"oqs": 0.0, "kvs": 0.0, "tree": 0.0, "chrf": 0.0, "em": 0.0, "n": 0}
    result = {}
    for name in ("oqs", "kvs", "tree", "chrf", "em"):
        result[name] = float(np.mean([getattr(s, name) for s in scores]) * 100)
    result["n"] = len(scores)
    return result


_default_scorer: Scorer | None = None
_default_lock = threading.Lock()


def get_scorer() -> Scorer:
    """The process-wide scorer with the ``overpassql`` converter (shared cache)."""
    global _default_scorer
    if _default_scorer is None:
        with _default_lock:
            if _default_scorer is None:
                _default_scorer = Scorer()
    return _default_scorer


def score(pred: str, gold: str) -> Scores:
    """All five official scores of one prediction against its reference.

    >>> s = score('node["amenity"="cafe"];out;', 'node["amenity"="cafe"];out;')
    >>> (s.oqs, s.kvs, s.tree, s.chrf, s.em)
    (1.0, 1.0, 1.0, 1.0, 1.0)
    """
    return get_scorer().score(pred, gold)


def score_many(preds: Sequence[str], golds: Sequence[str], progress: bool = False) -> list[Scores]:
    """Per-example :class:`Scores` for aligned prediction and reference lists."""
    return get_scorer().score_many(preds, golds, progress=progress)


def corpus(preds: Sequence[str], golds: Sequence[str]) -> dict:
    """Corpus figures in percent: ``{"oqs", "kvs", "tree", "chrf", "em", "n"}``.

    >>> corpus(['node["a"="b"];out;'], ['node["a"="b"];out;'])["oqs"]
    100.0
    """
    return get_scorer().corpus(preds, golds)


def kvs(pred: str, gold: str) -> float:
    """Key-value similarity.

    >>> kvs('node["shop"="bakery"];out;', 'node["shop"="bakery"]["name"="X"];out;')
    0.5
    >>> kvs('node;out;', 'way;out;')
    1.0
    """
    return get_scorer().kvs(pred, gold)


def tree(pred: str, gold: str) -> float:
    """XML subtree similarity (TreeS); keys and values do not matter here.

    >>> tree('node["shop"="bakery"];out;', 'node["amenity"="cafe"];out;')
    1.0
    >>> tree('node["a"="b"];out;', 'way["a"="b"];out;') < 1.0
    True
    """
    return get_scorer().tree(pred, gold)


def chrf(pred: str, gold: str) -> float:
    """Character F-score (sacrebleu chrF, official settings) as a fraction.

    >>> chrf('node["a"="b"];out;', 'node["a"="b"];out;')
    1.0
    >>> round(chrf('node["amenity"="cafe"];out;', 'node["amenity"="pub"];out;'), 4)
    0.753
    >>> chrf('', 'node;out;')
    0.0
    """
    return get_scorer().chrf(pred, gold)


def em(pred: str, gold: str) -> float:
    """Exact match after the official normalisation (1.0 or 0.0).

    >>> em('[out:xml][timeout:90];node;out;', '[out:json][timeout:25]; node; out;')
    1.0
    """
    return get_scorer().em(pred, gold)


def oqs(pred: str, gold: str) -> float:
    """Overpass Query Similarity: the mean of KVS, TreeS and chrF.

    >>> oqs('node["amenity"="cafe"];out;', 'node["amenity"="cafe"];out;')
    1.0
    """
    return get_scorer().oqs(pred, gold)
