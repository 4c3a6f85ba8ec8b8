"""Retrieval speed: index load time and per-request latency of both retrievers.

    .venv/bin/python benchmarks/bench_retrieval.py [--index-dir DIR] [--n 300]

Prints figures; asserts nothing (timings depend on the machine and its load,
which is printed alongside).
"""

from __future__ import annotations

import argparse
import os
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-dir", default=None, help="index directory (default: the default index)")
    parser.add_argument("--n", type=int, default=300, help="dev requests to time")
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()

    from geoql.eval.dataset import load_split
    from geoql.retrieval import ExampleRetriever, TagRetriever
    from geoql.retrieval.evaluate import percentile

    started = time.perf_counter()
    tags = TagRetriever.load(args.index_dir)
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    examples = ExampleRetriever.load(args.index_dir)
    load_examples_s = time.perf_counter() - started
    requests = [e.nl for e in load_split("dev")[: args.n]]
    tags.search(requests[0], args.k)  # one-off warm-up
    examples.search(requests[0], 5)

    def timed(fn):
        out = []
        for nl in requests:
            t = time.perf_counter()
            fn(nl)
            out.append((time.perf_counter() - t) * 1000)
        return out

    # Fresh encoders each time so the query-embedding cache does not flatter the figures.
    tag_ms = timed(lambda nl: tags.search(nl, args.k))
    tags.examples.encoder._cache.clear()
    examples.encoder._cache.clear()
    ex_ms = timed(lambda nl: examples.search(nl, 5))
    encoder = examples.encoder
    encoder._cache.clear()
    enc_ms = timed(encoder)
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",) * 3
    print(f"machine: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"index: {tags.index_dir} ({len(tags)} tags, {len(tags.examples)} examples)")
    print(f"load TagRetriever: {load_s:.2f} s   ExampleRetriever: {load_examples_s:.2f} s")
    print(f"tag ranking: {'learned (ranker.json)' if tags.ranker is not None else tags.config.fusion}   "
          f"query encoder: {'int8' if tags.examples.encoder.int8 else 'fp32'}")
    for name, values in (("TagRetriever.search", tag_ms), ("ExampleRetriever.search", ex_ms), ("query embedding", enc_ms)):
        print(f"{name:>24}: p50 {percentile(values, 50):6.1f} ms   p95 {percentile(values, 95):6.1f} ms   (n={len(values)})")


if __name__ == "__main__":
    main()
