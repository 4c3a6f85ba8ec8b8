"""Build the feature lexicon of ``geoql.nl.lexicon`` (``nl/data/lexicon/``) from pinned packages.

    python scripts/build_nl_lexicon.py [--cache-dir DIR] [--out nl/data/lexicon] [--write-prior OVERPASSNL_DIR]

Sources, each pinned and checked against its SRI integrity string:

* ``@openstreetmap/id-tagging-schema`` (the version the tag index uses, ``index.config.SCHEMA_VERSION``):
  every searchable preset's name, aliases and terms in each language of ``LANGUAGES`` (regional
  variants folded into their language: en-GB and en-AU into ``en``, zh-CN/zh-TW/zh-HK into ``zh``);
* ``name-suggestion-index`` (``NSI_VERSION``): brands with a Wikidata id present in at least
  ``MIN_BRAND_COUNTRIES`` countries, and those of fewer countries whose names no word or city shares,
  as ``brand``/``brand:<lang>`` spellings -> the brand's main tag;
* ``simplemma`` (form -> lemma tables, read here only): the inflected forms of the lexicon's words
  that the Snowball stemmer does not bring to their lemma's stem ("Museen" -> "Museum",
  "музеев" -> "музей"), kept as a small ``forms`` table per language;
* ``snowballstemmer``: every surface's key is its words' stems (the reader stems a request's words
  the same way at run time, so the versions must agree: ``tests/nl/test_lexicon.py`` checks it).

Hand-kept additions and removals are in ``scripts/nl_lexicon/edits.json``: surfaces the packages
lack that requests use, and surfaces whose matches were measured to be wrong more often than right
on OverpassNL train / the first half of OsmNL dev (``scripts/lexicon_accuracy.py --worst``).

Where one surface names several tags ("church": a place of worship, a monastery...), the tag that
OverpassNL's training queries use more is the likelier meaning: ``scripts/nl_lexicon/prior.json``
holds how many training queries use each tag (``--write-prior DIR`` recounts it from
``DIR/dataset.train.query``; dev and test are never read).

The downloads are cached (``index-sources`` in the user cache, shared with ``geoql index build``),
so a rebuild is offline. Deterministic: the same packages give the same bytes.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import io
import json
import re
import sys
import tarfile
import time
from collections import defaultdict
from pathlib import Path

from build_places import lowercase_words  # a sibling script: the rule for words a name is not spelled as
from geoql.core.files import write_atomic
from geoql.index.config import NPM_REGISTRY, SCHEMA_VERSION, default_cache_dir
from geoql.index.schema import load_schema
from geoql.nl import cues
from geoql.nl.lexicon import (FORMAT, LANGUAGES, MIN_SCORE, ROLE_WEIGHT, STEMMERS, folded_surface, is_spaceless_text, key_of,
                              shortens, stemmer_version, word_keys)
from geoql.nl.text import base_language, fold, script_of

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "nl" / "data" / "lexicon"
EDITS = ROOT / "scripts" / "nl_lexicon" / "edits.json"
PRIOR = ROOT / "scripts" / "nl_lexicon" / "prior.json"

NSI_PACKAGE = "name-suggestion-index"
NSI_VERSION = "8.0.20260918"
# Pinned here, not read from the registry: a changed tarball under the same version must fail.
NSI_INTEGRITY = "sha512-g09kxye3aswAETIa//gA56MjonmjcyXCzdIwlDhpBVAwLKXOUJA1QZL5eE4ZRstTFFx9I2o9eARONUXVC72SAw=="
NSI_FILE = "package/dist/json/nsi.min.json"
# Each brand's Wikidata label and description ("French hypermarket brand of the Carrefour Group"),
# which tell the brand's own trade from the other categories NSI lists it in (its fuel stations).
NSI_WIKIDATA_FILE = "package/dist/wikidata/wikidata.min.json"

# Translation files folded into each language (the package's codes). Cantonese requests are
# written in traditional characters: zh-HK and zh-TW names serve them too.
VARIANTS = {
    "zh": ("zh", "zh-CN", "zh-TW", "zh-HK"),
    "yue": ("yue", "zh-HK", "zh-TW"),
}

# A brand present in this many countries or more (a world or continent region counts as many).
MIN_BRAND_COUNTRIES = 3
# A brand of fewer countries ("Mercadona", "Albert Heijn", "Walgreens") is kept only where no word or
# place is spelled like it (``_local_brand_blocklist``) and its name has this many letters or more.
LOCAL_BRAND_LETTERS = 4
# In a script without spaces, where each character is a syllable or a word, a local brand's name or a
# short form NSI lists has this many characters or more ("다이소", "ファミマ"; two, "華僑", is too often a word).
SPACELESS_BRAND_LETTERS = 3
# Region codes of NSI's locationSets (UN M49) that stand for many countries.
_MANY = 50
# Irregular forms kept: of lemmas this long or longer, at most this many letters longer than the lemma
# (a noun's cases and plurals; without the cap Turkish alone had 100,000 verb forms).
MIN_LEMMA_LETTERS, MAX_ENDING_LETTERS = 4, 4
# A tag few OverpassNL training queries use is an unlikely request: under COMMON uses a surface of it
# counts for RARE, unused for UNSEEN (iD's terms of rare presets were the lexicon's most frequent
# errors: "window" -> craft=glaziery). With lexicon.MIN_SCORE 0.5, a rare tag keeps its names only.
COMMON, RARE, UNSEEN = 5, 0.8, 0.6
# How strongly the training queries' use decides between the tags of one surface (share ~ uses ** power).
PRIOR_POWER = 0.75
# Candidates kept per key (the best by score; the reader takes the first).
KEEP_PER_KEY = 3


def _verified(data: bytes, integrity: str) -> bool:
    algo, _, expected = integrity.partition("-")
    return base64.b64encode(hashlib.new(algo, data).digest()).decode() == expected


def fetch_nsi(cache_dir: Path) -> tuple[dict, dict[str, str]]:
    """(NSI's ``dist/json/nsi.min.json``, wikidata id -> the brand's English description), from the
    cache when the tarball verifies."""
    import requests

    path = cache_dir / f"{NSI_PACKAGE}-{NSI_VERSION}.tgz"
    data = path.read_bytes() if path.is_file() else b""
    if not _verified(data, NSI_INTEGRITY):
        url = f"{NPM_REGISTRY}/{NSI_PACKAGE}/-/{NSI_PACKAGE}-{NSI_VERSION}.tgz"
        response = requests.get(url, timeout=120)
        response.raise_for_status()
        data = response.content
        if not _verified(data, NSI_INTEGRITY):
            sys.exit(f"{url} fails its pinned integrity check")
        cache_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        nsi = json.load(archive.extractfile(NSI_FILE))
        wikidata = json.load(archive.extractfile(NSI_WIKIDATA_FILE)).get("wikidata", {})
    return nsi, {q: entry["description"] for q, entry in wikidata.items()
                 if isinstance(entry, dict) and isinstance(entry.get("description"), str)}


def _split(value) -> list[str]:
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    if isinstance(value, str):  # older files: comma-separated terms, newline-separated aliases
        return [v for part in value.split("\n") for v in part.split(",")]
    return []


def preset_tags(preset: dict, prior: dict[str, int]) -> tuple[str, ...] | None:
    """The tags a request naming a preset asks for, as ``key=value`` (``key=*``: any value); None for
    presets not to use.

    A relation preset's ``type=*`` is dropped beside its own key (a query selects boundaries by
    ``boundary=administrative``); where the preset's ``addTags`` hold a tag more queries use than
    its own tags (iD's "Bus Stop" is ``public_transport=platform`` + ``bus=yes``, adding
    ``highway=bus_stop``), that tag stands for it.
    """
    tags = preset.get("tags") or {}
    if not tags or preset.get("searchable") is False:
        return None
    if any("*" in k or not isinstance(v, str) for k, v in tags.items()):
        return None  # addr:* and the like: no feature
    own = tuple(f"{k}={v}" for k, v in tags.items() if not (k == "type" and len(tags) > 1))
    added = [f"{k}={v}" for k, v in (preset.get("addTags") or {}).items()
             if isinstance(v, str) and v != "*" and f"{k}={v}" not in own and k not in ("type", "area")]
    best = max(added, key=lambda t: (prior.get(t, 0), t), default=None)
    if best is not None and prior.get(best, 0) > _prior(own, prior):
        return (best,)
    return own


def _stop_keys(lang: str) -> set[str]:
    """Keys of the cue table's words (stop words, markers, types...): a surface made of them names nothing."""
    if lang not in cues.LANGUAGES:
        return set()
    t = cues.table(lang)
    words = list(t["stop"]) + list(t["markers"]) + list(t["joiners"])
    return {key_of(w, lang) for w in words}


