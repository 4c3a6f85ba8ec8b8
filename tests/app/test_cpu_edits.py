"""Each edit on hand-written cases: the edited query is valid and says what the request asks."""

from __future__ import annotations

import pytest

import overpassql
from geoql.app.cpu.edits import (EditContext, EditOptions, apply_edits, apply_extra, area_names, edit_add_tags,
                           edit_drop_tags, edit_hint_tags, parses, with_output)
from geoql.app.cpu.lexicon import TagLexicon
from geoql.nl import read_request
from geoql.nl.english import read_english
from overpassql import ast as A
from testdata import data_dir

LEXICON = TagLexicon.fit(
    ["castles in Bonn", "castles in Rome", "springs in Bonn", "springs in Paris", "cafes in Bonn", "cafes in Rome"],
    [
        'node["historic"="castle"](area.a);out;',
        'way["historic"="castle"](area.a);out;',
        'node["natural"="spring"](area.a);out;',
        'node["natural"="spring"](area.a);out;',
        'node["amenity"="cafe"](area.a);out;',
        'node["amenity"="cafe"](area.a);out;',
    ],
    min_count=1,
)
AREA_QUERY = '[out:json][timeout:25];{{geocodeArea:"Bonn"}}->.searchArea;(node["natural"="spring"](area.searchArea););out;'


def edit(query: str, nl: str, groups: str, example_nl: str = "springs in Paris", aliases=None):
    ctx = EditContext(info=read_english(nl), example_nl=example_nl, lexicon=LEXICON, aliases=aliases or {})
    result = apply_edits(query, ctx, EditOptions.parse(groups))
    assert result is not None
    text, applied = result
    overpassql.parse(text)  # every edited query parses
    assert overpassql.check(text) == []  # and is valid, as Compilation.valid judges it
    return text, applied


def test_a_neighbour_the_converter_rejects_is_no_candidate():
    # parse() takes the misspelt {{bbx}} for a placeholder; the converter does not.
    ctx = EditContext(info=read_english("springs in Bonn"), example_nl="springs in Paris", lexicon=LEXICON, aliases={})
    assert apply_edits('node["natural"="spring"]({{bbx}});out;', ctx, EditOptions.parse("all")) is None
    assert parses('node["natural"="spring"]({{bbox}});out;')
    assert not parses('node["natural"="spring"]({{bbx}});out;')


@pytest.mark.parametrize(
    ("query", "nl", "expected"),
    [
        (AREA_QUERY, "springs in Rio de Janeiro", '{{geocodeArea:"Rio de Janeiro"}}->.searchArea'),
        ('{{nominatimArea:Bonn}}->.a;node["natural"="spring"](area.a);out;', "springs in Köln", "{{nominatimArea:Köln}}"),
        ('area["name"="Bonn"]->.a;node["natural"="spring"](area.a);out;', "springs in Köln", 'area["name"="Köln"]'),
    ],
)
def test_area_rename(query, nl, expected):
    text, applied = edit(query, nl, "area")
    assert expected in text and applied == ("area",)


def test_area_alias_uses_the_dataset_spelling():
    text, _ = edit(AREA_QUERY, "springs in Germany", "area", aliases={"Germany": "Deutschland"})
    assert area_names(overpassql.parse(text)) == ["Deutschland"]


def test_area_to_view_and_back():
    text, _ = edit(AREA_QUERY, "springs in the current view", "area")
    assert "{{bbox}}" in text and "geocodeArea" not in text
    back, _ = edit(text, "springs in Paris", "area")
    assert '{{geocodeArea:"Paris"}}->.searchArea' in back and "(area.searchArea)" in back


def test_area_untouched_when_request_names_no_place():
    text, applied = edit(AREA_QUERY, "all springs", "area")
    assert text == AREA_QUERY and applied == ()


def test_tag_replaced_by_the_one_the_request_asks_for():
    text, applied = edit(AREA_QUERY, "castles in Bonn", "tags")
    assert '["historic"="castle"]' in text and "spring" not in text and applied == ("tags",)


def test_tag_kept_when_the_request_asks_for_it():
    text, applied = edit(AREA_QUERY, "springs in Bonn", "tags")
    assert text == AREA_QUERY and applied == ()


