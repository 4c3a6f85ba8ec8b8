"""Sources → documents: one ``TagDocument`` per tag, one ``ExampleDocument`` per request.

Every source adds names, synonyms and evidence to the same per-tag record, so a
tag known to iD *and* used in training ends up as one document listing both.

English names and terms are ``names``/``terms``; the schema's other languages go to
``names_by_lang``/``terms_by_lang`` (``{"de": ["Apotheke"], "zh-CN": ["药店"], ...}``,
language codes as the package spells them).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import asdict, dataclass, field

from geoql.nl.text import base_language
from geoql.retrieval.artifacts import SCHEMA_SOURCE, TRAIN_SOURCE
from geoql.retrieval.gold import is_free_text_key, query_tags, tag_id
from geoql.retrieval.text import split_value

# Schema field types whose values are free text: indexed as key=*.
FREE_TEXT_FIELD_TYPES = frozenset(
    "text textarea number integer url tel email localized address wikipedia wikidata date identifier "
    "roadspeed roadheight schedule colour restrictions".split()
)
MAX_PHRASES = 12  # training requests kept per tag: enough for BM25/embedding evidence, small on disk
_TAGINFO_MARKS = re.compile(r"[\U0001F100-\U0001F1FF]\s*")


@dataclass
class TagDocument:
    tag: str
    key: str
    value: str  # "*" for free-text keys
    names: list[str] = field(default_factory=list)
    terms: list[str] = field(default_factory=list)
    description: str = ""
    geometry: list[str] = field(default_factory=list)
    train_count: int = 0
    schema_refs: int = 0  # presets/fields mentioning the tag: a popularity proxy without taginfo
    usage_count: int = 0  # taginfo usage, when it could be fetched
    phrases: list[str] = field(default_factory=list)
    replaced_by: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    likely_typo_of: str = ""  # a clearly more used tag one or two typing slips away ("highway=seccondary")
    names_by_lang: dict[str, list[str]] = field(default_factory=dict)  # other languages than English, from the schema
    terms_by_lang: dict[str, list[str]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.names[0] if self.names else self.value.replace("_", " ") if self.value != "*" else self.key

    @property
    def popularity(self) -> float:
        """log-scaled blend of training use, schema mentions and taginfo usage (0 = unknown)."""
        return math.log1p(self.train_count) + 0.5 * math.log1p(self.schema_refs) + 0.1 * math.log1p(self.usage_count)

    def to_json(self) -> dict:
        data = asdict(self)
        data["popularity"] = round(self.popularity, 4)
        return data


@dataclass
class ExampleDocument:
    index: int
    nl: str
    query: str
    tags: list[str]


class TagCollection:
    """Merges evidence for tags coming from several sources."""

    def __init__(self) -> None:
        self.docs: dict[str, TagDocument] = {}

    def get(self, key: str, value: str | None, source: str) -> TagDocument | None:
        key = key.strip()
        if not key or "\n" in key or (value is not None and "\n" in value):
            return None
        tid = tag_id(key, value)
        doc = self.docs.get(tid)
        if doc is None:
            k, _, v = tid.partition("=")
            doc = self.docs[tid] = TagDocument(tag=tid, key=k, value=v)
        if source not in doc.sources:
            doc.sources.append(source)
        return doc

    @staticmethod
    def add_unique(items: list[str], *new: str) -> None:
        for item in new:
            item = (item or "").strip()
            if item and item.lower() not in (x.lower() for x in items):
                items.append(item)


def _label(entry) -> str:
    if isinstance(entry, dict):
        return entry.get("title") or entry.get("label") or ""
    return entry if isinstance(entry, str) else ""


def _as_list(value) -> list[str]:
    if isinstance(value, str):  # some translation files keep terms as one comma-separated string
        return [v.strip() for v in re.split(r"[,\n]", value) if v.strip()]
    return [v for v in value or [] if isinstance(v, str)]


def _add_option(tags: TagCollection, source: str, key: str, value: str, title: str, field_key: str) -> None:
    """One option of a field as a tag, named by its title and the field's key: "Pizza" alone is
    ambiguous and field labels are often just "Type", so "Pizza (cuisine)" names the key."""
    doc = tags.get(key, value, source)
    if doc is not None:
        doc.schema_refs += 1
        tags.add_unique(doc.names, f"{title} ({split_value(field_key)})")


def add_schema(tags: TagCollection, schema, preset_filter=None) -> None:
    """id-tagging-schema presets, fields, deprecations and taginfo descriptions, in that order.

    Later steps build on earlier ones: a deprecated tag takes its replacement's names as
    synonyms, and taginfo.json only describes tags that presets or fields brought in.
    """
    source = f"{SCHEMA_SOURCE}@{schema.version}"
    add_presets(tags, schema, source, preset_filter)
    add_fields(tags, schema, source)
    add_deprecations(tags, schema, source)
    add_taginfo_descriptions(tags, schema)
    add_translations(tags, schema, preset_filter)


def add_presets(tags: TagCollection, schema, source: str, preset_filter=None) -> None:
    """Each preset's tags, named by the preset with its search terms and geometry; ``addTags`` count as mentions."""
    preset_tr = schema.translations.get("presets", {})
    for pid, preset in schema.presets.items():
        if pid.startswith("@templates") or (preset_filter and not preset_filter(pid, preset)):
            continue
        tr = preset_tr.get(pid, {})
        names = [tr.get("name") or preset.get("name") or ""]
        terms = _as_list(tr.get("terms")) + _as_list(tr.get("aliases"))
        for k, v in (preset.get("tags") or {}).items():
            doc = tags.get(k, None if v == "*" else v, source)
            if doc is None:
                continue
            doc.schema_refs += 1
            tags.add_unique(doc.names, *names)
            tags.add_unique(doc.terms, *terms)
            tags.add_unique(doc.geometry, *preset.get("geometry", []))
        for k, v in (preset.get("addTags") or {}).items():
            doc = tags.get(k, None if v == "*" else v, source)
            if doc is not None:
                doc.schema_refs += 1


