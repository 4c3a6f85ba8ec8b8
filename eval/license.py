"""Is every part of this answer licensed? The parts of a query that nothing in its request licenses.

A query copied from a similar request, or written by a language model, can carry parts its request
never asked for: a neighbour's extra tag filter, an area named after another city, a set called
``.paris`` in an answer for Seoul, ``[timeout:8000]``, ``out count`` for a listing. Each part of
a query needs a licence from the request (:class:`geoql.nl.Request`, read once by ``compile()``):

===========  ==========================================================================  ====================================
kind         the part                                                                    licensed by
===========  ==========================================================================  ====================================
``tag``      a tag filter of the elements (``["amenity"="cafe"]``, ``[!"name"]``,        a tag of the request's features and
             ``["highway"~"primary|secondary"]``)                                        brands (its lexicon), a tag the
                                                                                         backend's evidence stands for
                                                                                         (:class:`TagEvidence`), a value or
                                                                                         key the request spells
``area``     an area: ``{{geocodeArea:X}}``, ``area["name"="X"]``, an area id,           the request's places (or a learned
             ``is_in`` / ISO 3166 tags                                                   spelling of one: ``aliases``)
``around``   an around: its radius and centre (``(around:500,48.1,11.5)``,               the request's distances and
             ``{{geocodeCoords:X}}``)                                                    coordinates, its places
``set``      a named set (``->.paris``) whose name is a word                             words of the request or of the
                                                                                         query's own tags and places
``setting``  ``[timeout:N]`` above 900 s, ``[maxsize:N]`` above 1 GiB                   a number of the request
``output``   an output that changes the answer: ``out count``, ``[out:csv]``,            the request's output words
             ``out ids``
``name``     a name, brand, operator, ref ... value                                      the request's words
``id``,      element ids, users, dates, other numbers (a box's corners)                  the same in the request
``user``,
``date``,
``number``
===========  ==========================================================================  ====================================

A filter that excludes values of a licensed key (``["highway"!="platform"]`` for "roads") or names a
subkey of one (``[!"maxspeed:forward"]`` for "without a speed limit") refines the asked feature: it
needs no licence of its own.

The constants (areas, arounds, names, ids, users, dates, numbers, outputs) are those of
:mod:`geoql.eval.faithfulness` (``unsupported_constants``), folded in here: this is the one check
of an answer's parts, and its list is :class:`Part`\\ s. An output that adds detail to the same
elements (``out meta``, ``out geom``, ``out center``) changes no answer and needs no licence; the
house's settings (``[out:json]``, timeouts up to 900 s, the default sizes) need none either.

>>> from geoql.nl import read_request
>>> [(p.kind, p.text) for p in unlicensed_parts(read_request("Starbucks in Seoul"),
...     '[timeout:8000];{{geocodeArea:"Seoul"}}->.paris;nwr(area.paris);out count;')]
[('set', '.paris'), ('setting', '[timeout:8000]'), ('output', 'out count')]
>>> [(p.kind, p.text) for p in unlicensed_parts(read_request("cafes in Bonn"),
...     '{{geocodeArea:"Paris"}}->.a;nwr["amenity"="cafe"]["maxspeed"](area.a);out;')]
[('area', '{{geocodeArea:"Paris"}}'), ('tag', '["maxspeed"]')]

Which tags a backend's evidence stands for is data the caller passes (:class:`TagEvidence`: the tag
hits it used above :data:`MIN_HIT`, the words its lexicon ties to tags at :data:`MIN_TIE`), never
read from a backend's insides; ``compile()`` builds it from the backend's ``Generation``.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any, Iterable, Mapping, Sequence

import overpassql
from geoql.eval.faithfulness import NAME_KEY, PLACE_KEY, Constant, regex_words, unsupported_constants
from geoql.nl.request import Request, read_request
from geoql.nl.support import Support
from geoql.nl.text import fold, spaceless
from geoql.nl.words import alike, cue_words, stem
from overpassql import ast as A
from overpassql.ql import Dumper

KINDS = ("area", "around", "tag", "set", "setting", "output", "name", "id", "user", "date", "number")
# The parts that change which elements come back, or from where (the request's facts); the rest
# change how they are printed or how long the server may take.
CORE_KINDS = ("area", "around", "tag", "name", "id", "user", "date")

# A tag hit licenses its tag at this ranker probability or more: the CPU default's own bar for a
# hinted tag it may add (``app.cpu.edits``' hint tags); a lexicon word at this P(tag | word).
MIN_HIT = 0.2
MIN_TIE = 0.2
# House settings: overpass-turbo's wizard writes [timeout:25], the OverpassNL training queries
# reach 900 s in 95 % of those that set one; 1 GiB is the largest common [maxsize:...] there
# (Overpass's own default is 512 MiB). A larger value is a neighbour's leftover unless asked for.
HOUSE_TIMEOUT = 900
HOUSE_MAXSIZE = 1073741824
# Values that say a key is there, not what it is: a request that names the key licenses them
# ("wheelchair accessible toilets": ["wheelchair"="yes"]).
GENERIC_VALUES = frozenset({"yes", "no", "only", "designated", "true", "false", "1", "0", "limited", "permissive"})
# Words of set names that name nothing of the request: the house's (.searchArea, .a, .boundaryarea)
# and the ones training queries use for any request (.result, .all, .major).
HOUSE_SET_WORDS = frozenset("""
    search area areas searcharea boundary boundaryarea bndarea bnd admin result results res all alles filter filtered my
    zone region country state city town relation relations rel rels recurse node nodes way ways element elements item items
    center centre around inner outer set sets tmp temp one two three four five first second third other others
    rest new old selected selection source target data objects features feature poi pois main major minor base
    input output out suchgebiet gebiet suche ergebnis candidates candidate found match matches matched inside
    outside near nearby within top list group collection members member parent parents child children test
    testing