def test_types_follow_the_request():
    text, _ = edit(AREA_QUERY, "nodes and ways of springs in Bonn", "types")
    assert 'node["natural"="spring"](area.searchArea);way["natural"="spring"](area.searchArea);' in text
    text, _ = edit(text, "ways of springs in Bonn", "types")
    assert 'node["natural"' not in text and 'way["natural"="spring"]' in text


def test_count_and_list():
    listing = AREA_QUERY[:-len("out;")] + "out;>;out skel qt;"
    text, _ = edit(listing, "How many springs are in Bonn?", "output")
    assert text.endswith("out count;") and "skel" not in text
    back, _ = edit(text, "springs in Bonn", "output")
    assert back.endswith("out;")


def test_numbers_distance_date_user_uid():
    query = (
        '[out:json];node["amenity"="cafe"](around:100,50.7,7.1)(newer:"2019-01-01T00:00:00Z")(user:"alice");'
        "way(uid:42);out;"
    )
    nl = 'cafes within 2 km edited since 2020-05-06 by user "bob" and ways of uid 7'
    text, applied = edit(query, nl, "numbers")
    assert "around:2000" in text and "2020-05-06T00:00:00Z" in text and '"bob"' in text and "uid:7" in text
    assert applied == ("numbers",)


def test_a_distance_past_float_s_range_leaves_the_radius_alone():
    """Issue 42: a 309-digit distance was infinity and ``int(inf)`` crashed the CPU default's whole answer."""
    query = '[out:json];node["amenity"="cafe"](around:100,50.7,7.1);out;'
    ctx = EditContext(info=read_english("cafes within " + "9" * 309 + " km of Bonn"), example_nl="x", lexicon=LEXICON,
                      aliases={})
    assert apply_edits(query, ctx, EditOptions.parse("numbers")) == (query, ())


def test_a_days_window_moves_to_the_requests_day():
    """The neighbour's "2019-08-27 00:00 to 23:58:59" becomes the request's day, hours kept; the
    date written in words comes from the intent frame."""
    query = ('(way(uid:8794057)(changed:"2019-08-27T00:00:00Z","2019-08-27T23:58:59Z");'
             'node(uid:8794057)(changed:"2019-08-27T00:00:00Z","2019-08-27T23:58:59Z"););out meta;')
    info = read_request("ways and nodes of uid 10019250 changed on July 15, 2019").english_with_frame
    ctx = EditContext(info=info, example_nl="x", lexicon=LEXICON, aliases={})
    text = apply_edits(query, ctx, EditOptions.parse("numbers"))[0]
    assert text.count('(changed:"2019-07-15T00:00:00Z","2019-07-15T23:58:59Z")') == 2 and "uid:10019250" in text


def test_unparsable_query_is_no_candidate():
    ctx = EditContext(info=read_english("cafes"), example_nl="x", lexicon=LEXICON)
    assert apply_edits('node["amenity"="cafe"', ctx, EditOptions()) is None


def test_edit_options_spec_round_trip():
    assert EditOptions.parse("tags,area").spec() == "area,tags"
    assert EditOptions.parse("all").spec() == "area,tags,types,output,numbers"
    assert not EditOptions.parse("none").any


QUALIFIERS = TagLexicon.fit(
    ["toilets in Bonn", "toilets in Rome", "wheelchair toilets in Oslo", "wheelchair toilets in Kiel",
     "cafes with website in Bonn", "cafes with website in Rome", "cafes in Rome"],
    [
        'node["amenity"="toilets"];out;',
        'node["amenity"="toilets"];out;',
        'node["amenity"="toilets"]["wheelchair"="yes"];out;',
        'node["amenity"="toilets"]["wheelchair"="yes"];out;',
        'node["amenity"="cafe"]["website"];out;',
        'node["amenity"="cafe"]["website"];out;',
        'node["amenity"="cafe"];out;',
    ],
    min_count=1,
)
TOILETS = '{{geocodeArea:"Bonn"}}->.a;(node["amenity"="toilets"](area.a);way["amenity"="toilets"](area.a););out;'


