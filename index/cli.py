"""``geoql index build``: fetch the sources and write the artifact directory; ``geoql index fit-ranker``."""

from __future__ import annotations

import argparse
import json
import sys

from geoql.retrieval import TagRetriever
from geoql.retrieval.ranker import C1, C2, RERANK, fit_ranker, write_ranker


def register(subparsers) -> None:
    parser = subparsers.add_parser("index", help="build the tag knowledge index")
    sub = parser.add_subparsers(dest="index_command", metavar="ACTION")
    build = sub.add_parser("build", help="fetch sources, embed and write the index directory")
    build.add_argument("--out", type=str, default=None, help="output directory (default: user data dir, or $GEOQL_INDEX_DIR)")
    build.add_argument("--data-dir", type=str, default=None, help="OverpassNL directory (default: $GEOQL_DATA_DIR)")
    build.add_argument("--cache-dir", type=str, default=None, help="cache for downloaded sources")
    build.add_argument("--registry", type=str, default=None, help="npm registry URL")
    build.add_argument("--model", type=str, default=None, help="sentence-transformers model name or path")
    build.add_argument("--no-taginfo", action="store_true", help="do not try the taginfo API")
    build.add_argument("--no-glossaries", action="store_true",
                       help="do not fetch the bilingual dictionaries (requests in other languages are then read by tag names only)")
    build.add_argument("--no-multilingual", action="store_true",
                       help="do not encode the training requests with multilingual-e5-small (the CPU default then finds "
                            "neighbours across languages through the glossaries only; the shipped ranker and selector do not fit: "
                            "the ranker is fitted, the selector trained)")
    build.add_argument("--debian-mirror", type=str, default=None, help="Debian mirror for the dictionaries")
    build.add_argument("--reuse-embeddings", type=str, default=None, metavar="INDEX_DIR",
                       help="take the vectors of texts an earlier index (same model) already embedded")
    build.add_argument("--compute-vectors", action="store_true",
                       help="compute every vector even where GeoQL ships it for the same text and model (the same vectors, "
                            "minutes more)")
    build.add_argument("--fit-ranker", action="store_true",
                       help="fit the tag ranker even where the one shipped with GeoQL fits the index (same ranker, ~11 min more)")
    build.add_argument("--train-limit", type=int, default=None, help=argparse.SUPPRESS)
    build.set_defaults(handler=_build)
    verify = sub.add_parser("verify", help="hash every file of the index and compare with its manifest (a load only "
                                           "rehashes files whose size, times or inode changed)")
    verify.add_argument("--index-dir", type=str, default=None, help="index directory (default: the default index)")
    verify.set_defaults(handler=_verify)
    fit = sub.add_parser("fit-ranker", help="fit the learned tag ranker (ranker.json) on the index's training requests and their glossed code-switched copies")
    fit.add_argument("--index-dir", type=str, default=None, help="index directory (default: the default index)")
    fit.add_argument("--every", type=int, default=None,
                     help="use every N-th training request (default 1 = all; 3 fits ~3x faster, 0.3 pt lower dev recall@10)")
    fit.add_argument("--c", type=float, default=None, help=f"inverse L2 regularisation of stage 1, linear (default {C1})")
    fit.add_argument("--c2", type=float, default=None, help=f"inverse L2 regularisation of stage 2, pairwise products (default {C2})")
    fit.add_argument("--rerank", type=int, default=None, help=f"controlled candidates stage 2 re-scores (default {RERANK})")
    fit.set_defaults(handler=_fit_ranker)
    parser.set_defaults(handler=lambda args: parser.print_help() or 2)


def _build(args) -> int:
    # the build and its sources: not for `geoql --help`
    from .build import build_index
    from .config import IndexConfig

    options = {"out_dir": args.out, "data_dir": args.data_dir, "cache_dir": args.cache_dir, "taginfo": not args.no_taginfo,
               "train_limit": args.train_limit, "reuse_embeddings": args.reuse_embeddings,
               "prebuilt_ranker": not args.fit_ranker, "prebuilt_vectors": not args.compute_vectors}
    if args.registry:
        options["registry"] = args.registry
    if args.model:
        options["embedding_model"] = args.model
    if args.no_glossaries:
        options["glossaries"] = ()
    if args.no_multilingual:
        options["multilingual"] = False
    if args.debian_mirror:
        options["debian_mirror"] = args.debian_mirror
    out = build_index(IndexConfig(**options))
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    counts = manifest["counts"]
    ranker = {"prebuilt": "; the ranker shipped with GeoQL", "fitted": "; ranker fitted"}.get(manifest.get("ranker"), "")
    multilingual = manifest.get("multilingual", {})
    if multilingual.get("status") not in ("ok", "disabled"):
        print(f"geoql: no multilingual neighbours in this index ({multilingual.get('status')})", file=sys.stderr)
    print(f"index written to {out}: {counts['tags']} tags, {counts['tag_surfaces']} names/synonyms, "
          f"{counts['examples']} examples in {manifest['build_seconds']} s{ranker}")
    return 0


def _verify(args) -> int:
    from geoql.retrieval import artifacts as A

    manifest = A.load_manifest(args.index_dir)  # raises IndexMissingError (one line, exit 2) on any mismatch
    path = manifest.path.parent
    A.check_files(path, manifest.data, remembered=False)
    print(f"{path}: all {len(manifest.data[A.FILES])} files match their SHA-256")
    return 0


def _fit_ranker(args) -> int:
    # Unset options keep fit_ranker's defaults, so the defaults live in one place.
    given = {"every": args.every, "c": args.c, "c2": args.c2, "rerank": args.rerank}
    retriever = TagRetriever.load(args.index_dir)
    ranker = fit_ranker(retriever, glossed=True, progress=True, **{name: value for name, value in given.items() if value is not None})
    out = write_ranker(ranker, retriever.index_dir)
    from .build import write_manifest  # the build's imports: not for `geoql --help`

    write_manifest(retriever.index_dir, retriever.manifest.data)  # the new ranker.json's SHA-256, or the index is refused
    info = ranker.meta["trained_on"]
    glossed = "" if ranker.glossed is None else \
        f"; glossed requests: {ranker.glossed.meta['trained_on']['copies']} code-switched copies"
    print(f"ranker written to {out}: {info['requests']} training requests (each without the requests of its gold query), "
          f"{info['candidates']} candidates, {info['positives']} gold; stage 2 re-scored {info['reranked_candidates']}{glossed}")
    return 0
