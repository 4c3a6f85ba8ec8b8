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


def test_frame_neighbours_follow_the_hinted_tags_and_the_shape():
    from geoql.app.cpu.compose import query_shape
    from geoql.app.cpu.lexicon import tag_names
    from geoql.app.cpu.neighbours import FrameNeighbours

    queries = [
        '{{geocodeArea:"Bonn"}}->.a;node["amenity"="pharmacy"](area.a);out;',
        'node["amenity"="pharmacy"]({{bbox}});out count;',
        'node["amenity"="pharmacy"]["wheelchair"="yes"]({{bbox}});out;',
        'node["amenity"="cafe"]({{bbox}});out;',
    ]
    frames = FrameNeighbours(queries, tag_names, query_shape)
    hints = {"amenity=pharmacy": 0.7, "healthcare=pharmacy": 0.2}
    assert [i for i, _ in frames.search(hints, "place", False, 3)] == [0, 2, 1]  # 2: counting agrees, one tag more
    assert frames.search(hints, "view", True, 1)[0][0] == 1  # same shape and counting
    assert [i for i, _ in frames.search(hints, "place", False, 3, exclude={0})] == [2, 1]
    assert frames.search(None, "place", False, 3) == [] and frames.search(hints, "place", False, 0) == []


def test_similarities_are_the_search_scores():
    from geoql.app.cpu.neighbours import similarities

    nb = CharTfidfNeighbours(TEXTS)
    hits = nb.search("cafe in Bonn", 3)
    assert similarities(nb, "cafe in Bonn", [h.index for h in hits]) == [h.score for h in hits]
