"""What GeoQL computes once on the canonical index and ships: the tag ranker and the texts' vectors.

Fitting ``ranker.json`` is the longest step of ``geoql index build`` that needs no
download (leave-one-out features of 6,352 training requests, then two regressions:
about 45 s on two cores). Every build from the pinned sources by the same code writes
the same documents (``retrieval.artifacts.content_key``), and the fit on them is the
same too, so the project fits it once, ships the result in ``shipped/ranker.json`` and
a build whose documents have that key takes it instead of fitting again. Any other
index (taginfo's counts in it, a dictionary missing, a test's small schema) is fitted
as before. ``geoql cpu ship`` (``app.cpu.prebuilt``) writes these files.

The vectors of the index's texts are the same kind of thing: the English embedding of every
training request and tag name (20,000 texts, the build's longest step after the multilingual one)
and the multilingual embedding of the training requests (4 minutes on a slow day) depend only on the
text and the model. ``vectors-<kind>.npz`` holds them, float32 exactly as the build computes them
(a float16 copy would be half the size but not the same numbers); ``vectors.json`` records each
file's SHA-256 and the model it was made with (``retrieval.embedding.vectors_key``,
``retrieval.multilingual.vectors_key``). A build takes a text's vector from it where the model
matches and the text is there, and computes every other vector as before. The float32 bits do not
compress (the mantissas are noise): stored as byte planes, zlib saves ~17 %.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

from geoql.core.arrays import texts_from_arrays, texts_to_arrays
from geoql.core.files import write_atomic
from geoql.retrieval import artifacts as A
from geoql.retrieval.artifacts import MANIFEST, content_key
from geoql.retrieval.ranker import RANKER_FORMAT, RANKER_JSON

SHIPPED_DIR = Path(__file__).resolve().parent / "shipped"
RANKER_FILE = SHIPPED_DIR / "ranker.json"
BUILD_NOTES = ("index_built_at", "prebuilt")  # what a ranker's JSON says about the build it is in, not its weights
VECTORS_META = "vectors.json"
VECTOR_KINDS = ("english", "multilingual")
VECTORS_FORMAT = 1


def shipped_ranker(index_key: str, path: Path | None = None) -> dict | None:
    """The shipped ranker's JSON (``path``: default :data:`RANKER_FILE`) when it was fitted on an index with
    ``index_key``, else None."""
    try:
        data = json.loads(Path(path or RANKER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # none shipped, or a damaged file: fit as before
        return None
    if not isinstance(data, dict) or data.get("index_key") != index_key or data.get("format") != RANKER_FORMAT:
        return None
    return data


def use_shipped_ranker(index_dir: Path, path: Path | None = None) -> bool:
    """Write the shipped ranker into ``index_dir`` when it fits that index's content; False when it does not."""
    index_dir = Path(index_dir)
    data = shipped_ranker(content_key(index_dir), path)
    if data is None:
        return False
    built_at = json.loads((index_dir / MANIFEST).read_text(encoding="utf-8")).get("built_at")
    data = {**{k: v for k, v in data.items() if k != "index_key"}, "index_built_at": built_at, "prebuilt": True}
    write_atomic(index_dir / RANKER_JSON, json.dumps(data, indent=2) + "\n")
    return True


def ship_ranker(index_dir: Path, path: Path | None = None) -> Path:
    """Copy ``index_dir``'s fitted ranker into the package, keyed by the index's content."""
    index_dir = Path(index_dir)
    data = json.loads((index_dir / RANKER_JSON).read_text(encoding="utf-8"))
    data = {k: v for k, v in data.items() if k not in BUILD_NOTES}
    data["index_key"] = content_key(index_dir)
    return write_atomic(Path(path or RANKER_FILE), json.dumps(data, indent=2) + "\n")


def vectors_file(kind: str) -> str:
    return f"vectors-{kind}.npz"