def add_fields(tags: TagCollection, schema, source: str) -> None:
    """Each field's keys: check boxes as ``key=yes``/``no``, free text as ``key=*``, options as one tag each."""
    field_tr = schema.translations.get("fields", {})
    for fid, fdef in schema.fields.items():
        keys = [fdef["key"]] if fdef.get("key") else list(fdef.get("keys") or [])
        if not keys:
            continue
        tr = field_tr.get(fid, {})
        label = tr.get("label") or fdef.get("label") or ""
        terms = _as_list(tr.get("terms"))
        ftype = fdef.get("type", "")
        options = dict.fromkeys(fdef.get("options") or [])
        tr_options = tr.get("options") if isinstance(tr.get("options"), dict) else {}
        for opt in tr_options:
            options.setdefault(opt)
        for key in keys:
            if "*" not in key:
                _add_field_key(tags, source, key, ftype, label, terms, options, tr_options)


def _add_field_key(tags: TagCollection, source: str, key: str, ftype: str, label: str, terms: list[str],
                   options: dict, tr_options: dict) -> None:
    """The tags one key of a field stands for."""
    if key.endswith(":"):
        # a multiCombo over a key prefix sets one `prefix+option=yes` tag per chosen option
        # (fuel: + octane_95 -> fuel:octane_95=yes); other prefixes ("name:") are not single tags
        if ftype == "multiCombo":
            for opt in options:
                if isinstance(opt, str) and opt and not is_free_text_key(key + opt):
                    _add_option(tags, source, key + opt, "yes", _label(tr_options.get(opt)) or split_value(opt), key.rstrip(":"))
        return
    if ftype in {"check", "defaultCheck", "onewayCheck"}:
        doc = tags.get(key, "yes", source)
        if doc is not None:
            doc.schema_refs += 1
            tags.add_unique(doc.names, label)
            tags.add_unique(doc.terms, *terms)
        no = tags.get(key, "no", source)  # a check box is yes or no; queries ask for either
        if no is not None:
            no.schema_refs += 1
            tags.add_unique(no.names, f"no {label}" if label else "")
    if ftype in FREE_TEXT_FIELD_TYPES or is_free_text_key(key) or not options:
        doc = tags.get(key, None, source)
        if doc is not None:
            doc.schema_refs += 1
            tags.add_unique(doc.names, label)
            tags.add_unique(doc.terms, *terms)
        return
    for opt in options:
        if isinstance(opt, str) and opt:
            _add_option(tags, source, key, opt, _label(tr_options.get(opt)) or split_value(opt), key)


