"""Speed of the Overpass client, the result cache and EX scoring, on loopback servers.

Prints figures; asserts nothing. Run from the repository root:

    GEOQL_DATA_DIR=../shared/overpassnl .venv/bin/python benchmarks/execution_client.py [--n 300] [--threads 8]

What it measures (the Overpass answers come from the loopback Overpass-protocol
server in tests/fakes, so these are the client's own costs, not Overpass's):

* cold requests/s: expand + prepare + HTTP + classify + cache write;
* warm requests/s: the same queries answered from the SQLite cache;
* concurrent writers: threads with their own clients writing one cache file;
* EX scoring: examples/s for evaluate_execution on dev gold-vs-gold, cold and resumed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="queries per phase")
    parser.add_argument("--threads", type=int, default=8, help="threads in the concurrent phase")
    args = parser.parse_args()

    from fakes.servers import FakeNominatim, FakeOverpass, json_reply

    from geoql.eval.dataset import load_split
    from geoql.eval.execution import evaluate_execution
    from geoql.osm.cache import SqliteStore
    from geoql.osm.overpass import OverpassClient, OverpassConfig

    with FakeOverpass() as overpass, FakeNominatim() as nominatim, tempfile.TemporaryDirectory() as tmp:
        overpass.default = json_reply("heidelberg_cafes.json")
        client = OverpassClient(OverpassConfig(url=overpass.url, cache_dir=tmp))
        queries = [f"node[amenity=cafe]({{{{bbox}}}});out; // {i}" for i in range(args.n)]

        def phase(label: str, fn) -> None:
            started = time.perf_counter()
            fn()
            took = time.perf_counter() - started
            print(f"{label:<42} {args.n / took:8.1f} queries/s  ({took:.2f} s)")

        phase("cold (HTTP + classify + cache write)", lambda: [client.run(q, bbox="49.4,8.6,49.5,8.8") for q in queries])
        phase("warm (SQLite cache hits)", lambda: [client.run(q, bbox="49.4,8.6,49.5,8.8") for q in queries])

        def writers() -> None:
            def work(w: int) -> None:
                own = OverpassClient(OverpassConfig(url=overpass.url, cache_dir=tmp))
                for i in range(w, args.n, args.threads):
                    own.run(f"way[shop]({{{{bbox}}}});out; // {i}", bbox="49.4,8.6,49.5,8.8")

            threads = [threading.Thread(target=work, args=(w,)) for w in range(args.threads)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()

        phase(f"cold, {args.threads} concurrent writers", writers)
        store = SqliteStore(Path(tmp) / OverpassClient.CACHE_FILE, "results")
        print(f"cache rows {len(store)}, integrity {'ok' if store.integrity_ok() else 'BROKEN'}")

        dev = load_split("dev")[: args.n]
        for label in ("EX gold-vs-gold, cold", "EX gold-vs-gold, resumed from cache"):
            started = time.perf_counter()
            result = evaluate_execution(
                [e.query for e in dev], dev, overpass_url=overpass.url, cache_dir=tmp,
                nominatim_url=nominatim.url, progress=False,
            )
            took = time.perf_counter() - started
            print(f"{label:<42} {len(dev) / took:8.1f} examples/s  (EX {result['ex']:.1f}, requests {result['requests']})")


if __name__ == "__main__":
    main()