""".split())

_KIND_ORDER = {k: i for i, k in enumerate(KINDS)}
_DUMP = Dumper()


@dataclass(frozen=True)
class Part:
    """One part of a query that nothing in its request licenses: ``kind`` (:data:`KINDS`), ``text``
    as the query writes it (``["maxspeed"]``, ``{{geocodeArea:"Paris"}}``, ``.paris``,
    ``[timeout:8000]``), ``why`` one sentence saying what is missing."""

    kind: str
    text: str
    why: str


@dataclass(frozen=True)
class TagEvidence:
    """The tags a backend's evidence stands for, beyond the request's own words: ``key=value``,
    ``key=*`` (the key with any value) or a bare ``key``. Build it with :meth:`of`.

    >>> from geoql.nl import read_request
    >>> ev = TagEvidence.of(read_request("peaks in Austria"), hits=[{"tag": "natural=peak", "score": 0.45},
    ...     {"tag": "highway=motorway", "score": 0.05}], word_tags={"peak": {"natural=peak": 0.6, "ele": 0.3}})
    >>> sorted(ev.tags)
    ['ele', 'natural=peak']
    """

    tags: frozenset[str] = frozenset()

    @classmethod
    def of(cls, request: Request | None, *, hits: Iterable[Any] = (),
           word_tags: Mapping[str, Mapping[str, float]] | None = None,
           min_hit: float = MIN_HIT, min_tie: float = MIN_TIE) -> "TagEvidence":
        """``hits``: tag hits (``TagHit`` or its dict: ``tag``, ``score``) the backend used, those at
        ``min_hit`` or more; ``word_tags``: word -> tag -> P(tag | word) (the CPU default's lexicon,
        keyed by ``Request.stems``), the ties of the request's words at ``min_tie`` or more."""
        tags = set()
        for hit in hits or ():
            get = hit.get if isinstance(hit, Mapping) else (lambda name, default=None: getattr(hit, name, default))
            tag, score = str(get("tag", "") or ""), float(get("score", 0.0) or 0.0)
            if tag and score >= min_hit:
                tags.add(tag)
        if word_tags and request is not None:
            for word in request.stems:
                tags.update(t for t, p in (word_tags.get(word) or {}).items() if p >= min_tie)
        return cls(frozenset(tags))