_QUALIFIER = re.compile(r"\s*[(（][^()（）]*[)）]\s*")


def _variants(name: str) -> list[str]:
    """The same name without its qualifier or as one of its alternatives: "学校（代表点または敷地）" is
    also "学校"; "鉄道の停車場/駅" is "鉄道の停車場" and "駅"."""
    bare = _QUALIFIER.sub(" ", name).strip()
    out = [bare] if bare and bare != name else []
    if "/" in bare:
        out += [p.strip() for p in bare.split("/") if p.strip()]
    return out


def _parts(name: str, stop: frozenset[str]) -> list[str]:
    """The shorter phrases inside a name of two words or more: iD's search finds a preset by any
    word of its name, so its terms leave them out ("School Grounds" has no term "school")."""
    words = [t.text for t in cues.tokens(name) if not t.number]
    if len(words) < 2 or is_spaceless_text(name):
        return []
    edge_ok = [len(w) > 2 and fold(w) not in stop for w in words]  # no part opens or ends on "de", "d'"
    return [" ".join(words[i:i + n]) for n in range(len(words) - 1, 0, -1) for i in range(len(words) - n + 1)
            if edge_ok[i] and edge_ok[i + n - 1]]


def preset_surfaces(schema, langs, prior) -> dict[str, list[tuple[str, tuple[str, ...], str, str, float]]]:
    """language -> [(surface, tags, role, preset id, matchScore)] from every translation file."""
    by_file: dict[str, list[str]] = defaultdict(list)
    for code in schema.languages:
        base = base_language(code)
        for lang in langs:
            if code in VARIANTS.get(lang, ()) or (lang not in VARIANTS and base == lang):
                by_file[code].append(lang)
    out: dict[str, list] = defaultdict(list)
    for code, targets in sorted(by_file.items()):
        presets = schema.translation(code).get("presets", {})
        stop_words = frozenset(fold(w) for lang in targets if lang in cues.LANGUAGES
                               for section in ("stop", "joiners", "markers") for w in cues.table(lang)[section])
        for pid, entry in presets.items():
            preset = schema.presets.get(pid)
            tags = preset_tags(preset, prior) if preset else None
            if not tags or not isinstance(entry, dict):
                continue
            match = float(preset.get("matchScore", 1.0))
            names = [t for t in [entry.get("name"), *_split(entry.get("aliases"))] if isinstance(t, str)]
            names += [v for n in names for v in _variants(n) if v not in names]
            roles = [("name", names[:1]), ("alias", names[1:]), ("term", _split(entry.get("terms"))),
                     ("part", [p for n in names for p in _parts(n, stop_words)])]
            for role, texts in roles:
                for text in texts:
                    if isinstance(text, str) and text.strip():
                        for lang in targets:
                            out[lang].append((text.strip(), tags, role, pid, match))
    return out


