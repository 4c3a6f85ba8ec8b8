"""Do two checkouts give the same answers? The CPU default's queries, byte for byte, on the same requests.

    GEOQL_DATA_DIR=../shared/overpassnl .venv/bin/python scripts/same_answers.py \\
        --before OLD_CHECKOUT --after NEW_CHECKOUT --work DIR [--dev 500] [--per-language 100] \\
        [--osmnl-dir ../shared/osmnl]

Each side is ``CHECKOUT/.venv/bin/geoql compile --requests FILE --out SIDE.pred`` (after its
``scripts/setup.sh``) with user directories of its own under ``DIR/<side>/`` (data, cache, tag index,
CPU model): on the first run each side prepares them as a new user's first ``geoql compile`` does
(builds the tag index, sets up the CPU model), so the comparison covers what each version builds and
saves, not only how it compiles. A later run with the same ``DIR`` reuses them. The requests: the
first ``--dev`` OverpassNL dev requests and the first ``--per-language`` of each OsmNL dev file. It
prints the number of identical answers per group and every difference, and exits 1 if there is one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

LANGUAGES = ("en", "de", "fr", "ru", "zh", "yue", "ja", "ko")


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").rstrip("\n").split("\n")


def requests(data_dir: Path, osmnl_dir: Path | None, dev: int, per_language: int) -> list[tuple[str, str]]:
    """``(group, request)`` pairs: OverpassNL dev first, then each OsmNL language."""
    out = [("overpassnl-dev", nl) for nl in _lines(data_dir / "dataset.dev.nl")[:dev]]
    if osmnl_dir is not None and per_language:
        for lang in LANGUAGES:
            out += [(f"osmnl-{lang}", nl) for nl in _lines(osmnl_dir / f"dev.{lang}.nl")[:per_language]]
    return out


def run_side(name: str, checkout: Path, work: Path, request_file: Path) -> tuple[list[str], float]:
    """The side's predictions (one line per request) and the seconds its command took."""
    home = work / name
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "GEOQL_")) or k == "GEOQL_DATA_DIR"}
    env.update(HF_HUB_OFFLINE="1", XDG_DATA_HOME=str(home / "data"), GEOQL_CACHE_DIR=str(home / "cache"),
               GEOQL_INDEX_DIR=str(home / "index"), GEOQL_CPU_MODEL_DIR=str(home / "model"))
    out = home / "answers.pred"
    geoql = checkout / ".venv" / "bin" / "geoql"
    start = time.monotonic()
    result = subprocess.run([str(geoql), "compile", "--requests", str(request_file), "--out", str(out), "--backend", "cpu"],
                            env=env, cwd=checkout, capture_output=True, text=True)
    seconds = time.monotonic() - start
    if result.returncode != 0:
        raise SystemExit(f"{name}: `geoql compile` failed ({result.returncode}): {result.stderr[-3000:]}")
    return _lines(out), seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, type=Path, help="checkout after its scripts/setup.sh")
    parser.add_argument("--after", required=True, type=Path, help="checkout after its scripts/setup.sh")
    parser.add_argument("--work", required=True, type=Path, help="each side's user directories and answers go here")
    parser.add_argument("--data-dir", type=Path, default=os.environ.get("GEOQL_DATA_DIR"), help="OverpassNL (default: $GEOQL_DATA_DIR)")
    parser.add_argument("--osmnl-dir", type=Path, default=None, help="OsmNL dev files (dev.<lang>.nl)")
    parser.add_argument("--dev", type=int, default=500, help="OverpassNL dev requests (default 500)")
    parser.add_argument("--per-language", type=int, default=100, help="OsmNL dev requests per language (default 100)")
    args = parser.parse_args(argv)
    if args.data_dir is None:
        raise SystemExit("pass --data-dir or set GEOQL_DATA_DIR to the OverpassNL copy")
    pairs = requests(Path(args.data_dir), args.osmnl_dir, args.dev, args.per_language)
    args.work.mkdir(parents=True, exist_ok=True)
    request_file = args.work / "requests.nl"
    request_file.write_text("".join(nl + "\n" for _, nl in pairs), encoding="utf-8")
    answers = {}
    for name, checkout in (("before", args.before), ("after", args.after)):
        answers[name], seconds = run_side(name, checkout.resolve(), args.work.resolve(), request_file)
        print(f"{name}: {len(answers[name])} answers in {seconds:.1f} s ({checkout})", flush=True)
    before, after = answers["before"], answers["after"]
    if len(before) != len(pairs) or len(after) != len(pairs):
        raise SystemExit(f"{len(pairs)} requests but {len(before)} / {len(after)} answers")
    groups: dict[str, list[int]] = {}
    for (group, _), a, b in zip(pairs, before, after):
        groups.setdefault(group, [0, 0])[a == b] += 1
    for group, (differ, same) in groups.items():
        print(f"{group:16} {same:5} of {same + differ} identical")
    differences = [(i, nl, a, b) for i, ((_, nl), a, b) in enumerate(zip(pairs, before, after)) if a != b]
    for i, nl, a, b in differences:
        print(f"line {i + 1}: {nl!r}\n  before: {a}\n  after:  {b}")
    print(f"all {len(pairs)} answers identical" if not differences else f"{len(differences)} of {len(pairs)} differ")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
