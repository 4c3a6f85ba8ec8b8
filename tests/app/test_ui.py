"""The demo: DemoService logic, and the Gradio app launched for real and driven with gradio_client."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

import overpassql
import pytest
from fakes.fixtures import fake_nominatim, fake_overpass  # noqa: F401 (fixtures)
from fakes.servers import FakeNominatim, FakeOverpass, Reply, json_reply, parse_error, payload
from fakes.support import LookupBackend, dev_requests, embedded_geojson, free_port, make_service

from geoql.app.backends.base import BackendError
from geoql.app.geo import to_geojson
from geoql.app.run import slug
from geoql.app.ui import COMPILE_OUTPUTS, RUN_OUTPUTS, DemoConfig, build_app, launch
from geoql.nl.lexicon import LANGUAGES as LEXICON_LANGUAGES

BOTH_OUTPUTS = COMPILE_OUTPUTS + RUN_OUTPUTS[:4]

DEV = dev_requests()
CAFES = json.loads(payload("heidelberg_cafes.json"))


# ---------------------------------------------------------------- DemoService


def test_compile_shows_query_tags_examples_backend_and_timings(fake_overpass, fake_nominatim, tmp_path, small_index_dir):
    view = make_service(fake_overpass, fake_nominatim, tmp_path, index_dir=small_index_dir).compile(DEV[0].nl)
    assert view.query and "{{bbox}}" in view.query
    assert "**backend:** lookup" in view.info and "generate" in view.info and "retrieval" in view.info
    assert view.tags.count("\n| `") >= 3  # a table of retrieved key=value tags
    assert view.examples.count("(train #") >= 2 and "```" in view.examples
    assert view.status.startswith("Compiled")


def test_compile_explains_the_query_in_words(fake_overpass, fake_nominatim, tmp_path, small_index_dir):
    view = make_service(fake_overpass, fake_nominatim, tmp_path, index_dir=small_index_dir).compile(DEV[0].nl)
    named = [f"`{t.key}={t.value}`" for t in overpassql.tag_filters(view.query) if t.op == "="]
    assert named and all(tag in view.explanation for tag in named)
    assert "current map view" in view.explanation


def test_tags_panel_shows_why_and_which_tags_the_query_uses(fake_overpass, fake_nominatim, tmp_path, small_index_dir):
    service = make_service(fake_overpass, fake_nominatim, tmp_path, index_dir=small_index_dir)
    marked_somewhere = False
    for example in DEV:
        view = service.compile(example.nl)
        assert "| why |" in view.tags and "| in query |" in view.tags
        filters = overpassql.tag_filters(view.query)
        used = {f"{t.key}={t.value}" for t in filters if t.op == "="} | {f"{t.key}=*" for t in filters if t.op == "exists"}
        rows = [line for line in view.tags.splitlines() if line.startswith("| `")]
        assert rows and any(line.split("|")[3].strip() for line in rows)  # the hits say why they matched
        for line in rows:
            assert ("used in the query" in line) == (line.split("`")[1] in used), line
        marked_somewhere |= any("used in the query" in line for line in rows)
    assert marked_somewhere


def test_unlicensed_parts_are_a_warning(fake_overpass, fake_nominatim, tmp_path):
    backend = LookupBackend({
        # "cozy": not fully read, so the backend's answer stands (a fully read request is composed)
        "cozy cafes in Heidelberg": '[out:csv(name)];{{geocodeArea:"Bas-Rhin"}}->.a;node["amenity"="cafe"](area.a);out;',
        "cafes in the current view": 'node["amenity"="cafe"]({{bbox}});out;',
    })
    service = make_service(fake_overpass, fake_nominatim, tmp_path, backend=backend)
    warned = service.compile("cozy cafes in Heidelberg")
    assert warned.unsupported.startswith("⚠ The query uses things your request does not mention:")
    assert 'area `{{geocodeArea:"Bas-Rhin"}}` (the request names no place' in warned.unsupported
    assert "output `[out:csv]` (the request asks for no table)" in warned.unsupported
    assert "check them before you run it" in warned.unsupported
    assert "does not ask for" not in warned.doubts  # said once, with the reasons, in its own warning
    assert service.compile("cafes in the current view").unsupported == ""


@pytest.mark.parametrize(
    "request_text, words",
    [("", "Type a request first"), ("   ", "Type a request first"), ("something unknown", "Could not compile"),
     ("!!!", "only punctuation")],
)
def test_compile_failures_are_sentences(fake_overpass, fake_nominatim, tmp_path, request_text, words):
    view = make_service(fake_overpass, fake_nominatim, tmp_path).compile(request_text)
    assert words in view.status and "Traceback" not in view.status
    assert view.query is None  # the code box keeps what it had


@pytest.mark.parametrize(
    "query, bbox, words",
    [
        ("", None, "no query to run"),
        ("nod(1);out;", None, "not valid Overpass QL"),
        ("node({{bbox}});out;", "1,2,3", "map box"),
        ("{{geocodeArea:Atlantis}}->.a;node(area.a);out;", None, "no place named 'Atlantis'"),
    ],
)
def test_run_failures_are_sentences(fake_overpass, fake_nominatim, tmp_path, query, bbox, words):
    fake_overpass.add("nod(", parse_error())
    view = make_service(fake_overpass, fake_nominatim, tmp_path).run(query, bbox)
    assert words in view.status and "Traceback" not in view.status
    assert view.rows == [] and view.download is None


def test_run_draws_result(fake_overpass, fake_nominatim, tmp_path):
    fake_overpass.default = json_reply("heidelberg_cafes.json")
    view = make_service(fake_overpass, fake_nominatim, tmp_path).run("node[amenity=cafe]({{bbox}});out;", "49.4,8.6,49.5,8.8")
    assert embedded_geojson(view.map) == to_geojson(CAFES)
    assert json.loads(Path(view.download).read_text(encoding="utf-8")) == to_geojson(CAFES)
    assert "4 elements" in view.summary and len(view.rows) == 4
    assert fake_overpass.queries() == ["[out:json][timeout:300];node[amenity=cafe](49.4,8.6,49.5,8.8);out;"]


# ---------------------------------------------------------------- the app over HTTP


@pytest.fixture(scope="module")
def running_app(tmp_path_factory, small_index_dir):
    """The real Gradio app on 127.0.0.1 with loopback Overpass/Nominatim behind it."""
    from gradio_client import Client

    overpass, nominatim = FakeOverpass().start(), FakeNominatim().start()
    overpass.default = json_reply("heidelberg_cafes.json", delay_s=0.2)  # slow enough that requests overlap
    overpass.add("nod(", parse_error())
    service = make_service(overpass, nominatim, tmp_path_factory.mktemp("ui-cache"), index_dir=small_index_dir)
    port = free_port()
    demo = launch(service, port=port, block=False)
    try:
        yield {"client": Client(f"http://127.0.0.1:{port}/", verbose=False), "service": service,
               "overpass": overpass, "demo": demo, "url": f"http://127.0.0.1:{port}/"}
    finally:
        demo.close()
        overpass.stop()
        nominatim.stop()


def test_compile_and_run_over_http(running_app):
    client, overpass = running_app["client"], running_app["overpass"]
    out = dict(zip(BOTH_OUTPUTS, client.predict(DEV[0].nl, "49.40,8.68,49.41,8.69", overpass.url,
                                               api_name="/compile_and_run")))
    assert "{{bbox}}" in out["query"] and "\n" in out["query"]  # pretty-printed, placeholders kept
    assert overpassql.dump(overpassql.parse(out["query"])) == overpassql.dump(overpassql.parse(DEV[0].query))
    assert "current map view" in out["explanation"] and out["unsupported"] == "" and out["query_errors"] == ""
    assert "| in query |" in out["tags"]
    assert "| tag |" in out["tags"] and "(train #" in out["examples"] and "**backend:** lookup" in out["info"]
    assert "overpass-turbo.eu/?Q=" in out["turbo"]
    assert embedded_geojson(out["map"]) == to_geojson(CAFES)
    assert out["table"]["headers"] == ["type", "id", "name", "tags", "geometry"] and len(out["table"]["data"]) == 4
    assert "4 elements" in out["summary"] and "4 on the map" in out["summary"]
    assert Path(out["download"]).name.startswith("geoql-") and Path(out["download"]).suffix == ".geojson"
    assert json.loads(Path(out["download"]).read_text(encoding="utf-8"))["features"] == to_geojson(CAFES)["features"]
    assert "49.40,8.68,49.41,8.69" in overpass.queries()[-1]
    assert "Compiled" in out["status"] and "Ran on" in out["status"] and "press" not in out["status"]


def test_edit_and_rerun_over_http(running_app):
    client, overpass = running_app["client"], running_app["overpass"]
    compiled = dict(zip(COMPILE_OUTPUTS, client.predict(DEV[1].nl, api_name="/compile")))
    assert compiled["explanation"] and "Traceback" not in compiled["explanation"]
    assert "press **Run on Overpass**" in compiled["status"]
    edited = compiled["query"] + " // edited by hand"
    ran = dict(zip(RUN_OUTPUTS, client.predict(edited, "49.40,8.68,49.41,8.70", overpass.url, DEV[1].nl, api_name="/run")))
    assert overpass.queries()[-1].endswith("// edited by hand")
    assert embedded_geojson(ran["map"])["features"]
    assert Path(ran["download"]).name == f"geoql-{slug(DEV[1].nl)}.geojson"
    before = len(overpass.queries())
    bad = dict(zip(RUN_OUTPUTS, client.predict("nod(1);out;", "49.40,8.68,49.41,8.70", overpass.url, "", api_name="/run")))
    assert "not valid Overpass QL" in bad["status"] and 'Unknown type "nod"' in bad["status"]
    assert "Nothing was sent" in bad["status"] and len(overpass.queries()) == before
    assert "line 1, column 1" in bad["query_errors"] and "^" in bad["query_errors"]
    assert bad["table"]["data"] == [] and bad["download"] is None


def test_request_is_never_an_output(running_app):
    # A failing call can never clear what the user typed: only picking an example writes the request box.
    demo = running_app["demo"]
    request_id = next(c["id"] for c in demo.config["components"] if c.get("props", {}).get("elem_id") == "request")
    writers = {dep["api_name"] for dep in demo.config["dependencies"] if request_id in dep["outputs"]}
    assert writers == {"load_example"}


def test_twenty_simultaneous_requests_all_answer(running_app):
    client, overpass, service = running_app["client"], running_app["overpass"], running_app["service"]
    before = len(overpass.queries())
    boxes = [f"49.{i:02d},8.60,49.{i + 1:02d},8.70" for i in range(20)]
    jobs = [client.submit(DEV[i % len(DEV)].nl, box, overpass.url, api_name="/compile_and_run")
            for i, box in enumerate(boxes)]
    try:
        results = [job.result(timeout=180) for job in jobs]
    except FutureTimeout:  # pragma: no cover - reported as a failure with context
        pytest.fail(f"only {sum(j.done() for j in jobs)} of 20 requests answered in time")
    for box, result in zip(boxes, results):
        out = dict(zip(BOTH_OUTPUTS, result))
        assert "4 elements" in out["summary"], out["status"]
        assert len(embedded_geojson(out["map"])["features"]) == 4
    received = overpass.queries()[before:]
    assert len(received) == 20 and all(any(b in q for q in received) for b in boxes)
    cache = Path(service.client.config.cache_dir) / "overpass_cache.sqlite"
    with sqlite3.connect(cache) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        keys = [k for (k,) in conn.execute("SELECT key FROM results")]
    assert sum(any(b in k for k in keys) for b in boxes) == 20


def test_bad_config_names_the_fix():
    with pytest.raises(ValueError, match="must start with http"):
        DemoConfig(overpass_url="localhost:12346/api/interpreter")
    with pytest.raises(ValueError, match="south,west,north,east"):
        DemoConfig(default_bbox="Heidelberg")


def test_missing_backend_is_reported_in_words(fake_overpass, fake_nominatim, tmp_path):
    class Broken(LookupBackend):
        def generate(self, request):
            raise BackendError("model directory /nowhere is missing: run `geoql cpu train`")

    view = make_service(fake_overpass, fake_nominatim, tmp_path, backend=Broken({})).compile("bars")
    assert "geoql cpu train" in view.status


def test_build_app_does_not_need_a_server(fake_overpass, fake_nominatim, tmp_path):
    demo = build_app(make_service(fake_overpass, fake_nominatim, tmp_path))
    names = {dep.get("api_name") for dep in demo.config["dependencies"]}
    assert {"compile", "run", "compile_and_run"} <= names
    ids = {c.get("props", {}).get("elem_id") for c in demo.config["components"]}
    assert {"explanation", "unsupported"} <= ids


# ---------------------------------------------------------------- readiness


def test_preparation_shows_each_step_with_progress_and_time_left():
    from tqdm import tqdm

    from geoql.app.ui import Preparation

    halfway, go_on, seen = threading.Event(), threading.Event(), threading.Event()

    def work():
        with tqdm(total=4, desc="index build", unit="step") as bar:
            bar.update(4)
            seen.wait(30)  # steps are sampled twice a second: a real one lasts minutes
        with tqdm(total=100, desc="scoring candidates", unit="req") as bar:
            bar.set_postfix_str("train split")
            bar.update(40)
            halfway.set()
            go_on.wait(30)
            bar.update(60)

    prep = Preparation(work, poll_s=0.05)
    assert prep.state == "idle" and not prep.ready
    prep.start()

    def until(words):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and words not in prep.markdown():
            time.sleep(0.05)
        return prep.markdown()

    assert "- index build: 4/4 step (100 %)" in until("index build: 4/4")
    seen.set()
    assert halfway.wait(30)
    shown = until("scoring candidates: 40/100")
    assert shown.startswith("**Getting ready (") and "- ✓ index build: done (4/4 step" in shown
    assert "- scoring candidates: 40/100 req (40 %) — train split, " in shown and "left" in shown
    go_on.set()
    assert prep.wait(30) and prep.state == "ready" and prep.markdown() == ""
    assert all(step.done for step in prep.steps())


def test_a_step_that_ends_between_two_samples_shows_its_total():
    """The demo's first start showed "✓ embedding: done (13952/14156 text)": the last updates fell between samples."""
    from tqdm import tqdm

    from geoql.app.ui import Preparation, _live_bars

    sampled, go_on = threading.Event(), threading.Event()

    def work():
        with tqdm(total=14156, desc="embedding", unit="text") as bar:
            bar.update(13952)
            sampled.wait(30)
            bar.update(204)
        with tqdm(total=3, desc="next step", unit="step") as bar:
            go_on.wait(30)

    prep = Preparation(work, poll_s=0.05)
    prep.start()
    deadline = time.monotonic() + 30
    while "13952/14156" not in prep.markdown() and time.monotonic() < deadline:
        time.sleep(0.02)
    sampled.set()
    while "next step" not in [bar.desc for bar in _live_bars()]:  # the embedding bar has closed
        time.sleep(0.01)
    prep._sample()
    assert "- ✓ embedding: done (14156/14156 text" in prep.markdown()
    go_on.set()
    assert prep.wait(30) and prep.state == "ready"