def _countries(location_set: dict) -> set[str]:
    out = set()
    for code in location_set.get("include", []):
        if not isinstance(code, str):
            continue
        code = code.lower().removesuffix(".geojson")
        if code.isdigit():  # 001 world, 150 Europe, 419 Latin America...
            out.update(f"{code}#{i}" for i in range(_MANY))
        else:
            out.add(code.split("-")[0])
    return out


# Words of iD's English preset names and terms that a firm's description uses for its kind or its
# industry, not for the place a request looks for ("telecommunications company" is no shop=telecommunication,
# "supermarket chain" no shop=chain).
_TRADE_STOP_WORDS = frozenset({"brand", "center", "centre", "chain", "company", "food", "gift", "hair", "beauty",
                               "logistics", "market", "service", "services", "shop", "station", "store",
                               "telecommunication"})


def trade_phrases(schema, edits: dict) -> dict[str, frozenset[str]]:
    """main tag -> the English words a Wikidata description uses for it: the tag's value, iD's preset
    name, aliases and terms, and the hand-kept ``trades`` of ``edits.json`` ("hypermarket")."""
    english = schema.translation("en").get("presets", {})
    out: dict[str, set[str]] = defaultdict(set)
    for pid, entry in english.items():
        parts = pid.split("/")
        if len(parts) != 2 or not isinstance(entry, dict):
            continue
        texts = [parts[1].replace("_", " "), entry.get("name"), *_split(entry.get("aliases")), *_split(entry.get("terms"))]
        out[f"{parts[0]}={parts[1]}"].update(t.strip().lower() for t in texts if isinstance(t, str) and t.strip())
    for main, words in edits.get("trades", {}).items():
        out[main].update(words)
    return {m: frozenset(w for w in words if w not in _TRADE_STOP_WORDS and len(w) >= 3) for m, words in out.items()}


def _described(description: str, phrases: frozenset[str]) -> int:
    """How many of a category's ``phrases`` a brand's description uses, as words or in the plural.

    >>> _described("French hypermarket brand", frozenset({"hypermarket", "grocery"}))
    1
    >>> _described("multinational fuel station chain", frozenset({"fuel", "petrol"}))
    1
    >>> _described("fuelling company", frozenset({"fuel"}))
    0
    """
    text = " " + re.sub(r"[^a-z0-9]+", " ", description.lower()) + " "
    return sum(f" {p} " in text or f" {p}s " in text for p in phrases)


