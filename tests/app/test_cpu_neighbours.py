"""Character TF-IDF neighbours over the training requests."""

from __future__ import annotations

from geoql.app.cpu.neighbours import CharTfidfNeighbours

TEXTS = ["cafes in Bonn", "castles in Bonn", "bakeries in Rome", "cafes in Rome", "springs"]


def test_nearest_first_and_exclude():
    nb = CharTfidfNeighbours(TEXTS)
    hits = nb.search("cafe in Bonn", 3)
    assert hits[0].index == 0 and hits[0].score >= hits[1].score >= hits[2].score
    assert all(h.index != 0 for h in nb.search("cafe in Bonn", 3, exclude={0}))


def test_k_larger_than_the_data_and_determinism():
    nb = CharTfidfNeighbours(TEXTS)
    a = nb.search("zzz", 10)
    assert len(a) == len(TEXTS)
    assert [h.index for h in a] == [h.index for h in nb.search("zzz", 10)]


def test_batch_equals_single():
    nb = CharTfidfNeighbours(TEXTS)
    batch = nb.search_many(["cafes", "rome"], 2, [{0}, set()])
    assert batch == [nb.search("cafes", 2, {0}), nb.search("rome", 2)]
