"""Write tests/index/data/id-tagging-schema-7.2.0-subset/: real schema files, trimmed.

Keeps the presets whose tags the first 300 OverpassNL training queries use, plus a
few named ones the tests look up, the fields on their keys, and matching translations: English, and
the same presets and fields in a few other languages (TRANSLATED) for the multilingual tests.
"""
import json
import re
import sys
import tarfile
from pathlib import Path


TRANSLATED = ("de", "fr", "ru", "zh-CN", "yue", "ja", "ko")


def main(tgz: str, out_dir: str, train_queries: str) -> None:
    out = Path(out_dir)
    want_extra = {"craft/beekeeper", "amenity/post_box", "amenity/cafe", "amenity/bench", "shop/bakery",
                  "amenity/drinking_water", "leisure/playground", "amenity/restaurant", "tourism/hotel",
                  "amenity/vending_machine/parking_tickets", "amenity/vending_machine", "amenity/pharmacy", "tourism/museum"}
    with tarfile.open(tgz) as t:
        def load(p): return json.load(t.extractfile("package/dist/" + p))
        presets, fields, en, dep, ti = (load("presets.json"), load("fields.json"), load("translations/en.json"),
                                        load("deprecated.json"), load("taginfo.json"))
        others = {lang: load(f"translations/{lang}.json") for lang in TRANSLATED}
    used = set()
    for line in open(train_queries).read().split("\n")[:300]:
        for k, v in re.findall(r'\["([^"]+)"="([^"]+)"\]', line):
            used.add((k, v))
    keep = {pid: p for pid, p in presets.items()
            if pid in want_extra or any((k, v) in used for k, v in (p.get("tags") or {}).items())}
    keep = {pid: {f: p[f] for f in ("tags", "addTags", "geometry", "searchable", "name") if f in p} for pid, p in keep.items()}
    keys = {k for p in keep.values() for k in (p.get("tags") or {})}
    fkeep = {fid: f for fid, f in fields.items() if f.get("key") in {"cuisine", "craft", "drinking_water", "amenity", "shop", "bench", "backrest"} or fid == "fuel/fuel_multi"}
    tr = en["en"]["presets"]
    sub_en = {"en": {"presets": {"presets": {k: tr["presets"][k] for k in keep if k in tr["presets"]},
                                 "fields": {k: tr["fields"][k] for k in fkeep if k in tr["fields"]},
                                 "categories": {}}}}
    sub_dep = [d for d in dep if set(d.get("old", {})) & keys][:40]
    sub_ti = dict(ti); pairs = {(k, v) for p in keep.values() for k, v in p["tags"].items()}
    sub_ti["tags"] = [r for r in ti["tags"] if (r.get("key"), r.get("value")) in pairs]
    out.mkdir(parents=True, exist_ok=True)
    subs = [(f"translations/{lang}.json", {lang: {"presets": {
        "presets": {k: v for k, v in tree[lang]["presets"]["presets"].items() if k in keep},
        "fields": {k: v for k, v in tree[lang]["presets"]["fields"].items() if k in fkeep}, "categories": {}}}})
        for lang, tree in others.items()]
    for name, data in [("presets.json", keep), ("fields.json", fkeep), ("translations/en.json", sub_en),
                       ("deprecated.json", sub_dep), ("taginfo.json", sub_ti)] + subs:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
    print(len(keep), "presets", len(fkeep), "fields", len(sub_dep), "deprecations", len(sub_ti["tags"]), "taginfo rows")


if __name__ == "__main__":  # python make_subset.py TARBALL OUT_DIR dataset.train.query
    main(*sys.argv[1:4])