def brand_surfaces(nsi: dict, langs, prior: dict[str, int], descriptions: dict[str, str] | None = None,
                   trades: dict[str, frozenset[str]] | None = None, nicknames: dict[str, str] | None = None
                   ) -> tuple[list[tuple[str, str, str, str, bool, bool]], dict[str, list], dict[str, set[str]], dict]:
    """([(surface, main tag, brand value, wikidata, local, match name)] of every brand with a Wikidata id,
    short forms, reach, stats). ``short forms``: NSI's ``matchNames`` that shorten a brand's own spelling
    (``_shortens``), by their folded key. ``local``: present in fewer than ``MIN_BRAND_COUNTRIES`` countries (kept only where no
    word shares its name); ``match name``: one of NSI's ``matchNames`` (it never takes a spelling another
    brand writes); ``reach``: wikidata -> the countries (a region code: ``001#0``...) it is in.
    ``descriptions`` (wikidata -> its English description) and ``trades`` (``trade_phrases``) choose a
    brand's main tag: the category its description names (Carrefour's hypermarkets, Shell's fuel
    stations), before the one it spans most countries in. ``nicknames`` (nickname -> wikidata): names
    people call a brand by that NSI lacks ("maccas"), kept as the brand's own spellings."""
    descriptions, trades, nicknames = descriptions or {}, trades or {}, nicknames or {}
    by_q: dict[str, list[tuple[str, dict, set[str]]]] = defaultdict(list)
    for path, group in nsi["nsi"].items():
        parts = path.split("/")
        if parts[0] != "brands" or len(parts) != 3:
            continue
        main = f"{parts[1]}={parts[2]}"
        for item in group.get("items", []):
            tags = item.get("tags", {})
            q = tags.get("brand:wikidata")
            if q and tags.get("brand"):
                by_q[q].append((main, tags, _countries(item.get("locationSet", {})), item.get("matchNames", ())))
    kept, reach_by_q, stats = [], {}, {"brands_with_wikidata": len(by_q)}
    named_main: dict[str, bool] = {}
    main_of: dict[str, tuple[str, str]] = {}
    shorts: dict[str, list] = {}
    spellings = ("brand", "brand:en", *(f"brand:{lang}" for lang in langs), "brand:zh-Hans", "brand:zh-Hant")
    for q, items in sorted(by_q.items()):
        reach = set().union(*(c for _, _, c, _ in items))
        reach_by_q[q] = reach
        local = len(reach) < MIN_BRAND_COUNTRIES
        mains, named = defaultdict(int), defaultdict(int)
        for main, tags, c, _ in items:
            mains[main] += len(c)
            named[main] += tags.get("name") == tags["brand"]
        # the category whose features carry the brand's own name (IKEA's furniture stores, not its "IKEA
        # Restaurant"s), then the one the brand spans most countries in; its advertising totems are no shop
        description = descriptions.get(q, "")
        main = max(sorted(mains), key=lambda m: (not m.startswith("advertising="),
                                                 _described(description, trades.get(m, frozenset())),
                                                 named[m] > 0, mains[m], prior.get(m, 0)))
        # the main category's widest-reaching entry's brand value (``_brand_value``)
        own = max(((len(c), tags.get("name") == tags["brand"], tags["brand"]) for m, tags, c, _ in items if m == main))[2]
        in_main = {tags["brand"] for m, tags, _, _ in items if m == main}
        named_main[q] = named[main] > 0
        main_of[q] = (main, own)
        for entry_main, tags, _, match_names in items:
            # the names mappers write for the brand, whichever of its categories lists them ("leclerc",
            # of E.Leclerc's fuel stations)
            for name in match_names:
                if _names_the_brand(name, tags["brand"]):
                    kept.append((name, main, tags["brand"], q, local, True))
                elif _shortens(name, [v for k, v in tags.items() if k.split(":")[0] in ("brand", "name")]):
                    shorts.setdefault("".join(fold(name).split()), [name, [main, f"brand={tags['brand']}"], q])
            if entry_main != main:
                # an entry's own brand value that no main-category entry writes keeps its category
                # ("マツモトキヨシ", Japan's drugstores, beside "松本清", Taiwan's pharmacies)
                if tags["brand"] not in in_main and not entry_main.startswith("advertising="):
                    kept.append((tags["brand"], entry_main, tags["brand"], q, local, False))
                continue
            for key in spellings:
                if tags.get(key):
                    kept.append((tags[key], main, _brand_value(tags[key], tags["brand"], own), q, local, False))
    for nickname, q in sorted(nicknames.items()):  # "maccas", "マクド": read like the brand's own spellings
        if q in main_of:
            kept.append((nickname, *_nickname_value(nickname, main_of[q], by_q[q]), q, False, False))
    # where two brands share a spelling, the one whose shops carry its name comes first and keeps it
    # ("Edeka"'s supermarkets, not the "EDEKA Getränkemarkt" beverage stores, a brand of their own)
    kept.sort(key=lambda row: not named_main[row[3]])
    stats["brands_kept"] = len({q for _, _, _, q, local, _ in kept if not local})
    stats["short_forms"] = len(shorts)
    return kept, shorts, reach_by_q, stats


def _script(text: str) -> str | None:
    """The script of ``text``'s first letter (None without one)."""
    return next((script_of(c) for c in text if c.isalpha()), None)


def _nickname_value(nickname: str, main_own: tuple[str, str], items: list) -> tuple[str, str]:
    """(category, brand value) a nickname stands for: the brand's main ones, unless the nickname is in
    another script than that value and an entry's value is in the nickname's ("マツキヨ": Japan's
    "マツモトキヨシ" drugstores, not "松本清 Matsumoto Kiyoshi"; "파바": "파리바게뜨").

    >>> items = [("shop=bakery", {"brand": "Paris Baguette"}, {"us"}, ()), ("shop=bakery", {"brand": "파리바게뜨"}, {"kr"}, ())]
    >>> _nickname_value("파바", ("shop=bakery", "Paris Baguette"), items), _nickname_value("pb", ("shop=bakery", "Paris Baguette"), items)
    (('shop=bakery', '파리바게뜨'), ('shop=bakery', 'Paris Baguette'))
    >>> items = [("shop=convenience", {"brand": "7-Eleven"}, {"us"}, ()),
    ...          ("shop=convenience", {"brand": "7-ELEVEN", "name": "セブン-イレブン"}, {"jp"}, ())]
    >>> _nickname_value("セブン", ("shop=convenience", "7-Eleven"), items)
    ('shop=convenience', '7-ELEVEN')
    """
    main, own = main_own
    if _script(nickname) == _script(own):
        return main, own
    # (the main category's entries first: "сбер" is Сбербанк's banks, not its payment terminals)
    same = sorted(((m == main, len(c), tags["brand"], m) for m, tags, c, _ in items
                   if _script(tags["brand"]) == _script(nickname)), reverse=True)
    # else the entry whose name is in the nickname's script: "セブン" is Japan's 7-ELEVEN ("セブン-イレブン")
    same = same or sorted(((m == main, len(c), tags["brand"], m) for m, tags, c, _ in items
                           if _script(tags.get("name", "")) == _script(nickname)), reverse=True)
    return (same[0][3], same[0][2]) if same else (main, own)