def add_deprecations(tags: TagCollection, schema, source: str) -> None:
    """Deprecated tags, pointing at their replacements and known by the replacements' names."""
    for row in schema.deprecated:
        old, new = row.get("old") or {}, row.get("replace") or {}
        replacements = [tag_id(k, None if v == "*" else v) for k, v in new.items() if "$1" not in str(v)]
        for k, v in old.items():
            if "*" in k:
                continue
            doc = tags.get(k, None if v == "*" else v, f"{source}:deprecated")
            if doc is None:
                continue
            tags.add_unique(doc.replaced_by, *replacements)
            for rep in replacements:
                if rep in tags.docs:
                    tags.add_unique(doc.terms, *tags.docs[rep].names)


def add_translations(tags: TagCollection, schema, preset_filter=None) -> list[str]:
    """Names and terms of the tags the English schema brought in, in every other language of the package;
    return the languages that named at least one tag.

    Each language names the same tags as English does (a preset's tags, a check box's ``key=yes``, a
    free-text field's ``key=*``, an option's ``key=value``, the option named "title (field label)"). A
    regional variant that only repeats its base language ("ar-AA" and "ar", "en-GB" and English) is
    dropped per tag: it would count the same words twice.
    """
    found: list[str] = []
    for lang in schema.languages:
        if lang == "en":
            continue
        tr = schema.translation(lang)
        if _add_language(tags, schema, lang, tr, preset_filter):
            found.append(lang)
    for doc in tags.docs.values():
        for by_lang in (doc.names_by_lang, doc.terms_by_lang):
            for lang in [lang for lang in by_lang if base_language(lang) != lang]:
                base = by_lang.get(base_language(lang), doc.names + doc.terms if base_language(lang) == "en" else [])
                known = {x.lower() for x in base}
                if all(x.lower() in known for x in by_lang[lang]):
                    del by_lang[lang]
    return [lang for lang in found if any(lang in d.names_by_lang or lang in d.terms_by_lang for d in tags.docs.values())]


def _add_language(tags: TagCollection, schema, lang: str, tr: dict, preset_filter) -> bool:
    added = False

    def add(tid: str, names: list[str], terms: list[str]) -> None:
        nonlocal added
        doc = tags.docs.get(tid)
        names = [n for n in names if n and n.strip()]
        terms = [t for t in terms if t and t.strip()]
        if doc is None or not (names or terms):
            return
        if names:
            TagCollection.add_unique(doc.names_by_lang.setdefault(lang, []), *names)
        if terms:
            TagCollection.add_unique(doc.terms_by_lang.setdefault(lang, []), *terms)
        added = True

    preset_tr = tr.get("presets") if isinstance(tr.get("presets"), dict) else {}
    for pid, preset in schema.presets.items():
        entry = preset_tr.get(pid)
        if not isinstance(entry, dict) or pid.startswith("@templates") or (preset_filter and not preset_filter(pid, preset)):
            continue
        names = [entry.get("name") if isinstance(entry.get("name"), str) else ""]
        terms = _as_list(entry.get("terms")) + _as_list(entry.get("aliases"))
        for k, v in (preset.get("tags") or {}).items():
            add(tag_id(k, None if v == "*" else v), names, terms)
    field_tr = tr.get("fields") if isinstance(tr.get("fields"), dict) else {}
    for fid, fdef in schema.fields.items():
        entry = field_tr.get(fid)
        if not isinstance(entry, dict):
            continue
        keys = [fdef["key"]] if fdef.get("key") else list(fdef.get("keys") or [])
        label = entry.get("label") if isinstance(entry.get("label"), str) else ""
        terms = _as_list(entry.get("terms"))
        ftype = fdef.get("type", "")
        tr_options = entry.get("options") if isinstance(entry.get("options"), dict) else {}
        options = list(dict.fromkeys(list(fdef.get("options") or []) + list(tr_options)))
        for key in keys:
            if "*" in key:
                continue
            named = [(opt, _label(tr_options.get(opt))) for opt in options if isinstance(opt, str) and opt]
            if key.endswith(":"):
                if ftype == "multiCombo":
                    for opt, title in named:
                        if title:
                            add(tag_id(key + opt, "yes"), [f"{title} ({label})" if label else title], [])
                continue
            if ftype in {"check", "defaultCheck", "onewayCheck"}:
                add(tag_id(key, "yes"), [label], terms)
            if ftype in FREE_TEXT_FIELD_TYPES or is_free_text_key(key) or not options:
                add(tag_id(key, None), [label], terms)
                continue
            for opt, title in named:
                if title:
                    add(tag_id(key, opt), [f"{title} ({label})" if label else title], [])
    return added


