"""The CPU default's selector as numpy arrays: its saved format and its inference.

The selection model is trained as scikit-learn's ``HistGradientBoostingRegressor``
(``app.cpu.train``), but importing scikit-learn 1.9 pulls in scipy.stats, pandas and
pyarrow: seconds and ~150 MB of a cold ``geoql compile``. The fitted regressor is plain
trees, so it is converted once after fitting into :class:`TreeEnsemble`, saved as arrays
(``selector.npz``, read with ``allow_pickle=False``) and predicted with numpy, computing the
same numbers bit for bit: every tree walked with its thresholds (``x <= threshold`` goes
left, NaN goes where ``missing_go_to_left`` says), the leaf values added to the baseline
tree by tree in float64, as scikit-learn's ``_raw_predict`` does (squared error: the
identity link). Anything else (another loss, categorical splits) is refused, not guessed at.
"""

from __future__ import annotations

import numpy as np

from geoql.core.errors import GeoqlError


class NotConvertible(GeoqlError):
    """A fitted regressor that :class:`TreeEnsemble` does not reproduce."""


class TreeEnsemble:
    """A fitted ``HistGradientBoostingRegressor`` (squared error, numeric features) as numpy arrays."""

    def __init__(self, baseline: float, trees: list[np.ndarray], n_features: int) -> None:
        self.baseline = float(baseline)
        self.n_features_in_ = int(n_features)
        sizes = [len(t) for t in trees]
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        nodes = np.concatenate(trees)
        self._roots = offsets
        self._leaf = nodes["is_leaf"].astype(bool)
        self._value = nodes["value"].astype(np.float64)
        self._feature = nodes["feature_idx"].astype(np.int64)
        self._threshold = nodes["num_threshold"].astype(np.float64)
        self._missing_left = nodes["missing_go_to_left"].astype(bool)
        tree_of = np.repeat(offsets, sizes)
        self._left = nodes["left"].astype(np.int64) + tree_of  # child ids are per tree; make them global
        self._right = nodes["right"].astype(np.int64) + tree_of

    # The arrays that make the ensemble: what a saved model and ``app.cpu.prebuilt`` hold (``to_arrays`` / ``from_arrays``).
    _ARRAYS = ("_roots", "_leaf", "_value", "_feature", "_threshold", "_missing_left", "_left", "_right")

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The ensemble as named numpy arrays (node ids global), for ``np.savez``."""
        out = {name.lstrip("_"): getattr(self, name) for name in self._ARRAYS}
        out["baseline"] = np.array([self.baseline], dtype=np.float64)
        out["n_features"] = np.array([self.n_features_in_], dtype=np.int64)
        return out

    @classmethod
    def from_arrays(cls, arrays) -> "TreeEnsemble":
        """The inverse of :meth:`to_arrays`; ``ValueError`` when an array is missing or they disagree."""
        self = cls.__new__(cls)
        try:
            self.baseline = float(arrays["baseline"][0])
            self.n_features_in_ = int(arrays["n_features"][0])
            for name in cls._ARRAYS:
                setattr(self, name, np.asarray(arrays[name.lstrip("_")]))
        except (KeyError, IndexError, TypeError) as exc:
            raise ValueError(f"not a tree ensemble ({type(exc).__name__}: {exc})") from None
        nodes = len(self._leaf)
        if not all(len(getattr(self, name)) == nodes for name in cls._ARRAYS[1:]) or not len(self._roots):
            raise ValueError("the tree ensemble's node arrays differ in length")
        inner = ~self._leaf.astype(bool)
        at = np.flatnonzero(inner)
        # Children come after their parent (scikit-learn's order): a walk always ends at a leaf.
        if nodes and (self._roots.max() >= nodes or (inner.any() and (
                self._left[inner].max() >= nodes or self._right[inner].max() >= nodes
                or (self._left[inner] <= at).any() or (self._right[inner] <= at).any()
                or self._feature[inner].max() >= self.n_features_in_ or self._feature[inner].min() < 0))):
            raise ValueError("the tree ensemble points outside its nodes or features")
        self._leaf = self._leaf.astype(bool)
        self._missing_left = self._missing_left.astype(bool)
        return self

    @classmethod
    def from_sklearn(cls, estimator) -> "TreeEnsemble":
        """A fitted ``HistGradientBoostingRegressor`` (squared error, numeric features) as arrays;
        :class:`NotConvertible` for anything else."""
        state = vars(estimator)
        if type(estimator).__name__ != "HistGradientBoostingRegressor":
            raise NotConvertible(f"the selector is a {type(estimator).__name__}, not a HistGradientBoostingRegressor")
        if state.get("loss") != "squared_error" or state.get("n_trees_per_iteration_") != 1:
            raise NotConvertible(f"selector loss {state.get('loss')!r} / {state.get('n_trees_per_iteration_')} trees per round")
        if state.get("_preprocessor") is not None or state.get("is_categorical_") is not None:
            raise NotConvertible("the selector has categorical features")
        trees = []
        for round_ in state["_predictors"]:
            if len(round_) != 1:
                raise NotConvertible("unexpected boosting round")
            nodes = round_[0].nodes
            if nodes["is_categorical"].any():
                raise NotConvertible("categorical split")
            trees.append(nodes)
        baseline = np.asarray(state["_baseline_prediction"], dtype=np.float64)
        if baseline.size != 1 or not trees:
            raise NotConvertible("unexpected baseline or no trees")
        return cls(float(baseline.ravel()[0]), trees, state["n_features_in_"])

    def predict(self, features) -> np.ndarray:
        x = np.asarray(features, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.n_features_in_:
            raise ValueError(f"X has shape {x.shape}, the selector expects {self.n_features_in_} features")
        n = x.shape[0]
        node = np.broadcast_to(self._roots, (n, len(self._roots))).copy()  # (rows, trees)
        rows = np.broadcast_to(np.arange(n)[:, None], node.shape)
        while True:
            inner = ~self._leaf[node]
            if not inner.any():
                break
            at, r = node[inner], rows[inner]
            value = x[r, self._feature[at]]
            left = np.where(np.isnan(value), self._missing_left[at], value <= self._threshold[at])
            node[inner] = np.where(left, self._left[at], self._right[at])
        values = np.concatenate([np.full((n, 1), self.baseline), self._value[node]], axis=1)
        # Tree by tree onto the baseline, in float64: np.add.accumulate adds strictly in order.
        return np.add.accumulate(values, axis=1)[:, -1].copy() if n else np.zeros(0)
