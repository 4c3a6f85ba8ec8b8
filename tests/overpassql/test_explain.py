"""``overpassql.explain``: every gold query in words (it never raises and names every tag
filter, in each language with a phrase table), the exact sentence for each statement
kind, German and French, the phrase tables themselves, and hostile input."""

from __future__ import annotations

import importlib
import json
import re

import pytest

import overpassql
from testdata import data_dir

# overpassql.explain is the function; the module behind it holds the phrase tables.
explain_module = importlib.import_module("overpassql.explain")
TABLES = json.loads(explain_module.PHRASES_PATH.read_text(encoding="utf-8"))
SPLITS = ("train", "dev", "test")
CHUNK = 1000  # gold queries per test case: every query checked, a handful of test ids


def _gold() -> list[tuple[str, int, str]]:
    rows = []
    for split in SPLITS:
        with open(data_dir() / f"dataset.{split}.query", encoding="utf-8") as f:
            rows.extend((split, n, line.rstrip("\n")) for n, line in enumerate(f, 1))
    return rows


GOLD = _gold()
CHUNKS = [GOLD[i:i + CHUNK] for i in range(0, len(GOLD), CHUNK)]


def _named(tag, text: str) -> bool:
    """The tag filter's key, and its value where it has one, appear in the text."""
    if tag.key not in text:
        return False
    return tag.op not in ("=", "!=", "~", "!~") or tag.value in text


def test_all_gold_queries_are_read():
    assert len(GOLD) == 8352
    assert sum(len(c) for c in CHUNKS) == len(GOLD)


@pytest.mark.parametrize("lang", sorted(TABLES))
@pytest.mark.parametrize("chunk", range(len(CHUNKS)),
                         ids=[f"{c[0][0]}:{c[0][1]}-{c[-1][0]}:{c[-1][1]}" for c in CHUNKS])
def test_every_gold_query_is_explained_with_its_tags(chunk, lang):
    unexplained = TABLES[lang]["unexplained"]
    failures = []
    for split, line, query in CHUNKS[chunk]:
        text = overpassql.explain(query, lang)
        if not text.strip() or text == unexplained:
            failures.append((split, line, "no explanation", text))
            continue
        missing = [t for t in overpassql.tag_filters(query) if not _named(t, text)]
        if missing:
            failures.append((split, line, f"tag filters not named: {missing}", text))
    assert not failures, f"{len(failures)} queries fail, the first: {failures[:3]}"


def test_gold_queries_with_errors_say_where():
    with_errors = 0
    for split, line, query in GOLD:
        errors = overpassql.parse(query, collect_errors=True).errors
        if errors:
            with_errors += 1
            where = f"does not parse at line {errors[0].line}, column {errors[0].column}: "
            assert where + errors[0].message in overpassql.explain(query), (split, line)
    assert with_errors == 93


