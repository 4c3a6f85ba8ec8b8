"""geoql.eval.dataset: loading the splits, and the one-time download of the release.

The download tests serve zips built here from the shared copy over a real
HTTP server on 127.0.0.1 (the release URL is configurable), laid out like
upstream's: OverpassNL_v1.zip holds dataset/dataset.*, comments.zip holds
comments.jsonl.
"""

from __future__ import annotations

import http.server
import io
import shutil
import threading
import zipfile
from pathlib import Path

import pytest

from geoql.core.errors import GeoqlError
from geoql.eval import dataset
from geoql.eval.dataset import DatasetError, hard_subset, load_split, resolve_data_dir

SPLIT_FILES = [f"dataset.{s}.{k}" for s in ("train", "dev", "test") for k in ("nl", "query", "bbox")]


@pytest.mark.parametrize("split,size", [("train", 6352), ("dev", 1000), ("test", 1000)])
def test_splits_have_the_official_sizes(overpassnl_dir, split, size):
    examples = load_split(split, overpassnl_dir)
    assert len(examples) == size
    assert [e.index for e in examples] == list(range(size))
    assert all(e.split == split and e.nl and e.query for e in examples)


def test_examples_match_the_files(overpassnl_dir):
    examples = load_split("dev", overpassnl_dir)
    queries = (overpassnl_dir / "dataset.dev.query").read_text(encoding="utf-8").split("\n")
    bboxes = (overpassnl_dir / "dataset.dev.bbox").read_text(encoding="utf-8").split("\n")
    assert [e.query for e in examples] == queries[:1000]
    assert [e.bbox for e in examples] == bboxes[:1000]
    assert set(examples[0].difficulty) == set(dataset.DIFFICULTY_KINDS)


@pytest.mark.parametrize("split", ["dev", "test"])
def test_hard_subset_is_the_333_least_similar(overpassnl_dir, split):
    examples = load_split(split, overpassnl_dir)
    hard = hard_subset(examples)
    assert len(hard) == 333 and hard == sorted(hard)
    sims = [e.difficulty["train_sim_oqo"] for e in examples]
    threshold = min(sims[i] for i in hard)
    assert all(sims[i] <= threshold for i in range(len(examples)) if i not in set(hard))


def test_hard_subset_needs_the_difficulty_file(overpassnl_dir):
    with pytest.raises(DatasetError, match="diff_train_sim_oqo"):
        hard_subset(load_split("train", overpassnl_dir))


def test_env_var_is_used(monkeypatch, overpassnl_dir):
    monkeypatch.setenv("GEOQL_DATA_DIR", str(overpassnl_dir))
    assert resolve_data_dir() == overpassnl_dir


def test_unknown_split():
    with pytest.raises(DatasetError, match="choose one of"):
        load_split("validation")


def test_missing_directory_is_one_line_naming_the_fix(tmp_path):
    with pytest.raises(DatasetError) as info:
        load_split("dev", tmp_path / "nowhere")
    message = str(info.value)
    assert "\n" not in message and "GEOQL_DATA_DIR" in message and "--data-dir" in message


