"""TagRetriever on the small real index: known tags, evidence, bad input."""

from __future__ import annotations

import pytest

from geoql.nl import read_request
from geoql.retrieval import RetrievalConfig, TagHit, TagRetriever
from geoql.retrieval import tags as tags_module


@pytest.fixture(scope="module")
def tags(small_index_dir):
    return TagRetriever.load(small_index_dir)


@pytest.mark.parametrize("nl,tag", [
    ("beekeeper", "craft=beekeeper"),
    ("Beekeepers in the current view", "craft=beekeeper"),
    ("post box", "amenity=post_box"),
    ("cafes in Heidelberg", "amenity=cafe"),
    ("bakeries in Lyon", "shop=bakery"),
    ("playgrounds in Berlin", "leisure=playground"),
])
def test_known_tags_rank_first(tags, nl, tag):
    hits = tags.search(nl, 5)
    assert hits[0].tag == tag, [h.tag for h in hits]


def test_paraphrase_is_near_the_top(tags):
    hits = tags.search("Where can I post a letter in Bonn? Mailboxes please", 3)
    assert "amenity=post_box" in [h.tag for h in hits]


def test_hits_are_complete_and_explained(tags):
    hits = tags.search("post box", 10)
    assert len(hits) == 10 and len({h.tag for h in hits}) == 10
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    top = hits[0]
    assert isinstance(top, TagHit) and (top.key, top.value, top.name) == ("amenity", "post_box", "Mail Drop Box")
    assert "post box" in top.why


def test_training_tags_outside_the_schema_are_found(tags, small_index_dir):
    # place=*, boundary=*, admin_level=* come from the training queries, not from iD presets
    assert "admin_level=8" in tags and "boundary=administrative" in tags
    hits = tags.search("municipal boundaries (admin level 8) in Bavaria", 10)
    assert "admin_level=8" in [h.tag for h in hits]


def test_example_evidence_respects_exclude(tags):
    ex = tags.examples.examples[0]
    with_self = tags.search(ex.nl, 10)
    without_self = tags.search(ex.nl, 10, exclude=[ex.index])
    assert with_self and without_self
    own = set(ex.tags)
    assert len(own & {h.tag for h in with_self}) >= len(own & {h.tag for h in without_self})


def test_exclude_hides_the_request_as_a_phrase(small_index_dir):
    # fp32 query encoder: the request then matches its own phrase surface exactly (cosine 1.0)
    tags = TagRetriever.load(small_index_dir, RetrievalConfig(int8_query_encoder=False))
    ex = next(e for e in tags.examples.examples if e.tags)
    hits = tags.search(ex.nl, 50, exclude=[ex.index])
    assert all(ex.nl not in h.why for h in hits)
    assert any(ex.nl in h.why for h in tags.search(ex.nl, 50))


def test_rrf_fusion_also_works(small_index_dir):
    rrf = TagRetriever.load(small_index_dir, RetrievalConfig(fusion="rrf", tag_dense_weight=1, tag_bm25_weight=1, tag_example_weight=1))
    assert "craft=beekeeper" in [h.tag for h in rrf.search("beekeeper", 5)]


def test_single_sources(small_index_dir):
    # linear fusion: the learned ranker would also weigh the nearest requests, which are no single source
    lexical = TagRetriever.load(small_index_dir, RetrievalConfig(fusion="linear", tag_dense_weight=0, tag_example_weight=0, popularity_weight=0))
    assert lexical.search("pillar box", 1)[0].tag == "amenity=post_box"
    dense = TagRetriever.load(small_index_dir, RetrievalConfig(fusion="linear", tag_bm25_weight=0, tag_example_weight=0, popularity_weight=0))
    assert "amenity=post_box" in [h.tag for h in dense.search("a letterbox for mailing letters", 3)]


@pytest.mark.parametrize("nl", ["", "   ", "?!…;;", "\x00\x1f", None])
def test_requests_without_words_give_no_tags(tags, nl):
    assert tags.search(nl, 10) == []