def test_after_the_work_the_page_shows_what_goes_on_behind_it():
    """The CPU default's quick start: ready (buttons work) while the full model trains behind it."""
    from tqdm import tqdm

    from geoql.app.ui import Preparation

    training, finish = threading.Event(), threading.Event()
    note = {"text": "**Answers come from a quick first model** while the full model trains"}

    def behind():
        with tqdm(total=50, desc="scoring leave-one-query-out candidates", unit="req") as bar:
            bar.update(20)
            training.set()
            finish.wait(30)
            bar.update(30)
        note["text"] = ""

    prep = Preparation(lambda: threading.Thread(target=behind, daemon=True).start(), poll_s=0.05,
                       background=lambda: note["text"])
    assert prep.wait(30) and prep.state == "ready" and training.wait(30)
    deadline = time.monotonic() + 30
    while "20/50" not in prep.markdown() and time.monotonic() < deadline:
        time.sleep(0.05)
    shown = prep.markdown()
    assert shown.startswith("**Answers come from a quick first model**")
    assert "- scoring leave-one-query-out candidates: 20/50 req (40 %)" in shown
    finish.set()
    deadline = time.monotonic() + 30
    while prep.markdown() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert prep.markdown() == "" and prep.background() == ""


def test_the_demo_asks_the_cpu_default_for_a_quick_start_and_says_so(tmp_path, hinted_cpu_model_dir, small_index_dir):
    from geoql.app import Compiler
    from geoql.app.backends.cpu import CpuBackend
    from geoql.app.ui import DemoService

    assert DemoService(DemoConfig(check_services=False)).compiler().backend().quick_start
    for name in ("cpu", "openai"):
        options = DemoService(DemoConfig(backend=name, check_services=False)).compiler().config.backend_options
        assert options.get("quick_start", False) == (name == "cpu")
    backend = CpuBackend(hinted_cpu_model_dir, index_dir=small_index_dir)
    service = DemoService(DemoConfig(check_services=False, cache_dir=str(tmp_path)), compiler=Compiler(backend))
    assert service.background_note() == ""  # not prepared yet: nothing is asked of the backend
    assert service.preparation.wait(120) and service.background_note() == ""
    backend.quick_model = True  # as while the full model trains behind the quick one
    assert service.background_note().startswith("**Answers come from a quick first model** (trained on the first 1,000 ")
    backend.upgrade_error = "OSError: [Errno 28] No space left on device"
    assert "training the full one failed (OSError" in service.background_note()


