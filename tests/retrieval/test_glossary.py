"""Word-by-word English from a glossary: cue phrases, small words, inflections, compounds, names."""

from __future__ import annotations

import pytest

from geoql.index.glossary import LANGUAGES, RUSSIAN_ADJECTIVES
from geoql.nl.cues import aligned_cues, table
from geoql.nl.text import fold
from geoql.retrieval import artifacts as A
from geoql.retrieval.glossary import Glossary, Translator, write_glossary

GERMAN = Glossary("de", {"apotheke": "pharmacy", "bahnhöfe": "stations", "biogas": "biogas", "tankstelle": "filling station",
                         "schule": "school", "bank": "bench"}, endings=("n", "en"), compounds=True)


@pytest.mark.parametrize("word, english", [
    ("Apotheke", "pharmacy"),
    ("Apotheken", "pharmacy"),  # an inflection ending off
    ("BAHNHÖFE", "stations"),  # any case
    ("Biogastankstellen", "biogas filling station"),  # two known words
    ("Schulbank", "school bench"),  # the head is "schule" without its "e"
    ("Hausbank", None),  # an unknown head: no half translation
    ("Heidelberg", None),  # a name
    ("Bank", "bench"),
])
def test_a_word_is_known_inflected_or_compounded(word, english):
    assert GERMAN.english(word) == english


def test_compounds_are_split_only_where_the_language_writes_them():
    french = Glossary("fr", {"biogas": "biogas", "tankstelle": "filling station"})
    assert french.english("biogastankstelle") is None


def test_cue_phrases_small_words_numbers_and_names():
    t = Translator({"de": GERMAN})
    out = t.translate("Welche Apotheken gibt es im Umkreis von 500 m um den Bahnhöfe in Heidelberg, ohne ID 42?", "de")
    words = out.split()
    assert "pharmacy" in words and "stations" in words
    assert "500" in words and "Heidelberg" in words and "ID" in words and "42" in words
    assert not {"welche", "gibt", "es", "den"} & {w.lower() for w in words}  # the cue table's small words go


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_glossary_language_writes_its_cues_in_english(lang):
    """Each dictionary language has a cue table whose map-view cue reads as the English one."""
    cue = table(lang)["view"][0]
    t = Translator({lang: Glossary(lang, {})})
    assert t.translate(cue, lang) == aligned_cues(lang, "en")[fold(cue)] == table("en")["view"][0]


RUSSIAN = Glossary("ru", {"замок": "castle", "германия": "Germany", "исторический": "historic", "школа": "school"},
                   lemmatizer="pymorphy3")


def test_a_russian_request_is_read_through_its_words_dictionary_forms():
    """pymorphy3 (the ``index`` extra) gives the dictionary form the glossary holds."""
    out = Translator({"ru": RUSSIAN}).translate("Какие исторические замки есть в Германии?", "ru")
    assert out.split() == ["historic", "castle", "in", "Germany"]


RUSSIAN_NOUNS = {"трамвай": "tram", "велосипед": "bicycle", "парковка": "parking", "сад": "garden", "путь": "way",
                 "школа": "school"}


@pytest.mark.parametrize("word, english", [
    ("трамвайные", "tram"), ("велосипедных", "bicycle"), ("парковочными", "parking"), ("садовые", "garden"),
    ("школы", "school"),  # a noun is found through its dictionary form before any derivation
    ("медицинские", None),  # no noun of the glossary behind it
])
def test_a_russian_adjective_is_read_as_the_noun_it_is_made_from(tmp_path, word, english):
    path = write_glossary(tmp_path / A.glossary_file("ru"), "ru", RUSSIAN_NOUNS, {}, lemmatizer="pymorphy3",
                          derivations=RUSSIAN_ADJECTIVES)
    glossary = Glossary.load(path)  # the derivations travel in the glossary file
    assert glossary.derivations == RUSSIAN_ADJECTIVES
    assert glossary.english(word) == english
    assert Glossary("ru", RUSSIAN_NOUNS, lemmatizer="pymorphy3").english(word) == (english if word == "школы" else None)


def test_without_its_lemmatizer_a_glossary_knows_dictionary_forms_only(monkeypatch):
    from geoql.retrieval import glossary as G

    def missing(word, language):
        raise ImportError("No module named 'pymorphy3'")

    monkeypatch.setitem(G.LEMMATIZERS, "pymorphy3", missing)
    monkeypatch.setattr(G, "_MISSING_WARNED", set())
    glossary = Glossary("ru", dict(RUSSIAN.words), lemmatizer="pymorphy3")
    with pytest.warns(UserWarning, match="pip install"):
        assert glossary.english("замки") is None
    assert glossary.english("замок") == "castle" and glossary.english("школы") is None  # warned once, then quiet


def test_a_glossary_names_only_a_known_lemmatizer(tmp_path):
    with pytest.raises(ValueError, match="known: pymorphy3"):
        write_glossary(tmp_path / A.glossary_file("ru"), "ru", {"замок": "castle"}, {}, lemmatizer="stemmer")
    assert not list(tmp_path.iterdir())


def test_a_language_without_a_glossary_is_not_translated():
    assert Translator({"de": GERMAN}).translate("Pharmacies à Lyon", "fr") is None


def test_the_glossaries_of_an_index_directory(tmp_path):
    write_glossary(tmp_path / A.glossary_file("de"), "de", {"apotheke": "pharmacy"}, {}, endings=("n",))
    write_glossary(tmp_path / A.glossary_file("xx"), "xx", {"apotheke": "pharmacy"}, {})  # no cue table: ignored
    t = Translator.from_index(tmp_path)
    assert t.languages == ("de",)
    assert t.translate("Apotheken", "de") == "pharmacy"
    assert Translator.from_index(tmp_path / "missing").languages == ()