NO_EVIDENCE = TagEvidence()


# ------------------------------------------------------------------ the request's side

@dataclass(frozen=True)
class _Licence:
    """What the request (and the evidence) license, prepared once per check."""

    support: Support
    words: frozenset[str]  # folded words of every script with spaces
    tags: frozenset[str]  # key=value, key=*, key
    keys: frozenset[str]
    ids_asked: bool

    def spells(self, text: str) -> bool:
        """Whether the request writes ``text`` (a tag value or key, a set name's word): a word of it
        of three letters or more, in some form ("cafes" for cafe, "Swimming" for swimming_pool), or
        in a script without spaces, inside the request."""
        for part in _value_words(text):
            if any(spaceless(ch) for ch in part):
                if part in self.support.joined:
                    return True
            elif part in self.words or any(alike(part, w) for w in self.words):
                return True
        return False


def _value_words(text: str) -> list[str]:
    """The words of a tag value, key or set name, folded: ``swimming_pool`` -> swimming, pool;
    ``searchArea2`` -> search, area; ``fast food`` -> fast, food; words of two letters or fewer
    and generic values are no words of it (``yes``, ``no``)."""
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text or "")
    return [w for w in re.findall(r"[^\W\d_]+", fold(spaced)) if len(w) >= 3 and w not in GENERIC_VALUES]


def _licence(request: Request, evidence: TagEvidence | Iterable[str] | None) -> _Licence:
    own = set(evidence.tags if isinstance(evidence, TagEvidence) else (evidence or ()))
    # A negated feature licenses its tags too: "without a name" licenses [!"name"] as "with a name" ["name"].
    for feature in request.features:
        for match in feature.tags:
            own.update(match.tags)
    # The attribute words license what they name: "sem número de porta" licenses [!"addr:housenumber"]
    # in any language, as "without a house number" does by spelling it.
    for match in request.attribute_words:
        a = match.attribute
        own.update((a.key, *a.yes, *a.no, *(key for _, key in a.for_tags)))
    support = request.support
    words = frozenset(w for w in support.words if not any(spaceless(ch) for ch in w))
    keys = frozenset(t.split("=", 1)[0] for t in own)
    ids_asked = bool(request.ids or request.area_ids) or bool(words & cue_words()["ids"])
    return _Licence(support, words, frozenset(own), keys, ids_asked)


# ------------------------------------------------------------------ the query's parts

def unlicensed_parts(request: Request | str, query: str, *, aliases: Mapping[str, Iterable[str]] | None = None,
                     evidence: TagEvidence | Iterable[str] | None = None) -> list[Part]:
    """The parts of ``query`` that nothing in ``request`` licenses, by kind (:data:`KINDS`' order),
    each once (see the module's docstring).

    ``request`` is the :class:`geoql.nl.Request` ``compile()`` read (a plain text is read here);
    ``aliases`` maps a place to other spellings of it (``{"Vienna": {"Wien"}}``, either side in the
    query); ``evidence`` the tags the backend's evidence stands for (:class:`TagEvidence`, or tag
    strings). Never raises: a query that does not parse gives the parts of its parsed part.

    >>> from geoql.nl import read_request
    >>> r = read_request("toilets within 300 m of the Eiffel Tower")
    >>> [(p.kind, p.text) for p in unlicensed_parts(r, 'node["amenity"="toilets"](around:500,48.858,2.294);out;')]
    [('around', '(around:500)'), ('around', '(around:…,48.858,2.294)')]
    >>> unlicensed_parts(r, 'node["amenity"="toilets"](around:300,{{geocodeCoords:"Eiffel Tower"}});out;')
    []
    """
    if not isinstance(query, str) or not query.strip():
        return []
    if not isinstance(request, Request):
        request = read_request(request if isinstance(request, str) else "")
    licence = _licence(request, evidence)
    parts = _constant_parts(unsupported_constants(request, query, aliases=aliases))
    script = _parse(query)
    if script is not None:
        parts += _tag_parts(script, licence)
        parts += _setting_parts(script, licence)
        parts += _output_parts(script, licence)
        parts += _set_parts(script, licence)
    seen: dict[tuple[str, str], Part] = {}
    for part in parts:
        if part is not None:
            seen.setdefault((part.kind, part.text), part)
    return sorted(seen.values(), key=lambda p: _KIND_ORDER[p.kind])