@pytest.mark.parametrize("nl", ["Кафе в Москве", "東京のカフェ", "مقهى في القاهرة", "x" * 10_000, "cafe " * 2_000, "🚲🚲 bike shop", 42])
def test_odd_requests_give_a_sensible_list(tags, nl):
    hits = tags.search(nl, 10)
    assert isinstance(hits, list) and len(hits) <= 10
    assert all(isinstance(h, TagHit) and "=" in h.tag for h in hits)


def test_k_bounds(tags):
    assert tags.search("cafe", 0) == [] and tags.search("cafe", -3) == []
    assert len(tags.search("cafe", 10_000)) <= len(tags)


# Requests in other languages, read through the schema's own translations (tests/index/data keeps the
# subset's presets and fields in de, fr, ru, zh-CN, yue, ja and ko).
@pytest.mark.parametrize("nl,tag", [
    ("博物馆", "tourism=museum"),
    ("Apotheke", "amenity=pharmacy"),
])
def test_translated_names_rank_first(tags, nl, tag):
    assert tags.search(nl, 5)[0].tag == tag


@pytest.mark.parametrize("lang,nl,tag", [
    ("de", "Apotheken in Berlin", "amenity=pharmacy"),
    ("de", "Welche Bäckereien gibt es in Köln?", "shop=bakery"),
    ("fr", "Où sont les pharmacies à Lyon ?", "amenity=pharmacy"),
    ("fr", "boulangeries à Paris", "shop=bakery"),
    ("ru", "Аптеки в Москве", "amenity=pharmacy"),
    ("ru", "Какие музеи есть в Казани?", "tourism=museum"),
    ("zh", "西安的博物馆", "tourism=museum"),
    ("yue", "香港有邊啲博物館？", "tourism=museum"),
    ("ja", "東京の薬局", "amenity=pharmacy"),
    ("ja", "京都のカフェ", "amenity=cafe"),
    ("ko", "서울의 약국", "amenity=pharmacy"),
    ("ko", "부산에 있는 박물관", "tourism=museum"),
])
def test_requests_in_other_languages(tags, lang, nl, tag):
    hits = tags.search(nl, 5)
    assert tag in [h.tag for h in hits[:3]], (lang, [h.tag for h in hits])


def test_the_nearest_requests_across_languages_give_candidates(small_index_dir):
    """The multilingual embedding reads a request as written: the training request it is a translation of
    ("castles in Tuscany") is its nearest, whose tags are candidates with e5 votes; a request left out
    (fitting) is no neighbour, and without multilingual vectors every e5 column is 0."""
    from geoql.retrieval.ranker import FEATURES

    retriever = TagRetriever.load(small_index_dir)
    castles = next(e for e in retriever.examples.examples if e.nl == "castles in Tuscany")
    candidates, rows = retriever._features("Замки в Тоскане", None, ())
    f = {retriever.docs[doc]["tag"]: dict(zip(FEATURES, row)) for doc, row in zip(candidates, rows)}
    assert {t for t in castles.tags if t in retriever} <= set(f)
    best = max(row["e5_max_cos"] for row in f.values())
    assert all(f[t]["e5_top1"] == 1.0 and f[t]["e5_max_cos"] == best > 0.8 for t in castles.tags if t in retriever)
    evidence = retriever._request_evidence("Замки в Тоскане", None, (castles.index,), neighbours=20)
    assert evidence["e5"] and castles.index not in {retriever.examples.examples[r].index for r, _ in evidence["e5"]}
    assert [c for _, c in evidence["e5"]] == sorted((c for _, c in evidence["e5"]), reverse=True)
    retriever.multilingual = None
    _, rows = retriever._features("Замки в Тоскане", None, ())
    assert all(value == 0.0 for row in rows for name, value in zip(FEATURES, row) if name.startswith("e5_"))


def test_translated_hit_says_which_name_matched(tags):
    top = tags.search("西安的博物馆", 3)[0]
    assert top.tag == "tourism=museum" and top.why.startswith("name (") and "博物馆" in top.why


def test_english_requests_are_not_glossed(tags):
    assert tags.is_english("cafes in Heidelberg") and tags.gloss("cafes in Heidelberg") == "cafes in Heidelberg"
    assert not tags.is_english("Apotheken in Berlin") and not tags.is_english("西安的博物馆")
    assert "Museum" in tags.gloss("西安的博物馆") and "西安" not in tags.gloss("西安的博物馆")