def test_preparation_loads_what_the_first_calls_would(tmp_path):
    """The feature lexicon's files and the matplotlib that gradio switches around every call (a --dev
    install has it) are loaded while the page gets ready: on 909ecfe the first call imported matplotlib
    and pyplot in the server's event loop (~0.5 s in which no visitor's page got an answer), and the
    first request of each language read its lexicon file. In a process of its own: other tests load them."""
    import subprocess
    import sys
    import textwrap

    import matplotlib  # noqa: F401 (the dev install has it, as the case to cover)

    code = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})
        from fakes.support import LookupBackend
        from geoql.app import Compiler
        from geoql.app.ui import DemoConfig, DemoService
        from geoql.nl.lexicon import Lexicon
        before = {{"pyplot": "matplotlib.pyplot" in sys.modules, "files": Lexicon.default().files_read}}
        service = DemoService(DemoConfig(check_services=False, cache_dir={str(tmp_path)!r}),
                              compiler=Compiler(LookupBackend({{}}), k_tags=0, k_examples=0))
        assert service.preparation.wait(120) and service.preparation.state == "ready", service.preparation.error
        after = {{"pyplot": "matplotlib.pyplot" in sys.modules, "files": Lexicon.default().files_read}}
        print(json.dumps([before, after]))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    before, after = json.loads(done.stdout.strip().splitlines()[-1])
    assert before == {"pyplot": False, "files": []}
    assert after["pyplot"] and set(after["files"]) == {*LEXICON_LANGUAGES, "brands"}


