"""The checker of the user-request benchmark (geoql.eval.facts): hand-written right and wrong
answers for each kind of fact, as parametrised cases. A case names the facts, the query and the
kinds of fact that must fail (empty: a right answer)."""

from __future__ import annotations

import pytest

from geoql.eval.facts import Atom, Facts, FactsError, Places, check, fold_place, parse_when

PLACES = Places({
    "germany": {"names": ["Germany", "Deutschland"], "codes": ["DE"]},
    "bonn": {"names": ["Bonn"], "within": ["germany"]},
    "cologne": {"names": ["Cologne", "Köln", "Koeln"], "within": ["germany"]},
    "zurich": {"names": ["Zurich", "Zürich"]},
    "krakow": {"names": ["Kraków", "Cracow"]},
    "seoul": {"names": ["Seoul", "서울"]},
    "eiffel": {"names": ["Eiffel Tower", "Tour Eiffel"]},
})
CAFE_BONN = {"want": [{"tags": [["amenity=cafe"]], "in": "bonn"}]}
A = '{{geocodeArea:Bonn}}->.a;'
STARBUCKS = ["brand=Starbucks", "name=Starbucks", "brand:wikidata=Q37158", "brand=스타벅스", "name=스타벅스"]
PIZZA = {"name~(?i)pizza": {"match": ["Pizza Roma", "Da Luigi Pizza"], "miss": ["Trattoria Roma", None]}}