# One real data-set query per statement kind (split:line), and a few written by hand for the
# kinds the data set lacks (foreach, compare, timeline, local, diff); the expected text in full.
CASES = [
    pytest.param(
        'node["amenity"="drinking_water"]({{bbox}});out;',
        'Nodes tagged `amenity=drinking_water` inside the current map view; output their tags '
        'and geometry.',
        id='train:717 tag = and {{bbox}}'),
    pytest.param(
        '[out:json][timeout:180];{{geocodeArea:"Deutschland"}}->.searchArea;'
        '(node["historic"="castle"](area.searchArea););out;>;out skel qt;',
        'Nodes tagged `historic=castle` inside the area named Deutschland; output their tags and '
        'geometry. Settings: output as JSON, time limit 180 s.',
        id='dev:1 geocodeArea, union of one, out;>;out skel qt'),
    pytest.param(
        '[out:csv("name";false)][timeout:25];{{geocodeArea:"South Somerset"}}->.searchArea;'
        '(node["designation"]["admin_level"="10"](area.searchArea);'
        'way["designation"]["admin_level"="10"](area.searchArea);'
        'relation["designation"]["admin_level"="10"](area.searchArea););out;',
        'Nodes, ways and relations tagged `designation=*` and `admin_level=10` inside the area '
        'named South Somerset; output their tags and geometry. Settings: output as CSV with the '
        'columns `name` and no header line, time limit 25 s.',
        id='dev:12 union merged across types, exists'),
    pytest.param(
        '[out:json][timeout:25];{{geocodeArea:"Magnitogorsk"}}->.searchArea;'
        'way["railway"="tram"]["service"!="yard"]["service"!="spur"]["service"!="siding"]'
        '["service"!="crossover"](area.searchArea);'
        'out;>;out skel;',
        'Ways tagged `railway=tram`, not tagged `service=yard`, `service=spur`, `service=siding` '
        'or `service=crossover`, inside the area named Magnitogorsk; output their tags and '
        'geometry. Settings: output as JSON, time limit 25 s.',
        id='dev:2 != list'),
    pytest.param(
        '[out:json][timeout:250];{{geocodeArea:"Angola"}}->.searchArea;'
        '(way["highway"~"motorway|trunk|primary"]["source"!~"^bing$",i](area.searchArea););out;>;'
        'out skel qt;',
        'Ways whose `highway` matches `motorway|trunk|primary` and `source` does not match '
        '`^bing$` (ignoring case) inside the area named Angola; output their tags and geometry. '
        'Settings: output as JSON, time limit 250 s.',
        id='train:913 ~ and !~ case-insensitive'),
    pytest.param(
        'way[highway=service][!service][!access](user:"wegspotter")({{bbox}})(if:version()<2);'
        'out geom;make info versions=set(version());out;',
        'Ways tagged `highway=service`, not tagged `service=*` or `access=*`, last edited by '
        'user `wegspotter`, inside the current map view, where `version()<2`; output their tags '
        'and full geometry. A new `info` element computed from them, with '
        '`versions=set(version())`; output its tags.',
        id='dev:731 not exists, user, if:, make'),
    pytest.param(
        '[out:json][timeout:25];(way[~"^source"~"(lowres|PGS|landsat)",i]({{bbox}}););out;>;'
        'out skel qt;',
        'Ways with a key matching `^source` whose value matches `(lowres|PGS|landsat)` (ignoring '
        'case) inside the current map view; output their tags and geometry. Settings: output as '
        'JSON, time limit 25 s.',
        id='train:6201 key regex, case-insensitive'),
    pytest.param(
        'area["name"="Magyarország"];relation["admin_level"="8"](area);out geom;',
        'Relations tagged `admin_level=8` inside areas tagged `name=Magyarország`; output their '
        'tags and full geometry.',
        id='train:5467 area query, (area)'),
    pytest.param(
        'area(3600062484)->.s;(node["addr:housenumber"="8"]["addr:street"="Ellermühle"](area.s);'
        'way["addr:housenumber"="8"]["addr:street"="Ellermühle"](area.s);'
        'relation["addr:housenumber"="8"]["addr:street"="Ellermühle"](area.s););out;>;'
        'out skel qt;',
        'Nodes, ways and relations tagged `addr:housenumber=8` and `addr:street=Ellermühle` '
        'inside area 3600062484 (relation 62484); output their tags and geometry.',
        id='train:99 area id'),
    pytest.param(
        'way["highway"~".*"](around:10,46.1985,-1.3604);(._;>;);out;',
        'Ways whose `highway` matches `.*` within 10 m of 46.1985, -1.3604, plus their nodes; '
        'output their tags and geometry.',
        id='dev:980 around a point, (._;>;)'),
    pytest.param(
        '[out:json][timeout:25];'
        '(way["highway"="residential"]'
        '["postal_code"!~"."](around:500,{{geocodeCoords:"Curado II Jaboatão"}});'
        ');out;>;out skel qt;',
        'Ways tagged `highway=residential`, whose `postal_code` does not match `.`, within 500 m '
        'of Curado II Jaboatão; output their tags and geometry. Settings: output as JSON, time '
        'limit 25 s.',
        id='dev:545 around geocodeCoords'),
    pytest.param(
        '[out:json][timeout:25];(relation(2094222)->.mkad;'
        '(node["place"="city"](around.mkad:20000);node["place"="town"](around.mkad:20000);'
        ')->.city;);.city out;',
        'Nodes tagged `place=city` or `place=town` within 20 km of relation 2094222; output '
        'their tags and geometry. Relation 2094222, plus nodes tagged `place=city` or '
        '`place=town` within 20 km of relation 2094222 (not output). Settings: output as JSON, '
        'time limit 25 s.',
        id='train:2863 around a set, named sets'),
    pytest.param(
        '(node["ref:bic"](27.7,-16,29.5,-13.3);way["ref:bic"](27.7,-16,29.5,-13.3);'
        'relation["ref:bic"](27.7,-16,29.5,-13.3););(._;>;);out meta;',
        'Nodes, ways and relations tagged `ref:bic=*` inside the box from (27.7, -16) to (29.5, '
        '-13.3), plus their nodes and members; output their tags, geometry and edit metadata.',
        id='train:4477 bbox, (._;>;), out meta'),
    pytest.param(
        'node'
        '["addr:street"](poly:"-34.754837036 -58.336418152  -34.854873657 -58.292430878  -34.909923553 -58.396400452  -34.825931549 -58.447761536  -34.754837036 -58.336418152");'
        'out;',
        'Nodes tagged `addr:street=*` inside a polygon of 5 points; output their tags and '
        'geometry.',
        id='train:6097 poly'),
    pytest.param(
        '[out:csv(::count)][timeout:25];'
        '(way'
        '["turn:lanes"](user:"ediyes")(changed:"2016-03-07T00:00:00Z","2016-03-11T11:59:59Z")({{bbox}});'
        ');out count;',
        'Ways tagged `turn:lanes=*`, last edited by user `ediyes`, changed between '
        '2016-03-07T00:00:00Z and 2016-03-11T11:59:59Z, inside the current map view; count them. '
        'Settings: output as CSV with the columns `::count`, time limit 25 s.',
        id='train:1005 changed between, count, csv'),
    pytest.param(
        '[out:xml][timeout:250];(way(uid:7449661)(newer:"{{date:1day}}");'
        'node(uid:7449661)(newer:"{{date:1day}}"););out meta;>;',
        'Nodes and ways last edited by the user with id 7449661, changed in the last day; output '
        'their tags, geometry and edit metadata. Their nodes and members (not output). Settings: '
        'output as XML, time limit 250 s.',
        id='train:135 uid, newer {{date:1day}}, > not output'),
    pytest.param(
        '[date:"2014-12-30T00:00:00Z"];way(34345085);out geom;out center;out ids bb;',
        'Way 34345085; output its tags and full geometry. Then output its tags and centre point. '
        'Then output its ids and bounding box. Settings: data as of 2014-12-30T00:00:00Z.',
        id='train:2285 date setting, way id, several outs'),
    pytest.param(
        '[out:json];(node["fixme"]["railway"!~"."]({{bbox}});<;);out;'
        '(node["FIXME"]["railway"!~"."]({{bbox}});<;);out;',
        'Nodes tagged `fixme=*`, whose `railway` does not match `.`, inside the current map '
        'view, plus the ways and relations that contain them; output their tags and geometry. '
        'Nodes tagged `FIXME=*`, whose `railway` does not match `.`, inside the current map '
        'view, plus the ways and relations that contain them; output their tags and geometry. '
        'Settings: output as JSON.',
        id='train:6264 < inside a union'),
    pytest.param(
        '[out:json];(node(around:50,-33.709617,150.376399);node(around:50,-33.709494,150.376366);'
        'node(around:50,-33.709529,150.375996);node(around:50,-33.709724,150.376013);'
        ')->.walknodes;.walknodes out;.walknodes <<;out geom;',
        'Nodes within 50 m of -33.709617, 150.376399, plus nodes within 50 m of -33.709494, '
        '150.376366, plus nodes within 50 m of -33.709529, 150.375996, plus nodes within 50 m of '
        '-33.709724, 150.376013; output their tags and geometry. The ways and relations that '
        'contain them, recursively; output their tags and full geometry. Settings: output as '
        'JSON.',
        id='train:2800 <<, set output twice'),
    pytest.param(
        '[out:json][timeout:25];node(764412165);'
        'relation["building"="yes"]["name"="M3"](around:200);>>;'
        'way._["buildingpart"="room"]["ref"~"115"];>;out qt;',
        'The nodes of ways from the nodes and members of relations tagged `building=yes` and '
        '`name=M3` within 200 m of node 764412165, recursively, tagged `buildingpart=room`, '
        'whose `ref` matches `115`; output their tags and geometry, sorted by location. '
        'Settings: output as JSON, time limit 25 s.',
        id='train:1316 >> and a set filter'),
    pytest.param(
        '[out:json];relation["type"="route_master"]["operator"~"[Mm]iccolis"];relation(r);way(r);'
        '(._;>;);out;',
        'Ways that are members of relations that are members of relations tagged '
        '`type=route_master`, whose `operator` matches `[Mm]iccolis`, plus their nodes; output '
        'their tags and geometry. Settings: output as JSON.',
        id='train:3005 r recursion filters'),
    pytest.param(
        '(relation["network"="RER"]["ref"="C"];)->.RER_C;(way(r.RER_C:"");node(r.RER_C:"stop"););'
        'out;',
        'Ways that are members of relations tagged `network=RER` and `ref=C` without a role, '
        'plus nodes that are `stop` members of relations tagged `network=RER` and `ref=C`; '
        'output their tags and geometry.',
        id='train:5760 r with roles'),
    pytest.param(
        'way["name"~"Hamish"]({{bbox}});node(w)->.b;way["highway"]({{bbox}});node(w)->.t;'
        'node.b.t;way["name"](bn);(._;>;);out;',
        'Ways tagged `name=*`, that contain nodes from nodes that belong to ways whose `name` '
        'matches `Hamish` inside the current map view, also in nodes that belong to ways tagged '
        '`highway=*` inside the current map view. These, plus their nodes; output their tags and '
        'geometry.',
        id='train:798 w, bn, node.a.b'),
    pytest.param(
        '[out:json][timeout:25];{{geocodeArea:"Australian Capital Territory"}}->.searchArea;'
        '(relation["type"="route"]["route"="bus"](area.searchArea););way(r:"backward")->.a;'
        'relation(bw.a);out;>;out skel qt;',
        'Relations that contain ways that are `backward` members of relations tagged '
        '`type=route` and `route=bus` inside the area named Australian Capital Territory; output '
        'their tags and geometry. Settings: output as JSON, time limit 25 s.',
        id='train:388 bw'),
    pytest.param(
        '[out:json];{{geocodeArea:"Haute-Garonne"}}->.dep;relation["type"="route"](area.dep);'
        'relation["type"="route_master"]["network"="Réseau Arc-en-Ciel"](br);relation(r);node(r);'
        'out;',
        'Nodes that are members of relations that are members of relations tagged '
        '`type=route_master` and `network=Réseau Arc-en-Ciel`, that contain relations tagged '
        '`type=route` inside the area named Haute-Garonne; output their tags and geometry. '
        'Settings: output as JSON.',
        id='train:937 br'),
    pytest.param(
        '[bbox:{{bbox}}][out:xml][timeout:250];(way(if:count_tags()==0)(user:"VictorIE");-(>;););'
        'out meta;>;out meta qt;',
        'Ways where `count_tags()==0`, last edited by user `VictorIE`, except the nodes of ways '
        'where `count_tags()==0`, last edited by user `VictorIE`; output their tags, geometry '
        'and edit metadata. Settings: only inside the current map view, output as XML, time '
        'limit 250 s.',
        id='train:4168 difference'),
    pytest.param(
        '[timeout:260];(way["waterway"]["int_name"="Volga"]({{bbox}});complete{._;>->.a;'
        '(way["waterway"~"^river$"](bn.a)({{bbox}}););});out geom;',
        'Starting from ways tagged `waterway=*` and `int_name=Volga` inside the current map '
        'view, repeat until nothing new is added: Ways whose `waterway` matches `^river$`, that '
        'contain the nodes of the elements found so far, inside the current map view. Ways '
        'tagged `waterway=*` and `int_name=Volga` inside the current map view, plus the result '
        'of the repetition; output their tags and full geometry. Settings: time limit 260 s.',
        id='train:964 complete'),
    pytest.param(
        '[out:csv("name")][timeout:2500];{{geocodeArea:"Leuven"}}->.searchArea;'
        '(way["highway"]["name"](area.searchArea););for(t["name"]){make street name=_.val;out;}',
        'Group ways tagged `highway=*` and `name=*` inside the area named Leuven by `t["name"]`; '
        'for each group: A new `street` element computed from the elements of the group, with '
        '`name=_.val`; output its tags. Settings: output as CSV with the columns `name`, time '
        'limit 2500 s.',
        id='train:2343 for, make'),
    pytest.param(
        '[bbox:{{bbox}}];nwr["addr:street"]["addr:housenumber"];'
        'for(t["addr:street"] + " " + t'
        '["addr:housenumber"]){ if (count(nodes) + count(ways) + count(relations) > 1) { out geom;'
        ' }};',
        'Group nodes, ways and relations tagged `addr:street=*` and `addr:housenumber=*` by '
        '`t["addr:street"]+" "+t["addr:housenumber"]`; for each group: If '
        '`count(nodes)+count(ways)+count(relations)>1`: The elements of the group; output their '
        'tags and full geometry. Settings: only inside the current map view.',
        id='train:6255 for with if'),
    pytest.param(
        'node[name]({{bbox}});'
        'if (set(t["name:de"]) != "" && set(t'
        '["name:fr"]) != ""){ make warning text="Multiple language specific name tags " + "found. Please use language preferences.";'
        ' out;}else{ out;}',
        'If `set(t["name:de"])!=""&&set(t["name:fr"])!=""`: A new `warning` element computed '
        'from nodes tagged `name=*` inside the current map view, with `text="Multiple language '
        'specific name tags "+"found. Please use language preferences."`; output its tags. '
        'Otherwise: Nodes tagged `name=*` inside the current map view; output their tags and '
        'geometry.',
        id='train:3670 if/else'),
    pytest.param(
        '[bbox:{{bbox}}];retro("2014-01-01T00:00:00Z"){nwr["building"];out count;'
        '}retro("2015-01-01T00:00:00Z"){nwr["building"];out count;}',
        'As of 2014-01-01T00:00:00Z: Nodes, ways and relations tagged `building=*`; count them. '
        'As of 2015-01-01T00:00:00Z: Nodes, ways and relations tagged `building=*`; count them. '
        'Settings: only inside the current map view.',
        id='train:2426 retro'),
    pytest.param(
        'rel(2925465);way(r);make data length = sum(length());out;rel(2925465);way(r);'
        'convert geometry ::id=id(), type=type(), length=length();out;',
        'A new `data` element computed from ways that are members of relation 2925465, with '
        '`length=sum(length())`; output its tags. Ways that are members of relation 2925465, '
        'converted to `geometry` elements with `::id=id()`, `type=type()` and `length=length()`; '
        'output their tags.',
        id='test:59 make and convert'),
    pytest.param(
        '[out:json];relation["boundary"="administrative"]["admin_level"="2"]["ISO3166-1"="AR"];'
        'is_in;relation["boundary"="administrative"]["admin_level"="4"]["name"~"Santa Fe"];'
        'out geom;',
        'The areas that contain relations tagged `boundary=administrative`, `admin_level=2` and '
        '`ISO3166-1=AR` (not output). Relations tagged `boundary=administrative` and '
        '`admin_level=4`, whose `name` matches `Santa Fe`; output their tags and full geometry. '
        'Settings: output as JSON.',
        id='train:1167 is_in'),
    pytest.param(
        '[bbox:{{bbox}}];(way["amenity"="place_of_worship"];);map_to_area;'
        'node["amenity"="place_of_worship"]["building"!~".*"](area);out;',
        'Nodes tagged `amenity=place_of_worship`, whose `building` does not match `.*`, inside '
        'the areas of ways tagged `amenity=place_of_worship`; output their tags and geometry. '
        'Settings: only inside the current map view.',
        id='train:4096 map_to_area'),
    pytest.param(
        '{{geocodeArea:"Lombardy"}};relation(pivot);out geom;',
        'Relations that outline the area named Lombardy; output their tags and full geometry.',
        id='train:354 pivot'),
    pytest.param(
        '[maxsize:20000000][out:json][timeout:7];{{geocodeArea:"Spain"}}->.searchArea;'
        '(node["amenity"="pharmacy"](area.searchArea););out 75;',
        'Nodes tagged `amenity=pharmacy` inside the area named Spain; output their tags and '
        'geometry (at most 75). Settings: memory limit 20 MB, output as JSON, time limit 7 s.',
        id='train:97 maxsize, out limit'),
    pytest.param(
        '[out:json][timeout:25];{{geocodeArea:"Norway"}}->.searchArea;'
        '(relation["admin_level"="7"](area.searchArea););out tags;',
        'Relations tagged `admin_level=7` inside the area named Norway; output their tags. '
        'Settings: output as JSON, time limit 25 s.',
        id='train:902 out tags'),
    pytest.param(
        'node["amenity"="monastery"]["religion"!~".*"]({{bbox}});out meta geom;'
        ' {{bbox=area:3606195356}}',
        'Nodes tagged `amenity=monastery`, whose `religion` does not match `.*`, inside the '
        'current map view; output their tags, full geometry and edit metadata. `{{bbox}}` stands '
        'for `area:3606195356`.',
        id='dev:625 {{bbox=...}} definition'),
    pytest.param(
        '{{user=maxerickson}}[timeout:100][bbox:{{bbox}}];(node(user:{{user}})(if:version()==1);'
        'way(user:{{user}})(if:version()==1);rel(user:{{user}})(if:version()==1););'
        'out meta center;',
        '`{{user}}` stands for `maxerickson`. Nodes, ways and relations last edited by user '
        '`{{user}}`, where `version()==1`; output their tags, centre point and edit metadata. '
        'Settings: time limit 100 s, only inside the current map view.',
        id='train:1295 {{user=...}} definition'),
    pytest.param(
        '{{nominatimArea:"Thüringen"}}->.boundaryarea;'
        'way["highway"="living_street"]["maxspeed"](area.boundaryarea)(user:"MKnight");(._;>;);'
        'out meta;',
        'Ways tagged `highway=living_street` and `maxspeed=*`, inside the area named Thüringen, '
        'last edited by user `MKnight`, plus their nodes; output their tags, geometry and edit '
        'metadata.',
        id='train:866 nominatimArea'),
    pytest.param(
        '[out:opl];(node["xmas:feature"];way["xmas:feature"];relation["xmas:feature"];);(._;>;);'
        'out meta;',
        'Nodes, ways and relations tagged `xmas:feature=*`, plus their nodes and members; output '
        'their tags, geometry and edit metadata. Settings: output as `opl`. It does not parse at '
        'line 1, column 9: Unknown output format: opl.',
        id='train:259 unknown output format (a parse error)'),
    pytest.param(
        '[out:csv(::id,maxspeed,highway,name)];way({{bbox}})[highway][highway!=footway];'
        'convert row ::id=id(),highway=t["highway"],name=t["name"];out;',
        'Ways tagged `highway=*`, not tagged `highway=footway`, inside the current map view, '
        'converted to `row` elements with `::id=id()`, `highway=t["highway"]` and '
        '`name=t["name"]`; output their tags. Settings: output as CSV with the columns `::id`, '
        '`maxspeed`, `highway` and `name`.',
        id='train:1157 convert with csv'),
    pytest.param(
        'node(50.7,7.1,50.8,7.2);foreach->.n{.n out;}',
        'For each of nodes inside the box from (50.7, 7.1) to (50.8, 7.2), one by one: The '
        'current element; output its tags and geometry.',
        id='hand: foreach'),
    pytest.param(
        '[adiff:"2020-01-01T00:00:00Z","2020-02-01T00:00:00Z"];node(changed)({{bbox}});'
        'compare(delta:t["name"]){out meta;}',
        'Compare nodes changed between the two compared dates inside the current map view '
        'between the two dates by `delta:t["name"]`: Nodes changed between the two compared '
        'dates inside the current map view; output their tags, geometry and edit metadata. '
        'Settings: the changes between 2020-01-01T00:00:00Z and 2020-02-01T00:00:00Z, with the '
        'old and new versions.',
        id='hand: compare in adiff mode'),
    pytest.param(
        '[diff:"{{date:7 days}}"];way["highway"](changed)({{bbox}});out geom;',
        'Ways tagged `highway=*`, changed between the two compared dates, inside the current map '
        'view; output their tags and full geometry. Settings: the changes in the last 7 days.',
        id='hand: diff since a relative date'),
    pytest.param(
        'timeline(node, 5, 3);out;way["building"]({{bbox}});local ll;out;',
        'Version 3 of node 5; output its tags and geometry. Ways tagged `building=*` inside the '
        'current map view in local form (`ll`); output their tags and geometry.',
        id='hand: timeline and local'),
    pytest.param(
        'is_in(50.7,7.1)->.a;area.a["admin_level"="8"];out tags;',
        'Areas from the areas that contain the point 50.7, 7.1, tagged `admin_level=8`; output '
        'their tags.',
        id='hand: is_in a point'),
    pytest.param(
        'node(area:3600062484)["amenity"];out ids;way(id:1,2,3);out bb asc noids;',
        'Nodes tagged `amenity=*` inside area 3600062484 (relation 62484); output their ids. '
        'Ways with id 1, 2 or 3; output their tags and bounding box, without ids, sorted by id.',
        id='hand: area ref, ids'),
    pytest.param(
        'node(uid:1,2)(user:"a","b");out quirks 5;',
        'Nodes last edited by the user with id 1 or 2, last edited by user `a` or `b`; output '
        'their tags and geometry (at most 5).',
        id='hand: uid and user lists, quirks'),
    pytest.param(
        'node["amenity"]({{geocodeBbox:"Bonn"}});out;node(around:250,{{center}})["shop"];'
        'out center;',
        'Nodes tagged `amenity=*` inside the bounding box of Bonn; output their tags and '
        'geometry. Nodes tagged `shop=*` within 250 m of the map centre; output their tags and '
        'centre point.',
        id='hand: geocodeBbox, center'),
    pytest.param(
        'node(50.7,7.1,50.8,7.2);out skel(50.7,7.1,50.75,7.15);',
        'Nodes inside the box from (50.7, 7.1) to (50.8, 7.2); output their geometry, only '
        'inside the box from (50.7, 7.1) to (50.75, 7.15).',
        id='hand: out with a box'),
    pytest.param(
        'way(around:15,50.1,7.1,50.2,7.2,50.3,7.4)["highway"];out geom;',
        'Ways tagged `highway=*` within 15 m of the line through (50.1, 7.1), (50.2, 7.2) and '
        '(50.3, 7.4); output their tags and full geometry.',
        id='hand: a line of points'),
]

