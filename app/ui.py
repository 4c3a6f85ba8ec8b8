"""The GeoQL demo: plain words -> OverpassQL -> results on a map.

:class:`DemoService` holds the logic (compile a request, run a query) and
never raises: every failure becomes a sentence in the status line, and the
request and the query the user typed stay where they are. :func:`build_app`
wires it into a Gradio Blocks app with these API endpoints (used by the
tests through ``gradio_client``):

* ``/compile``          (request)           -> query, tags, examples, info, status, explanation, unsupported
* ``/run``              (query, map box)    -> map, table, summary, GeoJSON file, status
* ``/compile_and_run``  (request, map box)  -> query, tags, examples, info, map, table, summary,
  GeoJSON file, status, explanation, unsupported
"""

from __future__ import annotations

import logging
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import overpassql

from geoql.app.compile import Compiler
from geoql.app.explain import explain
from geoql.app.geo import TABLE_HEADERS, element_rows, map_html, summarize, to_geojson, write_geojson
from geoql.core.errors import ConfigError
from geoql.eval.dataset import benchmark_geocodes
from geoql.osm.nominatim import DEFAULT_NOMINATIM_URL, Nominatim, NominatimConfig
from geoql.osm.overpass import DEFAULT_OVERPASS_URL, EVAL_TIMEOUT_S, OverpassClient, OverpassConfig, OverpassError
from geoql.osm.turbo import ExpansionError, parse_bbox

__all__ = ["DemoConfig", "DemoService", "CompileView", "RunView", "build_app", "launch", "EXAMPLES"]

log = logging.getLogger(__name__)

EXAMPLES = [
    "Cafés with outdoor seating in Heidelberg",
    "Drinking water taps in the current view",
    "How many pharmacies are there in Berlin?",
    "Bus stops in this area",
    "Playgrounds within 500 m of a school in the current view",
    "Hiking routes in the Black Forest",
]
# Heidelberg's old town: a small box, so example runs are quick on the public server.
DEFAULT_BBOX = "49.405,8.680,49.418,8.720"


@dataclass
class DemoConfig:
    backend: str | None = field(default=None, metadata={"help": "backend name (default: the CPU default)"})
    overpass_url: str = field(default=DEFAULT_OVERPASS_URL, metadata={"help": "Overpass API interpreter URL"})
    nominatim_url: str = field(default=DEFAULT_NOMINATIM_URL, metadata={"help": "Nominatim /search URL"})
    cache_dir: str | None = field(default=None, metadata={"help": "result and geocoder caches (default: user cache)"})
    default_bbox: str = field(default=DEFAULT_BBOX, metadata={"help": "map box for {{bbox}}: south,west,north,east"})
    query_timeout_s: int = field(default=EVAL_TIMEOUT_S, metadata={"help": "[timeout:N] for runs"})
    http_timeout_s: float = field(default=120.0, metadata={"help": "seconds to wait for Overpass"})
    max_table_rows: int = field(default=500, metadata={"help": "rows shown in the element table"})
    max_map_features: int = field(default=20000, metadata={"help": "features drawn on the map (the download has all)"})
    concurrency: int = field(default=8, metadata={"help": "requests the app works on at once"})

    def __post_init__(self) -> None:
        try:
            parse_bbox(self.default_bbox)
        except ExpansionError as exc:
            raise ConfigError(f"default_bbox: {exc}") from None
        # Check the endpoints now (their configs name the fix), not on the first run.
        OverpassConfig(url=self.overpass_url, query_timeout_s=self.query_timeout_s, http_timeout_s=self.http_timeout_s)
        NominatimConfig(url=self.nominatim_url)
        if self.max_map_features < 1:
            raise ConfigError(f"max_map_features must be >= 1 (got {self.max_map_features})")
        if self.max_table_rows < 1:
            raise ConfigError(f"max_table_rows must be >= 1 (got {self.max_table_rows})")
        if self.concurrency < 1:
            raise ConfigError(f"concurrency must be >= 1 (got {self.concurrency}); 8 is a good start")


@dataclass
class CompileView:
    query: str | None  # None: keep what the code box holds
    tags: str
    examples: str
    info: str
    status: str
    explanation: str = ""  # the query in plain words
    unsupported: str = ""  # a warning naming the query's constants the request does not mention