def test_languages_and_lexical_matches(tags):
    assert tags.languages[0] == "en" and {"de", "zh-CN", "ja", "ko"} <= set(tags.languages)
    match = tags.lexical_matches("Apotheken", 3)[0]
    assert (tags.docs[match.doc]["tag"], match.lang, match.text) == ("amenity=pharmacy", "de", "Apotheke")
    assert tags.lexical_matches("", 3) == [] and tags.lexical_matches("Apotheke", 0) == []


def test_lexical_matches_are_in_the_requests_languages(tags):
    """A German request meets German and English names only (its "am" is a Portuguese word of
    "Mast" names), and its numbers are no names ("32" is in "AdBlue / AUS 32")."""
    nl = "Welche Wege und Knoten mit der UID 32 wurden am 18. Juli 2019 geändert?"
    assert any("AUS 32" in m.text for m in tags.lexicon.search(nl, 50))  # what the numbers used to meet
    allowed = tags_module.request_languages("de", tags.lexicon.langs)
    matches = tags.lexical_matches(nl, 50)
    assert all(m.lang in allowed for m in matches), [(m.text, m.lang) for m in matches]
    assert not any("32" in m.text or "18" in m.text for m in matches), [m.text for m in matches]
    assert tags_module.request_languages("und", tags.lexicon.langs) is None  # undecided: every language


def test_the_sentences_small_words_match_no_name(tags):
    """ "in" is a word of "drive-in" (a restaurant), "gibt es" of the field label "Gibt es Essen?"."""
    nl = "Welche Apotheken gibt es in den Niederlanden?"
    assert "drive-in" in [m.text for m in tags.lexicon.search(nl, 10)]  # what they used to meet
    found = {tags.docs[m.doc]["tag"] for m in tags.lexical_matches(nl, 10)}
    assert found == {"amenity=pharmacy", "shop=chemist"}, found


@pytest.mark.parametrize("nl", ["이탈리아에 있는 도로는 무엇입니까?", "イタリアにある道路はどれですか？", "意大利有哪些道路？"])
def test_the_place_a_request_names_is_no_tag_name(tags, nl):
    """A country's name is a word of its cuisine's ("이탈리아 요리"): restaurants crept into requests
    about the roads of Italy."""
    assert "cuisine=italian" in {tags.docs[m.doc]["tag"] for m in tags.lexicon.search(nl, 10)}  # what it used to meet
    found = [tags.docs[m.doc]["tag"] for m in tags.lexical_matches(nl, 10)]
    assert "cuisine=italian" not in found and any(t.startswith("highway=") or t == "route=road" for t in found), found


@pytest.mark.parametrize("nl, place, thing, tag", [
    ("北京的博物馆", "北京", None, None), ("東京の駅", "東京", None, None), ("서울의 공원", "서울", None, None),
    # the benches of museums and of dog parks, not benches in places called so
    ("博物馆的长椅", None, "博物馆", "tourism=museum"), ("개 공원의 벤치", None, "개 공원", "leisure=dog_park"),
])
def test_an_opening_word_that_names_a_tag_is_no_place(tags, nl, place, thing, tag):
    request = tags.read(nl)  # read with the index's tag names (TagRetriever.knowledge)
    assert request.place == place and request.opening_place == place
    if thing:
        assert read_request(nl).place == thing  # what the cue tables alone read
        assert thing not in request.place_names and request.what[0] == thing
        assert tag in [tags.docs[m.doc]["tag"] for m in tags.lexical_matches(nl, 10)]


def test_a_place_written_in_full_width_letters_is_taken_out_too(tags):
    """The frame writes its places NFKC-normalised ("＝" as "="); the letters of "フリウリ＝ヴェネツィア・ジュリア"
    met names such as "バリアフリー" (barrier-free) and "ジュース" (juice)."""
    nl = "フリウリ＝ヴェネツィア・ジュリアにある博物館は？"
    of_place = lambda matches: [m.text for m in matches if any(g in m.text for g in ("フリ", "リウ", "ジュ", "ヴェ", "リア"))]  # noqa: E731
    assert of_place(tags.lexicon.search(nl, 5))  # what it used to meet
    found = tags.lexical_matches(nl, 5)
    assert tags.docs[found[0].doc]["tag"] == "tourism=museum" and not of_place(found), [m.text for m in found]