def _brand_value(spelling: str, entry_brand: str, widest: str) -> str:
    """The brand value a spelling of one NSI entry stands for: the entry's own, unless the spelling is
    in the script of the brand's widest-reaching value and the entry's own is not ("Total", an
    Arabic entry's brand:en, is TotalEnergies, not "طوطال"; Japan's "ローソン" stays "LAWSON").

    >>> _brand_value("Total", "طوطال", "TotalEnergies"), _brand_value("ローソン", "LAWSON", "Lawson")
    ('TotalEnergies', 'LAWSON')
    """
    if _script(spelling) == _script(widest) != _script(entry_brand):
        return widest
    return entry_brand


def _names_the_brand(match_name: str, brand: str) -> bool:
    """Whether one of NSI's ``matchNames`` (the names mappers write for the brand) is the brand as people
    type it: the brand's words and more ("costa coffee", "shell station") or the last of its words
    ("leclerc" of "E.Leclerc"). Others name a sub-brand or a generic thing ("coles", "station-service").

    >>> _names_the_brand("costa coffee", "Costa"), _names_the_brand("leclerc", "E.Leclerc")
    (True, True)
    >>> _names_the_brand("station-service", "E.Leclerc"), _names_the_brand("coles express", "Shell")
    (False, False)
    """
    name, own = folded_surface(match_name).split(), folded_surface(brand).split()
    if not name or not own or name == own:
        return False
    if len(name) > len(own) and any(name[i:i + len(own)] == own for i in range(len(name) - len(own) + 1)):
        return True
    return len(name) == 1 and len(own) > 1 and name[0] == own[-1] and len(name[0]) >= LOCAL_BRAND_LETTERS + 1


def _shortens(match_name: str, spellings: list[str]) -> bool:
    """Whether one of NSI's ``matchNames`` is a short form of one of the brand's own spellings: in a
    script without spaces, its letters in order from the spelling's first ("ファミマ" of
    "ファミリーマート", "스벅" of "스타벅스"); in others, one word of ``LOCAL_BRAND_LETTERS`` letters or
    more that opens a one-word spelling ("сбер" of "Сбербанк"). Former brands and nicknames are not
    ("サンクス", "circle k" of FamilyMart; "별다방" of 스타벅스).

    >>> _shortens("ファミマ", ["FamilyMart", "ファミリーマート"]), _shortens("сбер", ["Сбербанк"])
    (True, True)
    >>> _shortens("サンクス", ["ファミリーマート"]), _shortens("별다방", ["스타벅스"]), _shortens("coles", ["Shell"])
    (False, False, False)
    """
    name = "".join(fold(match_name).split())
    for spelling in spellings:
        own = "".join(fold(spelling).split())
        if len(own) <= len(name) or not name or name[0] != own[0]:
            continue
        if is_spaceless_text(name) and is_spaceless_text(own):
            if len(name) >= SPACELESS_BRAND_LETTERS and shortens(name, own):
                return True
        elif " " not in match_name.strip() and " " not in spelling.strip() and len(name) >= LOCAL_BRAND_LETTERS \
                and own.startswith(name) and len(own) - len(name) >= 3:
            return True
    return False


def _dictionaries(langs):
    """language -> simplemma's form -> lemma table (bytes -> bytes), for the languages with a stemmer."""
    from simplemma.strategies.dictionaries import DefaultDictionaryFactory

    factory = DefaultDictionaryFactory()
    for lang in langs:
        if STEMMERS.get(lang) is not None:
            yield lang, factory.get_dictionary(lang)._dict


def inflected_forms(dictionaries, words_by_lang: dict[str, set[str]]) -> dict[str, dict[str, str]]:
    """language -> {folded form: folded lemma} for forms whose stem is not their lemma's stem."""
    out: dict[str, dict[str, str]] = {}
    for lang, mapping in dictionaries.items():
        words = words_by_lang[lang]
        table: dict[str, str] = {}
        for form_b, lemma_b in mapping.items():
            lemma = fold(lemma_b.decode())
            if lemma not in words:
                continue
            form = fold(form_b.decode())
            if form == lemma or form in words or not form.isalpha():
                continue  # a word of some surface is its own word ("parking" is no "park")
            if len(lemma) < MIN_LEMMA_LETTERS or len(form) > len(lemma) + MAX_ENDING_LETTERS:
                continue  # short lemmas collide ("at", "ol"); long endings are verbs' persons and tenses
            if word_keys(form, lang) != word_keys(lemma, lang):
                table.setdefault(form, lemma)
        out[lang] = dict(sorted(table.items()))
    return out


