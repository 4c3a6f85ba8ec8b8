"""geoql.nl.attributes.find_field and the reader's use of it: iD's yes/no fields
(nl/data/field_attributes.json, built from the pinned id-tagging-schema) name a filter the cue tables
read, whole, and only then."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from geoql.index.config import SCHEMA_VERSION
from geoql.nl.attributes import attributes, find_field
from geoql.nl.lexicon import Lexicon
from geoql.nl.request import Knowledge, read_request

DATA = json.loads(resources.files("geoql.nl").joinpath("data", "field_attributes.json").read_text(encoding="utf-8"))
KNOWLEDGE = Knowledge(lexicon=Lexicon.default())

# (language, a filter's words as people write them, the field's key); the labels are iD's own:
# en "Armrests", de "Armlehnen", fr "Accoudoirs", it "Aria condizionata", pl "Toalety", ru "Душ", zh "空调", ja "シャワー"
# (changing tables, delivery, covered, handrails, drinking water and tactile paving are in the hand-kept table
# now, so the field table leaves them out)
FOUND = [
    ("en", "armrests", "armrest"), ("en", "air conditioning", "air_conditioning"), ("en", "showers", "shower"),
    ("en", "toilets", "toilets"), ("en", "bench", "bench"),
    ("de", "Armlehnen", "armrest"), ("de", "Klimaanlage", "air_conditioning"), ("fr", "accoudoirs", "armrest"),
    ("fr", "climatisation", "air_conditioning"), ("es", "aire acondicionado", "air_conditioning"),
    ("it", "aria condizionata", "air_conditioning"), ("es", "aria condizionata", "air_conditioning"),
    ("pl", "toaletami", "toilets"), ("pl", "klimatyzacją", "air_conditioning"), ("ru", "душем", "shower"),
    ("zh", "空调", "air_conditioning"), ("ja", "シャワー", "shower"),
]
# a part of a label, a word of another language's terms ("casa": Italian for delivery), text that is more
NOT_FOUND = [("en", "air"), ("es", "casa"), ("en", "air conditioning and bench"), ("en", ""), ("en", "🙂")]


@pytest.mark.parametrize("lang, text, key", FOUND, ids=[f"{l}-{t}" for l, t, _ in FOUND])
def test_a_label_or_term_names_its_field(lang, text, key):
    m = find_field(text, lang)
    assert m is not None and m.attribute.key == key and m.text == text
    assert m.attribute.yes == (f"{key}=yes",) and m.attribute.no == (f"{key}=no",)


@pytest.mark.parametrize("lang, text", NOT_FOUND)
def test_words_that_are_not_all_a_label_name_none(lang, text):
    assert find_field(text, lang) is None


def test_the_table_is_the_pinned_schemas_and_leaves_the_hand_kept_keys_out():
    assert DATA["source"]["version"] == SCHEMA_VERSION and DATA["source"]["integrity"].startswith("sha")
    hand = {a.key for a in attributes().values()}
    keys = [a["key"] for a in DATA["attributes"]]
    assert len(keys) == len(set(keys)) and not hand & set(keys)


@pytest.mark.parametrize("request_text, absent", [
    # the words are a thing asked for beside: no atm=yes on the ATMs themselves
    ("Где в Мюнстере можно найти банкоматы и банки с банкоматами?", "atm"),
    # "not footways": the roads less footways, not roads without a segregated path
    ("瓦图斯科有哪些道路不是人行道或步行街？", "segregated"),
    # "bar" is a thing said not to be, not a bar=no
    ("파리에서 이름에 'privé'가 포함되어 있지만 바(bar)가 아닌 장소는 어디입니까?", "bar"),
])
def test_a_thing_is_not_read_as_a_field(request_text, absent):
    r = read_request(request_text, KNOWLEDGE)
    assert absent not in {m.attribute.key for m in r.attribute_words}


# A number written as a word before a counted measure, per language (nl/data/number_words.json)
SPELLED = [("five star hotels in london", "en"), ("Fünf-Sterne-Hotels in München", "de"), ("hôtels cinq étoiles à paris", "fr"),
           ("alberghi a cinque stelle a roma", "it"), ("東京の五つ星ホテル", "ja"), ("上海的五星级酒店", "zh"),
           ("서울 오성급 호텔", "ko"), ("bursa'da beş yıldızlı oteller", "tr")]


@pytest.mark.parametrize("request_text, lang", SPELLED, ids=[l for _, l in SPELLED])
def test_a_number_word_counts_a_measure(request_text, lang):
    r = read_request(request_text, KNOWLEDGE)
    assert [(f.kind, f.op, f.value) for f in r.filters] == [("compare", "=", "5")]
    assert r.language == lang


def test_a_number_word_counts_no_name():
    # "avec un nom": with a name, not with one name
    r = read_request("Quels parcs avec un nom se trouvent dans la vue actuelle ?", KNOWLEDGE)
    assert all(f.kind != "compare" for f in r.filters)


# iD's fields of free or listed values, read only where a filter says the attribute is missing (their labels:
# en "Material", de "Material", fr "Matériau", ru "Материал", zh "材质", ko "소재", en "Duration")
MISSING_FOUND = [
    ("en", "materials", "material"), ("de", "Material", "material"), ("fr", "matériau", "material"),
    ("ru", "материала", "material"), ("zh", "材质", "material"), ("ko", "소재", "material"), ("en", "duration", "duration"),
]
# a word its star would read but is no ending ("Design" of "designated"), a route's ends and stops (prepositions
# in most languages' labels), a label of few letters that is part of others (golf's "Par" of "parts"; "층")
MISSING_NOT_FOUND = [("en", "designated"), ("en", "via"), ("en", "from"), ("es", "desde"), ("en", "parts"), ("ko", "층")]


@pytest.mark.parametrize("lang, text, key", MISSING_FOUND, ids=[f"{l}-{t}" for l, t, _ in MISSING_FOUND])
def test_a_field_of_values_is_read_only_as_missing(lang, text, key):
    m = find_field(text, lang, missing=True)
    assert m is not None and m.attribute.key == key and m.text == text
    assert m.attribute.yes == () and m.attribute.no == ()
    assert find_field(text, lang) is None  # "with a material" is not this table's to say


@pytest.mark.parametrize("lang, text", MISSING_NOT_FOUND)
def test_words_that_are_no_label_of_a_value_field_name_none(lang, text):
    assert find_field(text, lang, missing=True) is None


@pytest.mark.parametrize("request_text, filters, key", [
    ("benches without specified materials in Lyon", [("absent", "materials")], "material"),
    ("Bänke ohne Materialangabe in Berlin", [("absent", "Material")], "material"),
    ("bus stops without bench information in Leeds", [("absent", "bench")], "bench"),
    ("蒙鲁日没有长凳信息的公交站", [("absent", "长凳")], "bench"),
])
def test_a_missing_records_words_are_left_to_its_field(request_text, filters, key):
    r = read_request(request_text, KNOWLEDGE)
    assert [(f.kind, f.text) for f in r.filters] == filters
    assert key in {m.attribute.key for m in r.attribute_words}


# An attribute listed with one said to be missing, under the same negation: after it where the negation comes
# first, before it where it comes last (ja, ko); "and with" opens a new one
LISTED = [
    ("en", "cafes without wifi and wheelchair access in Paris", {"wifi": "absent", "wheelchair access": "absent"}),
    ("de", "Cafés ohne WLAN und Terrasse in Berlin", {"WLAN": "absent", "Terrasse": "absent"}),
    ("ja", "Wi-Fiとテラス席がないカフェ 東京", {"Wi-Fi": "absent", "テラス席": "absent"}),
    ("ko", "와이파이와 야외 좌석이 없는 서울 카페", {"와이파이": "absent", "야외 좌석": "absent"}),
    ("en", "cafes without wifi and with outdoor seating in Paris", {"wifi": "absent", "outdoor seating": "yes"}),
    ("en", "cafes with wifi but without outdoor seating in Paris", {"wifi": "yes", "outdoor seating": "absent"}),
]


@pytest.mark.parametrize("lang, request_text, kinds", LISTED, ids=[f"{l}-{i}" for i, (l, _, _) in enumerate(LISTED)])
def test_an_attribute_listed_with_a_missing_one_is_missing(lang, request_text, kinds):
    r = read_request(request_text, KNOWLEDGE)
    assert r.language == lang
    assert {f.text: f.kind for f in r.filters} == kinds