@dataclass
class RunView:
    map: str
    rows: list[list[Any]]
    summary: str
    geojson_path: str | None
    status: str


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _query_tags(query: str) -> tuple[set[str], set[str]]:
    """The ``key=value`` pairs the query asks for exactly, and the keys it asks to be present (``[key]``)."""
    try:
        filters = overpassql.tag_filters(query)
    except Exception:  # a query the parser cannot read uses no tag we can name
        return set(), set()
    plain = [t for t in filters if not t.key_regex]
    return {f"{t.key}={t.value}" for t in plain if t.op == "="}, {t.key for t in plain if t.op == "exists"}


def _used_in(tag: str, pairs: set[str], keys: set[str]) -> bool:
    key, _, value = str(tag).partition("=")
    return key in keys if value in ("", "*") else str(tag) in pairs


def _format_tags(tags, query: str = "") -> str:
    """The retrieved tags as a table: what matched the request (``why``) and whether the query uses each."""
    if not tags:
        return "_no candidate tags_"
    pairs, keys = _query_tags(query)
    lines = ["| tag | name | why | score | in query |", "|---|---|---|---|---|"]
    for hit in tags:
        tag = getattr(hit, "tag", None) or hit
        name = getattr(hit, "name", "") or ""
        why = getattr(hit, "why", "") or ""
        score = getattr(hit, "score", None)
        used = "✓ used in the query" if _used_in(tag, pairs, keys) else ""
        lines.append(
            f"| `{_md_escape(tag)}` | {_md_escape(name)} | {_md_escape(why)} | "
            f"{'' if score is None else f'{score:.3f}'} | {used} |"
        )
    return "\n".join(lines)


def _format_unsupported(constants) -> str:
    """A warning naming the constants the request does not mention; empty when there are none."""
    if not constants:
        return ""
    named = ", ".join(f"{_md_escape(c.kind)} `{_md_escape(c.value)}`" for c in constants)
    return f"⚠ The query uses things your request does not mention: {named} — check them before you run it."


def _format_examples(examples) -> str:
    if not examples:
        return "_no few-shot examples_"
    parts = []
    for ex in examples:
        nl = getattr(ex, "nl", "")
        query = getattr(ex, "query", str(ex))
        index = getattr(ex, "index", None)
        head = f"**{_md_escape(nl)}**" + (f" (train #{index})" if index is not None else "")
        parts.append(f"{head}\n```\n{query}\n```")
    return "\n\n".join(parts)


def _format_info(compilation, elapsed: float) -> str:
    backend = getattr(compilation, "backend", "") or "?"
    timings = getattr(compilation, "timings", None) or {}
    if isinstance(timings, dict) and timings:
        shown = ", ".join(
            f"{k.removesuffix('_s')} {v * 1000:.0f} ms" if isinstance(v, (int, float)) else f"{k} {v}"
            for k, v in timings.items()
        )
    else:
        shown = f"total {elapsed * 1000:.0f} ms"
    candidates = getattr(compilation, "candidates", None) or []
    line = f"**backend:** {backend} · **timings:** {shown} · **candidates:** {len(candidates)}"
    warnings = getattr(compilation, "warnings", None) or []
    return line + ("\n\n" + "; ".join(str(w) for w in warnings) if warnings else "")


