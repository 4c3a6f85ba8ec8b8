"""Build ``nl/data/field_attributes.json``: iD's fields as attributes a "with X" / "without X" names.

    python scripts/build_field_attributes.py [--cache-dir DIR] [--out nl/data/field_attributes.json]

Source: ``@openstreetmap/id-tagging-schema`` (the version the tag index uses,
``index.config.SCHEMA_VERSION``, cached and integrity-checked by ``geoql.index.schema``): every field
of type ``check``, ``defaultCheck`` or ``onewayCheck`` (a key whose values are ``yes`` / ``no``:
``shelter``, ``air_conditioning``, ``toilets``, ``covered``...), with its label and terms in each
language of ``geoql.nl.lexicon.LANGUAGES`` (regional variants folded in as the lexicon folds them):
``words`` the labels, ``terms`` the search terms (a request reads its own language's and English's
terms, and the labels of the other languages of its script: "aria condizionata" in a request
guessed Spanish, but not Italian's term "casa" for delivery).

These are form labels ("Suitable For Dogs", "Drinking Water Available"), not always the words people
type, so the reader uses them only where the cue tables already read a filter ("bus stops without
shelter", "Hotels mit Klimaanlage", "arrêts sans abri") and the label names all its words; the
hand-kept table (``nl/data/attributes.json``) comes first and its keys are left out here.

iD's other fields of one key (text, combo, number...: ``material``, ``lanes``, ``operator``) are
kept too, marked ``missing``, by their labels only: a request says such a key is missing ("benches
without a material", "Bänke ohne Materialangabe" is not read; "sans matériau" is), which is the key
absent whatever its values; "with a material" is left to the hand-kept table, which knows what having
one means. Keys that name a thing in some preset (``sport``, ``building:part``) are no attribute of it.

Deterministic: the same package gives the same bytes.
"""

from __future__ import annotations

import argparse
import json
import unicodedata
from pathlib import Path

from geoql.core.files import write_atomic
from geoql.index.config import NPM_REGISTRY, SCHEMA_VERSION, default_cache_dir
from geoql.index.schema import load_schema
from geoql.nl.lexicon import LANGUAGES
from geoql.nl.text import script_of
from geoql.nl.words import stopwords

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "nl" / "data" / "field_attributes.json"
HAND = ROOT / "nl" / "data" / "attributes.json"

FIELD_TYPES = ("check", "defaultCheck", "onewayCheck")
# Fields of one key whose values are free or a list: an attribute only as missing ("without a material").
# Not a route's ends and stops ("from", "to", "via": prepositions in most languages' labels), nor an
# indoor level or a drawing layer ("levels" asked of buildings are their floors, the hand-kept table's).
MISSING_SKIP_KEYS = frozenset({"from", "to", "via", "level", "layer"})
MISSING_TYPES = ("text", "combo", "semiCombo", "multiCombo", "number", "integer", "identifier", "textarea",
                 "date", "url", "tel", "email", "colour", "roadheight", "roadspeed", "networkCombo")
# Translation files folded into each language (the package's codes), as the lexicon folds them.
VARIANTS = {"en": ("en", "en-GB", "en-US"), "zh": ("zh", "zh-CN", "zh-TW", "zh-HK"), "yue": ("yue", "zh-HK", "zh-TW"),
            "pt": ("pt", "pt-BR"), "nl": ("nl", "nl-NL", "nl-BE"), "de": ("de", "de-AT", "de-CH")}
# Check fields whose key is not a yes/no property of the feature they are asked of ("barrier" is a
# planter's barrier=yes, "leisure" a riding centre's preset switch) or that only mappers ask for
# (sea marks, survey points, transformer windings, wrecks, crossing and signal details).
SKIP_KEYS = frozenset({"barrier", "leisure", "traffic_calming", "irrigation", "date", "informal", "portable"})
SKIP_PREFIXES = ("seamark:", "survey_point:", "windings:", "wreck:", "climbing:", "crossing:", "traffic_signals:",
                 "aerialway:", "bath:", "railway:", "building:")