def _parse(query: str) -> A.Script | None:
    try:
        return overpassql.parse(query, collect_errors=True)
    except Exception:  # a parser failure must not sink the check: the constants' placeholders still count
        return None


def _constant_parts(constants: list[Constant]) -> list[Part | None]:
    """The unsupported constants as parts; an around's coordinates are one part (its centre)."""
    parts = [_from_constant(c) for c in constants if c.where != "around coords"]
    coords = [c.value for c in constants if c.where == "around coords"]
    if coords:
        parts.append(Part("around", f"(around:…,{','.join(coords)})", "the request gives no such centre: "
                          "no coordinates " + ", ".join(coords)))
    return parts


def _from_constant(c: Constant) -> Part | None:
    """Today's unsupported constants as parts (an unasked ``out meta``/``geom``/``center`` changes no answer)."""
    where, value = c.where, c.value
    if c.kind == "place":
        if where.startswith("geocodeCoords"):
            return Part("around", f'{{{{geocodeCoords:"{value}"}}}}', f"the request measures from no place {value!r}")
        if where.startswith(("geocode", "nominatim")):
            text = f'{{{{{where}:"{value}"}}}}'
        elif where.startswith("tag "):
            text = f'["{where[4:]}"="{value}"]'
        else:
            text = value
        return Part("area", text, f"the request names no place {value!r}")
    if c.kind == "id":
        if where == "area id":
            return Part("area", f"area({value})", f"the request names no area {value}")
        return Part("id", f"{where.split()[0]}({value})", f"the request lists no id {value}")
    if c.kind == "number":
        if where == "around radius":
            return Part("around", f"(around:{value})", f"the request gives no distance {value}")
        return Part("number", f"{value} ({where})", f"the request gives no number {value}")
    if c.kind == "output":
        if c.value not in ("count", "csv"):
            return None
        text = "out count" if c.value == "count" and where.startswith("out ") else (
            "[out:csv(::count)]" if c.value == "count" else "[out:csv]")
        return Part("output", text, f"the request asks for no {'count' if c.value == 'count' else 'table'}")
    if c.kind == "user":
        text = f'(user:"{value}")' if where == "user" else f"(uid:{value})"
        return Part("user", text, f"the request names no user {value!r}")
    if c.kind == "date":
        return Part("date", value if value.startswith("{{") else f'({where}:"{value}")',
                    f"the request gives no date {value!r}")
    if c.kind == "name":
        return Part("name", f'["{where[4:]}"="{value}"]' if where.startswith("tag ") else value,
                    f"the request names no {value!r}")
    return Part(c.kind, value, f"the request does not give {value!r}")


def _is_number(text: str) -> Decimal | None:
    try:
        return Decimal(text.strip())
    except (InvalidOperation, AttributeError):
        return None


def _number_given(value: str, licence: _Licence) -> bool:
    number = _is_number(value)
    return number is not None and any(v == number for v, _, _ in licence.support.numbers)


def any_value(f: A.Tag) -> bool:
    """``[key]``, ``[!key]``, ``[key~"."]``, ``[key!~".*"]``: the key with any value (or none)."""
    if f.op in ("exists", "not_exists"):
        return True
    return f.op in ("~", "!~") and not re.search(r"[^\W_]", re.sub(r"\\.", "", f.value or ""))


