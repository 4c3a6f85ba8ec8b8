import pytest

from geoql.nl.text import fold, main_script, script_of, scripts, spaceless

CASES = [  # (text, folded)
    ("Zürich", "zurich"), ("ZURICH", "zurich"), ("Ｃａｆé", "cafe"), ("Straße", "strasse"),
    ("Ёлки", "елки"), ("Ελλάδα", "ελλαδα"), ("が", "が"), ("한국어", "한국어"), ("İstanbul", "istanbul"),
]


@pytest.mark.parametrize("text,folded", CASES)
def test_fold(text, folded):
    assert fold(text) == folded


@pytest.mark.parametrize("text,script", [
    ("成都的博物馆", "Han"), ("美術館", "Han"), ("ミュージアム", "Katakana"), ("박물관", "Hangul"),
    ("Музеи", "Cyrillic"), ("Museen", "Latin"), ("متحف", "Arabic"), ("מוזיאון", "Hebrew"),
    ("🏛️🏛️", "Common"), ("", "Common"),
])
def test_main_script(text, script):
    assert main_script(text) == script


def test_spaceless_scripts_are_the_ones_without_word_spaces():
    assert all(spaceless(ch) for ch in "博物館ミュージアムはくぶつかん박물관")
    assert not any(spaceless(ch) for ch in "Museum Музей 123 !")
    assert script_of("7") == "Common" and scripts("a1b") == {"Latin": 2}
