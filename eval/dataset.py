"""OverpassNL splits: where they come from and how they load.

Resolution order for the data directory: an explicit ``data_dir`` argument
(``--data-dir``), then ``$GEOQL_DATA_DIR``, then a user cache directory that
is filled once from the official release on GitHub.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

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
RELEASE_URLS = {
    "OverpassNL_v1.zip": "https://github.com/raphael-sch/OverpassNL/raw/main/dataset/OverpassNL_v1.zip",
    "comments.zip": "https://github.com/raphael-sch/OverpassNL/raw/main/dataset/comments.zip",
}
ENV_VAR = "GEOQL_DATA_DIR"
FIX_HINT = (
    f"pass --data-dir DIR or set {ENV_VAR} to a directory holding "
    "dataset.{train,dev,test}.{nl,query,bbox}"
)


class DatasetError(Exception):
    """The dataset directory is missing, incomplete or corrupt (one-line message)."""


@dataclass(frozen=True)
class Example:
    split: str
    index: int
    nl: str
    query: str
    bbox: str
    difficulty: dict = field(default_factory=dict, compare=False, hash=False)


def default_cache_dir() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("geoql")) / "overpassnl"


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
    _check_dir(path)
    return path


def _looks_complete(path: Path) -> bool:
    return all((path / f"dataset.{s}.{kind}").is_file() for s in SPLIT_SIZES for kind in ("nl", "query", "bbox"))


def _read_lines(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
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


def download_release(target: Path, urls: dict[str, str] | None = None) -> None:
    """Download and unpack the official zips into ``target`` (atomically)."""
    import requests
    from tqdm import tqdm

    urls = urls or RELEASE_URLS
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".overpassnl-", dir=target.parent))
    try:
        for name, url in urls.items():
            try:
                response = requests.get(url, stream=True, timeout=60)
                response.raise_for_status()
            except requests.RequestException as exc:
                raise DatasetError(f"could not download {url} ({exc}); {FIX_HINT}") from None
            total = int(response.headers.get("content-length") or 0) or None
            buf = io.BytesIO()
            with tqdm(total=total, unit="B", unit_scale=True, desc=f"downloading {name}") as bar:
                for chunk in response.iter_content(1 << 16):
                    buf.write(chunk)
                    bar.update(len(chunk))
            try:
                with zipfile.ZipFile(buf) as archive:
                    for member in archive.infolist():
                        base = os.path.basename(member.filename)
                        if member.is_dir() or not base or base.startswith("."):
                            continue
                        with archive.open(member) as src, open(staging / base, "wb") as dst:
                            shutil.copyfileobj(src, dst)
            except zipfile.BadZipFile:
                raise DatasetError(f"{url} is not a valid zip archive; {FIX_HINT}") from None
        _check_dir(staging)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
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
            difficulty[kind] = [float(v) for v in values]
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
    path = resolve_data_dir(data_dir) / "nominatim_cache.json"
    if not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))
