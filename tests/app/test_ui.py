"""The demo: DemoService logic, and the Gradio app launched for real and driven with gradio_client."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

import overpassql
import pytest
from fakes.fixtures import fake_nominatim, fake_overpass  # noqa: F401 (fixtures)
from fakes.servers import FakeNominatim, FakeOverpass, json_reply, parse_error, payload
from fakes.support import LookupBackend, dev_requests, embedded_geojson, free_port, make_service

from geoql.app.backends.base import BackendError
from geoql.app.geo import to_geojson
from geoql.app.run import slug
from geoql.app.ui import COMPILE_OUTPUTS, RUN_OUTPUTS, DemoConfig, build_app, launch

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
        "cafes in Heidelberg": '[out:csv(name)];{{geocodeArea:"Bas-Rhin"}}->.a;node["amenity"="cafe"](area.a);out;',
        "cafes in the current view": 'node["amenity"="cafe"]({{bbox}});out;',
    })
    service = make_service(fake_overpass, fake_nominatim, tmp_path, backend=backend)
    warned = service.compile("cafes in Heidelberg")
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