def _tag_licensed(f: A.Tag, licence: _Licence) -> bool:
    key, value = f.key, f.value or ""
    # A subkey of a licensed key refines it ("without a speed limit": maxspeed:forward, maxspeed:backward).
    base = key.split(":", 1)[0]
    key_ok = any(k in licence.keys or f"{k}=*" in licence.tags or licence.spells(k) for k in dict.fromkeys((key, base)))
    if any_value(f):
        return key_ok
    if f.op in ("!=", "!~") and key_ok:
        return True  # leaves out some of an asked feature's elements ("roads": highway!=platform), adds none
    if f.op in ("=", "!="):
        if f"{key}={value}" in licence.tags or licence.spells(value) or _number_given(value, licence):
            return True
        return key_ok and fold(value) in GENERIC_VALUES
    # A pattern: its key, or one of its words
    alternatives = regex_words(value)
    return key_ok or any(f"{key}={a}" in licence.tags or licence.spells(a) for a in alternatives)


def part_text(node: A.Tag | A.Setting) -> str:
    """How a part is written in :attr:`Part.text`: a tag filter or a setting in the dataset's style
    (``["maxspeed"]``, ``[timeout:8000]``), so that a repair finds the node a part names."""
    return _DUMP.dump(node)


def _tag_parts(script: A.Script, licence: _Licence) -> list[Part]:
    out = []
    for node in A.walk(script):
        # An area statement's filters are the area's shape: its place is judged (kind ``area``).
        if not isinstance(node, A.Query) or node.type == "area":
            continue
        for f in node.filters:
            if not isinstance(f, A.Tag) or f.key_regex or "{{" in (f.value or ""):
                continue
            if f.value and f.op in ("=", "!=", "~", "!~") and (NAME_KEY.match(f.key) or PLACE_KEY.match(f.key)):
                continue  # a name, brand, ref or place: a constant (kinds ``name`` / ``area``)
            if not _tag_licensed(f, licence):
                text = part_text(f)
                out.append(Part("tag", text, f"nothing in the request asks for {text}"))
    return out


def _setting_parts(script: A.Script, licence: _Licence) -> list[Part]:
    out = []
    for s in script.settings:
        limit = {"timeout": HOUSE_TIMEOUT, "maxsize": HOUSE_MAXSIZE}.get(s.key)
        number = _is_number(s.value) if limit else None
        if number is not None and number > limit and not _number_given(s.value, licence):
            unit = "s" if s.key == "timeout" else "bytes"
            out.append(Part("setting", part_text(s),
                            f"a {s.key} of {s.value} {unit}, above the house's {limit} {unit}, that the request does not ask for"))
    return out


def _output_parts(script: A.Script, licence: _Licence) -> list[Part]:
    if licence.ids_asked:
        return []
    for node in A.walk(script):
        if isinstance(node, A.Out) and "ids" in node.options:
            return [Part("output", "out ids", "the request asks for no ids: out ids prints nothing else")]
    return []


# Where a set's name stands in each kind of node (its definition ``->.x``, its use ``.x``, ``(area.x)`` ...).
SET_ATTRIBUTES = {A.Query: ("into",), A.Item: ("set", "into"), A.Union_: ("into",), A.Difference: ("into",),
              A.Recurse: ("set", "into"), A.Out: ("set",), A.IsIn: ("set", "into"), A.MapToArea: ("set", "into"),
              A.Make: ("set", "into"), A.Block: ("set", "into"), A.Placeholder: ("into",), A.SetFilter: ("name",),
              A.AreaFilter: ("set",), A.Around: ("set",), A.Pivot: ("set",), A.RecurseFilter: ("set",)}


def _set_parts(script: A.Script, licence: _Licence) -> list[Part]:
    """Sets named after something: each word of the name (not the house's) must be the request's,
    or a word of the query's own tags and places."""
    names: dict[str, None] = {}
    own: set[str] = set()
    for node in A.walk(script):
        for attr in SET_ATTRIBUTES.get(type(node), ()):
            name = getattr(node, attr, None)
            if isinstance(name, str) and name and name != "_":
                names[name] = None
        if isinstance(node, A.Tag):
            own.update(_value_words(node.key) + _value_words(node.value or ""))
        elif isinstance(node, (A.Placeholder, A.PlaceholderFilter)):
            own.update(_value_words(node.text))
    out = []
    for name in names:
        foreign = [w for w in _value_words(name) if not _house_word(w) and not licence.spells(w)
                   and not any(alike(w, o) or _abbreviates(w, o) for o in own | licence.words)]
        if foreign:
            out.append(Part("set", "." + name, f"a set named after {foreign[0]!r}, which the request does not mention"))
    return out