def _words_not_brands(raw, brand_rows) -> dict[str, set[str]]:
    """Every word of the surfaces, folded, less a search term that is a brand of its own preset's tag:
    iD's Polish supermarket lists "lidl" among its terms, which makes Lidl no common word ("supermarkets
    that are not lidl")."""
    spelled = {(folded_surface(surface), main) for surface, main, *_ in brand_rows}
    return {lang: {w for s, tags, role, *_ in raw[lang]
                   if not (role == "term" and len(tags) == 1 and (folded_surface(s), tags[0]) in spelled)
                   for w in fold(s).split()} for lang in LANGUAGES}


def _common_words(dictionaries, words_by_lang) -> tuple[dict, set[str]]:
    """What tells a common word: simplemma's tables and every surface word and cue word."""
    words = set().union(*words_by_lang.values())
    for lang in cues.LANGUAGES:
        t = cues.table(lang)
        words.update(fold(w) for section in ("stop", "markers", "joiners") for w in t[section])
    return dictionaries, words


# Marks inside a brand written without spaces that people leave out ("セブン-イレブン", "ファミリー・マート").
_SPACELESS_MARKS = re.compile(r"[-‐‑–・･·.]")


def _local_brand_blocklist(common) -> set[str]:
    """Words a local brand may not be spelled as: the lower-case forms of the dictionaries
    ``build_places.lowercase_words`` reads (the gazetteer's rule), and the gazetteer's cities
    (``nl/data/places.json.gz``, when built; not its towns: a chain is asked for more often than a
    town under its ``min_population`` spelled like it, "Hoogvliet", "Pão de Açúcar", "Spoleto")."""
    dictionaries, _words = common
    out = lowercase_words(dictionaries)
    places = ROOT / "nl" / "data" / "places.json.gz"
    if places.is_file():
        data = json.loads(gzip.decompress(places.read_bytes()))
        least = data["source"]["min_population"]
        out.update(name for name, (_english, population) in data["names"].items() if population >= least)
    return out


def _is_common(key: str, common) -> bool:
    """A brand spelled like a word of some language ("Shell", "Next", "Spar", "Total")."""
    dictionaries, words = common
    if key in words or " " in key:
        return key in words
    # lower case in English's table (the others list loanwords and brands too: "lidl", "aldi")
    return key.encode() in dictionaries["en"]


def write_prior(overpassnl: Path) -> None:
    """Count how many OverpassNL training queries use each tag (``key=value``, ``key=*``)."""
    from geoql.eval.dataset import read_example_lines
    from geoql.retrieval.gold import query_tags

    counts: dict[str, int] = defaultdict(int)
    for query in read_example_lines(overpassnl / "dataset.train.query", "--write-prior"):
        for tag in {t.tag for t in query_tags(query)} | {f"{t.key}=*" for t in query_tags(query)}:
            counts[tag] += 1
    about = ("How many OverpassNL training queries use each tag (scripts/build_nl_lexicon.py --write-prior): "
             "the likelier meaning of a surface that names several tags.")
    data = {"about": about, "counts": dict(sorted(counts.items()))}
    write_atomic(PRIOR, (json.dumps(data, ensure_ascii=False, indent=0) + "\n").encode())


def _seen(count: int) -> float:
    return 1.0 if count >= COMMON else RARE if count else UNSEEN


def _prior(tags: tuple[str, ...], counts: dict[str, int]) -> int:
    return min(counts.get(t, 0) for t in tags)


def _scored(by_tags: dict[tuple[str, ...], tuple], prior: dict[str, int], dropped) -> list[list]:
    """Rows ``[surface, tags, score, preset, role]`` of one surface that names ``by_tags``' tags."""
    # a tag the training queries use often is the likelier meaning of an ambiguous surface
    pull = {tags: c[0] * (1.0 + _prior(tags, prior)) ** PRIOR_POWER for tags, c in by_tags.items()}
    ranked = sorted(by_tags.items(), key=lambda kv: (-pull[kv[0]], kv[0]))
    total = sum(pull.values())
    rows = []
    for tags, (weight, surface, pid, role) in ranked[:KEEP_PER_KEY]:
        # ambiguity costs: a surface that names several tags is a weaker cue for each; a tag few
        # training queries use is an unlikely request
        score = round(weight * _seen(_prior(tags, prior)) * (pull[tags] / total) ** 0.5, 3)
        if score >= MIN_SCORE:  # a row under the reader's threshold could never be returned
            rows.append([surface, list(tags), score, pid, role[0]])
        else:
            dropped["under MIN_SCORE"] += 1
    return rows