def test_a_failed_preparation_says_why():
    from geoql.app.ui import Preparation

    def work():
        raise BackendError("cannot train the CPU model: no OverpassNL copy found")

    prep = Preparation(work)
    assert prep.wait(30) and prep.state == "failed" and prep.ready
    assert prep.markdown() == "**The compiler could not be prepared:** cannot train the CPU model: no OverpassNL copy found"


def test_missing_dataset_and_registry_are_a_banner_on_load(tmp_path, fake_overpass, fake_nominatim):
    from geoql.app import Compiler
    from geoql.app.backends.cpu import CpuBackend
    from geoql.app.ui import DemoService

    closed = f"http://127.0.0.1:{free_port()}/"
    backend = CpuBackend(tmp_path / "no-model", data_dir=tmp_path / "no-data", index_dir=tmp_path / "no-index")
    config = DemoConfig(overpass_url=fake_overpass.url, nominatim_url=fake_nominatim.url, cache_dir=str(tmp_path),
                        dataset_url=closed + "OverpassNL", registry_url=closed)
    notices = DemoService(config, compiler=Compiler(backend)).notices()
    assert len(notices) == 2
    assert notices[0].startswith("The CPU model is not trained yet, and it cannot be:") and "does not answer" in notices[0]
    assert str(tmp_path / "no-data") in notices[0]
    assert "npm registry" in notices[1] and "without tag hints" in notices[1]
    # A lookup backend has nothing to prepare: no banner.
    assert make_service(fake_overpass, fake_nominatim, tmp_path).notices() == []