@lru_cache(maxsize=4096)
def _house_word(word: str) -> bool:
    """A set name's word that names nothing: a house word, one misspelt ("boundryarea"), or house words
    run together ("myarea", "newways").

    >>> _house_word("myarea"), _house_word("boundryarea"), _house_word("paris")
    (True, True, False)
    """
    if word in HOUSE_SET_WORDS or any(alike(word, h) for h in HOUSE_SET_WORDS if len(h) >= 5):
        return True
    return any(word[:i] in HOUSE_SET_WORDS and _house_word(word[i:]) for i in range(2, len(word) - 1))


def _abbreviates(word: str, full: str) -> bool:
    """A set name's word cut short from a word of the request or query ("muni" of municipality)."""
    return len(word) >= 3 and len(full) > len(word) and full.startswith(word)


# ------------------------------------------------------------------ measuring a file

@dataclass
class LicenceReport:
    """How many answers of a file carry unlicensed parts, by kind, with the first examples."""

    total: int = 0
    with_any: int = 0  # answers with at least one unlicensed part
    with_core: int = 0  # ... of a CORE_KINDS kind
    by_kind: Counter = field(default_factory=Counter)  # answers with at least one part of that kind
    parts: Counter = field(default_factory=Counter)  # (kind, text) -> answers
    examples: dict = field(default_factory=dict)  # kind -> [(line, request, [texts])]

    def share(self, count: int) -> float:
        return count / self.total if self.total else 0.0

    def as_dict(self) -> dict:
        """Percentages: ``any``, ``core`` and one per kind."""
        return {"n": self.total, "any": 100 * self.share(self.with_any), "core": 100 * self.share(self.with_core),
                **{kind: 100 * self.share(self.by_kind[kind]) for kind in KINDS}}

    def format(self, n_examples: int = 3, top: int = 10) -> str:
        lines = [f"answers: {self.total}",
                 f"with an unlicensed part: {self.with_any} ({self.share(self.with_any):.1%}); "
                 f"of a kind that changes the elements ({'/'.join(CORE_KINDS)}): {self.with_core} ({self.share(self.with_core):.1%})",
                 "by kind (answers with at least one):"]
        for kind in KINDS:
            lines.append(f"  {kind:8s} {self.by_kind[kind]:5d} ({self.share(self.by_kind[kind]):.1%})")
        if self.parts:
            lines.append("most frequent: " + ", ".join(f"{text} ({n})" for (_, text), n in self.parts.most_common(top)))
        for kind in KINDS:
            for line, nl, texts in self.examples.get(kind, [])[:n_examples]:
                lines.append(f"  e.g. {kind} line {line}: {', '.join(texts)[:80]} <- {nl[:100]}")
        return "\n".join(lines)


def measure(requests: Sequence[Request | str], queries: Sequence[str], *,
            aliases: Mapping[str, Iterable[str]] | None = None,
            evidence: Sequence[TagEvidence | None] | None = None, n_examples: int = 5) -> LicenceReport:
    """Count the answers with unlicensed parts, request ``i`` against query ``i`` (``evidence[i]``
    its backend's tag evidence, when given)."""
    report = LicenceReport()
    examples: dict[str, list] = defaultdict(list)
    for i, (request, query) in enumerate(zip(requests, queries)):
        report.total += 1
        found = unlicensed_parts(request, query, aliases=aliases, evidence=evidence[i] if evidence else None)
        kinds = {p.kind for p in found}
        report.with_any += bool(kinds)
        report.with_core += bool(kinds & set(CORE_KINDS))
        report.by_kind.update(kinds)
        report.parts.update({(p.kind, p.text) for p in found})
        nl = request.nl if isinstance(request, Request) else str(request)
        for kind in kinds:
            if len(examples[kind]) < n_examples:
                examples[kind].append((i + 1, nl, [p.text for p in found if p.kind == kind]))
    report.examples = dict(examples)
    return report