def extra(query: str, nl: str, example_nl: str, edit_fn, hints=None):
    ctx = EditContext(info=read_english(nl), example_nl=example_nl, lexicon=QUALIFIERS, hints=hints)
    text = apply_extra(query, ctx, edit_fn)
    if text is not None:
        assert overpassql.check(text) == []  # the edited query is valid
    return text


def test_add_tags_puts_the_asked_for_tag_into_every_statement():
    text = extra(TOILETS, "wheelchair toilets in Bonn", "toilets in Bonn", edit_add_tags)
    assert text == ('{{geocodeArea:"Bonn"}}->.a;(node["amenity"="toilets"]["wheelchair"="yes"](area.a);'
                    'way["amenity"="toilets"]["wheelchair"="yes"](area.a););out;')


def test_add_tags_bare_key_and_negation():
    cafes = 'node["amenity"="cafe"];out;'
    assert extra(cafes, "cafes with a website in Kiel", "cafes in Rome", edit_add_tags) == (
        'node["amenity"="cafe"]["website"];out;')
    assert extra(cafes, "cafes without website in Kiel", "cafes in Rome", edit_add_tags) == (
        'node["amenity"="cafe"][!"website"];out;')


def test_add_tags_leaves_main_keys_and_explained_words_alone():
    # "toilets" calls for amenity=toilets, a main tag: never added next to amenity=cafe
    assert extra('node["amenity"="cafe"];out;', "cafes and toilets", "cafes", edit_add_tags) is None
    # the example already says "wheelchair": its query answers that word (here: on purpose, not at all)
    assert extra(TOILETS, "wheelchair toilets in Bonn", "wheelchair toilets in Rome", edit_add_tags) is None
    # a key the query already filters on is the replacing edit's business
    assert extra('node["amenity"="toilets"]["wheelchair"="no"];out;', "wheelchair toilets", "toilets",
                 edit_add_tags) is None


def test_drop_tags_removes_what_only_the_example_asked_for():
    query = 'node["amenity"="bar"]["website"];out;'
    assert extra(query, "bars in Kiel", "bars with website in Rome", edit_drop_tags) == 'node["amenity"="bar"];out;'
    assert extra(query, "bars with website in Kiel", "bars with website in Rome", edit_drop_tags) is None
    # the main tag stays even when the example's words explain it and the request's do not
    assert extra('node["amenity"="toilets"];out;', "benches", "toilets in Bonn", edit_drop_tags) is None


CAFES = '{{geocodeArea:"Bonn"}}->.a;(node["amenity"="cafe"](area.a);way["amenity"="cafe"](area.a););out;'


def test_hint_tags_add_a_qualifier_the_lexicon_never_saw():
    # outdoor_seating is in no training query: the tag index knows it from iD's field label
    text = extra(CAFES, "cafes with outdoor seating in Bonn", "cafes in Rome", edit_hint_tags,
                 hints={"amenity=cafe": 0.9, "outdoor_seating=yes": 0.6, "amenity=bench": 0.1})
    assert text == ('{{geocodeArea:"Bonn"}}->.a;(node["amenity"="cafe"]["outdoor_seating"="yes"](area.a);'
                    'way["amenity"="cafe"]["outdoor_seating"="yes"](area.a););out;')


def test_hint_tags_replace_a_value_of_the_same_key_and_a_main_tag():
    assert extra(CAFES, "restaurants in Bonn", "cafes in Rome", edit_hint_tags, hints={"amenity=restaurant": 0.8}) == (
        CAFES.replace('"cafe"', '"restaurant"'))
    # shop is a main key (always first in the lexicon's queries): it takes the main tag's place
    lexicon = TagLexicon.fit(["bakeries", "bakeries in Rome"], ['node["shop"="bakery"];out;'] * 2, min_count=1)
    ctx = EditContext(info=read_english("bakeries in Bonn"), example_nl="cafes in Rome", lexicon=lexicon,
                      hints={"shop=bakery": 0.7})
    assert apply_extra(CAFES, ctx, edit_hint_tags) == CAFES.replace('"amenity"="cafe"', '"shop"="bakery"')


