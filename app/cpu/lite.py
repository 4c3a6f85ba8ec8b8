"""Reading a saved CPU model without importing scikit-learn or scipy.

``model.pkl`` holds three scikit-learn/scipy objects: the neighbours' char
TF-IDF vectorizer, its (features x requests) matrix, and the selection model (a
``HistGradientBoostingRegressor``). Importing scikit-learn 1.9 pulls in scipy.stats,
pandas and pyarrow: most of a cold ``geoql compile``'s seconds and memory. The
pickle's state of those objects is plain numpy and dicts, so this reader unpickles
them into inert placeholders and rebuilds numpy equivalents that compute the same
numbers, bit for bit:

* the vectorizer and matrix -> ``retrieval.char_tfidf.CharTfidf`` and ``Csr``;
* the regressor -> :class:`TreeEnsemble`: every tree walked with its thresholds
  (``x <= threshold`` goes left, NaN goes where ``missing_go_to_left`` says), the
  leaf values added to the baseline tree by tree in float64, as scikit-learn's
  ``_raw_predict`` does (squared error: the identity link).

Anything else (another estimator, categorical splits, a class this module does not
know) is not guessed at: :func:`read_model` then unpickles the ordinary way.
"""

from __future__ import annotations

import pickle
from collections import Counter

import numpy as np

from geoql.core.errors import GeoqlError
from geoql.retrieval.char_tfidf import CharTfidf, Csr

_FOREIGN = ("sklearn", "scipy")
_VECTORIZER = "sklearn.feature_extraction.text.TfidfVectorizer"
_REGRESSOR = "sklearn.ensemble._hist_gradient_boosting.gradient_boosting.HistGradientBoostingRegressor"
_CSR = ("scipy.sparse._csr.csr_matrix", "scipy.sparse._csr.csr_array")
# Classes that only occur inside the three objects above (their parameters, loss, binning).
_KNOWN = {
    _VECTORIZER, _REGRESSOR, *_CSR,
    "sklearn.feature_extraction.text.TfidfTransformer",
    "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
    "sklearn.ensemble._hist_gradient_boosting.binning._BinMapper",
    "sklearn._loss.loss.HalfSquaredError", "sklearn._loss._loss.CyHalfSquaredError",
    "sklearn._loss.link.IdentityLink", "sklearn._loss.link.Interval",
    "sklearn._loss._loss.__pyx_unpickle_CyHalfSquaredError",
}


class NotLite(GeoqlError):
    """The pickle holds something this reader does not rebuild; unpickle it the ordinary way."""


class _Placeholder:
    """What a scikit-learn/scipy object unpickles to here: its arguments and state, inert."""

    qualname = "?"

    def __init__(self, *args, **kwargs) -> None:
        self.args, self.kwargs, self.state = args, kwargs, None

    def __setstate__(self, state) -> None:
        self.state = state

    def __repr__(self) -> str:
        return f"<placeholder {self.qualname}>"


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

    # The arrays that make the ensemble: what ``app.cpu.prebuilt`` ships (``to_arrays`` / ``from_arrays``).
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
    def from_sklearn_state(cls, state: dict) -> "TreeEnsemble":
        if state.get("loss") != "squared_error" or state.get("n_trees_per_iteration_") != 1:
            raise NotLite(f"selector loss {state.get('loss')!r} / {state.get('n_trees_per_iteration_')} trees per round")
        if state.get("_preprocessor") is not None or state.get("is_categorical_") is not None:
            raise NotLite("the selector has categorical features")
        trees = []
        for round_ in state["_predictors"]:
            if len(round_) != 1 or not isinstance(round_[0], _Placeholder):
                raise NotLite("unexpected boosting round")
            nodes = round_[0].state["nodes"]
            if nodes["is_categorical"].any():
                raise NotLite("categorical split")
            trees.append(nodes)
        baseline = np.asarray(state["_baseline_prediction"], dtype=np.float64)
        if baseline.size != 1 or not trees:
            raise NotLite("unexpected baseline or no trees")
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


def _unpickler(stream, rename, made: Counter):
    placeholders: dict[str, type] = {}

    class Reader(pickle.Unpickler):
        def find_class(self, module: str, name: str):
            module, name = rename(module, name)
            if module.split(".", 1)[0] not in _FOREIGN:
                return super().find_class(module, name)
            qualname = f"{module}.{name}"
            if qualname not in _KNOWN:
                raise NotLite(qualname)
            made[qualname] += 1
            if qualname not in placeholders:
                placeholders[qualname] = type(name, (_Placeholder,), {"qualname": qualname})
            return placeholders[qualname]

    return Reader(stream)


def read_lite(stream, rename=lambda m, n: (m, n)):
    """The pickled CPU model with numpy stand-ins for its scikit-learn/scipy parts; :class:`NotLite` if
    it holds anything else. ``rename`` maps old (module, class) names to current ones."""
    made: Counter = Counter()
    model = _unpickler(stream, rename, made).load()
    neighbours = getattr(model, "neighbours", None)
    vectorizer, matrix, selector = (getattr(neighbours, "vectorizer", None), getattr(neighbours, "matrix", None),
                                    getattr(model, "selector", None))
    if not (isinstance(vectorizer, _Placeholder) and vectorizer.qualname == _VECTORIZER and isinstance(matrix, _Placeholder)
            and matrix.qualname in _CSR):
        raise NotLite("the neighbours are not a char TF-IDF vectorizer and matrix")
    # Each foreign object must be one of those we rebuild (or a part of them): none left behind elsewhere.
    expected = {_VECTORIZER: 1, matrix.qualname: 1, _REGRESSOR: 1 if selector is not None else 0}
    if any(made[name] != count for name, count in expected.items()):
        raise NotLite(f"foreign objects {dict(made)}")
    try:
        neighbours.vectorizer = CharTfidf.from_sklearn_state(vectorizer.state, vectorizer.state["_tfidf"].state)
        neighbours.matrix = Csr.from_scipy_state(matrix.state)
        if selector is not None:
            if not (isinstance(selector, _Placeholder) and selector.qualname == _REGRESSOR):
                raise NotLite("the selector is not a HistGradientBoostingRegressor")
            model.selector = TreeEnsemble.from_sklearn_state(selector.state)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise NotLite(f"{type(exc).__name__}: {exc}") from None
    return model


def read_model(stream, unpickler_class, rename):
    """``unpickler_class(stream).load()``, but without scikit-learn and scipy where :func:`read_lite` can."""
    start = stream.tell()
    try:
        return read_lite(stream, rename)
    except NotLite:
        stream.seek(start)
        return unpickler_class(stream).load()
