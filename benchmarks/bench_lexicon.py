"""The feature lexicon's cold cost: what its first lookup adds to a fresh process (a cold `geoql compile`).

    .venv/bin/python benchmarks/bench_lexicon.py [--runs 7]

Per language, in a new process each run: the import of ``geoql.nl.lexicon`` and the first
``lookup`` (its language's file, the brands, the Snowball stemmer), and then a warm lookup.
Before the lexicon a request paid nothing here, so the "before" side of the ratio is the cold
cost of the step it sits beside, ``geoql.nl.frame.read_frame`` (the cue tables), measured in the
same processes: the lexicon's cold cost as a multiple of the frame's. A Latin-script request whose
words its language does not know also reads the other Latin-script languages (``de -> all``).
Medians of ``--runs``; take them under the shared lock, on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

REQUESTS = {
    "en": ("Tankstellen in Stuttgart", "en"),  # misread as English: the foreign languages are read too
    "en-known": ("car parks in Dublin", "en"),
    "de": ("Museen in Berlin", "de"),
    "ru": ("Кафе в Москве", "ru"),
    "zh": ("成都的博物馆", "zh"),
    "ja": ("東京のカフェ", "ja"),
}

CHILD = r"""
import json, sys, time
text, lang = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
from geoql.nl.frame import read_frame
t1 = time.perf_counter()
read_frame(text)
t2 = time.perf_counter()
from geoql.nl.lexicon import lookup
t3 = time.perf_counter()
found = lookup(text, lang)
t4 = time.perf_counter()
lookup(text, lang)
t5 = time.perf_counter()
print(json.dumps({"frame": (t2 - t0) * 1e3, "lexicon_import": (t3 - t2) * 1e3, "lexicon_first": (t4 - t2) * 1e3,
                  "lexicon_warm": (t5 - t4) * 1e3, "found": [m.tags for m in found]}))
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args(argv)
    print("| request | frame cold ms | lexicon import ms | lexicon first lookup ms (import included) | warm ms | lexicon / frame |")
    print("|---|---|---|---|---|---|")
    for name, (text, lang) in REQUESTS.items():
        runs = []
        for _ in range(args.runs):
            out = subprocess.run([sys.executable, "-c", CHILD, text, lang], capture_output=True, text=True, check=True)
            runs.append(json.loads(out.stdout))
        med = {k: statistics.median(r[k] for r in runs) for k in ("frame", "lexicon_import", "lexicon_first", "lexicon_warm")}
        print(f"| {text} ({lang}) | {med['frame']:.1f} | {med['lexicon_import']:.1f} | {med['lexicon_first']:.1f} | "
              f"{med['lexicon_warm']:.2f} | {med['lexicon_first'] / med['frame']:.2f}x |  found {runs[0]['found']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
