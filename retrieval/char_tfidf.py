"""Character n-gram TF-IDF without scikit-learn, equal to its ``TfidfVectorizer(analyzer="char_wb")``.

scikit-learn 1.9 imports scipy.stats, pandas and pyarrow on ``import sklearn``:
seconds and ~150 MB before a single request is answered. The retrievers only need
the char_wb analyzer, a vocabulary, idf weights and one sparse product, so this
module does exactly those steps, in scikit-learn's order and float types, with
numpy alone:

* analyzer: lower-case, whitespace runs to one space, each word padded with a
  space, its n-grams for n in the range (a word shorter than n counted once);
* counts per document in float32, sorted by column; ``sublinear_tf`` ->
  ``log(tf) + 1``; times ``idf``; rows L2-normalised (the sum of squares in
  float64 of float32 squares, as ``sklearn.utils.sparsefuncs_fast`` does);
* ``fit``: vocabulary sorted, terms in fewer than ``min_df`` documents dropped,
  ``idf = ln((1 + n) / (1 + df)) + 1`` (smooth idf) in the data's dtype;
* the product with a (features x documents) CSR matrix accumulates in float32 in
  the query's column order, as scipy's ``csr_matmat`` does.

tests/retrieval/test_char_tfidf.py checks that vocabularies, weights and scores are
bit-identical to scikit-learn's. A fitted vectorizer is saved as plain arrays
(:meth:`CharTfidf.to_arrays`, read with ``allow_pickle=False``): the CPU default's neighbours
and the example retriever's cache.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import sys
import zipfile
from dataclasses import dataclass


from geoql.core.arrays import texts_from_arrays, texts_to_arrays
from geoql.core.files import write_atomic
from geoql.core.paths import user_dir

_WHITE_SPACES = re.compile(r"\s\s+")
FIT_FORMAT = 1  # bump when what fit_columns caches changes


def char_wb_ngrams(text: str, ngram_range: tuple[int, int] = (2, 4), lowercase: bool = True) -> list[str]:
    """The n-grams scikit-learn's ``char_wb`` analyzer yields, in its order.

    >>> char_wb_ngrams("Bus  stop", (2, 3))
    [' b', 'bu', 'us', 's ', ' bu', 'bus', 'us ', ' s', 'st', 'to', 'op', 'p ', ' st', 'sto', 'top', 'op ']
    >>> char_wb_ngrams("a", (2, 4))
    [' a', 'a ', ' a ']
    """
    if lowercase:
        text = text.lower()
    text = _WHITE_SPACES.sub(" ", text)
    low, high = ngram_range
    grams: list[str] = []
    append = grams.append
    for word in text.split():
        word = f" {word} "
        length = len(word)
        for n in range(low, high + 1):
            offset = 0
            append(word[offset:offset + n])
            while offset + n < length:
                offset += 1
                append(word[offset:offset + n])
            if offset == 0:  # a word shorter than n is counted once
                break
    return grams


@dataclass
class Csr:
    """A compressed-sparse-row matrix: just what the retrievers multiply."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    shape: tuple[int, int]

    def __matmul__(self, other: "Csr") -> "Dense":
        """``self @ other`` as dense rows, summed like scipy's ``csr_matmat``: per row, the products
        of each stored entry (in stored order) with the matching row of ``other`` are added in the
        common dtype."""
        if self.shape[1] != other.shape[0]:
            raise ValueError(f"shapes {self.shape} and {other.shape} do not align")
        if "scipy.sparse" in sys.modules:  # already paid for (training imports scikit-learn): the same sums, in C
            return Dense((self.to_scipy() @ other.to_scipy()).toarray())
        return Dense(self.matmul_numpy(other))

    def matmul_numpy(self, other: "Csr"):
        """``self @ other`` as a dense array, with numpy alone (the cold-start path)."""
        import numpy as np

        dtype = np.result_type(self.data.dtype, other.data.dtype)
        out = np.zeros((self.shape[0], other.shape[1]), dtype=dtype)
        other_data = other.data.astype(dtype, copy=False)
        for r in range(self.shape[0]):
            a, b = int(self.indptr[r]), int(self.indptr[r + 1])
            if a == b:
                continue
            cols = self.indices[a:b]
            starts, lengths = other.indptr[cols], other.indptr[cols + 1] - other.indptr[cols]
            total = int(lengths.sum())
            if not total:
                continue
            # The positions of every product in ``other``, in the order csr_matmat visits them.
            ends = np.cumsum(lengths)
            positions = np.arange(total) - np.repeat(ends - lengths - starts, lengths)
            products = np.repeat(self.data[a:b].astype(dtype, copy=False), lengths) * other_data[positions]
            np.add.at(out[r], other.indices[positions], products)  # unbuffered: in that order, one add each
        return out

    def __getitem__(self, key) -> "Csr":
        """``matrix[:, columns]``: the given columns, in the given order (as scipy's column indexing)."""
        import numpy as np

        rows, columns = key if isinstance(key, tuple) and len(key) == 2 else (key, None)
        if not (isinstance(rows, slice) and rows == slice(None)) or columns is None:
            raise TypeError("only matrix[:, columns] is supported")
        columns = np.asarray(columns, dtype=np.int64).ravel()
        if columns.size and (columns.min() < 0 or columns.max() >= self.shape[1]):
            raise IndexError(f"column index out of range for {self.shape[1]} columns")
        if len(np.unique(columns)) != len(columns):  # repeated columns: scipy's own indexing
            picked = self.to_scipy()[:, columns].tocsr()
            return Csr(picked.data, picked.indices, picked.indptr, picked.shape)
        new_of = np.full(self.shape[1], -1, dtype=np.int64)
        new_of[columns] = np.arange(len(columns))
        mapped = new_of[self.indices]
        keep = mapped >= 0
        row_of = np.repeat(np.arange(self.shape[0]), np.diff(self.indptr))
        indptr = np.zeros(self.shape[0] + 1, dtype=self.indptr.dtype)
        np.cumsum(np.bincount(row_of[keep], minlength=self.shape[0]), out=indptr[1:])
        return Csr(self.data[keep], mapped[keep].astype(self.indices.dtype), indptr, (self.shape[0], len(columns)))

    def to_scipy(self):
        """The same matrix as a ``scipy.sparse.csr_matrix`` (made once)."""
        cached = self.__dict__.get("_scipy")
        if cached is None:
            from scipy.sparse import csr_matrix

            cached = self.__dict__["_scipy"] = csr_matrix((self.data, self.indices, self.indptr), shape=self.shape)
        return cached

    def transpose(self) -> "Csr":
        """The transpose, again as CSR with sorted column indices."""
        import numpy as np

        n_rows, n_cols = self.shape
        counts = np.bincount(self.indices, minlength=n_cols)
        indptr = np.zeros(n_cols + 1, dtype=self.indptr.dtype)
        np.cumsum(counts, out=indptr[1:])
        rows = np.repeat(np.arange(n_rows, dtype=self.indices.dtype), np.diff(self.indptr))
        order = np.lexsort((rows, self.indices))  # by new row (old column), then new column (old row)
        return Csr(self.data[order], rows[order], indptr, (n_cols, n_rows))