CASES = [
    # -- a plain feature in a place: the many ways to name the area
    ("area by geocodeArea", CAFE_BONN, A + 'nwr["amenity"="cafe"](area.a);out center;', set()),
    ("area by name", CAFE_BONN, 'area["name"="Bonn"]->.a;node[amenity=cafe](area.a);out;', set()),
    ("area by name, any case and qualifier", CAFE_BONN, '{{geocodeArea:"bonn, germany"}}->.a;nwr[amenity=cafe](area.a);out;', set()),
    ("area by map_to_area", CAFE_BONN,
     'rel[name=Bonn][boundary=administrative][admin_level=6];map_to_area->.a;nwr(area.a)[amenity=cafe];out;', set()),
    ("area through the default set", CAFE_BONN, '{{geocodeArea:Bonn}};nwr(area)[amenity=cafe];out;', set()),
    ("area and its parent", CAFE_BONN,
     A + '{{geocodeArea:Deutschland}}->.d;nwr[amenity=cafe](area.a)(area.d);out;', set()),
    ("country by ISO code", {"want": [{"tags": [["amenity=cafe"]], "in": "germany"}]},
     'area["ISO3166-1"="DE"][admin_level=2]->.a;nwr[amenity=cafe](area.a);out;', set()),
    ("out;>;out skel qt", CAFE_BONN, A + '(node[amenity=cafe](area.a);way[amenity=cafe](area.a););out;>;out skel qt;', set()),
    ("harmless outputs: meta, geom", CAFE_BONN, A + 'nwr[amenity=cafe](area.a);out meta geom;', set()),
    ("another place", CAFE_BONN, '{{geocodeArea:Köln}}->.a;nwr[amenity=cafe](area.a);out;', {"place", "foreign"}),
    ("an inflected form is no place", {"want": [{"tags": [["amenity=cafe"]], "in": "krakow"}]},
     '{{geocodeArea:Krakowie}}->.a;nwr[amenity=cafe](area.a);out;', {"place", "foreign"}),
    ("no place at all", CAFE_BONN, 'nwr[amenity=cafe];out;', {"place"}),
    ("the parent place only", CAFE_BONN, '{{geocodeArea:Germany}}->.a;nwr[amenity=cafe](area.a);out;', {"place"}),
    ("an area by id cannot be checked", CAFE_BONN, 'nwr[amenity=cafe](area:3600062508);out;', {"place"}),
    ("the map view instead", CAFE_BONN, 'nwr[amenity=cafe]({{bbox}});out;', {"relation", "foreign"}),
    ("another feature", CAFE_BONN, A + 'nwr[amenity=restaurant](area.a);out;', {"tags", "foreign"}),
    ("a neighbour's leftover filter", CAFE_BONN, A + 'nwr[amenity=cafe][maxspeed](area.a);out;', {"tags", "foreign"}),
    ("an unused leftover area", CAFE_BONN, A + '{{geocodeArea:Paris}}->.paris;nwr[amenity=cafe](area.a);out;', {"foreign"}),
    ("a leftover time machine", CAFE_BONN, '[date:"2019-01-01T00:00:00Z"];' + A + 'nwr[amenity=cafe](area.a);out;', {"foreign"}),
    ("extra features in a union", CAFE_BONN,
     A + '(nwr[amenity=cafe](area.a);nwr[amenity=restaurant](area.a);nwr[amenity=fast_food](area.a););out;', {"tags", "foreign"}),
    ("a regex that takes more", CAFE_BONN, A + 'nwr[amenity~"cafe|bar"](area.a);out;', {"tags"}),
    ("a count nobody asked for", CAFE_BONN, A + 'nwr[amenity=cafe](area.a);out count;', {"output"}),
    ("CSV nobody asked for", CAFE_BONN, '[out:csv(name)];' + A + 'nwr[amenity=cafe](area.a);out;', {"output"}),
    ("ids only: nothing to map", CAFE_BONN, A + 'nwr[amenity=cafe](area.a);out ids;', {"output"}),
    ("a limit nobody asked for", CAFE_BONN, A + 'nwr[amenity=cafe](area.a);out 10;', {"output"}),
    ("prints nothing", CAFE_BONN, A + 'nwr[amenity=cafe](area.a);', {"output"}),
    ("does not parse", CAFE_BONN, A + 'nwr[amenity=cafe(area.a);out;', {"valid"}),
    ("empty", CAFE_BONN, '', {"valid"}),
    # -- attributes: yes, no, absent, numbers, name patterns
    ("wifi: one accepted value", {"want": [{"tags": [["amenity=cafe"], ["internet_access=wlan", "internet_access=yes"]], "in": "bonn"}]},
     A + 'nwr[amenity=cafe][internet_access=wlan](area.a);out;', set()),
    ("wifi: both values", {"want": [{"tags": [["amenity=cafe"], ["internet_access=wlan", "internet_access=yes"]], "in": "bonn"}]},
     A + 'nwr[amenity=cafe][internet_access~"^(wlan|yes)$"](area.a);out;', set()),
    ("wifi: any internet_access takes 'no' too", {"want": [{"tags": [["amenity=cafe"], ["internet_access=wlan"]], "in": "bonn"}]},
     A + 'nwr[amenity=cafe][internet_access](area.a);out;', {"tags"}),
    ("wifi dropped", {"want": [{"tags": [["amenity=cafe"], ["internet_access=wlan"]], "in": "bonn"}]},
     A + 'nwr[amenity=cafe](area.a);out;', {"tags"}),
    ("absent: [!name]", {"want": [{"tags": [["amenity=cafe"], ["!name"]], "in": "bonn"}]},
     A + 'nwr[amenity=cafe][!name](area.a);out;', set()),
    ("absent: !~ '.*'", {"want": [{"tags": [["amenity=cafe"], ["!name"]], "in": "bonn"}]},
     A + 'nwr[amenity=cafe]["name"!~".*"](area.a);out;', set()),
    ("absent: not asked for", {"want": [{"tags": [["amenity=cafe"], ["!name"]], "in": "bonn"}]},
     A + 'nwr[amenity=cafe][name](area.a);out;', {"tags"}),
    ("no: wheelchair=no", {"want": [{"tags": [["amenity=restaurant"], ["wheelchair=no"]], "in": "bonn"}]},
     A + 'nwr[amenity=restaurant][wheelchair=no](area.a);out;', set()),
    ("no: != yes takes the unknown", {"want": [{"tags": [["amenity=restaurant"], ["wheelchair=no"]], "in": "bonn"}]},
     A + 'nwr[amenity=restaurant][wheelchair!=yes](area.a);out;', {"tags"}),
    ("number: if: >", {"want": [{"tags": [["building=*"], ["building:levels>3"]], "in": "bonn"}]},
     A + 'way[building](if: t["building:levels"] > 3)(area.a);out;', set()),
    ("number: if: number() >", {"want": [{"tags": [["building=*"], ["building:levels>3"]], "in": "bonn"}]},
     A + 'way[building](if: number(t["building:levels"]) > 3)(area.a);out;', set()),
    ("number: a regex of the numbers", {"want": [{"tags": [["building=*"], ["building:levels>3"]], "in": "bonn"}]},
     A + 'way[building]["building:levels"~"^([4-9]|[1-9][0-9]+)$"](area.a);out;', set()),
    ("number: >= instead of >", {"want": [{"tags": [["building=*"], ["building:levels>3"]], "in": "bonn"}]},
     A + 'way[building](if: t["building:levels"] >= 3)(area.a);out;', {"tags"}),
    ("number: a regex that misses the big ones", {"want": [{"tags": [["building=*"], ["building:levels>3"]], "in": "bonn"}]},
     A + 'way[building]["building:levels"~"^[4-9]$"](area.a);out;', {"tags"}),
    ("name contains: any case", {"want": [{"tags": [["amenity=restaurant"], ["name~(?i)pizza"]], "in": "bonn", "samples": PIZZA}]},
     A + 'nwr[amenity=restaurant][name~"pizza",i](area.a);out;', set()),
    ("name contains: as written in names", {"want": [{"tags": [["amenity=restaurant"], ["name~(?i)pizza"]], "in": "bonn", "samples": PIZZA}]},
     A + 'nwr[amenity=restaurant][name~"Pizza"](area.a);out;', set()),
    ("name contains: starts with is less", {"want": [{"tags": [["amenity=restaurant"], ["name~(?i)pizza"]], "in": "bonn", "samples": PIZZA}]},
     A + 'nwr[amenity=restaurant][name~"^Pizza"](area.a);out;', {"tags"}),
    ("name contains: equal is less", {"want": [{"tags": [["amenity=restaurant"], ["name~(?i)pizza"]], "in": "bonn", "samples": PIZZA}]},
     A + 'nwr[amenity=restaurant][name="Pizza"](area.a);out;', {"tags"}),
    ("quoted name: exact", {"want": [{"tags": [["amenity=pub"], ["name=The Crown"]], "in": "bonn"}]},
     A + 'nwr[amenity=pub][name="The Crown"](area.a);out;', set()),
    ("quoted name: a part takes others", {"want": [{"tags": [["amenity=pub"], ["name=The Crown"]], "in": "bonn"}]},
     A + 'nwr[amenity=pub][name~"crown",i](area.a);out;', {"tags"}),
    # -- negation
    ("negation: two filters", {"want": [{"tags": [["shop=*"], ["shop!=supermarket"]], "in": "bonn"}]},
     A + 'nwr[shop][shop!=supermarket](area.a);out;', set()),
    ("negation: a difference", {"want": [{"tags": [["shop=*"], ["shop!=supermarket"]], "in": "bonn"}]},
     A + '(nwr[shop](area.a); - nwr[shop=supermarket](area.a););out;', set()),
    ("negation dropped", {"want": [{"tags": [["shop=*"], ["shop!=supermarket"]], "in": "bonn"}]},
     A + 'nwr[shop](area.a);out;', {"tags"}),
    ("negation alone takes non-shops", {"want": [{"tags": [["shop=*"], ["shop!=supermarket"]], "in": "bonn"}]},
     A + 'nwr[shop!=supermarket](area.a);out;', {"tags"}),
    # -- brands
    ("brand by brand", {"want": [{"tags": [STARBUCKS], "optional": ["amenity=cafe"], "in": "seoul"}]},
     '{{geocodeArea:Seoul}}->.a;nwr[brand=Starbucks](area.a);out;', set()),
    ("brand by wikidata and its category", {"want": [{"tags": [STARBUCKS], "optional": ["amenity=cafe"], "in": "seoul"}]},
     '{{geocodeArea:서울}}->.a;nwr[amenity=cafe]["brand:wikidata"="Q37158"](area.a);out;', set()),
    ("brand by a name regex", {"want": [{"tags": [STARBUCKS], "optional": ["amenity=cafe"], "in": "seoul"}]},
     '{{geocodeArea:Seoul}}->.a;nwr[name~"Starbucks|스타벅스"](area.a);out;', set()),
    ("brand dropped: every cafe", {"want": [{"tags": [STARBUCKS], "optional": ["amenity=cafe"], "in": "seoul"}]},
     '{{geocodeArea:Seoul}}->.a;nwr[amenity=cafe](area.a);out;', {"tags"}),
    ("brand dropped: everything", {"want": [{"tags": [STARBUCKS], "optional": ["amenity=cafe"], "in": "seoul"}]},
     '{{geocodeArea:Seoul}}->.a;nwr(area.a);out;', {"tags"}),
    ("not a brand: the local spelling", {"want": [{"tags": [["amenity=cafe"], ["brand!=스타벅스", "name!=스타벅스", "brand:wikidata!=Q37158"]], "in": "seoul"}]},
     '{{geocodeArea:Seoul}}->.a;nwr[amenity=cafe]["brand:wikidata"!="Q37158"](area.a);out;', set()),
    ("not a brand: the English spelling misses", {"want": [{"tags": [["amenity=cafe"], ["brand!=스타벅스", "name!=스타벅스", "brand:wikidata!=Q37158"]], "in": "seoul"}]},
     '{{geocodeArea:Seoul}}->.a;nwr[amenity=cafe][brand!=Starbucks](area.a);out;', {"tags"}),
    # -- two features: a union; a "may" feature
    ("union: two statements", {"want": [{"tags": [["amenity=bar"]], "in": "bonn"}, {"tags": [["amenity=pub"]], "in": "bonn"}]},
     A + '(nwr[amenity=bar](area.a);nwr[amenity=pub](area.a););out;', set()),
    ("union: one regex", {"want": [{"tags": [["amenity=bar"]], "in": "bonn"}, {"tags": [["amenity=pub"]], "in": "bonn"}]},
     A + 'nwr[amenity~"^(bar|pub)$"](area.a);out;', set()),
    ("union: one member missing", {"want": [{"tags": [["amenity=bar"]], "in": "bonn"}, {"tags": [["amenity=pub"]], "in": "bonn"}]},
     A + 'nwr[amenity=pub](area.a);out;', {"tags"}),
    ("may: printed or not", {"want": [{"tags": [["amenity=atm"]], "in": "bonn"}, {"tags": [["atm=yes"]], "in": "bonn", "may": True}]},
     A + '(nwr[amenity=atm](area.a);nwr[atm=yes](area.a););out;', set()),
    ("may: need not be printed", {"want": [{"tags": [["amenity=atm"]], "in": "bonn"}, {"tags": [["atm=yes"]], "in": "bonn", "may": True}]},
     A + 'nwr[amenity=atm](area.a);out;', set()),
    ("may: is not enough", {"want": [{"tags": [["amenity=atm"]], "in": "bonn"}, {"tags": [["atm=yes"]], "in": "bonn", "may": True}]},
     A + 'nwr[atm=yes](area.a);out;', {"tags"}),
    # -- two places: each feature tied to its own place
    ("two places: one block each", {"want": [{"tags": [["amenity=cafe"]], "in": "bonn"}, {"tags": [["shop=bakery"]], "in": "cologne"}]},
     A + '{{geocodeArea:Köln}}->.k;(nwr[amenity=cafe](area.a);nwr[shop=bakery](area.k););out;', set()),
    ("two places: area queries", {"want": [{"tags": [["amenity=cafe"]], "in": "bonn"}, {"tags": [["shop=bakery"]], "in": "cologne"}]},
     'area[name=Bonn]->.a;area[name="Köln"]->.k;nwr[amenity=cafe](area.a);out;nwr[shop=bakery](area.k);out;', set()),
    ("two places: both in the second", {"want": [{"tags": [["amenity=cafe"]], "in": "bonn"}, {"tags": [["shop=bakery"]], "in": "cologne"}]},
     '{{geocodeArea:Köln}}->.k;(nwr[amenity=cafe](area.k);nwr[shop=bakery](area.k););out;', {"place"}),
    ("two places: features swapped", {"want": [{"tags": [["amenity=cafe"]], "in": "bonn"}, {"tags": [["shop=bakery"]], "in": "cologne"}]},
     A + '{{geocodeArea:Köln}}->.k;(nwr[amenity=cafe](area.k);nwr[shop=bakery](area.a););out;', {"place"}),
    ("two places: one area for both", {"want": [{"tags": [["amenity=cafe"]], "in": "bonn"}, {"tags": [["shop=bakery"]], "in": "cologne"}]},
     'area[name~"^(Bonn|Köln)$"]->.b;(nwr[amenity=cafe](area.b);nwr[shop=bakery](area.b););out;', {"place"}),
    ("one feature in two places", {"want": [{"tags": [["tourism=museum"]], "in": "bonn"}, {"tags": [["tourism=museum"]], "in": "cologne"}]},
     'area[name~"^(Bonn|Köln)$"]->.b;nwr[tourism=museum](area.b);out;', set()),
    # -- around a named point
    ("around a point", {"want": [{"tags": [["amenity=toilets"]], "around": {"m": 300, "point": "eiffel"}}]},
     'nwr[amenity=toilets](around:300,{{geocodeCoords:Eiffel Tower}});out;', set()),
    ("around a point, another spelling", {"want": [{"tags": [["amenity=toilets"]], "around": {"m": 300, "point": "eiffel"}}]},
     'nwr[amenity=toilets](around:300,{{geocodeCoords:"Tour Eiffel, Paris"}});out center;', set()),
    ("around a point: an area named after it", {"want": [{"tags": [["amenity=toilets"]], "around": {"m": 300, "point": "eiffel"}}]},
     '{{geocodeArea:Eiffel Tower}}->.a;nwr[amenity=toilets](area.a);out;', {"relation"}),
    ("around a point: another radius", {"want": [{"tags": [["amenity=toilets"]], "around": {"m": 300, "point": "eiffel"}}]},
     'nwr[amenity=toilets](around:500,{{geocodeCoords:Eiffel Tower}});out;', {"radius", "foreign"}),
    ("around a mile, rounded", {"want": [{"tags": [["amenity=parking"]], "around": {"m": 1609.344, "point": "eiffel"}}]},
     'nwr[amenity=parking](around:1600,{{geocodeCoords:Eiffel Tower}});out;', set()),
    ("around coordinates", {"want": [{"tags": [["amenity=restaurant"]], "around": {"m": 500, "at": [48.8566, 2.3522]}}]},
     'nwr[amenity=restaurant](around:500,48.8566,2.3522);out;', set()),
    ("around other coordinates", {"want": [{"tags": [["amenity=restaurant"]], "around": {"m": 500, "at": [48.8566, 2.3522]}}]},
     'nwr[amenity=restaurant](around:500,48.9,2.3522);out;', {"place", "foreign"}),
    # -- around other features
    ("around features: their set", {"want": [{"tags": [["amenity=bench"]], "around": {"m": 50, "of": {"tags": [["leisure=playground"]], "in": "zurich"}}}]},
     '{{geocodeArea:Zürich}}->.z;nwr[leisure=playground](area.z)->.p;nwr[amenity=bench](around.p:50);out;', set()),
    ("around features: the default set", {"want": [{"tags": [["amenity=bench"]], "around": {"m": 50, "of": {"tags": [["leisure=playground"]], "in": "zurich"}}}]},
     '{{geocodeArea:Zürich}}->.z;nwr[leisure=playground](area.z);nwr[amenity=bench](around:50);out;', set()),
    ("around features: anchors anywhere, benches in the place", {"want": [{"tags": [["amenity=bench"]], "around": {"m": 50, "of": {"tags": [["leisure=playground"]], "in": "zurich"}}}]},
     '{{geocodeArea:Zürich}}->.z;nwr[leisure=playground]->.p;nwr[amenity=bench](around.p:50)(area.z);out;', set()),
    ("around features: anchors anywhere", {"want": [{"tags": [["amenity=bench"]], "around": {"m": 50, "of": {"tags": [["leisure=playground"]], "in": "zurich"}}}]},
     'nwr[leisure=playground]->.p;nwr[amenity=bench](around.p:50);out;', {"relation"}),
    ("around features: the anchors printed too", {"want": [{"tags": [["amenity=bench"]], "around": {"m": 50, "of": {"tags": [["leisure=playground"]], "in": "zurich"}}}]},
     '{{geocodeArea:Zürich}}->.z;nwr[leisure=playground](area.z)->.p;nwr[amenity=bench](around.p:50);out;.p out;', {"output"}),
    ("around features: only in the place", {"want": [{"tags": [["amenity=bench"]], "around": {"m": 50, "of": {"tags": [["leisure=playground"]], "in": "zurich"}}}]},
     '{{geocodeArea:Zürich}}->.z;nwr[amenity=bench](area.z);out;', {"relation"}),
    # -- map view, box
    ("map view", {"want": [{"tags": [["amenity=bench"]], "view": True}]}, 'nwr[amenity=bench]({{bbox}});out;', set()),
    ("map view as a setting", {"want": [{"tags": [["amenity=bench"]], "view": True}]}, '[bbox:{{bbox}}];nwr[amenity=bench];out;', set()),
    ("map view dropped", {"want": [{"tags": [["amenity=bench"]], "view": True}]}, 'nwr[amenity=bench];out;', {"relation"}),
    ("a box", {"want": [{"tags": [["amenity=post_box"]], "bbox": [51.5, -0.13, 51.52, -0.1]}]},
     'node[amenity=post_box](51.50,-0.13,51.52,-0.10);out;', set()),
    ("a box in the wrong order", {"want": [{"tags": [["amenity=post_box"]], "bbox": [51.5, -0.13, 51.52, -0.1]}]},
     'node[amenity=post_box](-0.13,51.50,-0.10,51.52);out;', {"place", "foreign"}),
    # -- time, users, ids, types
    ("since: newer", {"want": [{"tags": [["building=*"]], "since": "2024-01-01", "view": True}]},
     'nwr[building](newer:"2024-01-01T00:00:00Z")({{bbox}});out;', set()),
    ("since: changed", {"want": [{"tags": [["building=*"]], "since": "2024-01-01", "view": True}]},
     'nwr[building](changed:"2024-01-01T00:00:00Z")({{bbox}});out meta;', set()),
    ("since: another date", {"want": [{"tags": [["building=*"]], "since": "2024-01-01", "view": True}]},
     'nwr[building](newer:"2023-01-01T00:00:00Z")({{bbox}});out;', {"time"}),
    ("since: dropped", {"want": [{"tags": [["building=*"]], "since": "2024-01-01", "view": True}]},
     'nwr[building]({{bbox}});out;', {"time"}),
    ("since: relative", {"want": [{"tags": [["shop=*"]], "since": "7 days", "in": "bonn"}]},
     A + 'nwr[shop](newer:"{{date:1 week}}")(area.a);out;', set()),
    ("between two dates", {"want": [{"tags": [["shop=*"]], "since": "2023-01-01", "until": "2023-06-30", "in": "bonn"}]},
     A + 'nwr[shop](changed:"2023-01-01T00:00:00Z","2023-07-01T00:00:00Z")(area.a);out;', set()),
    ("between: the end dropped", {"want": [{"tags": [["shop=*"]], "since": "2023-01-01", "until": "2023-06-30", "in": "bonn"}]},
     A + 'nwr[shop](newer:"2023-01-01T00:00:00Z")(area.a);out;', {"time"}),
    ("a user", {"want": [{"user": "bob", "since": "2024-05-01", "view": True}]},
     'nwr(user:"bob")(newer:"2024-05-01T00:00:00Z")({{bbox}});out meta;', set()),
    ("another user", {"want": [{"user": "bob", "since": "2024-05-01", "view": True}]},
     'nwr(user:"alice")(newer:"2024-05-01T00:00:00Z")({{bbox}});out meta;', {"user"}),
    ("an id", {"want": [{"types": ["way"], "ids": [50637691]}]}, 'way(50637691);out geom;', set()),
    ("an id: every type", {"want": [{"types": ["way"], "ids": [50637691]}]}, 'nwr(50637691);out;', {"types"}),
    ("ids: both", {"want": [{"types": ["node"], "ids": [1, 2]}]}, 'node(id:1,2);out;', set()),
    ("ids: one of two", {"want": [{"types": ["node"], "ids": [1, 2]}]}, 'node(1);out;', {"ids"}),
    ("types said: ways", {"want": [{"tags": [["highway=residential"]], "types": ["way"], "in": "bonn"}]},
     A + 'way[highway=residential](area.a);out geom;', set()),
    ("types said: nwr takes nodes", {"want": [{"tags": [["highway=residential"]], "types": ["way"], "in": "bonn"}]},
     A + 'nwr[highway=residential](area.a);out geom;', {"types"}),
    # -- outputs asked for
    ("count", {**CAFE_BONN, "output": ["count"]}, A + 'nwr[amenity=cafe](area.a);out count;', set()),
    ("count as CSV", {**CAFE_BONN, "output": ["count"]}, '[out:csv(::count)];' + A + 'nwr[amenity=cafe](area.a);out count;', set()),
    ("count missing", {**CAFE_BONN, "output": ["count"]}, A + 'nwr[amenity=cafe](area.a);out;', {"output"}),
    ("centre", {**CAFE_BONN, "output": ["center"]}, A + 'nwr[amenity=cafe](area.a);out center;', set()),
    ("centre missing", {**CAFE_BONN, "output": ["center"]}, A + 'nwr[amenity=cafe](area.a);out;', {"output"}),
    ("geometry inline", {**CAFE_BONN, "output": ["geom"]}, A + 'nwr[amenity=cafe](area.a);out geom;', set()),
    ("geometry by recursion", {**CAFE_BONN, "output": ["geom"]}, A + 'nwr[amenity=cafe](area.a);(._;>;);out;', set()),
    ("geometry missing", {**CAFE_BONN, "output": ["geom"]}, A + 'nwr[amenity=cafe](area.a);out center;', {"output"}),
    ("metadata", {**CAFE_BONN, "output": ["meta"]}, A + 'nwr[amenity=cafe](area.a);out meta;', set()),
    ("CSV with the columns", {**CAFE_BONN, "output": ["csv"], "csv": ["name", "website"]},
     '[out:csv(::id,"name","website";true;",")];' + A + 'nwr[amenity=cafe](area.a);out;', set()),
    ("CSV without a column", {**CAFE_BONN, "output": ["csv"], "csv": ["name", "website"]},
     '[out:csv(name)];' + A + 'nwr[amenity=cafe](area.a);out;', {"output"}),
]