def test_hint_tags_leave_the_query_alone_when_unsure_or_already_right():
    assert extra(CAFES, "cafes in Bonn", "cafes in Rome", edit_hint_tags, hints={"amenity=cafe": 0.9}) is None
    assert extra(CAFES, "cafes with seating", "cafes", edit_hint_tags, hints={"outdoor_seating=yes": 0.1}) is None
    assert extra(CAFES, "cafes", "cafes", edit_hint_tags, hints=None) is None
    # a main tag the retriever backs stays: a second main key would select nothing
    lexicon = TagLexicon.fit(["bakeries"], ['node["shop"="bakery"];out;'], min_count=1)
    ctx = EditContext(info=read_english("cafe bakeries"), example_nl="cafes", lexicon=lexicon,
                      hints={"amenity=cafe": 0.8, "shop=bakery": 0.7})
    assert apply_extra(CAFES, ctx, edit_hint_tags) is None
    # a key the query filters on in another way ([!"key"]) is not touched
    no_site = 'node["amenity"="cafe"][!"website"];out;'
    assert extra(no_site, "cafes with website", "cafes", edit_hint_tags, hints={"website=yes": 0.9}) is None


def test_extra_edits_share_one_parse_and_give_what_each_gives_alone():
    """``apply_extras`` parses a query once for every extra edit that changes nothing: on real pairs
    (dev requests, training queries, a lexicon of the training split, hints from the gold's tags) it
    gives exactly what each edit gives on a fresh parse."""
    from geoql.app.cpu.edits import EXTRA_EDITS, apply_extras
    from geoql.app.cpu.lexicon import tag_names
    from geoql.eval.dataset import load_split

    train, dev = load_split("train")[:1500], load_split("dev")[:60]
    lexicon = TagLexicon.fit([e.nl for e in train], [e.query for e in train])
    changed = 0
    for i, request in enumerate(dev):
        hints = {t: 0.6 for t in sorted(tag_names(request.query)) if "=" in t}
        for example in train[i * 5: i * 5 + 5]:
            ctx = EditContext(info=read_english(request.nl), example_nl=example.nl, lexicon=lexicon, hints=hints)
            alone = [(name, apply_extra(example.query, ctx, fn)) for name, fn in EXTRA_EDITS]
            assert apply_extras(example.query, ctx, EXTRA_EDITS) == [(n, t) for n, t in alone if t is not None]
            changed += sum(t is not None for _, t in alone)
    assert changed >= 30  # the edits did change queries, so the shared parse was tested after a change too


def _train_queries_without_output() -> list[str]:
    """The valid training queries with no output statement (an invalid one is no candidate)."""
    queries = (data_dir() / "dataset.train.query").read_text(encoding="utf-8").splitlines()
    return [q for q in queries if parses(q) and not any(isinstance(n, A.Out) for n in A.walk(overpassql.parse(q)))]


NO_OUTPUT = _train_queries_without_output()


def test_the_training_split_has_queries_that_return_nothing():
    assert len(NO_OUTPUT) == 166  # a neighbour can bring one; with_output is what keeps it out of answers


@pytest.mark.parametrize("query", NO_OUTPUT)
@pytest.mark.parametrize("count", [False, True])
def test_a_query_without_output_gets_one(query, count):
    text = with_output(query, count)
    assert text != query and parses(text)
    outs = [n for n in A.walk(overpassql.parse(text)) if isinstance(n, A.Out)]
    assert outs and (outs[0].options == ["count"]) == count
    assert with_output(text, count) == text  # once is enough


@pytest.mark.parametrize("query", [AREA_QUERY, 'foreach(way["highway"]({{bbox}}))(out geom;);',
                                   '[out:json];node(1);.a out;', 'node(1);for (t["name"]) { out geom; }'])
def test_a_query_with_output_is_left_alone(query):
    assert with_output(query, count=False) == query


@pytest.mark.parametrize("query", ['node["name"="way; out"]({{bbox}});', "node(1); /* out; */"])
def test_the_word_out_in_a_name_or_a_comment_is_no_output(query):
    text = with_output(query, count=False)
    assert text != query and any(isinstance(n, A.Out) for n in A.walk(overpassql.parse(text)))