def shipped_vectors(kind: str, key: str | None, folder: Path | None = None) -> dict:
    """``{text: float32 vector}`` of ``kind`` made with the model ``key`` names, or {} when none is shipped,
    it was made with another model (or ``key`` is None), or the file does not match its recorded SHA-256."""
    import numpy as np

    folder = Path(folder or SHIPPED_DIR)
    try:
        meta = json.loads((folder / VECTORS_META).read_text(encoding="utf-8"))
        entry = meta[kind]
        if meta.get("format") != VECTORS_FORMAT or key is None or entry["key"] != key:
            return {}
        data = (folder / vectors_file(kind)).read_bytes()
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    if hashlib.sha256(data).hexdigest() != entry.get("sha256"):  # a damaged copy: computed as before
        return {}
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
            texts = texts_from_arrays(arrays["texts_utf8"], arrays["texts_end"])
            planes, dim = arrays["planes"], int(arrays["dim"][0])
    except (OSError, ValueError, KeyError, IndexError):
        return {}
    if planes.shape != (4, len(texts) * dim):
        return {}
    vectors = np.ascontiguousarray(planes.T).view("<f4").reshape(len(texts), dim).astype(np.float32, copy=False)
    return dict(zip(texts, vectors))


def ship_vectors(index_dir: Path, keys: dict[str, str | None], folder: Path | None = None) -> list[Path]:
    """Write the vectors of ``index_dir``'s texts, per kind made with the model ``keys[kind]`` names (a kind
    whose key is None, or which the index lacks, is left out); returns the paths written."""
    import numpy as np

    index_dir, folder = Path(index_dir), Path(folder or SHIPPED_DIR)
    tables = {}
    if keys.get("english"):
        examples = [r["nl"] for r in A.read_jsonl(index_dir / A.EXAMPLES_JSONL)]
        surfaces = [r["text"] for r in A.read_jsonl(index_dir / A.TAG_SURFACES_JSONL)]
        tables["english"] = _table(examples + surfaces, np.concatenate(
            [_faiss_vectors(index_dir / A.EXAMPLES_FAISS), _faiss_vectors(index_dir / A.TAG_SURFACES_FAISS)]))
    if keys.get("multilingual") and (index_dir / A.EXAMPLES_E5).is_file():
        from geoql.retrieval.multilingual import encoded_text

        requests = [encoded_text(r["nl"]) for r in A.read_jsonl(index_dir / A.EXAMPLES_JSONL)]
        tables["multilingual"] = _table(requests, np.load(index_dir / A.EXAMPLES_E5, allow_pickle=False))
    meta = {"format": VECTORS_FORMAT}
    written = []
    for kind, (texts, vectors) in tables.items():
        # Byte planes (every value's first bytes, then its second...): the sign-and-exponent plane compresses.
        planes = np.ascontiguousarray(np.ascontiguousarray(vectors.astype("<f4")).view(np.uint8).reshape(-1, 4).T)
        data = _npz({"planes": planes, "dim": np.array([vectors.shape[1]], dtype=np.int64), **texts_to_arrays(texts)})
        written.append(write_atomic(folder / vectors_file(kind), data))
        meta[kind] = {"key": keys[kind], "texts": len(texts), "dim": int(vectors.shape[1]),
                      "sha256": hashlib.sha256(data).hexdigest()}
    written.append(write_atomic(folder / VECTORS_META, json.dumps(meta, indent=2) + "\n"))
    return written


def _npz(arrays: dict) -> bytes:
    """``np.savez_compressed`` at zlib's best level (its default is 6: 12 % more for these planes), with a fixed
    time in every member's header, so the same arrays give the same bytes; ``np.load`` reads it as any .npz."""
    import zipfile

    import numpy as np

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, array in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)
            archive.writestr(zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0)), member.getvalue(),
                             compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    return buffer.getvalue()


def _faiss_vectors(path: Path):
    index = A.read_faiss(path)
    return index.reconstruct_n(0, index.ntotal)


def _table(texts: list[str], vectors) -> tuple[list[str], object]:
    """Each distinct text once with its vector; ``ValueError`` if one text has two vectors (then no
    vector would be the build's)."""
    import numpy as np

    if len(texts) != len(vectors):
        raise ValueError(f"{len(texts)} texts but {len(vectors)} vectors: the index's files disagree")
    row_of: dict[str, int] = {}
    for row, text in enumerate(texts):
        first = row_of.setdefault(text, row)
        if first != row and not np.array_equal(vectors[first], vectors[row]):
            raise ValueError(f"the index gives {text!r} two different vectors")
    rows = list(row_of.values())
    return list(row_of), vectors[rows]