class DemoService:
    """Compile and run for the demo; thread-safe, never raises to the caller."""

    def __init__(self, config: DemoConfig | None = None, *, backend=None, compiler=None, client=None):
        """``backend``: a name or a Backend object (default ``config.backend``);
        ``compiler``: a ready ``app.Compiler`` (wins over ``backend``);
        ``client``: a ready ``geoql.osm.overpass.OverpassClient``."""
        self.config = config or DemoConfig()
        self._backend = backend if backend is not None else self.config.backend
        self._compiler = compiler
        self._compiler_lock = threading.Lock()
        self._compile_lock = threading.Lock()
        self._client_lock = threading.Lock()
        self._client = client
        self.download_dir = Path(tempfile.mkdtemp(prefix="geoql-ui-"))

    # -- collaborators, built lazily so the app starts at once
    def compiler(self):
        with self._compiler_lock:
            if self._compiler is None:
                self._compiler = Compiler(self._backend)
            return self._compiler

    @property
    def client(self):
        with self._client_lock:
            return self._make_client()

    def _make_client(self):
        if self._client is None:
            cfg = self.config
            geocoder = Nominatim(NominatimConfig(url=cfg.nominatim_url, cache_dir=cfg.cache_dir), seed=benchmark_geocodes())
            self._client = OverpassClient(
                OverpassConfig(
                    url=cfg.overpass_url,
                    cache_dir=cfg.cache_dir,
                    query_timeout_s=cfg.query_timeout_s,
                    http_timeout_s=cfg.http_timeout_s,
                ),
                geocoder=geocoder,
            )
        return self._client

    def warm_up_in_background(self) -> threading.Thread:
        """Load (or, for the CPU default, train once) the backend while the page opens."""

        def work():
            view = self.compile(EXAMPLES[0])
            if view.query is None:
                log.warning("warm-up: %s", view.status)

        thread = threading.Thread(target=work, name="geoql-ui-warm-up", daemon=True)
        thread.start()
        return thread

    # -- the two actions
    def compile(self, request: str) -> CompileView:
        request = (request or "").strip()
        if not request:
            return CompileView(None, "", "", "", "Type a request first, e.g. “cafés with outdoor seating in Heidelberg”.")
        started = time.perf_counter()
        try:
            compiler = self.compiler()
            # One compilation at a time: model backends are not all thread-safe.
            with self._compile_lock:
                compilation = compiler.compile(request)
        except Exception as exc:  # shown in words; the details go to the server log
            log.exception("compile failed for %r", request)
            return CompileView(None, "", "", "", f"**Could not compile the request:** {_first_line(exc)}")
        elapsed = time.perf_counter() - started
        query = getattr(compilation, "query", "") or ""
        errors = [str(e) for e in (getattr(compilation, "errors", None) or [])]
        if not query.strip():
            return CompileView(
                None, "", "", _format_info(compilation, elapsed),
                "**Could not compile the request:** " + ("; ".join(errors) or "the compiler returned no query; try rephrasing."),
            )
        explanation = self._explain(query, compiler)
        if getattr(compilation, "valid", True):
            status = "Compiled. Edit the query if you like, then press **Run on Overpass**."
        else:
            status = "**The query did not pass the parser**: " + ("; ".join(errors) or "unknown problem") + ". You can edit it and run it anyway."
        return CompileView(
            query,
            _format_tags(getattr(compilation, "tags", None), query),
            _format_examples(getattr(compilation, "examples", None)),
            _format_info(compilation, elapsed),
            status,
            explanation,
            _format_unsupported(getattr(compilation, "unsupported", None)),
        )

    @staticmethod
    def _explain(query: str, compiler) -> str:
        # The compiler's tag index names the tags; without one, explain() looks in the default place.
        index_dir = getattr(getattr(compiler, "config", None), "index_dir", None)
        try:
            return explain(query, "en", index_dir=index_dir)
        except Exception:  # the explanation is a help, never a reason to lose the query
            log.exception("explain failed for %r", query)
            return ""

    def run(self, query: str, bbox: str | None = None) -> RunView:
        empty_map = map_html({"type": "FeatureCollection", "features": []})
        if not (query or "").strip():
            return RunView(empty_map, [], "", None, "There is no query to run: compile a request or write one.")
        bbox = (bbox or "").strip() or self.config.default_bbox
        try:
            result = self.client.run(query, bbox=bbox)
            geojson = to_geojson(result.data)
            path = write_geojson(geojson, self.download_dir)
        except OverpassError as exc:
            return RunView(empty_map, [], "", None, f"**The query did not run:** {exc}")
        except Exception as exc:
            log.exception("run failed for %r", query)
            return RunView(empty_map, [], "", None, f"**Something went wrong while running the query:** {_first_line(exc)}")
        summary = summarize(result.data, geojson)
        shown = geojson
        if len(geojson["features"]) > self.config.max_map_features:
            # A browser tab chokes on huge inline layers; the download keeps everything.
            shown = {"type": "FeatureCollection", "features": geojson["features"][: self.config.max_map_features]}
            summary += f" (the map shows the first {self.config.max_map_features}; the download has all)"
        source = "from cache" if result.from_cache else f"{result.elapsed_s:.1f} s"
        status = f"Ran on {self.config.overpass_url} ({source})."
        if result.remark:
            status += f" Server remark: {result.remark}"
        rows = element_rows(result.data, self.config.max_table_rows)
        return RunView(map_html(shown), rows, summary, str(path), status)

    def compile_and_run(self, request: str, bbox: str | None = None) -> tuple[CompileView, RunView | None]:
        compiled = self.compile(request)
        if not compiled.query:
            return compiled, None
        return compiled, self.run(compiled.query, bbox)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


