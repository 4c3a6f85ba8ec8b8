"""scripts/build_nl_lexicon.py: its rules' examples, and what the built brand table says of real NSI
entries (the table ships in the package; a rebuild must keep these)."""

from __future__ import annotations

import doctest
import importlib.util
import sys

import pytest

from geoql.nl.lexicon import Lexicon
from testdata import REPO_ROOT


def _script():
    sys.path.insert(0, str(REPO_ROOT / "scripts"))  # it imports its sibling build_places
    try:
        spec = importlib.util.spec_from_file_location("build_nl_lexicon", REPO_ROOT / "scripts" / "build_nl_lexicon.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(REPO_ROOT / "scripts"))


def test_the_rules_examples_hold():
    failed, attempted = doctest.testmod(_script(), verbose=False)
    assert attempted > 0 and failed == 0


# (request words, language, the brand's main tag, its brand value): each a choice between NSI
# entries of one brand or two brands spelled alike
BRANDS = [
    ("carrefour", "fr", "shop=supermarket", "Carrefour"),      # a "hypermarket brand", not its fuel stations
    ("shell", "en", "amenity=fuel", "Shell"),                  # a "fuel station chain", not its shops
    ("total", "fr", "amenity=fuel", "TotalEnergies"),          # not an Arabic entry's "طوطال"
    ("ローソン", "ja", "shop=convenience", "LAWSON"),            # Japan's own value
    ("マツモトキヨシ", "ja", "shop=chemist", "マツモトキヨシ"),      # not Taiwan's "松本清" pharmacies
    ("edeka", "de", "shop=supermarket", "Edeka"),              # not "EDEKA Getränkemarkt"
    ("maccas", "en", "amenity=fast_food", "McDonald's"),       # a hand-kept nickname
    ("mcdo", "fr", "amenity=fast_food", "McDonald's"),
    ("マツキヨ", "ja", "shop=chemist", "マツモトキヨシ"),          # a nickname takes the value in its own script
    ("파바", "ko", "shop=bakery", "파리바게뜨"),
    ("スタバ", "ja", "amenity=cafe", "スターバックス"),
    ("セブン", "ja", "shop=convenience", "7-ELEVEN"),             # no value in its script: Japan's entry, by its name
    ("세븐", "ko", "shop=convenience", "세븐일레븐"),
]


@pytest.mark.parametrize("text,lang,main,brand", BRANDS)
def test_a_brand_takes_its_own_trade_and_value(text, lang, main, brand):
    found = Lexicon.default().brand(text, lang)
    assert found is not None and found.tags == (main, f"brand={brand}")


def test_a_katakana_brand_is_none_inside_a_longer_word():
    assert not any(m.source == "brand" for m in Lexicon.default().lookup("シェルター", "ja"))
