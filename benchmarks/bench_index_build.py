"""`geoql index build` for a new user, before and after, from one run: wall time, CPU time, peak memory.

    GEOQL_DATA_DIR=../shared/overpassnl .venv/bin/python benchmarks/bench_index_build.py \\
        --before OLD_CHECKOUT [--after NEW_CHECKOUT] [--rounds 1] [--keep DIR]

Each side runs ``CHECKOUT/.venv/bin/geoql index build`` (after that checkout's ``scripts/setup.sh``)
with empty user directories of its own (``XDG_DATA_HOME``, ``GEOQL_CACHE_DIR``), as on a new
machine: it downloads id-tagging-schema from npm and the dictionaries from Debian, exports the
embedding model to ONNX where it needs to, and builds. With ``--rounds`` > 1 the sides take turns
(a busy machine slows both alike) and the medians are printed. The index directories are deleted
afterwards unless ``--keep`` names a folder for them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

from bench_cold_start import _measured  # noqa: E402 (the child's wall, CPU with its workers, peak RSS)


def build(checkout: Path, home: Path) -> dict:
    """One build in empty user directories under ``home``: wall and CPU seconds (its waited-for processes too)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "GEOQL_")) or k == "GEOQL_DATA_DIR"}
    env.update(HF_HUB_OFFLINE="1", XDG_DATA_HOME=str(home / "data"), GEOQL_CACHE_DIR=str(home / "cache"))
    result = _measured([str(checkout / ".venv" / "bin" / "geoql"), "index", "build"], env, checkout)
    if result["code"] != 0:
        raise SystemExit(f"{checkout}: `geoql index build` failed ({result['code']}): {result['err'][-3000:]}")
    manifest = json.loads((home / "data" / "geoql" / "index" / "v1" / "manifest.json").read_text(encoding="utf-8"))
    lines = result["out"].strip().splitlines()
    return {**result, "vectors": manifest.get("vectors"), "line": lines[-1] if lines else ""}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, type=Path, help="checkout after its scripts/setup.sh")
    parser.add_argument("--after", type=Path, default=REPO, help="checkout after its scripts/setup.sh (default: this one)")
    parser.add_argument("--rounds", type=int, default=1, help="builds per side, taking turns (default 1)")
    parser.add_argument("--keep", type=Path, help="keep each build's user directories here")
    args = parser.parse_args(argv)
    for checkout in (args.before, args.after):
        if not (checkout / ".venv" / "bin" / "geoql").exists():
            raise SystemExit(f"{checkout}/.venv/bin/geoql is missing: run scripts/setup.sh in {checkout} first")
    root = Path(tempfile.mkdtemp(prefix="geoql-bench-index-")) if args.keep is None else args.keep
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
    try:
        for r in range(args.rounds):
            for name, checkout in (("before", args.before), ("after", args.after)):
                result = build(checkout.resolve(), root / f"{name}-{r}")
                runs[name].append(result)
                print(f"{name} round {r + 1}: {result['wall']:.1f} s wall, {result['cpu']:.1f} s CPU, "
                      f"{result['rss_mb']:.0f} MB peak; {result['line']}; vectors {result['vectors']}", flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    for key, unit in (("wall", "wall"), ("cpu", "CPU")):
        before, after = (statistics.median(x[key] for x in runs[n]) for n in ("before", "after"))
        print(f"median {unit}: before {before:.1f} s, after {after:.1f} s; after/before {after / before:.2f}")
    print(f"load average now {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
