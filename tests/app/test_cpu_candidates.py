"""The candidate pool: neighbours' queries as they are and edited, identical ones merged."""

from __future__ import annotations

from geoql.app.cpu.candidates import build_pool
from geoql.app.cpu.edits import EditContext, EditOptions
from geoql.app.cpu.lexicon import TagLexicon
from geoql.app.cpu.neighbours import Neighbour
from geoql.nl.english import read_english

NLS = ["cafes in Bonn", "cafes in Rome", "broken"]
QUERIES = [
    '{{geocodeArea:"Bonn"}}->.a;node["amenity"="cafe"](area.a);out;',
    '{{geocodeArea:"Rome"}}->.a;node["amenity"="cafe"](area.a);out;',
    'node["amenity"="cafe"',
]


def _builder(nl, nls, queries):
    """``build_pool`` for request ``nl`` over a small training set, with a lexicon fitted on it."""
    info = read_english(nl)
    lex = TagLexicon.fit(nls, queries, min_count=1)

    def pool(neighbours, options=None, **flags):
        return build_pool(info, neighbours, nls, queries, lambda ex: EditContext(info, ex, lex), EditOptions() if options is None else options, **flags)

    return pool


def _pool(nl, options):
    return _builder(nl, NLS, QUERIES)([Neighbour(0, 0.9), Neighbour(1, 0.5), Neighbour(2, 0.4)], options)


def test_edited_versions_merge_and_votes_add_up():
    pool = _pool("cafes in Oslo", EditOptions())
    by_query = {c.query: c for c in pool}
    oslo = '{{geocodeArea:"Oslo"}}->.a;node["amenity"="cafe"](area.a);out;'
    assert by_query[oslo].votes == 0.9 + 0.5 and by_query[oslo].edits == ("area",)
    assert by_query[oslo].rank == 0  # the nearest neighbour that produced it
    assert QUERIES[2] not in by_query  # unparsable neighbours are no candidates
    assert len(pool) == 3  # two originals + one merged edit


def test_without_edits_only_parseable_originals():
    pool = _pool("cafes in Oslo", EditOptions.none())
    assert [c.query for c in pool] == QUERIES[:2]


def test_partial_adds_the_place_only_version():
    nls = ["castles in Bonn", "springs in Bonn", "springs in Rome"]
    queries = ['{{geocodeArea:"Bonn"}}->.a;node["historic"="castle"](area.a);out;',
               '{{geocodeArea:"Bonn"}}->.a;node["natural"="spring"](area.a);out;',
               '{{geocodeArea:"Rome"}}->.a;node["natural"="spring"](area.a);out;']
    pool = _builder("castles in Oslo", nls, queries)
    nbs = [Neighbour(2, 0.5)]
    full = pool(nbs)
    partial = pool(nbs, partial=True)
    assert {c.edits for c in full} == {(), ("area", "tags")}
    assert {c.edits for c in partial} == {(), ("area", "tags"), ("area",)}
    assert any('"Oslo"' in c.query and "spring" in c.query for c in partial)


def test_fix_place_never_offers_another_place_as_is():
    nls = ["castles in Tuscany", "springs in Bonn"]
    queries = ['{{geocodeArea:"Tuscany"}}->.a;node["historic"="castle"](area.a);out;',
               '{{geocodeArea:"Bonn"}}->.a;way["natural"="spring"](area.a);out count;']
    pool = _builder("castles in Bavaria", nls, queries)
    nbs = [Neighbour(0, 0.9), Neighbour(1, 0.5)]
    plain = pool(nbs)
    fixed = pool(nbs, fix_place=True)
    assert any('"Tuscany"' in c.query for c in plain)
    assert all('"Bavaria"' in c.query for c in fixed)
    # the place-only version replaces the copy; the fully edited one stays
    spring = [c for c in fixed if c.source == 1]
    assert {c.edits for c in spring} == {("area",), ("area", "tags", "output")}
    assert any(c.query.endswith("out count;") and "spring" in c.query for c in spring)


def test_fix_place_keeps_queries_that_already_name_the_place():
    pool = _builder("cafes in Bonn", NLS, QUERIES)([Neighbour(0, 0.9)], fix_place=True)
    assert [c.query for c in pool] == [QUERIES[0]]


def test_extra_edits_are_offered_next_to_the_full_edit():
    nls = ["toilets in Bonn", "wheelchair toilets in Oslo", "wheelchair toilets in Kiel"]
    queries = ['{{geocodeArea:"Bonn"}}->.a;node["amenity"="toilets"](area.a);out;',
               'node["amenity"="toilets"]["wheelchair"="yes"];out;',
               'node["amenity"="toilets"]["wheelchair"="yes"];out;']
    pool = _builder("wheelchair toilets in Rome", nls, queries)
    nbs = [Neighbour(0, 0.9)]
    plain = pool(nbs, fix_place=True)
    extra = pool(nbs, fix_place=True, extra=("add_tags", "drop_tags"))
    assert {c.edits for c in plain} == {("area",)}
    assert {c.edits: c.query for c in extra}[("area", "add_tags")] == (
        '{{geocodeArea:"Rome"}}->.a;node["amenity"="toilets"]["wheelchair"="yes"](area.a);out;')
    # without tag edits there are no extra versions either
    no_tags = pool(nbs, EditOptions.parse("area"), extra=("add_tags",))
    assert {c.edits for c in no_tags} == {(), ("area",)}


def test_a_neighbour_query_that_returns_nothing_is_offered_with_an_output():
    nls = ["cafes in Bonn"]
    queries = ['{{geocodeArea:"Bonn"}}->.a;node["amenity"="cafe"](area.a);']
    for nl, ending in [("cafes in Bonn", "out;>;out skel qt;"), ("how many cafes in Bonn", "out count;")]:
        pool = _builder(nl, nls, queries)([Neighbour(0, 0.9)])
        assert pool and all(c.query.endswith(ending) and "output" in c.edits for c in pool), [c.query for c in pool]