# The same reader with the German and French tables.
TRANSLATED = [
    pytest.param(
        'de',
        '{{geocodeArea:"Heidelberg"}}->.a;nwr["amenity"="cafe"]["outdoor_seating"="yes"](area.a);'
        'out center;',
        'Knoten, Wege und Relationen mit `amenity=cafe` und `outdoor_seating=yes` im Gebiet '
        'namens Heidelberg; Ausgabe: Tags und Mittelpunkt.',
        id='de-0'),
    pytest.param(
        'de',
        '[out:json][timeout:25];{{geocodeArea:"Magnitogorsk"}}->.searchArea;'
        'way["railway"="tram"]["service"!="yard"]["service"!="spur"](area.searchArea);out;>;'
        'out skel;',
        'Wege mit `railway=tram`, ohne `service=yard` oder `service=spur`, im Gebiet namens '
        'Magnitogorsk; Ausgabe: Tags und Geometrie. Einstellungen: Ausgabe als JSON, Zeitlimit '
        '25 s.',
        id='de-1'),
    pytest.param(
        'de',
        '[out:xml][timeout:250];(way(uid:7449661)(newer:"{{date:1day}}");'
        'node(uid:7449661)(newer:"{{date:14days}}"););out meta;>;',
        'Wege zuletzt bearbeitet vom Benutzer mit der ID 7449661, geändert am letzten Tag sowie '
        'Knoten zuletzt bearbeitet vom Benutzer mit der ID 7449661, geändert in den letzten 14 '
        'Tagen; Ausgabe: Tags, Geometrie und Bearbeitungsmetadaten. Ihre Knoten und Mitglieder '
        '(keine Ausgabe). Einstellungen: Ausgabe als XML, Zeitlimit 250 s.',
        id='de-2'),
    pytest.param(
        'de',
        '{{geocodeArea:"Lombardy"}};relation(pivot);out geom;',
        'Relationen als Umriss vom Gebiet namens Lombardy; Ausgabe: Tags und vollständige '
        'Geometrie.',
        id='de-3'),
    pytest.param(
        'de',
        '[out:json][timeout:25];(relation(2094222)->.mkad;'
        '(node["place"="city"](around.mkad:20000);node["place"="town"](around.mkad:20000);'
        ')->.city;);.city out;',
        'Knoten mit `place=city` oder `place=town` höchstens 20 km entfernt von Relation '
        '2094222; Ausgabe: Tags und Geometrie. Relation 2094222 sowie Knoten mit `place=city` '
        'oder `place=town` höchstens 20 km entfernt von Relation 2094222 (keine Ausgabe). '
        'Einstellungen: Ausgabe als JSON, Zeitlimit 25 s.',
        id='de-4'),
    pytest.param(
        'de',
        '[out:csv("name")][timeout:2500];{{geocodeArea:"Leuven"}}->.searchArea;'
        '(way["highway"]["name"](area.searchArea););for(t["name"]){make street name=_.val;out;}',
        'Für jede Gruppe aus Wegen mit `highway=*` und `name=*` im Gebiet namens Leuven mit '
        'gleichem `t["name"]`: Ein neues `street`-Element aus den Elementen der Gruppe mit '
        '`name=_.val`; Ausgabe: Tags. Einstellungen: Ausgabe als CSV mit den Spalten `name`, '
        'Zeitlimit 2500 s.',
        id='de-5'),
    pytest.param(
        'de',
        '(way["highway"="primary"]({{bbox}});node["highway"="bus_stop"]({{bbox}}););out count;',
        'Wege mit `highway=primary` im aktuellen Kartenausschnitt sowie Knoten mit '
        '`highway=bus_stop` im aktuellen Kartenausschnitt; Ausgabe: Anzahl.',
        id='de-6'),
    pytest.param(
        'fr',
        '{{geocodeArea:"Heidelberg"}}->.a;nwr["amenity"="cafe"]["outdoor_seating"="yes"](area.a);'
        'out center;',
        'Nœuds, chemins et relations avec `amenity=cafe` et `outdoor_seating=yes` dans la zone '
        'nommée Heidelberg ; sortie : tags et point central.',
        id='fr-0'),
    pytest.param(
        'fr',
        '[out:json][timeout:25];{{geocodeArea:"Magnitogorsk"}}->.searchArea;'
        'way["railway"="tram"]["service"!="yard"]["service"!="spur"](area.searchArea);out;>;'
        'out skel;',
        'Chemins avec `railway=tram`, sans `service=yard` ni `service=spur`, dans la zone nommée '
        'Magnitogorsk ; sortie : tags et géométrie. Paramètres : sortie en JSON, délai maximal '
        '25 s.',
        id='fr-1'),
    pytest.param(
        'fr',
        '[out:xml][timeout:250];(way(uid:7449661)(newer:"{{date:1day}}");'
        'node(uid:7449661)(newer:"{{date:14days}}"););out meta;>;',
        "Chemins dont la dernière modification est de l'utilisateur d'identifiant 7449661, avec "
        "une modification datant de moins d'un jour, ainsi que les nœuds dont la dernière "
        "modification est de l'utilisateur d'identifiant 7449661, avec une modification datant "
        "de moins de 14 jours ; sortie : tags, géométrie et métadonnées d'édition. Leurs nœuds "
        'et membres (sans sortie). Paramètres : sortie en XML, délai maximal 250 s.',
        id='fr-2'),
    pytest.param(
        'fr',
        '{{geocodeArea:"Lombardy"}};relation(pivot);out geom;',
        'Relations qui forment le contour de la zone nommée Lombardy ; sortie : tags et '
        'géométrie complète.',
        id='fr-3'),
    pytest.param(
        'fr',
        '[out:json][timeout:25];(relation(2094222)->.mkad;'
        '(node["place"="city"](around.mkad:20000);node["place"="town"](around.mkad:20000);'
        ')->.city;);.city out;',
        'Nœuds avec `place=city` ou `place=town` à moins de 20 km de la relation 2094222 ; '
        'sortie : tags et géométrie. La relation 2094222, ainsi que les nœuds avec `place=city` '
        'ou `place=town` à moins de 20 km de la relation 2094222 (sans sortie). Paramètres : '
        'sortie en JSON, délai maximal 25 s.',
        id='fr-4'),
    pytest.param(
        'fr',
        '[out:csv("name")][timeout:2500];{{geocodeArea:"Leuven"}}->.searchArea;'
        '(way["highway"]["name"](area.searchArea););for(t["name"]){make street name=_.val;out;}',
        'Pour chaque groupe des chemins avec `highway=*` et `name=*` dans la zone nommée Leuven '
        'ayant la même valeur de `t["name"]` : Un nouvel élément `street` calculé à partir des '
        'éléments du groupe, avec `name=_.val` ; sortie : tags. Paramètres : sortie en CSV avec '
        'les colonnes `name`, délai maximal 2500 s.',
        id='fr-5'),
    pytest.param(
        'fr',
        '(way["highway"="primary"]({{bbox}});node["highway"="bus_stop"]({{bbox}}););out count;',
        'Chemins avec `highway=primary` dans la vue actuelle de la carte, ainsi que les nœuds '
        'avec `highway=bus_stop` dans la vue actuelle de la carte ; sortie : nombre.',
        id='fr-6'),
]


