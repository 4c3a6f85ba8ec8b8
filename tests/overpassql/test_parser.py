"""Parser: the AST it builds, error collection, and hostile input."""

from __future__ import annotations

import pytest

import overpassql
from overpassql import ast as A


def test_parses_statements_and_filters():
    script = overpassql.parse(
        '[out:json][timeout:25];area["name"="Bonn"]->.a;'
        'nwr["amenity"~"cafe|pub",i][!"fee"](area.a)(around.a:100)->.r;.r out center 5;')
    assert [(s.key, s.value) for s in script.settings] == [("out", "json"), ("timeout", "25")]
    area, query, out = script.statements
    assert isinstance(area, A.Query) and area.into == "a" and area.type == "area"
    assert query.type == "nwr" and query.into == "r"
    tag, missing, in_area, around = query.filters
    assert (tag.key, tag.value, tag.op, tag.case_insensitive) == ("amenity", "cafe|pub", "~", True)
    assert (missing.key, missing.op) == ("fee", "not_exists")
    assert in_area == A.AreaFilter(set="a", line=1)
    assert (around.radius, around.set) == ("100", "a")
    assert isinstance(out, A.Out) and out.set == "r" and out.options == ["center", "5"]


@pytest.mark.parametrize("text, cls", [
    ("(node(1);way(2););", A.Union_),
    ("(node(1); - way(2););", A.Difference),
    ("foreach.a->.b{out;}", A.Block),
    ("for(t[\"x\"]){out;}", A.Block),
    ("if(count(nodes)>0){out;}else{out ids;}", A.Block),
    ("complete(5){>;}", A.Block),
    ("retro(\"2020-01-01T00:00:00Z\"){out;}", A.Block),
    ("make stat n=count(nodes);", A.Make),
    ("convert item ::id=id();", A.Make),
    (".a >->.b;", A.Recurse),
    ("is_in(50.1,7.1)->.x;", A.IsIn),
    (".a map_to_area->.b;", A.MapToArea),
    ("._->.b;", A.Item),
    ("node(w.a:1,-1);", A.Query),
])
def test_statement_kinds(text, cls):
    script = overpassql.parse(text)
    assert isinstance(script.statements[0], cls)


def test_if_else_and_block_arguments():
    block = overpassql.parse("if(count(nodes)>0){out;}else{out ids;}").statements[0]
    assert block.keyword == "if" and block.arg.token == ">"
    assert isinstance(block.body[0], A.Out) and block.else_body[0].options == ["ids"]


def test_collect_errors_returns_the_partial_script():
    script = overpassql.parse('node["a"="b"];way["c"];oops;out;', collect_errors=True)
    assert [type(s).__name__ for s in script.statements] == ["Query", "Query", "Out"]
    assert [e.message for e in script.errors] == ['Unknown type "oops"',
                                                  "An empty query is not allowed"]


def test_placeholders_parse_as_nodes():
    script = overpassql.parse('{{geocodeArea:"Paris"}}->.a;nwr[shop]({{bbox}})'
                              '(newer:"{{date:1 day}}");out;')
    place, query, _ = script.statements
    assert place == A.Placeholder('{{geocodeArea:"Paris"}}', "a", line=1)
    assert isinstance(query.filters[1], A.PlaceholderFilter)
    assert query.filters[2].date == "{{date:1 day}}"


def test_without_turbo_mode_placeholders_are_errors():
    with pytest.raises(overpassql.ParseError):
        overpassql.parse("{{bbox}};", turbo=False)


HOSTILE = {
    "empty": "",
    "spaces": " \n\t ",
    "nul": "\x00node\x00;",
    "megabyte": 'node["name"="' + "x" * 1_000_000 + '"];out;',
    "megabyte_comment": "/*" + "node;" * 200_000 + "*/out;",
    "many_statements": "node[a=b];" * 10_000,
    "open_quote": 'node["amenity"="cafe];out;',
    "single_quote": "node['x];",
    "parens": "(" * 100_000,
    "closers": ")" * 10_000,
    "brackets": "node" + "[" * 50_000,
    "if_parens": "node(if:" + "(" * 50_000 + ");out;",
    "long_chain": "node(if:" + "1+" * 50_000 + "1);out;",
    "braces": "foreach{" * 5_000,
    # under the parse cache's length limit: the kept tree is cloned, 1,000 levels deep
    "braces_kept": "foreach{" * 1_000 + "out;" + "}" * 1_000,
    "parens_kept": "(" * 19_000,
    "binary": bytes(range(256)).decode("latin-1"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_input_gives_errors_not_exceptions(name):
    text = HOSTILE[name]
    script = overpassql.parse(text, collect_errors=True)
    assert isinstance(script, A.Script)
    xml, errors = overpassql.to_xml_with_errors(text)
    assert xml.startswith("<osm-script")
    assert isinstance(overpassql.to_ql(text), str)
    if name not in ("empty", "spaces", "megabyte", "megabyte_comment", "many_statements", "braces_kept"):
        assert errors or script.errors


def test_non_string_input_is_a_clear_type_error():
    with pytest.raises(TypeError, match="str"):
        overpassql.parse(None)


def test_each_parse_returns_a_tree_of_its_own():
    # parse keeps recent trees and hands out copies: editing one never reaches the next caller
    text = '{{geocodeArea:"Bonn"}}->.a;nwr["amenity"="cafe"](area.a);out center;'
    first = overpassql.parse(text)
    for node in A.walk(first):
        if isinstance(node, A.Tag):
            node.value = "pub"
    first.statements.append(A.Out(["count"]))
    second = overpassql.parse(text)
    assert overpassql.dump(second) == text
    assert second is not first and second == overpassql.parser.Parser(text).parse()


def test_a_kept_tree_with_errors_still_raises_each_time():
    for _ in range(2):
        with pytest.raises(overpassql.ParseError) as err:
            overpassql.parse('node["amenity"="cafe"](x:1);out;')
        err.value.script.statements.clear()  # the script on the error is a copy too
    assert overpassql.parse('node["amenity"="cafe"](x:1);out;', collect_errors=True).statements