@pytest.mark.parametrize("name, row, query, failing", CASES, ids=[c[0] for c in CASES])
def test_case(name, row, query, failing):
    verdict = check(Facts.from_row(row, PLACES), query)
    assert set(verdict.facts) == failing, [str(m) for m in verdict.misses]
    assert verdict.ok == (not failing)


def test_every_miss_says_why():
    """A miss names its fact kind and what is wrong, with the query's own words."""
    verdict = check(Facts.from_row(CAFE_BONN, PLACES), A + 'nwr[amenity=cafe][maxspeed](area.a);out;')
    texts = [str(m) for m in verdict.misses]
    assert any(t.startswith("tags: amenity=cafe") and '["maxspeed"]' in t for t in texts), texts
    assert any(t.startswith("foreign: tag filter") for t in texts), texts


@pytest.mark.parametrize("row, message", [
    ({"want": []}, "want"),
    ({"want": [{"tags": [["amenity=cafe"]], "in": "atlantis"}]}, "unknown place"),
    ({"want": [{"tags": [["amenity"]]}]}, "no tag condition"),
    ({"want": [{"tags": [["name~(?i)pizza"]]}]}, "needs samples"),
    ({"want": [{"tags": [["name~(?i)pizza"]], "samples": {"name~(?i)pizza": {"match": ["Roma"]}}}]}, "does not accept"),
    ({"want": [{"tags": [["brand!=A", "brand!=B"]]}]}, "holds for every value"),
    ({"want": [{"tags": [["amenity=cafe"]], "in": "bonn", "view": True}]}, "one of"),
    ({"want": [{"ids": [1]}]}, "one element type"),
    ({"want": [{"tags": [["amenity=cafe"]], "since": "last tuesday"}]}, "a date"),
    ({"want": [{"tags": [["amenity=cafe"]], "may": True}]}, "at least one"),
    ({"want": [{"tags": [["amenity=cafe"]]}], "output": ["pdf"]}, "output"),
    ({"want": [{"tags": [["amenity=cafe"]], "colour": "red"}]}, "unknown field"),
])
def test_malformed_facts_are_refused(row, message):
    with pytest.raises(FactsError, match=message):
        Facts.from_row(row, PLACES)


def test_two_places_may_not_share_a_spelling():
    with pytest.raises(FactsError, match="both spell"):
        Places({"a": ["Springfield"], "b": ["springfield"]})


@pytest.mark.parametrize("text, kind", [("Kraków", "krakow"), ("KRAKOW", "krakow"), ("Cracow, Poland", "krakow"),
                                        ("Krakowie", None), ("Krakau", None)])
def test_place_spellings(text, kind):
    assert Places({"krakow": ["Kraków", "Cracow"]}).resolve(text) == kind
    assert fold_place(" Kraków ") == "krakow"


@pytest.mark.parametrize("text, holds", [("maxspeed>50", {"60": True, "50": False, "none": False}),
                                         ("stars>=4", {"4": True, "3.5": False}),
                                         ("!name", {"x": False}), ("cuisine!=italian", {"thai": True, "italian": False})])
def test_atoms(text, holds):
    atom = Atom.parse(text)
    for value, expected in holds.items():
        assert atom.holds({atom.key: value}) is expected, (text, value)


def test_dates():
    assert parse_when("{{date:7 days}}") == parse_when("1 week")
    assert parse_when("2024-13-40") is None