@pytest.mark.parametrize("query, expected", CASES)
def test_each_statement_kind_has_its_sentence(query, expected):
    assert overpassql.explain(query) == expected


@pytest.mark.parametrize("lang, query, expected", TRANSLATED)
def test_german_and_french(lang, query, expected):
    assert overpassql.explain(query, lang) == expected


def test_the_example_of_the_issue():
    query = ('{{geocodeArea:"Heidelberg"}}->.searchArea;'
             'nwr["amenity"="cafe"]["outdoor_seating"="yes"](area.searchArea);out;>;out skel qt;')
    assert overpassql.explain(query) == (
        "Nodes, ways and relations tagged `amenity=cafe` and `outdoor_seating=yes` inside the "
        "area named Heidelberg; output their tags and geometry.")


def test_tag_names_stand_beside_their_tags():
    names = {"amenity=cafe": "Cafe", "building=*": "Building", "shop=bakery": "Bakery"}
    query = 'nwr["amenity"="cafe"]["building"]["shop"!="bakery"]["name"~"^A"]({{bbox}});out;'
    assert overpassql.explain(query, tag_names=names) == (
        "Nodes, ways and relations tagged `amenity=cafe` (Cafe) and `building=*` (Building), "
        "whose `name` matches `^A`, not tagged `shop=bakery` (Bakery), inside the current map "
        "view; output their tags and geometry.")
    assert overpassql.explain(query, "de", tag_names={"amenity=cafe": "Café"}).startswith(
        "Knoten, Wege und Relationen mit `amenity=cafe` (Café) und `building=*`")
    assert overpassql.explain(query, tag_names={}) == overpassql.explain(query)