@pytest.mark.parametrize("request_text, first_words", [
    ("Sitzbänke im aktuellen Kartenausschnitt", "Knoten mit `amenity=bench`"),
    ("bancs dans la vue actuelle", "Nœuds"),
    ("benches in the current view", "Nodes tagged `amenity=bench`"),
    ("現在の地図のベンチ", "Nodes tagged `amenity=bench`"),
])
def test_the_explanation_is_in_the_request_s_language_where_there_is_one(fake_overpass, fake_nominatim, tmp_path,
                                                                         request_text, first_words):
    backend = LookupBackend({request_text: 'node["amenity"="bench"]({{bbox}});out;'})
    view = make_service(fake_overpass, fake_nominatim, tmp_path, backend=backend).compile(request_text)
    assert view.explanation.startswith(first_words), view.explanation
    english = "Nodes tagged `amenity=bench` inside the current map view"
    assert english in view.explanation and view.explanation.count(english) == 1


# ---------------------------------------------------------------- a demo on the internet (issue 42)


def test_a_server_outside_the_list_is_refused_unless_the_operator_allows_it(fake_overpass, fake_nominatim, tmp_path):
    with FakeOverpass() as inside:
        service = make_service(fake_overpass, fake_nominatim, tmp_path)
        view = service.run("node(1);out;", None, inside.url)
        assert "only on the servers in its list" in view.status and fake_overpass.url in view.status
        assert inside.queries() == [] and view.sent is False