class Dense:
    """The result of :meth:`Csr.__matmul__` (``.toarray()``, as scipy's results answer)."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def toarray(self) -> np.ndarray:
        return self._array


class CharTfidf:
    """``TfidfVectorizer(analyzer="char_wb", ngram_range, sublinear_tf, min_df, dtype=float32)``, norm l2, smooth idf."""

    def __init__(self, ngram_range: tuple[int, int] = (2, 4), *, sublinear_tf: bool = False, min_df: int = 1,
                 lowercase: bool = True, dtype="float32") -> None:
        import numpy as np

        self.ngram_range = (int(ngram_range[0]), int(ngram_range[1]))
        self.sublinear_tf = bool(sublinear_tf)
        self.min_df = int(min_df)
        self.lowercase = bool(lowercase)
        self.dtype = np.dtype(dtype)
        self.vocabulary_: dict[str, int] = {}
        self.idf_: np.ndarray | None = None

    # -- fitting and transforming ------------------------------------------------

    def _counts(self, texts: list[str], vocabulary: dict[str, int], grow: bool) -> Csr:
        import numpy as np

        indices: list[int] = []
        counts: list[int] = []
        indptr = [0]
        for text in texts:
            counter: dict[int, int] = {}
            for gram in char_wb_ngrams(text, self.ngram_range, self.lowercase):
                j = vocabulary.get(gram)
                if j is None:
                    if not grow:
                        continue
                    j = vocabulary[gram] = len(vocabulary)
                counter[j] = counter.get(j, 0) + 1
            for j in sorted(counter):  # scikit-learn sorts each row's columns
                indices.append(j)
                counts.append(counter[j])
            indptr.append(len(indices))
        return Csr(np.asarray(counts, dtype=self.dtype), np.asarray(indices, dtype=np.int32),
                   np.asarray(indptr, dtype=np.int32), (len(texts), len(vocabulary)))

    def fit_transform(self, texts: list[str]) -> Csr:
        """Learn the vocabulary and idf from ``texts``; their TF-IDF rows."""
        import numpy as np

        vocabulary: dict[str, int] = {}
        counts = self._counts(list(texts), vocabulary, grow=True)
        if not vocabulary:
            raise ValueError("empty vocabulary: no text has a character n-gram")
        # Columns by sorted term, then the terms in fewer than min_df documents dropped.
        terms = sorted(vocabulary)
        new_of_old = np.empty(len(terms), dtype=np.int64)
        for new, term in enumerate(terms):
            new_of_old[vocabulary[term]] = new
        df = np.bincount(new_of_old[counts.indices], minlength=len(terms))
        keep = df >= self.min_df
        if not keep.any():
            raise ValueError(f"no character n-gram occurs in {self.min_df} or more texts")
        final_of_sorted = np.cumsum(keep) - 1
        self.vocabulary_ = {term: int(final_of_sorted[i]) for i, term in enumerate(terms) if keep[i]}
        data, indices, indptr = [], [], [0]
        for r in range(counts.shape[0]):
            a, b = int(counts.indptr[r]), int(counts.indptr[r + 1])
            cols = new_of_old[counts.indices[a:b]]
            vals = counts.data[a:b]
            mask = keep[cols]
            # Stored in first-seen order, as scikit-learn leaves them: the row norm adds up in that order.
            data.append(vals[mask])
            indices.append(final_of_sorted[cols[mask]].astype(np.int32))
            indptr.append(indptr[-1] + int(mask.sum()))
        matrix = Csr(np.concatenate(data) if data else np.zeros(0, self.dtype),
                     np.concatenate(indices) if indices else np.zeros(0, np.int32),
                     np.asarray(indptr, dtype=np.int32), (counts.shape[0], len(self.vocabulary_)))
        n_docs = matrix.shape[0] + 1  # smooth idf: one more document holding every term
        df_kept = (df[keep].astype(self.dtype) + self.dtype.type(1.0))
        idf = np.full_like(df_kept, fill_value=n_docs, dtype=self.dtype)
        idf /= df_kept
        np.log(idf, out=idf)
        idf += 1.0
        self.idf_ = idf
        return self._weigh(matrix)

    def fit_columns(self, texts: list[str], *, cache: bool = True) -> Csr:
        """Fit on ``texts`` and return their TF-IDF as a (features x texts) matrix, the side a query
        row multiplies. Fitting 6,000 requests takes a second or more; the result is kept in the user
        cache (``char-tfidf/<sha256 of settings and texts>.npz``) and read back in milliseconds."""
        import numpy as np

        texts = list(texts)
        digest = hashlib.sha256(json.dumps([FIT_FORMAT, self.ngram_range, self.sublinear_tf, self.min_df, self.lowercase,
                                            self.dtype.str, texts], ensure_ascii=False).encode("utf-8")).hexdigest()
        path = user_dir("cache", "char-tfidf", f"{digest}.npz")
        if cache and path.is_file():
            try:  # a .npz is a zip: a damaged member fails its CRC-32 here and is fitted again
                with np.load(path, allow_pickle=False) as saved:
                    fitted, columns = CharTfidf.from_arrays(saved)
                if fitted.settings() == self.settings() and columns.shape[1] == len(texts):
                    self.vocabulary_, self.idf_ = fitted.vocabulary_, fitted.idf_
                    return columns
            except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
                pass
        columns = self.fit_transform(texts).transpose()
        if cache:
            buffer = io.BytesIO()
            np.savez(buffer, **self.to_arrays(columns))
            try:
                write_atomic(path, buffer.getvalue())
            except OSError:  # a read-only cache only costs the fit next time
                pass
        return columns

    def settings(self) -> dict:
        """What the vectorizer was made with (beside its vocabulary and idf)."""
        return {"ngram_range": list(self.ngram_range), "sublinear_tf": self.sublinear_tf, "min_df": self.min_df,
                "lowercase": self.lowercase, "dtype": self.dtype.str}

    def to_arrays(self, columns: Csr) -> dict:
        """The fitted vectorizer and its (features x texts) matrix as plain arrays, for ``np.savez`` (read
        back with ``allow_pickle=False`` by :meth:`from_arrays`). The vocabulary is stored as its terms'
        UTF-8 joined, with each term's end (``geoql.core.arrays``): exact for any text."""
        import numpy as np

        if self.idf_ is None:
            raise ValueError("the vectorizer is not fitted")
        terms = sorted(self.vocabulary_, key=self.vocabulary_.__getitem__)
        settings = self.settings()
        return {
            **texts_to_arrays(terms, "terms"),
            "idf": self.idf_, "data": columns.data, "indices": columns.indices, "indptr": columns.indptr,
            "shape": np.array(columns.shape, dtype=np.int64),
            "ngram_range": np.array(settings["ngram_range"], dtype=np.int64),
            "flags": np.array([self.sublinear_tf, self.lowercase], dtype=bool),
            "min_df": np.array([self.min_df], dtype=np.int64),
        }

    @classmethod
    def from_arrays(cls, arrays) -> tuple["CharTfidf", Csr]:
        """The inverse of :meth:`to_arrays`: ``(vectorizer, columns)``; ``ValueError`` when the arrays do not
        make one (a missing array, sizes that disagree, indices outside the matrix)."""
        import numpy as np

        try:
            terms = texts_from_arrays(arrays["terms_utf8"], arrays["terms_end"])
            idf = np.asarray(arrays["idf"])
            sublinear, lowercase = (bool(x) for x in arrays["flags"])
            out = cls(tuple(int(n) for n in arrays["ngram_range"]), sublinear_tf=sublinear,
                      min_df=int(arrays["min_df"][0]), lowercase=lowercase, dtype=idf.dtype)
            shape = tuple(int(n) for n in arrays["shape"])
            columns = Csr(np.asarray(arrays["data"]), np.asarray(arrays["indices"]), np.asarray(arrays["indptr"]), shape)
        except (KeyError, IndexError, TypeError) as exc:
            raise ValueError(f"not a fitted character TF-IDF ({type(exc).__name__}: {exc})") from None
        indptr, indices = columns.indptr, columns.indices
        fits = (len(shape) == 2 and idf.ndim == 1 and len(idf) == len(terms) == shape[0]
                and len(indptr) == shape[0] + 1 and int(indptr[0]) == 0 and not (np.diff(indptr) < 0).any()
                and int(indptr[-1]) == len(columns.data) == len(indices) and columns.data.dtype == idf.dtype
                and (not len(indices) or (int(indices.min()) >= 0 and int(indices.max()) < shape[1])))
        if not fits:
            raise ValueError("the character TF-IDF arrays disagree in size or point outside the matrix")
        out.vocabulary_ = {term: i for i, term in enumerate(terms)}
        if len(out.vocabulary_) != len(terms):
            raise ValueError("the character TF-IDF vocabulary repeats a term")
        out.idf_ = idf
        return out, columns

    def transform(self, texts: list[str]) -> Csr:
        """TF-IDF rows of ``texts`` over the fitted vocabulary (unknown n-grams ignored)."""
        if self.idf_ is None:
            raise ValueError("the vectorizer is not fitted")
        return self._weigh(self._counts(list(texts), self.vocabulary_, grow=False))

    def _weigh(self, counts: Csr) -> Csr:
        import numpy as np

        data = counts.data.astype(self.dtype, copy=True)
        if self.sublinear_tf:
            np.log(data, data)
            data += 1.0
        data *= self.idf_[counts.indices]
        for r in range(counts.shape[0]):
            a, b = int(counts.indptr[r]), int(counts.indptr[r + 1])
            row = data[a:b]
            total = sum((row * row).tolist(), 0.0)  # float32 squares added up in float64, one by one
            if total == 0.0:
                continue
            data[a:b] = (row.astype(np.float64) / np.sqrt(total)).astype(self.dtype)
        return Csr(data, counts.indices, counts.indptr, counts.shape)