def test_a_glossary_file_is_read_word_by_word_and_rewritten_whole(tmp_path):
    path = write_glossary(tmp_path / A.glossary_file("de"), "de", {"b": "2", "a": "1"}, {"package": "p"}, compounds=True)
    g = Glossary.load(path)
    assert (g.language, g.compounds, len(g.words), list(g.words), g.words.get("a"), g.words.get("zz")) == \
        ("de", True, 2, ["a", "b"], "1", None)
    write_glossary(path, "de", {"c": "3"}, {})  # a rebuild replaces the file, never mixes two
    assert dict(Glossary.load(path).words) == {"c": "3"} and not list(tmp_path.glob("*.tmp"))


def test_a_damaged_glossary_file_names_the_rebuild(tmp_path):
    path = tmp_path / A.glossary_file("de")
    path.write_bytes(b"not a database")
    with pytest.raises(A.IndexMissingError, match="geoql index build"):
        Glossary.load(path)


CHINESE = Glossary("zh", {"博物馆": "museum", "博物": "natural science", "西安": "Xi'an", "格尼": "Gurney"})


def test_a_request_without_spaces_is_read_longest_word_first():
    out = Translator({"zh": CHINESE}).translate("西安有哪些博物馆？", "zh")
    assert out.startswith("Xi'an") and out.endswith("museum") and "natural science" not in out


def test_letters_without_a_word_of_two_or_more_stay_as_they_are():
    """A transliterated name ("马格尼托哥尔斯克") is letters the glossary mostly does not know; a single
    letter is never looked up, so the name keeps its letters except where two of them spell a word."""
    out = Translator({"zh": CHINESE}).translate("马格尼托哥尔斯克的博物馆", "zh")
    assert out.split()[0] == "马" and "museum" in out
    assert Translator({"ja": Glossary("ja", {"駅": "station"})}).translate("東京駅", "ja") == "東 京 駅"


def test_korean_letters_without_a_word_stay_one_word():
    """Korean writes words with spaces: a name's letters ("드레스덴", Dresden) are not cut apart, while Han
    letters without a word still are (each may be the next word's first)."""
    out = Translator({"ko": Glossary("ko", {"박물관": "museum"})}).translate("드레스덴의 박물관은", "ko").split()
    assert out == ["드레스덴", "museum"]  # the particles (의, 은) are the cue table's small words
    # only unknown Hangul letters join: a known word before them stays a word of its own
    assert Translator({"ja": Glossary("ja", {"城": "castle"})}).translate("城이름", "ja") == "castle 이름"
    assert Translator({"zh": Glossary("zh", {"博物馆": "museum"})}).translate("马格尼的博物馆", "zh").split()[:3] == ["马", "格", "尼"]


@pytest.mark.parametrize("request_, english", [
    ("ドイツの城を教えてください", "Germany castle"),  # a Han letter alone between kana is a word
    ("城", "castle"),
    ("古城", "古 城"),  # beside another Han letter it is a letter of a longer word or a name
    ("ドレスデンの城", "ドレスデン castle"),  # a katakana name is not "dress" and two letters
    ("ガソリンスタンドの城", "petrol station castle"),  # katakana words that spell the run whole are read
    ("ドレス、ガソリン", "dress petrol"),  # runs end at punctuation
])
def test_japanese_lone_han_letters_and_katakana_runs(request_, english):
    glossary = Glossary("ja", {"城": "castle", "ドイツ": "Germany", "ドレス": "dress",
                               "ガソリン": "petrol", "スタンド": "station"})
    assert Translator({"ja": glossary}).translate(request_, "ja") == english


JAPANESE = Glossary("ja", {"鉄道駅": "train station", "教え": "teaching", "教えて": "teaching wiles", "何で": "spit",
                           "スウェーデン": "Sweden", "城": "castle"})


@pytest.mark.parametrize("lang, glossary, request_, english", [
    # the cue table's stop phrases are the sentence's frame: matched across letters, longer than any word there
    ("ja", JAPANESE, "スウェーデンにある鉄道駅を教えてください。", "Sweden train station"),
    ("ja", JAPANESE, "スウェーデンの鉄道駅は何ですか？", "Sweden train station"),
    ("zh", CHINESE, "西安有哪些博物馆？", "Xi'an museum"),
    ("zh", Glossary("zh", {"哪些": "which ones", "博物馆": "museum"}), "有哪些博物馆", "museum"),
])
def test_stop_phrases_of_a_script_without_spaces_are_dropped(lang, glossary, request_, english):
    assert Translator({lang: glossary}).translate(request_, lang) == english


def test_a_word_longer_than_a_stop_phrase_at_its_start_is_read():
    """"ある" is a stop phrase; a longer word that starts with it is still a word."""
    glossary = Glossary("ja", {"あるく": "walk", "道": "road"})
    assert Translator({"ja": glossary}).translate("あるく", "ja") == "walk"


def test_a_glossary_file_answers_from_several_threads(tmp_path):
    """The demo compiles on worker threads that share one loaded index."""
    from concurrent.futures import ThreadPoolExecutor

    words = {f"wort{i}": f"word{i}" for i in range(500)}
    g = Glossary.load(write_glossary(tmp_path / A.glossary_file("de"), "de", words, {}))
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(g.words.get, list(words) * 4))
    assert got == list(words.values()) * 4
