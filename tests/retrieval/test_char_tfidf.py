"""CharTfidf against scikit-learn's TfidfVectorizer on the real requests: the same bits, not just close."""

from __future__ import annotations

import numpy as np
import pytest

from geoql.eval.dataset import load_split
from geoql.retrieval.char_tfidf import CharTfidf, Csr, char_wb_ngrams

SETTINGS = [  # the example retriever's and the CPU default's neighbours'
    {"sublinear_tf": True, "min_df": 2},
    {},
]


@pytest.fixture(scope="module")
def texts():
    train = [e.nl for e in load_split("train")[:1500]]
    dev = [e.nl for e in load_split("dev")[:300]] + ["", "!!!", "Кафе в Москве", "東京の駅", "Straße  ÄÖÜ\tß", "x" * 500]
    return train, dev


def _sklearn(settings):
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), dtype=np.float32, **settings)


def _csr(matrix) -> Csr:
    return Csr(matrix.data, matrix.indices, matrix.indptr, matrix.shape)


def test_the_analyzer_is_scikit_learns(texts):
    reference = _sklearn({}).build_analyzer()
    for text in texts[0][:300] + texts[1]:
        assert char_wb_ngrams(text) == reference(text)


@pytest.mark.parametrize("settings", SETTINGS)
def test_fit_transform_and_scores_are_bit_identical(texts, settings):
    train, dev = texts
    sk = _sklearn(settings)
    want_columns = sk.fit_transform(train).T.tocsr()
    mine = CharTfidf((2, 4), **settings)
    got_columns = mine.fit_transform(train).transpose()
    assert mine.vocabulary_ == sk.vocabulary_
    assert mine.idf_.dtype == sk.idf_.dtype and np.array_equal(mine.idf_, sk.idf_)
    assert np.array_equal(got_columns.indptr, want_columns.indptr)
    assert np.array_equal(got_columns.indices, want_columns.indices)
    assert np.array_equal(got_columns.data, want_columns.data)
    want_rows, got_rows = sk.transform(dev), mine.transform(dev)
    assert np.array_equal(got_rows.data, want_rows.data) and np.array_equal(got_rows.indices, want_rows.indices)
    want = (want_rows @ want_columns).toarray()
    assert np.array_equal(got_rows.matmul_numpy(got_columns), want)  # numpy only: the cold-start path
    assert np.array_equal((got_rows @ got_columns).toarray(), want)  # scipy is loaded here: its own product


@pytest.mark.parametrize("settings", SETTINGS)
def test_the_saved_arrays_give_the_same_vectorizer(texts, settings):
    train, dev = texts
    mine = CharTfidf((2, 4), **settings)
    columns = mine.fit_transform(train + ["nul\0 inside", "trailing nul\0"]).transpose()
    again, again_columns = CharTfidf.from_arrays(dict(np.load(_saved(mine.to_arrays(columns)), allow_pickle=False)))
    assert again.vocabulary_ == mine.vocabulary_ and again.settings() == mine.settings()
    assert np.array_equal(again.idf_, mine.idf_) and again.idf_.dtype == mine.idf_.dtype
    assert np.array_equal(again.transform(dev).matmul_numpy(again_columns), mine.transform(dev).matmul_numpy(columns))


def test_arrays_that_do_not_make_a_vectorizer_are_refused(texts):
    mine = CharTfidf((2, 4))
    arrays = mine.to_arrays(mine.fit_transform(texts[0][:50]).transpose())
    for broken in ({**arrays, "idf": arrays["idf"][:-1]}, {**arrays, "indices": arrays["indices"] + 10**6},
                   {k: v for k, v in arrays.items() if k != "terms_end"}):
        with pytest.raises(ValueError):
            CharTfidf.from_arrays(broken)


def _saved(arrays):
    import io

    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    buffer.seek(0)
    return buffer


def test_fit_columns_is_cached_by_content(texts, monkeypatch, tmp_path):
    monkeypatch.setenv("GEOQL_CACHE_DIR", str(tmp_path))
    train, dev = texts
    first = CharTfidf((2, 4), sublinear_tf=True, min_df=2)
    columns = first.fit_columns(train)
    assert len(list((tmp_path / "char-tfidf").glob("*.npz"))) == 1
    again = CharTfidf((2, 4), sublinear_tf=True, min_df=2)
    cached = again.fit_columns(train)
    assert again.vocabulary_ == first.vocabulary_ and np.array_equal(again.idf_, first.idf_)
    assert np.array_equal(cached.data, columns.data) and np.array_equal(cached.indices, columns.indices)
    assert np.array_equal(again.transform(dev).matmul_numpy(cached), first.transform(dev).matmul_numpy(columns))
    CharTfidf((2, 4)).fit_columns(train[:100])  # other settings and texts: another entry
    assert len(list((tmp_path / "char-tfidf").glob("*.npz"))) == 2
    for path in (tmp_path / "char-tfidf").glob("*.npz"):
        path.write_bytes(b"damaged")
    fresh = CharTfidf((2, 4), sublinear_tf=True, min_df=2)
    assert np.array_equal(fresh.fit_columns(train).data, columns.data)  # a damaged file is fitted again


def test_bad_input():
    with pytest.raises(ValueError, match="not fitted"):
        CharTfidf().transform(["x"])
    with pytest.raises(ValueError, match="empty vocabulary"):
        CharTfidf().fit_transform(["", "   "])
    fitted = CharTfidf()
    fitted.fit_transform(["cafes in Bonn"])
    empty = fitted.transform(["", "zzzz"])  # unknown n-grams only: empty rows, no division by zero
    assert empty.shape[0] == 2