def build(cache_dir: Path) -> tuple[dict, dict[str, dict]]:
    """(sources.json, file name -> content): one file per language and one of brands."""
    schema = load_schema(NPM_REGISTRY, SCHEMA_VERSION, cache_dir)
    nsi, descriptions = fetch_nsi(cache_dir)
    edits = json.loads(EDITS.read_text(encoding="utf-8"))
    prior = json.loads(PRIOR.read_text(encoding="utf-8"))["counts"]
    raw = preset_surfaces(schema, LANGUAGES, prior)
    for lang, rows in edits["add"].items():
        for surface, tags in rows:
            raw[lang].append((surface, tuple(tags), "name", "edit", 1.0))
    # a part of a name that is some preset's whole name or alias is that preset's, not a part
    for lang in LANGUAGES:
        whole = {fold(s) for s, _, role, _, _ in raw[lang] if role in ("name", "alias")}
        raw[lang] = [r for r in raw[lang] if r[2] != "part" or fold(r[0]) not in whole]
    removed = {lang: {fold(s) for s in rows} for lang, rows in edits["remove"].items()}

    # every word of the surfaces, folded: the lemmas whose irregular forms are kept
    words_by_lang = {lang: {w for s, *_ in raw[lang] for w in fold(s).split()} for lang in LANGUAGES}
    dictionaries = dict(_dictionaries(LANGUAGES))
    forms = inflected_forms(dictionaries, words_by_lang)

    languages = {}
    dropped = defaultdict(int)
    for lang in LANGUAGES:
        stop = _stop_keys(lang)
        # key -> the surface's own folded words -> tags -> (weight, surface, preset, role): words that only
        # share a stem ("park", "parking") are no rivals; the request's spelling picks between them
        cands: dict[str, dict[str, dict[tuple[str, ...], tuple]]] = defaultdict(lambda: defaultdict(dict))
        for surface, tags, role, pid, match in raw[lang]:
            folded = fold(surface)
            if folded in removed.get(lang, ()) and pid != "edit":
                dropped["edits"] += 1
                continue
            key = key_of(surface, lang, forms.get(lang, {}))
            if not key or key in stop or all(part in stop for part in key.split()):
                dropped["stop words"] += 1
                continue
            weight = ROLE_WEIGHT[role] * min(1.0, match)
            group = cands[key][" ".join(t.fold for t in cues.tokens(folded))]
            best = group.get(tags)
            if best is None or weight > best[0]:
                group[tags] = (weight, surface, pid, role)
        keys = {}
        for key, groups in sorted(cands.items()):
            rows = []
            for _words, by_tags in sorted(groups.items()):
                rows += _scored(by_tags, prior, dropped)
            if rows:
                keys[key] = rows
        # the irregular forms of words the kept surfaces still use
        kept_words = {w for k in keys for w in k.split()}
        lang_forms = {f: lemma for f, lemma in forms.get(lang, {}).items() if word_keys(lemma, lang) in kept_words}
        languages[lang] = {"format": FORMAT, "language": lang, "stemmer": STEMMERS.get(lang),
                           "max_words": max(k.count(" ") + 1 for k in keys),
                           "max_letters": max(len(k) for k in keys),
                           "keys": keys, "forms": lang_forms}

    nicknames = edits.get("nicknames", {})
    brand_rows, shorts, reach, brand_stats = brand_surfaces(nsi, LANGUAGES, prior, descriptions,
                                                               trade_phrases(schema, edits), nicknames)
    common = _common_words(dictionaries, _words_not_brands(raw, brand_rows))
    brands: dict[str, list] = {}
    local_words = _local_brand_blocklist(common)
    local_kept: set[str] = set()
    # local brands spelled like a word ("continente", "biedronka"): never read as the word's brand, only
    # where the reading knows a brand is meant (``Lexicon.brand``: "supermercados que não sejam continente")
    local_words_brands: dict[str, list] = {}
    # the brands of many countries first: a local brand never takes the spelling of one of them; a
    # brand's own spellings before the names mappers write for it ("costa coffee"): those never take one
    for surface, main, brand, q, local, match_name in sorted(brand_rows, key=lambda row: (row[5], row[4])):
        key = folded_surface(surface)
        if is_spaceless_text(key):  # read as a substring, like the language's own surfaces
            key = "".join(fold(surface).split())
        if len(key.replace(" ", "")) < 2:
            continue
        if local:
            # a brand of one or two countries counts only where nothing else is spelled so: no word of
            # any language's dictionary or table ("continente", "biedronka"), no city, four letters or more
            if key in brands and brands[key][2] != q \
                    or len(key.replace(" ", "")) < (SPACELESS_BRAND_LETTERS if is_spaceless_text(key) else LOCAL_BRAND_LETTERS):
                continue
            # (one shorter than a word in a script without spaces is read only where a brand is meant: the
            # lexicon reads such keys inside longer words, "リラク" in "リラクゼーション")
            if _is_common(key, common) or key in local_words \
                    or is_spaceless_text(key) and len(key.replace(" ", "")) < LOCAL_BRAND_LETTERS:
                if surface == brand:
                    local_words_brands.setdefault(key, [surface, [main, f"brand={brand}"], q])
                continue
            local_kept.add(q)
        # the entry whose own brand tag is this spelling gives the brand value ("Starbucks", not "스타벅스")
        prev = brands.get(key)
        if match_name and prev is not None:
            continue
        if prev is None or (surface == brand and prev[1][1] != f"brand={surface}"):
            # (a nickname is hand-kept to be read as the brand, whatever word shares it: "mcdo")
            brands[key] = [surface, [main, f"brand={brand}"], q, int(_is_common(key, common) and surface not in nicknames)]
        bare = _SPACELESS_MARKS.sub("", key) if is_spaceless_text(key) else key
        if bare != key and len(bare) >= 2:
            # "セブン-イレブン" as people type it: "セブンイレブン"
            brands.setdefault(bare, brands[key])
    brand_stats["local_brands_kept"] = len(local_kept)
    brand_stats["brand_terms"] = _brand_terms(languages, brand_rows, reach, dictionaries["en"])
    brand_stats["local_brands_spelled_as_words"] = len(local_words_brands)
    languages["brands"] = {"format": FORMAT, "max_words": max(k.count(" ") + 1 for k in brands),
                           "max_letters": max(len(k) for k in brands if is_spaceless_text(k)),
                           "keys": dict(sorted(brands.items())),
                           "words": {k: v for k, v in sorted(local_words_brands.items()) if k not in brands},
                           # short forms ("ファミマ", "сбер"), read only where a brand is meant (``Lexicon.brand``)
                           "short": {k: v for k, v in sorted(shorts.items()) if k not in brands}}
    sources = {
        "format": FORMAT,
        "sources": {
            "@openstreetmap/id-tagging-schema": {"version": schema.version, "integrity": schema.integrity, "licence": "ISC"},
            NSI_PACKAGE: {"version": NSI_VERSION, "integrity": NSI_INTEGRITY, "licence": "BSD-3-Clause"},
            "simplemma": {"version": _version("simplemma"), "licence": "MIT"},
            "snowballstemmer": {"version": stemmer_version(), "licence": "BSD-3-Clause"},
        },
        "stats": {"dropped": dict(dropped), **brand_stats},
        "files": sorted(languages),
    }
    return sources, languages


