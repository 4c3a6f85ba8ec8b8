"""How well the intent frame reads requests, checked against what their gold queries say.

    python scripts/frame_accuracy.py OSMNL_DIR [--langs en,de,...] [--overpassnl DIR] [--samples N]

For each language, ``OSMNL_DIR/dev.<lang>.{nl,query}`` (line i of one with line i of the
other; ``--overpassnl DIR`` adds OverpassNL's ``dataset.dev.{nl,query}`` as ``orig``).
A frame field is compared with the gold query's syntax:

* view: ``in_view`` against ``{{bbox}}`` in the gold;
* place: a place in the frame against a ``geocodeArea`` (or ``area["name"=...]``) in
  the gold; ``place=`` is the share whose folded place equals (or contains, or is
  contained in) the gold's, or one of its learned spellings: meaningful only where the
  request keeps the gold's script (the gold spells places one way, the requests are
  localised, so Cyrillic/CJK places never equal the gold's: eyeball ``--samples``);
* count: ``count`` in ``output`` against ``out count`` / ``::count``; csv, geom, center,
  meta likewise (precision: of the frames that ask, how many golds do);
* around: against ``around:``; coords: the frame's point among the gold's around numbers;
* ids, uids, users, dates: the frame's values against the gold's (equal sets);
* negated: a negated phrase against a ``!=`` / ``!~`` filter.

P is precision (frame says yes, gold agrees), R recall (gold says yes, frame finds it),
acc the share of lines where both agree.
"""

from __future__ import annotations

import argparse
import random
import re
import time
from collections import defaultdict
from pathlib import Path

from geoql.nl.frame import read_frame
from geoql.nl.text import fold

LANGS = ("en", "de", "fr", "ru", "zh", "yue", "ja", "ko")