@pytest.mark.parametrize("lang, expected_lang", [
    ("de", "de"), ("DE", "de"), ("de-CH", "de"), ("fr_FR", "fr"), ("en", "en"),
    ("xx", "en"), ("", "en"), (None, "en"), ("zh-Hant", "en")])
def test_language_codes_and_the_english_fallback(lang, expected_lang):
    query = 'node["amenity"="cafe"];out count;'
    assert overpassql.explain(query, lang) == overpassql.explain(query, expected_lang)


def test_languages_have_tables():
    assert explain_module.languages() == ["de", "en", "fr"]


_SLOT = re.compile(r"\{(\w+)\}")


def _forms(value) -> list[str]:
    return list(value.values()) if isinstance(value, dict) else [value]


@pytest.mark.parametrize("lang", sorted(set(TABLES) - {"en"}))
def test_phrase_tables_match_the_english_one(lang):
    """Every phrase of a translation exists in English (a missing one falls back to it) and
    fills only the slots the English phrase is given (another one would stay empty)."""
    english = TABLES["en"]
    for key, value in TABLES[lang].items():
        assert key in english, key
        if key == "contractions":
            assert all(isinstance(c, list) and len(c) == 3 for c in value), key
            continue
        allowed = {s.removesuffix("_nom") for form in _forms(english[key])
                   for s in _SLOT.findall(form)}
        for form in _forms(value):
            assert isinstance(form, str), key
            used = {s.removesuffix("_nom") for s in _SLOT.findall(form)}
            assert used <= allowed, (key, used - allowed)
        if isinstance(value, dict):
            assert set(value) <= {"top", "ref", "more"}, key


