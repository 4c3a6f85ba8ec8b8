"""The CPU default backend: no language model, milliseconds per request.

It copies the queries of the most similar training requests, edits them
towards the request (place, tags, element types, counting, numbers) through
the ``overpassql`` AST and returns the candidate that a model trained on the
training split predicts to score best (``app.cpu``). The trained model lives in
``app.cpu.model.default_model_dir()``; when it is missing the backend trains it
on first use (minutes, with a progress bar) unless told not to: in seconds where the selector shipped with GeoQL fits the
training pairs and the tag index (``app.cpu.prebuilt``), else in minutes. When it must
train, with ``quick_start`` (the demo's choice) it first trains a small model, answers with
it within about a minute, and trains the full one on a thread of its own, which takes over
once saved.

Registered as ``cpu``; ``retrieval``, its old name, still works for one release.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from pathlib import Path
from typing import ClassVar

from geoql.app.backends.base import Backend, BackendError, Evidence, Generation, GenerationRequest
from geoql.app.cpu.model import CpuConfig, CpuModel, ModelMissingError, check_model_dir, default_model_dir
from geoql.app.cpu.prebuilt import shipped_model
from geoql.core.errors import ConfigError
from geoql.eval import dataset as eval_dataset
from geoql.nl.request import Knowledge, Request
from geoql.retrieval import RetrievedExample

log = logging.getLogger(__name__)

# The quick first model (``quick_start``): the selector learns from the first 1,000 training
# requests without code-switched copies, about a ninth of the full training's pools.
# Measured in docs/notes/2026-12-cold-start.md.
QUICK_TRAINING = {"limit": 1000, "augment": ""}
# Options of the full training beyond ``CpuTrainConfig``'s defaults (none: the model `geoql cpu train` makes).
FULL_TRAINING: dict = {}


class CpuBackend(Backend):
    """Nearest training queries, edited and re-ranked.

    Options: ``model_dir`` (default: ``$GEOQL_CPU_MODEL_DIR`` or the user data
    dir), ``k`` neighbours, ``edits`` ("all", "none" or e.g. "area,tags"),
    ``select`` (False: nearest neighbour, for ablations), ``train_if_missing``
    (train on first use; the tag index is built first when missing), ``data_dir``
    (dataset for that training), ``index_dir`` (the tag index; default
    ``$GEOQL_INDEX_DIR`` or the user data dir), ``faithful`` (``all``: no answer
    carries a place, name, id, user, date or output format the request does not give;
    ``core``: the output format may come from a neighbour; ``off``), ``licensed`` (``all``: the answer is the
    best-ranked candidate with no part the request does not license where the pool has one; ``core``, kinds, ``off``),
    ``compose``
    (False: no query composed from the request alone, ``app.cpu.compose``), ``example_k`` (neighbours
    from the tag index's example search; 0: none), ``e5_k`` (neighbours from the multilingual
    embedding; 0: none), ``quick_start``
    (when the model must be trained: answer from a quick model first while the full one trains
    in the background; :attr:`upgrading` says whether it still does).
    """

    name: ClassVar[str] = "cpu"
    supports_grammar: ClassVar[bool] = False
    needs_prompt: ClassVar[bool] = False
    compile_options: ClassVar[tuple[str, ...]] = ("index_dir",)
    batch_workers: ClassVar[int | None] = None  # one worker per core
    # The model is read-only once loaded (it is swapped whole, under the lock, when the full one takes
    # over); the retrievers share their index between threads and run their encoder and FAISS calls
    # on one worker thread (retrieval.embedding.run_single_threaded).
    thread_safe: ClassVar[bool] = True
    # One compile asks for the model up to twice (batch, then one by one);
    # without a dataset each ask would retry the download and the index build.
    retry_training_after_s: ClassVar[float] = 60.0

    def __init__(self, model_dir: str | Path | None = None, *, k: int | None = None, edits: str | None = None,
                 select: bool | None = None, train_if_missing: bool = True, data_dir: str | Path | None = None,
                 index_dir: str | Path | None = None, faithful: str | None = None, compose: bool | None = None,
                 example_k: int | None = None, e5_k: int | None = None, licensed: str | None = None,
                 quick_start: bool = False):
        self.model_dir = Path(model_dir).expanduser() if model_dir else None
        self.train_if_missing = _as_bool(train_if_missing, "train_if_missing")
        self.quick_start = _as_bool(quick_start, "quick_start")
        self.data_dir = data_dir
        self.index_dir = Path(index_dir).expanduser() if index_dir else None
        self._overrides = {key: value for key, value in (("k", k), ("edits", edits), ("select", select),
                                                         ("faithful", faithful), ("compose", compose),
                                                         ("example_k", example_k), ("e5_k", e5_k),
                                                         ("licensed", licensed)) if value is not None}
        for number in ("k", "example_k", "e5_k"):
            if number in self._overrides:
                self._overrides[number] = _as_int(self._overrides[number], number)
        for flag in ("select", "compose"):
            if flag in self._overrides:
                self._overrides[flag] = _as_bool(self._overrides[flag], flag)
        try:
            CpuConfig(**self._overrides)  # fail on bad options now, not at the first request
        except ValueError as exc:
            raise BackendError(f"bad cpu backend option: {exc}") from None
        self._model = None
        self._config = None
        self._lock = threading.Lock()
        self._training_failed: tuple[float, str] | None = None  # (when, why)
        self._full_training: threading.Thread | None = None  # quick_start: the full model's training
        self.quick_model = False  # answering from the quick first model
        self.upgrade_error = ""  # why the full model's training failed (the quick model stays)

    # The model is loaded (or trained) on first use so that building a
    # Compiler stays instant.
    @property
    def model(self):
        with self._lock:
            if self._model is None:
                if self._training_failed and time.monotonic() - self._training_failed[0] < self.retry_training_after_s:
                    raise BackendError(self._training_failed[1])
                self._use(self._load_or_train())
            return self._model

    def _use(self, model: CpuModel) -> None:
        base = vars(model.config).copy()
        base.update(self._overrides)
        self._model, self._config = model, CpuConfig(**base)

    @property
    def upgrading(self) -> bool:
        """Whether the full model is still training behind the quick one (``quick_start``)."""
        thread = self._full_training
        return thread is not None and thread.is_alive()

    def wait_for_full_model(self, timeout: float | None = None) -> bool:
        """Wait for the background training (``quick_start``); True when none is running any more."""
        thread = self._full_training
        if thread is not None:
            thread.join(timeout)
        return not self.upgrading

    def _load_or_train(self) -> CpuModel:
        target = self.model_dir or default_model_dir()
        try:
            return CpuModel.load(target, self.index_dir)
        except ModelMissingError as exc:
            if not self.train_if_missing:
                raise BackendError(str(exc)) from None
            print(f"geoql: {exc}; preparing it now (one time: seconds where the selector shipped with GeoQL fits, "
                  "else minutes of training)", file=sys.stderr)
        # Here, not at the top: training's code (and the index builder it imports) is ~0.02 s of
        # every cold `geoql compile`, which only loads a model.
        from geoql.app.cpu.train import CpuTrainConfig, ensure_index, train, train_and_save

        try:
            examples = eval_dataset.load_split("train", self.data_dir)  # without the dataset neither index nor model can be built: say so first
            check_model_dir(target)  # nor is the index worth minutes when the model cannot be saved
            if ensure_index(self.index_dir, self.data_dir):
                try:  # a model that only lacked its index needs no retraining
                    return CpuModel.load(target, self.index_dir)
                except ModelMissingError:
                    pass
            # The selector shipped with GeoQL, where it was trained on these pairs and an index like this one:
            # the full model in seconds, saved as if `geoql cpu train` had made it.
            shipped, why = shipped_model([e.nl for e in examples], [e.query for e in examples], self.index_dir)
            if shipped is not None:
                shipped.save(target)
                return shipped
            print(f"geoql: the shipped CPU selector does not fit here ({why}); training one", file=sys.stderr)
            index_dir = str(self.index_dir) if self.index_dir else None
            full = CpuTrainConfig(index_dir=index_dir, **FULL_TRAINING)
            if not self.quick_start:
                return train_and_save(target, self.data_dir, full)
            quick = train([e.nl for e in examples], [e.query for e in examples],
                          CpuTrainConfig(index_dir=index_dir, **QUICK_TRAINING))
            self.quick_model = True
            self._full_training = threading.Thread(target=self._train_full, args=(target, full),
                                                   name="geoql-cpu-full-model", daemon=True)
            self._full_training.start()
            return quick
        except (eval_dataset.DatasetError, OSError, ConfigError) as exc:  # no dataset; a model directory that cannot be written
            why = f"cannot train the CPU model: {exc}"
            self._training_failed = (time.monotonic(), why)
            raise BackendError(why) from None

    def _train_full(self, target: Path, config) -> None:
        """The full model, trained and saved (atomically) while the quick one answers; then it answers."""
        from geoql.app.cpu.train import train_and_save

        try:
            model = train_and_save(target, self.data_dir, config)
        except Exception as exc:  # noqa: BLE001 (the quick model keeps answering; the next start trains again)
            log.exception("training the full CPU model failed")
            self.upgrade_error = f"{type(exc).__name__}: {exc}"
            return
        with self._lock:
            self._use(model)
            self.quick_model = False

    def _current(self) -> tuple[CpuModel, CpuConfig]:
        self.model  # noqa: B018 (loads, or trains, on first use)
        with self._lock:  # the model and its config together: the full model may take over meanwhile
            return self._model, self._config

    def knowledge(self) -> Knowledge:
        """The model's place names and its index's tag names (``CpuModel.knowledge``): ``compile()``
        reads a request with them (a request read without them misses lower-case places)."""
        return self._current()[0].knowledge()

    def read(self, nl: str) -> Request:
        """``nl`` read as ``compile()`` reads it for this backend (scripts, tests, benchmarks)."""
        return self._current()[0].read(nl)

    def generate(self, request: GenerationRequest) -> Generation:
        """Candidates for ``request``, with the tag hints (when the model uses the index) and the
        nearest training requests they came from, and the model's lexicon and calibration folder."""
        model, config = self._current()
        if request.request is None or not request.request.nl.strip():
            raise BackendError("empty request: describe what to find, e.g. 'cafes in Bonn'")
        found = model.retrieve(request.request, config)
        texts = model.compile(request.request, n=request.n, config=config, retrieved=found)
        examples = tuple(RetrievedExample(nb.index, model.train_nls[nb.index], model.train_queries[nb.index],
                                          round(nb.score, 6)) for nb in found.neighbours)
        evidence = Evidence(calibrated=True, word_tags=model.lexicon.word_tag,
                            calibrator_dir=self.model_dir or default_model_dir())
        return Generation(tuple(texts), tags=tuple(found.hits or ()), examples=examples, evidence=evidence)

    def describe(self) -> str:
        where = self.model_dir or default_model_dir()
        opts = ", ".join(f"{k}={v}" for k, v in sorted(self._overrides.items()))
        if self.quick_model:
            limit = QUICK_TRAINING.get("limit")
            doing = f"the full one failed: {self.upgrade_error}" if self.upgrade_error else "while the full one trains"
            opts = f"quick first model ({limit} training requests) {doing}" + (", " + opts if opts else "")
        return f"cpu (model {where}{'; ' + opts if opts else ''})"

    def close(self) -> None:
        self._model = None


def _as_bool(value, name: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise BackendError(f"option {name} must be true or false (got {value!r})")


def _as_int(value, name: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise BackendError(f"option {name} must be a whole number (got {value!r})") from None