def _lines(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return text[:-1].split("\n") if text.endswith("\n") else text.split("\n")


def gold_facts(query: str) -> dict:
    places = re.findall(r'\{\{geocodeArea:\s*"?([^"}]+?)"?\s*\}\}', query)
    # area["name"="X"], area["admin_level"="4"]["name:en"="X"], area["ISO3166-1"="FR"]: a named area
    places += re.findall(r'area(?:\[[^\]]*\])*?\[\s*"?(?:name(?::[a-z]+)?|ISO3166-[12](?::alpha2)?|'
                         r'int_name|official_name|alt_name)"?\s*[=~]\s*"([^"]+)"', query)
    around = re.findall(r"around(?:\.\w+)?:\s*([\d.]+)((?:\s*,\s*-?[\d.]+)*)", query)
    coords = set()
    for _, rest in around:
        coords.update(float(x) for x in re.findall(r"-?\d+\.\d+", rest))
    ids = set()
    for typ, body in re.findall(r"\b(node|way|relation|rel)\s*\(\s*(?:id:)?\s*([\d,\s]+)\)", query):
        ids.update((("relation" if typ == "rel" else typ), int(x)) for x in re.findall(r"\d+", body))
    types = set(re.findall(r"(?<![\w.\"])(node|way|relation|nwr|nw|nr|wr)(?=\s*[\[\(.])", query))
    expanded = set()
    for t in types:
        expanded |= {"nwr": {"node", "way", "relation"}, "nw": {"node", "way"}, "nr": {"node", "relation"},
                     "wr": {"way", "relation"}}.get(t, {t})
    return {
        "view": "{{bbox}}" in query,
        "places": places,
        "count": bool(re.search(r"out\s+count|::count", query)),
        "csv": bool(re.search(r"\[out:csv", query)) and not re.search(r"\[out:csv\(\s*::count", query),
        "geom": bool(re.search(r"out[^;]*\bgeom\b", query)),
        "center": bool(re.search(r"out[^;]*\bcenter\b", query)),
        "meta": bool(re.search(r"out[^;]*\bmeta\b", query)),
        "around": bool(around),
        "coords": coords,
        "ids": ids,
        "uids": {int(x) for b in re.findall(r"uid:\s*([\d,\s]+)", query) for x in re.findall(r"\d+", b)},
        "users": set(re.findall(r'user(?:_touched)?:\s*"([^"]+)"', query)),
        "dates": set(re.findall(r"(\d{4}-\d{2}-\d{2})T", query)),
        "negated": bool(re.search(r"!=|!~", query)),
        "types": expanded,
    }


def _place_match(frame_place: str, gold: list[str], aliases: dict) -> bool:
    fp = fold(frame_place)
    for g in gold:
        fg = fold(g)
        forms = {fg, fold(g.split(",")[0])} | {fold(a) for a in aliases.get(g, ())}
        if any(fp == f or (len(fp) >= 3 and (fp in f or f in fp)) for f in forms):
            return True
    return False


class Tally:
    def __init__(self):
        self.c = defaultdict(int)

    def binary(self, name, said, truth):
        self.c[name, "tp"] += bool(said and truth)
        self.c[name, "fp"] += bool(said and not truth)
        self.c[name, "fn"] += bool(truth and not said)
        self.c[name, "agree"] += bool(said) == bool(truth)

    def pr(self, name, n):
        tp, fp, fn = self.c[name, "tp"], self.c[name, "fp"], self.c[name, "fn"]
        p = tp / (tp + fp) if tp + fp else float("nan")
        r = tp / (tp + fn) if tp + fn else float("nan")
        return p, r, self.c[name, "agree"] / n if n else float("nan"), tp + fn


def measure(requests, queries, lang, aliases) -> tuple[dict, list]:
    t = Tally()
    n = len(requests)
    place_eq = place_with_gold = lang_ok = 0
    vals = defaultdict(lambda: [0, 0])  # name -> [equal, gold has any]
    samples = []
    t0 = time.perf_counter()
    frames = [read_frame(nl) for nl in requests]
    elapsed = time.perf_counter() - t0
    for nl, q, f in zip(requests, queries, frames):
        g = gold_facts(q)
        lang_ok += f.language == lang or (lang == "orig" and f.language == "en")
        t.binary("view", f.in_view, g["view"])
        t.binary("place", f.place is not None, g["places"])
        if g["places"]:
            place_with_gold += 1
            if f.place and _place_match(f.place, g["places"], aliases):
                place_eq += 1
            samples.append((nl, f.place, g["places"]))
        for kind in ("count", "csv", "geom", "center", "meta"):
            t.binary(kind, kind in f.output, g[kind])
        t.binary("around", f.around is not None, g["around"])
        t.binary("negated", bool(f.negated), g["negated"])
        t.binary("types", bool(f.types), g["types"] and g["types"] != {"node", "way", "relation"})
        for name, mine, gold in (("ids", set(f.ids), g["ids"]), ("uids", set(f.uids), g["uids"]),
                                 ("users", set(f.users), g["users"]), ("dates", set(f.dates), g["dates"]),
                                 ("coords", set(f.coords or ()), g["coords"] if f.coords else set())):
            if gold or mine:
                vals[name][1] += 1
                vals[name][0] += (mine == gold) if name != "coords" else mine <= gold and bool(mine)
    row = {"n": n, "lang": lang_ok / n, "ms": elapsed / max(n, 1) * 1000,
           "place=": place_eq / place_with_gold if place_with_gold else float("nan")}
    for name in ("view", "place", "count", "csv", "geom", "center", "meta", "around", "negated", "types"):
        row[name] = t.pr(name, n)
    for name, (eq, any_) in vals.items():
        row[name + "="] = (eq / any_ if any_ else float("nan"), any_)
    return row, samples


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("osmnl", help="folder with dev.<lang>.{nl,query}")
    p.add_argument("--langs", default=",".join(LANGS))
    p.add_argument("--overpassnl", help="OverpassNL folder: adds its dev split as 'orig' (and learns place spellings)")
    p.add_argument("--samples", type=int, default=0, help="print N random (request, frame place, gold places) per language")
    args = p.parse_args(argv)
    aliases = {}
    sets = []
    if args.overpassnl:
        from geoql.eval.faithfulness import learn_place_aliases
        d = Path(args.overpassnl)
        aliases = learn_place_aliases(zip(_lines(d / "dataset.train.nl"), _lines(d / "dataset.train.query")))
        sets.append(("orig", d / "dataset.dev.nl", d / "dataset.dev.query"))
    for lang in args.langs.split(","):
        sets.append((lang, Path(args.osmnl) / f"dev.{lang}.nl", Path(args.osmnl) / f"dev.{lang}.query"))
    print("P/R/acc per field; '=' rows: share of lines (with a value on either side) whose values are equal")
    head = ["lang", "n", "lang%", "view P/R", "place P/R", "place=", "count P/R", "around P/R", "negated P/R",
            "types P", "csv P", "geom P", "center P", "meta P", "ids=", "uids=", "users=", "dates=", "coords=", "ms"]
    print(" | ".join(head))
    rng = random.Random(0)
    for lang, nl_path, q_path in sets:
        row, samples = measure(_lines(nl_path), _lines(q_path), lang, aliases)

        def pr(k):
            pp, rr, _, _ = row[k]
            return f"{pp:.2f}/{rr:.2f}"

        cells = [lang, str(row["n"]), f"{row['lang']:.3f}", pr("view"), pr("place"), f"{row['place=']:.2f}",
                 pr("count"), pr("around"), pr("negated"), f"{row['types'][0]:.2f}", f"{row['csv'][0]:.2f}",
                 f"{row['geom'][0]:.2f}", f"{row['center'][0]:.2f}", f"{row['meta'][0]:.2f}"]
        for k in ("ids=", "uids=", "users=", "dates=", "coords="):
            v = row.get(k, (float("nan"), 0))
            cells.append(f"{v[0]:.2f} ({v[1]})")
        cells.append(f"{row['ms']:.2f}")
        print(" | ".join(cells))
        for nl, place, gold in rng.sample(samples, min(args.samples, len(samples))):
            print(f"    {place!s:30.30} <- {gold} | {nl[:90]}")


if __name__ == "__main__":
    main()