@pytest.mark.parametrize("nl", ["مطاعم في القاهرة", "Cafés 🏛️ 博物馆 in Köln", "\u202eApotheke\u202c", "🏛️🏛️"])
def test_mixed_and_right_to_left_scripts_give_a_list(tags, nl):
    hits = tags.search(nl, 5)
    assert len(hits) <= 5 and all(isinstance(h, TagHit) for h in hits)


def test_a_word_only_the_glossary_knows_is_found(tags, glossed_index_dir):
    """ "Honigmacher" is no tag name in any language: the index without a glossary cannot read it."""
    nl = "Welche Honigmacher gibt es?"
    glossed = TagRetriever.load(glossed_index_dir)
    assert glossed.translation(nl) == "beekeeper"
    assert glossed.search(nl, 3)[0].tag == "craft=beekeeper"
    assert "craft=beekeeper" not in [h.tag for h in tags.search(nl, 3)]
    assert tags.translation(nl) is None and tags.english_text(nl) is None


def test_an_inflected_russian_word_is_read_through_its_dictionary_form(tags, glossed_index_dir):
    """ "медовики" (plural) is in no tag name; the glossary holds "медовик" (an entry made up, like
    "Honigmacher"), pymorphy3 the way there."""
    nl = "Какие медовики есть?"
    glossed = TagRetriever.load(glossed_index_dir)
    assert glossed.translation(nl) == "beekeeper"
    assert glossed.translation("Сколько медовиков в Москве?") == "how many beekeeper in Москве"  # names stay
    assert glossed.search(nl, 3)[0].tag == "craft=beekeeper"
    assert "craft=beekeeper" not in [h.tag for h in tags.search(nl, 3)]


def test_english_text_is_for_requests_in_a_glossary_language_only(glossed_index_dir):
    glossed = TagRetriever.load(glossed_index_dir)
    assert glossed.english_text("playgrounds in Berlin") is None  # English: searched as it is
    assert glossed.english_text("西安的博物馆") is None  # no Chinese glossary
    assert glossed.english_text("Kinderspielplätze in Berlin").startswith("children playgrounds in Berlin")


def test_translations_are_remembered_newest_first_and_bounded(glossed_index_dir, monkeypatch):
    """One compile() asks for a request's translation several times: the translator runs once, and only
    the newest TRANSLATIONS_KEPT are kept."""
    glossed = TagRetriever.load(glossed_index_dir)
    calls = []
    real = glossed.translator.translate
    monkeypatch.setattr(glossed.translator, "translate", lambda text, lang: calls.append(text) or real(text, lang))
    first = glossed.translation("Welche Honigmacher gibt es?")
    assert first.startswith("beekeeper") and glossed.translation("Welche Honigmacher gibt es?") == first
    assert len(calls) == 1
    monkeypatch.setattr(tags_module, "TRANSLATIONS_KEPT", 3)
    for i in range(5):
        glossed.translation(f"Welche Honigmacher gibt es in Ort{i}?")
    assert list(glossed._translations) == [f"Welche Honigmacher gibt es in Ort{i}?" for i in (2, 3, 4)]


@pytest.mark.parametrize("nl", ["What OpenStreetMap features are in Sumy Oblast?", "Welche OSM-Objekte gibt es in der Oblast Sumy?",
                                "OpenStreetMap要素在苏梅州", "Open Street Map elements in the current view"])
def test_the_database_name_is_no_tag_cue(tags, nl):
    """ "OpenStreetMap features in X" asks for every element; the name had called for map_source=OpenStreetMap."""
    from geoql.retrieval.text import without_database_name

    assert without_database_name(nl) != nl
    found = [h.tag for h in tags.search(nl, 10)]
    assert found == [h.tag for h in tags.search(without_database_name(nl), 10)]
    assert "map_source=OpenStreetMap" not in found
