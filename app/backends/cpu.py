"""The CPU default backend: no language model, milliseconds per request.

It copies the queries of the most similar training requests, edits them
towards the request (place, tags, element types, counting, numbers) through
the ``overpassql`` AST and returns the candidate that a model trained on the
training split predicts to score best (``app.cpu``). The trained model lives in
``app.cpu.model.default_model_dir()``; when it is missing the backend trains it
on first use (a few minutes, with a progress bar) unless told not to.

Registered as ``cpu``; ``retrieval``, its old name, still works for one release.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import ClassVar

from geoql.app.backends.base import Backend, BackendError, GenerationRequest
from geoql.app.cpu.model import CpuConfig, CpuModel, ModelMissingError, default_model_dir
from geoql.core.files import check_writable_dir
from geoql.eval import dataset as eval_dataset
from geoql.retrieval import RetrievedExample


class CpuBackend(Backend):
    """Nearest training queries, edited and re-ranked.

    Options: ``model_dir`` (default: ``$GEOQL_CPU_MODEL_DIR`` or the user data
    dir), ``k`` neighbours, ``edits`` ("all", "none" or e.g. "area,tags"),
    ``select`` (False: nearest neighbour, for ablations), ``train_if_missing``
    (train on first use; the tag index is built first when missing), ``data_dir``
    (dataset for that training), ``index_dir`` (the tag index; default
    ``$GEOQL_INDEX_DIR`` or the user data dir), ``faithful`` (``all``: no answer
    carries a place, name, id, user, date or output format the request does not give;
    ``core``: the output format may come from a neighbour; ``off``), ``compose``
    (False: no query composed from the request alone, ``app.cpu.compose``).
    """

    name: ClassVar[str] = "cpu"
    supports_grammar: ClassVar[bool] = False
    needs_prompt: ClassVar[bool] = False
    compile_options: ClassVar[tuple[str, ...]] = ("index_dir",)
    # One compile asks for the model up to twice (batch, then one by one);
    # without a dataset each ask would retry the download and the index build.
    retry_training_after_s: ClassVar[float] = 60.0

    def __init__(self, model_dir: str | Path | None = None, *, k: int | None = None, edits: str | None = None,
                 select: bool | None = None, train_if_missing: bool = True, data_dir: str | Path | None = None,
                 index_dir: str | Path | None = None, faithful: str | None = None, compose: bool | None = None):
        self.model_dir = Path(model_dir).expanduser() if model_dir else None
        self.train_if_missing = _as_bool(train_if_missing, "train_if_missing")
        self.data_dir = data_dir
        self.index_dir = Path(index_dir).expanduser() if index_dir else None
        self._overrides = {key: value for key, value in (("k", k), ("edits", edits), ("select", select),
                                                         ("faithful", faithful), ("compose", compose)) if value is not None}
        if "k" in self._overrides:
            self._overrides["k"] = _as_int(self._overrides["k"], "k")
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

    # The model is loaded (or trained) on first use so that building a
    # Compiler stays instant.
    @property
    def model(self):
        with self._lock:
            if self._model is None:
                if self._training_failed and time.monotonic() - self._training_failed[0] < self.retry_training_after_s:
                    raise BackendError(self._training_failed[1])
                self._model = self._load_or_train()
                base = vars(self._model.config).copy()
                base.update(self._overrides)
                self._config = CpuConfig(**base)
            return self._model

    def _load_or_train(self) -> CpuModel:
        target = self.model_dir or default_model_dir()
        try:
            return CpuModel.load(target, self.index_dir)
        except ModelMissingError as exc:
            if not self.train_if_missing:
                raise BackendError(str(exc)) from None
            print(f"geoql: {exc}; training it now (one time, a few minutes)", file=sys.stderr)
        # Here, not at the top: training's code (and the index builder it imports) is ~0.02 s of
        # every cold `geoql compile`, which only loads a model.
        from geoql.app.cpu.train import CpuTrainConfig, ensure_index, train_and_save

        try:
            eval_dataset.load_split("train", self.data_dir)  # without the dataset neither index nor model can be built: say so first
            check_writable_dir(target)  # nor is the index worth minutes when the model cannot be saved
            if ensure_index(self.index_dir, self.data_dir):
                try:  # a model that only lacked its index needs no retraining
                    return CpuModel.load(target, self.index_dir)
                except ModelMissingError:
                    pass
            index_dir = str(self.index_dir) if self.index_dir else None
            return train_and_save(target, self.data_dir, CpuTrainConfig(index_dir=index_dir))
        except (eval_dataset.DatasetError, OSError) as exc:  # no dataset; a model directory that cannot be written
            why = f"cannot train the CPU model: {exc}"
            self._training_failed = (time.monotonic(), why)
            raise BackendError(why) from None

    def generate(self, request: GenerationRequest) -> list[str]:
        """Candidates for ``request``; ``request.tags`` / ``examples`` become the tag hints
        (when the model uses the index) and the nearest training requests it worked from."""
        model = self.model
        nl = (request.nl or "").strip()
        if not nl:
            raise BackendError("empty request: describe what to find, e.g. 'cafes in Bonn'")
        found = model.retrieve(nl, self._config)
        request.tags = list(found.hits or [])
        request.examples = [RetrievedExample(nb.index, model.train_nls[nb.index], model.train_queries[nb.index],
                                             round(nb.score, 6)) for nb in found.neighbours]
        return model.compile(nl, n=request.n, config=self._config, retrieved=found)

    def describe(self) -> str:
        where = self.model_dir or default_model_dir()
        opts = ", ".join(f"{k}={v}" for k, v in sorted(self._overrides.items()))
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