def test_a_phrase_missing_from_a_table_falls_back_to_english(monkeypatch):
    tables = {**TABLES, "de": {k: v for k, v in TABLES["de"].items() if k != "c_center"}}
    monkeypatch.setattr(explain_module, "_tables", lambda: tables)
    assert overpassql.explain('node["amenity"="cafe"];out center;', "de") == (
        "Knoten mit `amenity=cafe`; Ausgabe: Tags und centre point.")


@pytest.mark.parametrize("text, expected", [
    ("", "The query is empty."),
    ("  \n\t ", "The query is empty."),
    ("/* only a comment */", "The query does nothing."),
    ("[out:json][timeout:25];", "The query does nothing. Settings: output as JSON, time limit 25 s."),
    ("garbage in, garbage out",
     'Nothing in it is an Overpass query. It does not parse at line 1, column 1: Unknown type '
     '"garbage". There are 3 more errors.'),
    ("🙂", 'Nothing in it is an Overpass query. It does not parse at line 1, column 1: Unknown '
           'type "🙂". There are 3 more errors.'),
    ('node["amenity"="cafe"',
     "Nodes tagged `amenity=cafe` (not output). It does not parse at line 1, column 1: ']' "
     "expected - '\"cafe\"' found. There are 3 more errors."),
    ('[out:json];\nnode["amenity"="cafe"]\n  (aera.a);\nout;',
     "Nodes tagged `amenity=cafe`; output their tags and geometry. Settings: output as JSON. It "
     "does not parse at line 3, column 1: Unknown query clause."),
    ("node;", "Nothing in it is an Overpass query. It does not parse at line 1, column 5: An "
              "empty query is not allowed."),
])
def test_bad_input_gets_a_sentence(text, expected):
    assert overpassql.explain(text) == expected


@pytest.mark.parametrize("text", [
    "\x00\x00", "(" * 100_000, "[" * 5_000, "{{" * 2_000, '"' * 3 + "node",
    "node(if:" + "1+" * 50_000 + "1);out;",
    'node["a"="b"];' * 5_000 + "out;",
    # each set refers to the one before it three times: the text must not grow exponentially
    'node["k"="v"]->.s0;' + "".join(f"node.s{i}(around.s{i}:10)(area.s{i})->.s{i + 1};"
                                     for i in range(40)) + ".s40 out;",
])
@pytest.mark.parametrize("lang", ["en", "de", "fr"])
def test_hostile_input_never_raises(text, lang):
    result = overpassql.explain(text, lang)
    assert result and result != TABLES[lang]["unexplained"]
    assert len(result) < 200 * len(text) + 1000


def test_only_strings_are_queries():
    with pytest.raises(TypeError, match="needs a str"):
        overpassql.explain(None)
    with pytest.raises(TypeError):
        overpassql.explain(b'node["a"="b"];out;')