# Countries where each language is spoken by most people: a term is a brand only where the brand is sold.
LANGUAGE_COUNTRIES = {"en": "gb us ie ca au nz", "de": "de at ch li lu", "fr": "fr be ch lu mc ca",
                      "es": "es mx ar co cl pe ve ec", "it": "it ch sm", "pt": "pt br", "ru": "ru by kz",
                      "zh": "cn tw sg", "yue": "hk mo", "ja": "jp", "ko": "kr", "pl": "pl", "tr": "tr",
                      "nl": "nl be"}


def _brand_terms(languages: dict[str, dict], brand_rows, reach: dict[str, set[str]], english: dict) -> int:
    """Give a preset's term that is a brand of that preset's tag, sold where the language is spoken, the
    brand too: iD's Polish supermarket lists "biedronka" and "lidl" among its terms, and a request that
    writes them means the chain ("biedronka w gdańsku", "sklepy oprócz biedronki"), even where the name
    is also a word of the language ("biedronka", a ladybird) and the brand table leaves it out. An
    English word is no brand ("petrol", "pizza"). Returns how many rows were given a brand."""
    # (every brand of a spelling: folded, Polish "Żabka" and Czech "Žabka" are one, told apart by where they are)
    by_spelling: dict[str, dict[str, tuple[str, str, str]]] = defaultdict(dict)
    for surface, main, brand, q, _local, _match in brand_rows:
        by_spelling[folded_surface(surface)].setdefault(q, (main, brand, q))
    n = 0
    for lang, data in languages.items():
        countries = set(LANGUAGE_COUNTRIES.get(lang, "").split())
        for rows in data["keys"].values():
            for row in rows:
                surface, tags, role = row[0], row[1], row[4]
                spelled = folded_surface(surface)
                if role != "t" or spelled not in by_spelling or spelled.encode() in english:
                    continue
                hit = next((h for h in by_spelling[spelled].values() if tags == [h[0]]
                            and any("#" in c or c in countries for c in reach.get(h[2], ()))), None)
                if hit is not None:
                    row[1] = [*tags, f"brand={hit[1]}"]
                    n += 1
    return n


def _version(dist: str) -> str:
    from importlib.metadata import version

    return version(dist)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache-dir", type=Path, default=None, help="where the package tarballs are cached")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--write-prior", type=Path, default=None, metavar="OVERPASSNL_DIR",
                    help="recount scripts/nl_lexicon/prior.json from OVERPASSNL_DIR/dataset.train.query first")
    args = ap.parse_args(argv)
    if args.write_prior:
        write_prior(args.write_prior)
    t0 = time.time()
    sources, files = build(args.cache_dir or default_cache_dir())
    args.out.mkdir(parents=True, exist_ok=True)
    total = 0
    for name, data in files.items():
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        blob = gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)
        write_atomic(args.out / f"{name}.json.gz", blob)
        total += len(blob)
        print(f"{name}: {len(data['keys']):,} keys, {len(data.get('forms', {})):,} forms, {len(blob):,} bytes")
    write_atomic(args.out / "sources.json", (json.dumps(sources, ensure_ascii=False, indent=1) + "\n").encode())
    print(f"{args.out}: {total:,} bytes in all; {sources['stats']}; {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
