"""OverpassNL splits: where they come from and how they load.

Resolution order for the data directory: an explicit ``data_dir`` argument
(``--data-dir``), then ``$GEOQL_DATA_DIR``, then a user cache directory that
is filled once from the official release on GitHub.

The release also carries the geocoder answers the authors' evaluation used
(``nominatim_cache.json``); :func:`benchmark_geocodes` hands them to
``geoql.osm.nominatim.Nominatim`` as its seed.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from geoql.core.errors import GeoqlError, UserError
from geoql.core.files import replace_dir
from geoql.core.paths import user_dir

SPLIT_SIZES = {"train": 6352, "dev": 1000, "test": 1000}
DIFFICULTY_KINDS = (
    "len_nl",
    "len_query",
    "num_results",
    "train_sim_nl",
    "train_sim_oqo",
    "xml_components",
)
HARD_SUBSET_SIZE = 333
RELEASE_BASE_URL = "https://github.com/raphael-sch/OverpassNL/raw/main"
# Archive or file name -> path in the upstream repository.  OverpassNL_v1.zip
# unpacks to dataset/dataset.{split}.{kind}; comments.zip to comments.jsonl.
RELEASE_FILES = {
    "OverpassNL_v1.zip": "dataset/OverpassNL_v1.zip",
    "comments.zip": "dataset/comments.zip",
    "nominatim_cache.json": "evaluation/cache/nominatim_cache.json",
}
# Release files the dataset is usable without (execution falls back to live geocoding).
OPTIONAL_RELEASE_FILES = frozenset({"nominatim_cache.json"})
RELEASE_URLS = {name: f"{RELEASE_BASE_URL}/{path}" for name, path in RELEASE_FILES.items()}
ENV_VAR = "GEOQL_DATA_DIR"
# Mirrors and tests point the download elsewhere: a base URL laid out like the repository.
RELEASE_URL_ENV_VAR = "GEOQL_RELEASE_URL"
FIX_HINT = (
    f"pass --data-dir DIR or set {ENV_VAR} to a directory holding "
    "dataset.{train,dev,test}.{nl,query,bbox}"
)


class DatasetError(GeoqlError):
    """The dataset directory is missing, incomplete or corrupt (one-line message)."""


class ExampleFilesError(DatasetError, UserError):
    """A gold / request / bbox file given by the user is missing, empty, not UTF-8 or of another length."""


@dataclass(frozen=True)
class Example:
    split: str
    index: int
    nl: str
    query: str
    bbox: str
    difficulty: dict = field(default_factory=dict, compare=False, hash=False)


def default_cache_dir() -> Path:
    """Where the downloaded release lives: ``$GEOQL_CACHE_DIR/overpassnl`` or the user cache."""
    return user_dir("cache", "overpassnl")


def release_urls() -> dict[str, str]:
    """Download URLs of the release files (``$GEOQL_RELEASE_URL`` replaces the GitHub base)."""
    base = os.environ.get(RELEASE_URL_ENV_VAR, "").rstrip("/")
    if not base:
        return dict(RELEASE_URLS)
    return {name: f"{base}/{path}" for name, path in RELEASE_FILES.items()}


def resolve_data_dir(data_dir: str | os.PathLike | None = None, *, download: bool = True) -> Path:
    """Return the directory holding the dataset files, downloading them if needed."""
    if data_dir is None:
        data_dir = os.environ.get(ENV_VAR) or None
    if data_dir is not None:
        path = Path(data_dir).expanduser()
        _check_dir(path)
        return path
    path = default_cache_dir()
    if not _looks_complete(path):
        if not download:
            raise DatasetError(f"no OverpassNL copy found; {FIX_HINT}")
        download_release(path)
    try:
        _check_dir(path)
    except DatasetError as exc:
        raise DatasetError(f"{exc} (or delete {path} to download it again)") from None
    return path


def _looks_complete(path: Path) -> bool:
    return all((path / f"dataset.{s}.{kind}").is_file() for s in SPLIT_SIZES for kind in ("nl", "query", "bbox"))


def _read_lines(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}): the copy is corrupt; {FIX_HINT}") from None
    if text.endswith("\n"):
        text = text[:-1]
    return text.split("\n") if text else []


def _check_dir(path: Path) -> None:
    if not path.is_dir():
        raise DatasetError(f"dataset directory {path} does not exist; {FIX_HINT}")
    for split, size in SPLIT_SIZES.items():
        for kind in ("nl", "query", "bbox"):
            f = path / f"dataset.{split}.{kind}"
            if not f.is_file():
                raise DatasetError(f"{f} is missing; {FIX_HINT}")
            n = len(_read_lines(f))
            if n != size:
                raise DatasetError(f"{f} has {n} lines, expected {size}: the copy is corrupt; {FIX_HINT}")


def _fetch(url: str, name: str) -> bytes:
    import requests
    from tqdm import tqdm

    try:
        response = requests.get(url, stream=True, timeout=60)
        response.raise_for_status()
        total = int(response.headers.get("content-length") or 0) or None
        buf = io.BytesIO()
        with tqdm(total=total, unit="B", unit_scale=True, desc=f"downloading {name}") as bar:
            for chunk in response.iter_content(1 << 16):
                buf.write(chunk)
                bar.update(len(chunk))
    except requests.RequestException as exc:
        raise DatasetError(f"could not download {url} ({type(exc).__name__}); {FIX_HINT}") from None
    return buf.getvalue()


def _member_name(path: str) -> str:
    # Upstream's README names the difficulty files difficulty_*, the loader
    # reads diff_*: accept both spellings inside the archive.
    base = os.path.basename(path)
    return base.replace(".difficulty_", ".diff_")


def _unpack(data: bytes, url: str, staging: Path) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for member in archive.infolist():
                base = _member_name(member.filename)
                if member.is_dir() or not base or base.startswith(".") or "__MACOSX" in member.filename:
                    continue
                tmp = staging / f".{base}.part"
                with archive.open(member) as src, open(tmp, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                tmp.replace(staging / base)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError) as exc:
        raise DatasetError(f"{url} is not a valid zip archive ({exc}); {FIX_HINT}") from None


def download_release(target: Path, urls: dict[str, str] | None = None) -> None:
    """Download and unpack the official release into ``target``.

    Everything lands in a staging directory next to ``target`` that replaces
    it only once all files are there and the line counts are right, so a
    failed or interrupted download leaves any previous copy untouched.
    """
    urls = urls or release_urls()
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".overpassnl-", dir=target.parent))
    try:
        for name, url in urls.items():
            try:
                data = _fetch(url, name)
            except DatasetError:
                if name in OPTIONAL_RELEASE_FILES:
                    continue
                raise
            if name.endswith(".zip"):
                _unpack(data, url, staging)
            else:
                (staging / name).write_bytes(data)
        try:
            _check_dir(staging)
        except DatasetError as exc:
            raise DatasetError(f"the download from {urls} is incomplete or corrupt: {exc}") from None
        replace_dir(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


@lru_cache(maxsize=16)
def _load_split_cached(path: str, split: str) -> tuple[Example, ...]:
    base = Path(path)
    nls = _read_lines(base / f"dataset.{split}.nl")
    queries = _read_lines(base / f"dataset.{split}.query")
    bboxes = _read_lines(base / f"dataset.{split}.bbox")
    difficulty: dict[str, list[float]] = {}
    for kind in DIFFICULTY_KINDS:
        f = base / f"dataset.{split}.diff_{kind}"
        if f.is_file():
            values = _read_lines(f)
            if len(values) != len(nls):
                raise DatasetError(f"{f} has {len(values)} lines, expected {len(nls)}; {FIX_HINT}")
            try:
                difficulty[kind] = [float(v) for v in values]
            except ValueError:
                raise DatasetError(f"{f} holds a line that is not a number: the copy is corrupt; {FIX_HINT}") from None
    return tuple(
        Example(split, i, nl, q, b, {k: v[i] for k, v in difficulty.items()})
        for i, (nl, q, b) in enumerate(zip(nls, queries, bboxes))
    )


def load_split(split: str, data_dir: str | os.PathLike | None = None) -> list[Example]:
    """Load one split (``train``, ``dev`` or ``test``) as a list of :class:`Example`."""
    if split not in SPLIT_SIZES:
        raise DatasetError(f"unknown split {split!r}; choose one of {', '.join(SPLIT_SIZES)}")
    path = resolve_data_dir(data_dir)
    return list(_load_split_cached(str(path.resolve()), split))


def pairs_digest(nls, queries) -> str:
    """SHA-256 of request/query pairs: what the index's manifest records of the training split
    and what a shipped model checks before it trusts features computed over these pairs.

    >>> pairs_digest(["cafes in Bonn"], ["nwr[amenity=cafe];out;"])[:12]
    'cb541cc104e8'
    """
    return hashlib.sha256("\n".join(f"{nl}\t{query}" for nl, query in zip(nls, queries, strict=True)).encode()).hexdigest()


def read_example_lines(path: str | os.PathLike, option: str) -> list[str]:
    """The lines of one user-given file in the dataset's format (one example a line, UTF-8).

    ``option`` names the flag the path came from, for the error message.
    """
    p = Path(path).expanduser()
    if not p.is_file():
        what = "is a directory" if p.is_dir() else "does not exist"
        raise ExampleFilesError(f"{p} {what}; pass an existing file to {option}")
    try:
        lines = _read_lines(p)
    except DatasetError:
        raise ExampleFilesError(f"{p} is not UTF-8 text; {option} wants a UTF-8 file, one example a line") from None
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    while lines and not lines[-1].strip():
        lines.pop()  # blank lines at the end are not examples
    if not lines:
        raise ExampleFilesError(f"{p} is empty; {option} wants one example a line")
    return lines


def load_examples(gold: str | os.PathLike, requests: str | os.PathLike | None = None,
                  bbox: str | os.PathLike | None = None, *, name: str | None = None,
                  options: tuple[str, str, str] = ("--gold", "--requests", "--bbox")) -> list[Example]:
    """Examples from a gold query file and, optionally, its request and bbox files.

    Any triple in the dataset's format works (``dataset.dev.{query,nl,bbox}``, OsmNL's
    ``dev.de.{query,nl,bbox}``): line ``i`` of each file is example ``i``. Missing
    requests or boxes are ``""``. ``name`` (default: the gold file's name without
    ``.query``) becomes :attr:`Example.split`; ``options`` name the three files in messages.
    """
    gold_option, requests_option, bbox_option = options
    golds = read_example_lines(gold, gold_option)
    columns = {}
    for option, path in ((requests_option, requests), (bbox_option, bbox)):
        if path is None:
            continue
        lines = read_example_lines(path, option)
        if len(lines) != len(golds):
            raise ExampleFilesError(
                f"{path} has {len(lines)} lines but {gold} has {len(golds)}; "
                f"{option} and {gold_option} must be files of the same examples, line i with line i")
        columns[option] = lines
    label = name or Path(gold).name.removesuffix(".query")
    nls = columns.get(requests_option, [""] * len(golds))
    boxes = columns.get(bbox_option, [""] * len(golds))
    return [Example(label, i, nl, q, b) for i, (nl, q, b) in enumerate(zip(nls, golds, boxes))]


def hard_subset(examples: list[Example]) -> list[int]:
    """Indices of the paper's hard subset: the 333 least similar to any training query."""
    if not examples or "train_sim_oqo" not in examples[0].difficulty:
        raise DatasetError("the hard subset needs the diff_train_sim_oqo file (dev and test only)")
    order = sorted(range(len(examples)), key=lambda i: (-examples[i].difficulty["train_sim_oqo"], i))
    return sorted(order[:HARD_SUBSET_SIZE])


def load_comments(data_dir: str | os.PathLike | None = None) -> list[dict]:
    """The mined code comments (auxiliary data): ``{"query", "comments", ...}`` rows."""
    path = resolve_data_dir(data_dir) / "comments.jsonl"
    if not path.is_file():
        raise DatasetError(f"{path} is missing; {FIX_HINT}")
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def load_nominatim_cache(data_dir: str | os.PathLike | None = None) -> dict:
    """The release's geocoder answers (``{}`` when this copy has none), keyed as
    ``geoql.osm.nominatim.cache_key`` keys them."""
    path = resolve_data_dir(data_dir) / "nominatim_cache.json"
    if not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


def benchmark_geocodes() -> dict:
    """The release's geocoder answers when the dataset is on this machine, else ``{}``.

    Never downloads. This is the seed that makes the benchmark's gold queries
    expand exactly as they did for the authors:
    ``Nominatim(config, seed=benchmark_geocodes())``.
    """
    try:
        return load_nominatim_cache(resolve_data_dir(None, download=False))
    except (DatasetError, OSError, ValueError):
        return {}