def _copy_dataset(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for name in SPLIT_FILES:
        shutil.copy(src / name, dst / name)
    return dst


def test_wrong_line_count_is_reported(tmp_path, overpassnl_dir):
    copy = _copy_dataset(overpassnl_dir, tmp_path / "copy")
    lines = (copy / "dataset.dev.nl").read_text(encoding="utf-8").split("\n")
    (copy / "dataset.dev.nl").write_text("\n".join(lines[:500]) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"dataset\.dev\.nl has 500 lines, expected 1000"):
        load_split("dev", copy)


def test_binary_garbage_is_reported(tmp_path, overpassnl_dir):
    copy = _copy_dataset(overpassnl_dir, tmp_path / "copy")
    (copy / "dataset.test.query").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(DatasetError, match="not UTF-8"):
        load_split("test", copy)


def test_corrupt_difficulty_file_is_reported(tmp_path, overpassnl_dir):
    copy = _copy_dataset(overpassnl_dir, tmp_path / "copy")
    (copy / "dataset.dev.diff_len_nl").write_text("x\n" * 1000, encoding="utf-8")
    with pytest.raises(DatasetError, match="not a number"):
        load_split("dev", copy)


# -- the download ------------------------------------------------------------------


def _zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("dataset/", b"")
        for name, data in files.items():
            archive.writestr(name, data)
    return buf.getvalue()


def _release(src: Path, *, drop_dev_lines: int = 0) -> dict[str, bytes]:
    files = {}
    for name in SPLIT_FILES:
        data = (src / name).read_bytes()
        if drop_dev_lines and name == "dataset.dev.query":
            data = b"\n".join(data.split(b"\n")[drop_dev_lines:])
        files[f"dataset/{name}"] = data
    # upstream's README spells the difficulty files difficulty_*
    for split in ("dev", "test"):
        for kind in dataset.DIFFICULTY_KINDS:
            files[f"dataset/dataset.{split}.difficulty_{kind}"] = (src / f"dataset.{split}.diff_{kind}").read_bytes()
    return {
        "dataset/OverpassNL_v1.zip": _zip(files),
        "dataset/comments.zip": _zip({"comments.jsonl": (src / "comments.jsonl").read_bytes()}),
        "evaluation/cache/nominatim_cache.json": (src / "nominatim_cache.json").read_bytes(),
    }


class _Server:
    """A static file server on 127.0.0.1 whose content the test can swap."""

    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.requests: list[str] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                owner.requests.append(self.path)
                data = owner.files.get(self.path.lstrip("/").split("/", 1)[1])
                if data is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/zip")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/release"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.close()


@pytest.fixture
def download_env(monkeypatch, tmp_path, server):
    monkeypatch.delenv("GEOQL_DATA_DIR", raising=False)
    monkeypatch.setenv("GEOQL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("GEOQL_RELEASE_URL", server.base_url)
    return tmp_path / "cache" / "overpassnl"


def test_download_once_then_load_from_cache(server, download_env, overpassnl_dir):
    server.files = _release(overpassnl_dir)
    examples = load_split("dev")
    assert len(examples) == 1000
    assert [e.query for e in examples] == [e.query for e in load_split("dev", overpassnl_dir)]
    assert examples[5].difficulty == load_split("dev", overpassnl_dir)[5].difficulty
    assert (download_env / "comments.jsonl").read_bytes() == (overpassnl_dir / "comments.jsonl").read_bytes()
    assert dataset.load_nominatim_cache() == dataset.load_nominatim_cache(overpassnl_dir)
    assert len(dataset.load_comments()) > 0
    n_requests = len(server.requests)
    assert n_requests == 3
    assert len(load_split("test")) == 1000
    assert len(server.requests) == n_requests  # the cached copy is reused
    assert not [p for p in download_env.parent.iterdir() if p.name.startswith(".overpassnl-")]


def test_missing_optional_file_still_downloads(server, download_env, overpassnl_dir):
    server.files = _release(overpassnl_dir)
    del server.files["evaluation/cache/nominatim_cache.json"]
    assert len(load_split("dev")) == 1000
    assert dataset.load_nominatim_cache() == {}


def test_corrupt_zip_is_a_clear_error_and_leaves_nothing_behind(server, download_env, overpassnl_dir):
    files = _release(overpassnl_dir)
    files["dataset/OverpassNL_v1.zip"] = files["dataset/OverpassNL_v1.zip"][:2000]  # truncated download
    server.files = files
    with pytest.raises(DatasetError, match="not a valid zip archive") as info:
        load_split("dev")
    assert "\n" not in str(info.value)
    assert not download_env.exists()
    assert not list(download_env.parent.iterdir())


def test_wrong_line_count_in_download_is_a_clear_error(server, download_env, overpassnl_dir):
    server.files = _release(overpassnl_dir, drop_dev_lines=3)
    with pytest.raises(DatasetError, match=r"dataset\.dev\.query has 997 lines, expected 1000"):
        load_split("dev")
    assert not download_env.exists()


def test_http_error_is_a_clear_error(server, download_env):
    server.files = {}
    with pytest.raises(DatasetError, match="could not download .*OverpassNL_v1.zip"):
        load_split("dev")


def test_failed_redownload_keeps_the_previous_copy(server, download_env, overpassnl_dir):
    server.files = _release(overpassnl_dir)
    target = download_env
    dataset.download_release(target, dataset.release_urls())
    before = (target / "dataset.dev.query").read_bytes()
    server.files = {}
    with pytest.raises(DatasetError):
        dataset.download_release(target, dataset.release_urls())
    assert (target / "dataset.dev.query").read_bytes() == before


def test_redownload_replaces_the_copy_and_leaves_nothing_beside_it(server, download_env, overpassnl_dir):
    server.files = _release(overpassnl_dir)
    dataset.download_release(download_env, dataset.release_urls())
    (download_env / "stale.txt").write_text("from the first copy")
    dataset.download_release(download_env, dataset.release_urls())
    assert not (download_env / "stale.txt").exists()
    assert [p.name for p in download_env.parent.iterdir()] == [download_env.name]


def test_benchmark_geocodes_never_download(server, download_env, overpassnl_dir, monkeypatch):
    server.files = _release(overpassnl_dir)
    assert dataset.benchmark_geocodes() == {}  # no copy here yet, and none fetched
    assert server.requests == []
    monkeypatch.setenv("GEOQL_DATA_DIR", str(overpassnl_dir))
    seed = dataset.benchmark_geocodes()
    assert seed and seed == dataset.load_nominatim_cache(overpassnl_dir)


def test_dataset_errors_derive_from_the_geoql_root():
    assert issubclass(DatasetError, GeoqlError)


def test_corrupt_cached_copy_says_how_to_recover(server, download_env, overpassnl_dir):
    server.files = _release(overpassnl_dir)
    load_split("dev")
    (download_env / "dataset.train.nl").write_text("only one line\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="delete .* to download it again"):
        load_split("dev")


def test_without_download_there_is_no_copy(download_env):
    with pytest.raises(DatasetError, match="GEOQL_DATA_DIR"):
        resolve_data_dir(download=False)