@pytest.mark.parametrize("typed, words", [
    ("http://127.0.0.1/api/interpreter", "not a public address"),
    ("http://2130706433/api/interpreter", "not a public address"),
    ("http://[::ffff:127.0.0.1]/api/interpreter", "not a public address"),
    ("http://localhost/api/interpreter", "not a public address"),
    ("http://user:pw@127.0.0.1/api/interpreter", "user name or password"),
    ("INSIDE", "standard port"),
])
def test_a_typed_server_must_be_public_even_where_typing_is_allowed(fake_overpass, fake_nominatim, tmp_path, typed, words):
    with FakeOverpass() as inside:
        service = make_service(fake_overpass, fake_nominatim, tmp_path, allow_custom_server=True)
        view = service.run("node(1);out;", None, inside.url if typed == "INSIDE" else typed)
        assert words in view.status.replace("\\\\", "") and inside.queries() == []
        assert fake_overpass.queries() == []


def test_the_operator_s_own_servers_are_trusted_on_loopback(fake_overpass, fake_nominatim, tmp_path):
    with FakeOverpass() as second:
        second.default = json_reply("heidelberg_cafes.json")
        service = make_service(fake_overpass, fake_nominatim, tmp_path, more_overpass_urls=(second.url,))
        view = service.run("node(1);out;", None, second.url)
        assert "4 elements" in view.summary and len(second.queries()) == 1


def _open_cache_files(directory: Path) -> int:
    """Descriptors this process holds on SQLite files under ``directory``."""
    found = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        found += target.startswith(str(directory)) and ".sqlite" in target
    return found


def test_typed_servers_leave_no_client_behind(fake_overpass, fake_nominatim, tmp_path):
    """Issue 42: each distinct server URL kept a client with its own SQLite files open (300 URLs: 548 descriptors)."""
    service = make_service(fake_overpass, fake_nominatim, tmp_path / "cache", allow_custom_server=True, max_retries=0)
    service.run("node(1);out;")  # the page's own client and geocoder are open from here on
    before = _open_cache_files(tmp_path)
    for i in range(40):
        view = service.run("node(1);out;", None, f"http://192.168.{i}.1/api/interpreter")
        assert "not a public address" in view.status
    assert _open_cache_files(tmp_path) <= before


def test_a_hostile_answer_reaches_the_page_as_text(fake_overpass, fake_nominatim, tmp_path):
    """What a server says (its remark, a count's fields, an element's type) is escaped Markdown."""
    hostile = '<img src=x onerror="alert(1)">'
    fake_overpass.add("out count", Reply(200, json.dumps({"remark": hostile, "elements": [
        {"type": "count", "id": 0, "tags": {hostile: "1", "total": "1"}}]})))
    fake_overpass.default = Reply(200, json.dumps({"elements": [
        {"type": hostile, "id": hostile, "tags": {hostile: hostile}}]}))
    service = make_service(fake_overpass, fake_nominatim, tmp_path)
    counted = service.run("node(1);out count;")
    listed = service.run("node(1);out;")
    for text in (counted.status, counted.summary, listed.summary):
        assert "<img" not in text and "&lt;img" in text and "alert(1)" in text, text
    assert listed.rows and listed.rows[0][0] == hostile  # the table holds it as text (the browser test shows it so)