_OBJECT_TYPE_GEOMETRY = {"node": "point", "way": "line", "area": "area", "relation": "relation"}


def add_taginfo_descriptions(tags: TagCollection, schema) -> None:
    """Descriptions and geometries from the schema's taginfo.json, for tags already collected."""
    for row in schema.taginfo.get("tags", []):
        key, value = row.get("key", ""), row.get("value")
        if "*" in key or not key:
            continue
        tid = tag_id(key, value)
        if tid not in tags.docs:
            continue  # taginfo.json lists what the presets and fields already cover
        doc = tags.docs[tid]
        if not doc.description:
            doc.description = _TAGINFO_MARKS.sub("", row.get("description", "")).strip()
        tags.add_unique(doc.geometry, *(_OBJECT_TYPE_GEOMETRY.get(t, t) for t in row.get("object_types", [])))


def add_training(tags: TagCollection, examples) -> list[ExampleDocument]:
    """OverpassNL training requests: their gold tags, and the requests as phrases of those tags."""
    docs = []
    for ex in examples:
        if getattr(ex, "split", "train") != "train":
            raise ValueError(f"only the training split may enter the index, got {ex.split!r}")
        found = []
        for gold in query_tags(ex.query):
            doc = tags.get(gold.key, gold.value, TRAIN_SOURCE)
            if doc is None:
                continue
            if doc.tag not in found:
                found.append(doc.tag)
                doc.train_count += 1
                if len(doc.phrases) < MAX_PHRASES:
                    tags.add_unique(doc.phrases, ex.nl)
        docs.append(ExampleDocument(ex.index, ex.nl, ex.query, found))
    return docs


def edit_distance(a: str, b: str, cap: int = 3) -> int:
    """Optimal-string-alignment distance (insert, delete, substitute, swap neighbours), capped at ``cap``.

    >>> edit_distance("seccondary", "secondary"), edit_distance("priamry", "primary"), edit_distance("6", "8")
    (1, 1, 1)
    """
    if abs(len(a) - len(b)) >= cap:
        return cap
    before, row = None, list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            best = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (ca != cb))
            if before is not None and i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                best = min(best, before[j - 2] + 1)
            current.append(best)
        before, row = row, current
    return min(row[-1], cap)


def mark_likely_typos(docs: list[TagDocument]) -> int:
    """Set ``likely_typo_of`` on tags that only training queries use and whose value is a slip of a
    clearly more used value of the same key (``highway=seccondary``, ``amenity=theater``, ``building=House``);
    return how many.

    Gold queries carry their annotators' typos into the index; the ranker learns to hold such tags back
    (a prompt that offers ``amenity=toites`` invites the model to copy it). Only alphabetic values of five
    or more letters are compared, so ``admin_level=6``/``8`` or ``mtb:scale=1``/``2`` are never "typos";
    one edit is allowed up to seven letters, two from eight.
    """
    by_key: dict[str, list[TagDocument]] = {}
    for doc in docs:
        by_key.setdefault(doc.key, []).append(doc)
    marked = 0
    for doc in docs:
        doc.likely_typo_of = ""
        value = doc.value.lower()
        if doc.sources != [TRAIN_SOURCE] or not value.isalpha() or len(value) < 5:
            continue
        allowed = 1 if len(value) <= 7 else 2
        for other in by_key[doc.key]:
            if (other is not doc and other.popularity >= doc.popularity + 0.7 and other.value.replace("_", "").isalpha()
                    and edit_distance(value, other.value.lower()) <= allowed):
                doc.likely_typo_of = other.tag
                marked += 1
                break
    return marked


def tag_counts(docs: list[TagDocument]) -> dict:
    by_source = Counter(s.split("@")[0] for d in docs for s in d.sources)
    return {"tags": len(docs), "by_source": dict(by_source), "likely_typos": sum(1 for d in docs if d.likely_typo_of)}
