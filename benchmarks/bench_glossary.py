"""Speed of the word-by-word reading (``retrieval.glossary.Translator``) over request files.

    .venv/bin/python benchmarks/bench_glossary.py --requests ../shared/osmnl/dev.ru.nl --language ru

Reads every request with the index's glossary as built, and again with its derivations switched
off (``Glossary.derivations``: Russian adjectives read as their nouns), request by request in
alternating order on one glossary whose word cache is cleared before each reading, and prints
p50/p90/mean per request for both and their ratio: a before/after from one run on a shared,
noisy machine. Also prints how many words each reading left untranslated.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", required=True, help="one request per line (e.g. an OsmNL dev.<lang>.nl file)")
    parser.add_argument("--language", required=True, help="the requests' language (a glossary language of the index)")
    parser.add_argument("--index-dir", help="the tag index (default: the user's)")
    parser.add_argument("--limit", type=int, help="only the first N requests")
    args = parser.parse_args(argv)

    from tqdm import tqdm

    from geoql.retrieval.artifacts import default_index_dir
    from geoql.retrieval.glossary import Translator

    translator = Translator.from_index(Path(args.index_dir) if args.index_dir else default_index_dir())
    glossary = translator.glossary(args.language)
    if glossary is None:
        parser.error(f"the index has no {args.language} glossary; it has: {', '.join(translator.languages) or 'none'}")
    lines = [line.strip() for line in Path(args.requests).read_text(encoding="utf-8").splitlines() if line.strip()]
    lines = lines[: args.limit] if args.limit else lines
    built = glossary.derivations
    variants = {"without derivations": (), "as built": built}
    times: dict[str, list[float]] = {name: [] for name in variants}
    same = {name: 0 for name in variants}
    translator.translate(lines[0], args.language)  # cue tables and the lemmatizer loaded before timing
    for i, line in enumerate(tqdm(lines, desc="translating", unit="req")):
        order = list(variants) if i % 2 == 0 else list(reversed(variants))
        for name in order:
            glossary.derivations = variants[name]
            glossary._cache.clear()  # each reading looks its words up afresh
            t = time.perf_counter()
            out = translator.translate(line, args.language)
            times[name].append((time.perf_counter() - t) * 1000)
            same[name] += sum(w in line.lower() for w in out.lower().split())
    glossary.derivations = built
    print(f"requests      {len(lines)} ({args.language}; derivations as built: {len(built)})")
    for name, ts in times.items():
        ts = sorted(ts)
        print(f"{name:20s}  p50 {statistics.median(ts):6.2f} ms   p90 {ts[int(0.9 * (len(ts) - 1))]:6.2f} ms   "
              f"mean {statistics.fmean(ts):6.2f} ms   words kept as written {same[name]}")
    before, after = (statistics.median(times[n]) for n in variants)
    print(f"ratio (as built / without) p50 {after / before:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