def test_a_long_request_is_refused_in_words_before_the_compiler_sees_it(fake_overpass, fake_nominatim, tmp_path):
    """A 2,000-character request held a core for ~14 s; no real request has more than 380."""
    backend = LookupBackend({})
    view = make_service(fake_overpass, fake_nominatim, tmp_path, backend=backend).compile("cafes in Bonn " * 50)
    assert view.status.startswith("**The request is too long:** 699 characters; this demo takes up to 500.")
    assert view.query is None


def test_a_long_query_is_refused_in_words_and_not_sent(fake_overpass, fake_nominatim, tmp_path):
    service = make_service(fake_overpass, fake_nominatim, tmp_path)
    query = "node(1);out;" + " " * 20_000
    assert "too long" in service.run(query).status and fake_overpass.queries() == []
    assert "too long" in service.check(query)[0]


class GatedBackend(LookupBackend):
    """Answers "slow ..." only when the test lets it, anything else at once."""

    def __init__(self, table, thread_safe):
        super().__init__(table)
        self.thread_safe = thread_safe
        self.slow_started, self.release = threading.Event(), threading.Event()

    def generate(self, request):
        if request.nl.startswith("slow"):
            self.slow_started.set()
            assert self.release.wait(60)
        return super().generate(request)


def _compile_in_thread(service, request):
    done, box = threading.Event(), {}

    def work():
        box["view"] = service.compile(request)
        done.set()

    threading.Thread(target=work, daemon=True).start()
    return done, box


@pytest.mark.parametrize("thread_safe, slots, passes", [
    (True, 2, True),    # a free slot: the short request does not wait for the slow one
    (True, 1, False),   # one slot (a 2-core machine's default): in order, as one compile keeps both cores busy
    (False, 2, False),  # a backend that is not thread-safe: one request at a time, whatever the slots
], ids=["thread-safe, 2 slots", "thread-safe, 1 slot", "other backend"])
def test_a_slow_request_holds_up_others_only_without_a_free_slot(fake_overpass, fake_nominatim, tmp_path,
                                                                 thread_safe, slots, passes):
    """Issue 42: one global compile lock made every request wait for the longest one before it."""
    query = 'node["amenity"="cafe"]({{bbox}});out;'
    backend = GatedBackend({"slow cafes": query, "cafes": query}, thread_safe)
    service = make_service(fake_overpass, fake_nominatim, tmp_path, backend=backend, compile_slots=slots)
    slow_done, _ = _compile_in_thread(service, "slow cafes")
    assert backend.slow_started.wait(60)
    fast_done, fast = _compile_in_thread(service, "cafes")
    try:
        if passes:
            assert fast_done.wait(60) and not slow_done.is_set()
            assert fast["view"].query and "cafe" in fast["view"].query
        else:
            assert not fast_done.wait(1.0)
    finally:
        backend.release.set()
    assert slow_done.wait(60) and fast_done.wait(60)


def test_a_long_request_never_holds_an_ordinary_request_s_slot(fake_overpass, fake_nominatim, tmp_path):
    """With one slot, a slow long request compiles in its own lane: a short one does not wait for it."""
    query = 'node["amenity"="cafe"]({{bbox}});out;'
    long = "slow cafes " + "near the old town " * 20
    backend = GatedBackend({long.strip(): query, "cafes": query}, True)
    service = make_service(fake_overpass, fake_nominatim, tmp_path, backend=backend, compile_slots=1,
                           long_request_chars=100)
    slow_done, _ = _compile_in_thread(service, long)
    assert backend.slow_started.wait(60)
    fast_done, fast = _compile_in_thread(service, "cafes")
    try:
        assert fast_done.wait(60) and not slow_done.is_set() and "cafe" in fast["view"].query
    finally:
        backend.release.set()
    assert slow_done.wait(60)


