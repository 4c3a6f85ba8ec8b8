"""Latency of the demo under simultaneous compile+run requests, over real HTTP on loopback.

Prints figures; asserts nothing. Run from the repository root:

    GEOQL_DATA_DIR=../shared/overpassnl HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/ui_concurrency.py \
        [--requests 20] [--backend cpu] [--overpass-delay 0.5]

The Gradio app is launched for real and driven with gradio_client; Overpass and
Nominatim are the loopback protocol servers from tests/fakes (each Overpass
answer waits ``--overpass-delay`` seconds, standing in for server time).
``--backend lookup`` (default) answers dev requests with their gold query;
``--backend cpu`` uses the CPU default (its trained model must exist).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20, help="simultaneous compile+run requests")
    parser.add_argument("--backend", default="lookup", help="lookup (gold answers) or a registered backend name")
    parser.add_argument("--overpass-delay", type=float, default=0.5, help="seconds each Overpass answer takes")
    args = parser.parse_args()

    from fakes.servers import FakeNominatim, FakeOverpass, json_reply
    from fakes.support import dev_requests, free_port, make_service
    from gradio_client import Client

    from geoql.app import Compiler
    from geoql.app.ui import launch

    with FakeOverpass() as overpass, FakeNominatim() as nominatim, tempfile.TemporaryDirectory() as tmp:
        overpass.default = json_reply("heidelberg_cafes.json", delay_s=args.overpass_delay)
        service = make_service(overpass, nominatim, tmp)
        if args.backend != "lookup":
            service._compiler = Compiler(args.backend)
            service.compile(dev_requests()[0].nl)  # load the model before timing
        port = free_port()
        demo = launch(service, port=port, block=False)
        try:
            client = Client(f"http://127.0.0.1:{port}/", verbose=False)
            requests = [dev_requests()[i % len(dev_requests())].nl for i in range(args.requests)]
            boxes = [f"49.{i:03d},8.60,49.{i + 1:03d},8.70" for i in range(args.requests)]
            started = time.perf_counter()
            jobs = [(time.perf_counter(), client.submit(r, b, api_name="/compile_and_run")) for r, b in zip(requests, boxes)]
            latencies, answered = [], 0
            for sent, job in jobs:
                result = job.result(timeout=600)
                latencies.append(time.perf_counter() - sent)
                answered += "elements" in (result[6] or "")
            wall = time.perf_counter() - started
        finally:
            demo.close()
    latencies.sort()
    p95 = latencies[max(0, int(round(0.95 * len(latencies))) - 1)]
    print(f"backend {args.backend}, {args.requests} simultaneous compile+run, Overpass delay {args.overpass_delay} s")
    print(f"answered with results: {answered}/{args.requests}")
    print(f"wall {wall:.2f} s · time to answer (collected in submit order) median {statistics.median(latencies):.2f} s · p95 {p95:.2f} s · max {latencies[-1]:.2f} s")


if __name__ == "__main__":
    main()