# ---------------------------------------------------------------- Gradio


def build_app(service: DemoService):
    """The Gradio Blocks app around ``service``."""
    import gradio as gr

    def table(rows):
        return {"headers": TABLE_HEADERS, "data": rows}

    def compile_outputs(view: CompileView):
        if view.query is None:  # the code box keeps its query, and so do the words about it
            return gr.skip(), view.tags, view.examples, view.info, view.status, gr.skip(), gr.skip()
        return view.query, view.tags, view.examples, view.info, view.status, view.explanation, view.unsupported

    def run_outputs(view: RunView):
        return view.map, table(view.rows), view.summary, view.geojson_path, view.status

    def on_compile(request):
        return compile_outputs(service.compile(request))

    def on_run(query, bbox):
        return run_outputs(service.run(query, bbox))

    def on_compile_and_run(request, bbox):
        compiled, ran = service.compile_and_run(request, bbox)
        shown = compile_outputs(compiled)
        if ran is None:
            return (*shown[:4], gr.skip(), gr.skip(), gr.skip(), gr.skip(), compiled.status, *shown[5:])
        return (*shown[:4], *run_outputs(ran)[:4], compiled.status + " " + ran.status, *shown[5:])

    with gr.Blocks(title="GeoQL: plain words to OverpassQL", analytics_enabled=False) as demo:
        gr.Markdown(
            "# GeoQL\nAsk for places in plain words; GeoQL writes the "
            "[Overpass](https://wiki.openstreetmap.org/wiki/Overpass_API) query and shows the result."
        )
        with gr.Row():
            with gr.Column(scale=3):
                request = gr.Textbox(label="Request", placeholder=EXAMPLES[0], lines=2, elem_id="request")
                with gr.Row():
                    compile_btn = gr.Button("Compile", elem_id="compile")
                    go_btn = gr.Button("Compile & run", variant="primary", elem_id="compile-and-run")
                gr.Examples(EXAMPLES, inputs=[request])
            with gr.Column(scale=2):
                bbox = gr.Textbox(
                    label="Map area for {{bbox}} (south,west,north,east)", value=service.config.default_bbox, elem_id="bbox"
                )
                info = gr.Markdown(elem_id="info")
        status = gr.Markdown(elem_id="status")
        unsupported = gr.Markdown(elem_id="unsupported")
        with gr.Row():
            with gr.Column(scale=2):
                query = gr.Code(
                    label="OverpassQL (editable)", language=None, interactive=True, lines=8, wrap_lines=True, elem_id="query"
                )
                explanation = gr.Markdown(elem_id="explanation")
                run_btn = gr.Button("Run on Overpass", elem_id="run")
            with gr.Column(scale=3):
                map_view = gr.HTML(map_html({"type": "FeatureCollection", "features": []}), elem_id="map")
        summary = gr.Markdown(elem_id="summary")
        with gr.Row():
            rows = gr.Dataframe(headers=TABLE_HEADERS, label="Elements", interactive=False, wrap=True, elem_id="elements")
        download = gr.File(label="GeoJSON download", elem_id="geojson")
        with gr.Accordion("Candidate tags and few-shot examples used", open=False):
            with gr.Row():
                tags = gr.Markdown()
                examples = gr.Markdown()

        compile_out = [query, tags, examples, info, status, explanation, unsupported]
        run_out = [map_view, rows, summary, download, status]
        both_out = [query, tags, examples, info, map_view, rows, summary, download, status, explanation, unsupported]
        compile_btn.click(on_compile, [request], compile_out, api_name="compile")
        request.submit(on_compile_and_run, [request, bbox], both_out, api_visibility="private")
        run_btn.click(on_run, [query, bbox], run_out, api_name="run")
        go_btn.click(on_compile_and_run, [request, bbox], both_out, api_name="compile_and_run")
    demo.queue(default_concurrency_limit=service.config.concurrency)
    return demo


def launch(service: DemoService, *, host: str = "127.0.0.1", port: int | None = 7860, block: bool = True):
    """Start the app; returns the Blocks object (already serving when ``block`` is False)."""
    demo = build_app(service)
    demo.launch(
        server_name=host,
        server_port=port,
        prevent_thread_lock=not block,
        show_error=False,
        quiet=not block,
        allowed_paths=[str(service.download_dir)],
    )
    return demo