@pytest.mark.parametrize("slots", [0, -1])
def test_compile_slots_below_one_are_refused(slots):
    from geoql.app.ui import DemoConfig
    from geoql.core.errors import ConfigError

    with pytest.raises(ConfigError, match="compile_slots must be >= 1"):
        DemoConfig(compile_slots=slots)


def test_downloads_are_bounded_and_go_with_the_service(fake_overpass, fake_nominatim, tmp_path):
    """Issue 42: the demo's download folder (and its ~150 MB for one large answer) was never removed."""
    fake_overpass.default = json_reply("heidelberg_cafes.json")
    service = make_service(fake_overpass, fake_nominatim, tmp_path, kept_downloads=3)
    paths = [Path(service.run(f"node({i});out;").download) for i in range(6)]
    assert all(p.name.endswith(".geojson") for p in paths) and paths[-1].is_file()
    assert len(list(service.download_dir.glob("result-*"))) == 3
    service.close()
    assert not service.download_dir.exists()


def test_the_download_folder_goes_when_the_page_stops(fake_overpass, fake_nominatim, tmp_path):
    service = make_service(fake_overpass, fake_nominatim, tmp_path)
    demo = launch(service, port=free_port(), block=False)
    assert service.download_dir.is_dir()
    demo.close()
    deadline = time.monotonic() + 30
    while service.download_dir.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not service.download_dir.exists()


def test_a_shared_secret_guards_the_page_and_its_api(fake_overpass, fake_nominatim, tmp_path):
    import requests
    from gradio_client import Client

    secret = "correct horse battery staple"
    service = make_service(fake_overpass, fake_nominatim, tmp_path)
    port = free_port()
    demo = launch(service, port=port, block=False, auth_token=secret)
    url = f"http://127.0.0.1:{port}/"
    try:
        assert requests.get(url + "gradio_api/info", timeout=10).status_code == 401
        assert requests.get(url + "config", timeout=10).status_code == 401
        refused = requests.post(url + "login", data={"username": "me", "password": "wrong"}, timeout=10)
        assert refused.status_code >= 400
        client = Client(url, auth=("anyone", secret), verbose=False)
        out = dict(zip(COMPILE_OUTPUTS, client.predict(DEV[0].nl, api_name="/compile")))
        assert out["query"] and "Compiled" in out["status"]
    finally:
        demo.close()


def test_long_requests_take_turns_and_short_ones_pass_them(fake_overpass, fake_nominatim, tmp_path):
    """Many long requests share the CPU with a short one no more than one long request does."""
    query = 'node["amenity"="cafe"]({{bbox}});out;'
    first, second = "slow " + "cafes " * 60, "cafes " * 60
    backend = GatedBackend({first.strip(): query, second.strip(): query, "cafes": query}, True)
    service = make_service(fake_overpass, fake_nominatim, tmp_path, backend=backend)
    first_done, _ = _compile_in_thread(service, first)
    assert backend.slow_started.wait(60)
    second_done, _ = _compile_in_thread(service, second)
    short_done, short = _compile_in_thread(service, "cafes")
    try:
        assert short_done.wait(60) and short["view"].query
        assert not second_done.wait(1.0)  # the second long one waits for the first
    finally:
        backend.release.set()
    assert first_done.wait(60) and second_done.wait(60)


@pytest.mark.parametrize("body", [
    '{"elements": [1, "node", null]}',
    '{"elements": [{"type": "node", "id": 1, "lat": null, "lon": 8.7, "tags": {"amenity": "bench"}}]}',
    '{"elements": [{"type": "node", "id": [1], "lat": 49.4, "lon": 8.7, "tags": ["a"]}, {"type": "way", "id": 2, "nodes": "x"}]}',
], ids=["not objects", "lat null", "odd fields"])
def test_a_broken_answer_is_shown_as_what_can_be_read(fake_overpass, fake_nominatim, tmp_path, body):
    """Issue 42: the demo read the table (element_rows) outside its try: a broken answer was an exception."""
    fake_overpass.default = Reply(200, body)
    view = make_service(fake_overpass, fake_nominatim, tmp_path).run('node["amenity"="bench"]({{bbox}});out;')
    assert view.status.startswith("Ran on") and view.sent and view.download
    assert "iframe" in view.map and isinstance(view.rows, list)