# The fewest letters of a label read as a record said missing (a word this short is part of others:
# "par" of "parts"): in spaced scripts, and in scripts without spaces.
MISSING_LETTERS, MISSING_SPACELESS_LETTERS = 5, 2
# A label of more words than this is a question or a sentence ("Is food available?"), not a name.
MAX_WORDS = 3
# A label's last word this long or longer takes any ending (a cue's trailing *: "shower*" reads
# "showers"); shorter ones stay whole ("bar" is not "barbecue").
STAR_LETTERS = 4
# Languages whose nouns take case endings after "with" / "without" (the instrumental, the genitive):
# a label's last word there is its stem less its final vowels, with any ending.
CASE_LANGUAGES, CASE_VOWELS = ("pl", "ru"), "aeiouyąęóаеёиоуыэюяьй"


def _names_a_record(phrase: str, lang: str) -> bool:
    """Whether a label says a record of its own, to be read as missing: not a function word ("From",
    "Via", "到": a route's ends), nor a word this short ("Par", "층"), which is a part of others.

    >>> _names_a_record("material*", "en"), _names_a_record("via", "en"), _names_a_record("층", "ko")
    (True, False, False)
    """
    letters = [ch for ch in phrase if ch.isalpha()]
    if not letters or phrase.rstrip("*") in stopwords(lang) or any(w in stopwords(lang) for w in phrase.rstrip("*").split()[:1]):
        return False
    spaced = script_of(letters[0]) in ("Latin", "Cyrillic", "Greek")
    return len(letters) >= (MISSING_LETTERS if spaced else MISSING_SPACELESS_LETTERS)


def _words(label: str, lang: str) -> list[str]:
    """The cue phrases of one label or term: lower-cased, NFKC, without a question or a parenthesis."""
    text = unicodedata.normalize("NFKC", label).strip().lower()
    if not text or any(ch in text for ch in "?()/:;") or len(text.split()) > MAX_WORDS:
        return []
    letters = [ch for ch in text if ch.isalpha()]
    spaced = letters and script_of(letters[0]) in ("Latin", "Cyrillic", "Greek")
    last = text.split()[-1]
    if lang in CASE_LANGUAGES and last.isalpha():
        # a noun's cases change its last vowel: "toalety" -> "z toaletami", "душ" -> "с душем"
        stem = text.rstrip(CASE_VOWELS)
        if sum(ch.isalpha() for ch in stem.split()[-1] if stem.split()) >= 3:
            return [stem + "*"]
    if spaced and sum(ch.isalpha() for ch in last) >= STAR_LETTERS and last.isalpha():
        return [text + "*"]
    return [text]


def build(cache_dir: Path) -> dict:
    schema = load_schema(NPM_REGISTRY, SCHEMA_VERSION, cache_dir)
    hand_keys = {a["key"] for a in json.loads(HAND.read_text(encoding="utf-8"))["attributes"]}
    translations = {}
    for lang in LANGUAGES:
        merged: dict = {}
        for code in reversed(VARIANTS.get(lang, (lang,))):
            if code in schema.translation_files:
                fields = json.loads(schema.translation_files[code]).get(code, {}).get("presets", {}).get("fields", {})
                for fid, entry in fields.items():
                    merged.setdefault(fid, []).append(entry)
        translations[lang] = merged
    checks = {f.get("key") for f in schema.fields.values() if f.get("type") in FIELD_TYPES}
    things = {k for p in schema.presets.values() for k in (p.get("tags") or {})}
    usable = {fid: f for fid, f in sorted(schema.fields.items()) if isinstance(f.get("key"), str)
              and f["key"] not in hand_keys and f["key"] not in SKIP_KEYS and not f["key"].startswith(SKIP_PREFIXES)}
    yes_no = _attributes({fid: f for fid, f in usable.items() if f.get("type") in FIELD_TYPES}, translations,
                         lambda key: {"yes": [f"{key}=yes"], "no": [f"{key}=no"]}, terms=True)
    # (a prefix key, "payment:", is a family of keys; a key some preset is named by is a thing, not its attribute)
    missing = _attributes({fid: f for fid, f in usable.items() if f.get("type") in MISSING_TYPES
                           and f["key"] not in checks and f["key"] not in things and not f["key"].endswith(":")
                           and f["key"] not in MISSING_SKIP_KEYS},
                          translations, lambda key: {"missing": True}, terms=False)
    # a phrase a yes/no field says is that field's ("bench": bench=yes, not a bench's record)
    taken = {(lang, w) for e in yes_no for kind in ("words", "terms") for lang, ws in e[kind].items() for w in ws}
    for e in missing:
        e["words"] = {lang: kept for lang, ws in e["words"].items()
                      if (kept := [w for w in ws if (lang, w) not in taken and _names_a_record(w, lang)])}
    attributes = yes_no + [e for e in missing if e["words"]]
    return {
        "about": ("iD's yes/no fields (type check, defaultCheck, onewayCheck) as attributes, and its other fields "
                  "of one key as attributes said missing only ('missing': true), built by "
                  "scripts/build_field_attributes.py; read by geoql.nl.attributes only where the cue tables read a "
                  "filter whose words a label or term names whole. 'words': labels; 'terms': search terms. "
                  "Keys of nl/data/attributes.json are left out."),
        "source": {"package": "@openstreetmap/id-tagging-schema", "version": schema.version,
                   "integrity": schema.integrity, "licence": "ISC"},
        "attributes": attributes,
    }


def _attributes(fields: dict, translations: dict, values, *, terms: bool) -> list[dict]:
    """One attribute per key of ``fields`` (id -> iD field), with ``values(key)``'s entries and its labels
    (and with ``terms``, search terms) per language."""
    by_key: dict[str, dict] = {}
    said: dict[tuple[str, str], list[tuple[int, str]]] = {}  # (lang, phrase) -> [(0 label / 1 term, key)]
    for fid, field in fields.items():
        key = field["key"]
        by_key.setdefault(key, {"id": f"field:{key}", "key": key, **values(key), "fields": [], "words": {},
                                "terms": {}})["fields"].append(fid)
        for lang in LANGUAGES:
            for tr in translations[lang].get(fid, ()):
                found = (tr.get("terms") or "") if terms else ""
                found = found.split(",") if isinstance(found, str) else list(found)
                for rank, phrases in ((0, [tr.get("label") or ""]), (1, found)):
                    for phrase in phrases:
                        for w in _words(phrase, lang):
                            said.setdefault((lang, w), []).append((rank, key))
    # A phrase of several fields is the label of one of them, else nobody's: a term shared by fields
    # ("bench" of picnic_table, "kamin" of real_fire and fireplace) is a guess between them.
    for (lang, w), owners in said.items():
        owners = sorted(set(owners))
        keys = {k for _, k in owners}
        if len(keys) > 1 and (owners[0][0] != 0 or owners[1][0] == 0):
            continue
        kind = "words" if owners[0][0] == 0 else "terms"
        by_key[owners[0][1]].setdefault(kind, {}).setdefault(lang, []).append(w)
    for entry in by_key.values():
        for kind in ("words", "terms"):
            entry[kind] = {lang: sorted(ws) for lang, ws in sorted(entry.get(kind, {}).items())}
    return [e for e in by_key.values() if e["words"] or e["terms"]]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache-dir", type=Path, default=None, help="where the package tarball is cached")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    data = build(args.cache_dir or default_cache_dir())
    write_atomic(args.out, (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode("utf-8"))
    print(f"{args.out}: {len(data['attributes'])} attributes, "
          f"{sum(len(w) for a in data['attributes'] for w in a['words'].values())} labels, "
          f"{sum(len(w) for a in data['attributes'] for w in a['terms'].values())} terms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
