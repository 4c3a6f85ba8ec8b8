"""The GeoQL demo: plain words -> OverpassQL -> results on a map.

:class:`DemoService` holds the logic (prepare, compile a request, check and run a query)
and never raises: every failure becomes a sentence in the status line, and the request
and the query the user typed stay where they are. Running goes through
:mod:`geoql.app.run`, the path ``Compilation.run()`` and ``geoql run`` share, so the page
says what the command line says. :func:`build_app` wires it into a Gradio Blocks app with
these API endpoints (used by the tests through ``gradio_client``):

* ``/compile``          (request)                       -> ``COMPILE_OUTPUTS``
* ``/run``              (query, map box, endpoint, request) -> ``RUN_OUTPUTS``
* ``/compile_and_run``  (request, map box, endpoint)    -> ``COMPILE_OUTPUTS`` then ``RUN_OUTPUTS[:-1]``

The first start of the CPU default builds the tag index and trains the model (minutes,
once per machine); :class:`Preparation` watches those steps' progress bars so that the
page can show each with its time left, and the buttons say why they wait.
"""

from __future__ import annotations

import hmac
import html
import logging
import os
import queue
import re
import shutil
import tempfile
import threading
import time
from contextlib import asynccontextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import overpassql

from geoql.app.backends import canonical_name
from geoql.app.backends.cpu import QUICK_TRAINING, CpuBackend
from geoql.app.compile import Compiler
from geoql.app.confidence import unlicensed_warning
from geoql.app.cpu.model import MANIFEST as MODEL_MANIFEST, default_model_dir
from geoql.app.explain import explain
from geoql.app.geo import MAP_MESSAGE_LISTENER, TABLE_HEADERS, element_rows, map_html
from geoql.app.run import (ENDPOINTS, endpoint_url, export, make_client, make_geocoder, mark_problems, run_query,
                           syntax_problems, turbo_link)
from geoql.core.errors import ConfigError
from geoql.eval.dataset import RELEASE_BASE_URL, DatasetError, resolve_data_dir
from geoql.nl.frame import guess_language
from geoql.nl.lexicon import Lexicon
from geoql.index.config import NPM_REGISTRY
from geoql.osm.nominatim import DEFAULT_NOMINATIM_URL, NominatimConfig
from geoql.osm.overpass import DEFAULT_OVERPASS_URL, EVAL_TIMEOUT_S, OverpassConfig
from geoql.osm.turbo import ExpansionError, parse_bbox
from geoql.retrieval import IndexMissingError
from geoql.retrieval.artifacts import load_manifest

__all__ = ["DemoConfig", "DemoService", "CompileView", "RunView", "Preparation", "build_app", "launch", "token_check",
           "EXAMPLES", "COMPILE_OUTPUTS", "RUN_OUTPUTS"]

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
# The outputs of the API endpoints, by name, in order (the tests read them by these names).
COMPILE_OUTPUTS = ("query", "tags", "examples", "info", "status", "explanation", "unsupported", "doubts", "turbo",
                   "query_errors")
RUN_OUTPUTS = ("map", "table", "summary", "download", "status", "query_errors")
# The languages overpassql.explain has phrase tables for (overpassql/explain.json).
EXPLAINED_LANGUAGES = ("en", "de", "fr")


# The longest request of OverpassNL (train, dev) is 380 characters and of OsmNL dev (8 languages)
# 353; a request of 2,000 characters held a CPU core for ~14 s. Longer ones are refused in words.
MAX_REQUEST_CHARS = 500
# The longest gold query is 541 characters; a query box of 10,000 is checked in milliseconds.
MAX_QUERY_CHARS = 10_000
# 99 % of real requests are shorter (OverpassNL dev 208, OsmNL dev fr 238): longer ones take turns.
LONG_REQUEST_CHARS = 250


@dataclass
class DemoConfig:
    backend: str | None = field(default=None, metadata={"help": "backend name (default: the CPU default)"})
    overpass_url: str = field(default=DEFAULT_OVERPASS_URL, metadata={
        "help": "the endpoint the page starts with: a listed server's name or an Overpass interpreter URL "
                "(the operator's choice: trusted, loopback and private addresses included)"})
    more_overpass_urls: tuple[str, ...] = field(default=(), metadata={
        "help": "more Overpass interpreters of the operator's that the page offers, trusted like overpass_url"})
    allow_custom_server: bool = field(default=False, metadata={
        "help": "let visitors type a server URL of their own (public addresses only, checked after DNS "
                "resolution; standard ports; no redirects); else only the listed servers run queries"})
    nominatim_url: str = field(default=DEFAULT_NOMINATIM_URL, metadata={"help": "Nominatim /search URL"})
    cache_dir: str | None = field(default=None, metadata={"help": "result and geocoder caches (default: user cache)"})
    default_bbox: str = field(default=DEFAULT_BBOX, metadata={"help": "first map view, for {{bbox}}: south,west,north,east"})
    query_timeout_s: int = field(default=EVAL_TIMEOUT_S, metadata={"help": "[timeout:N] for runs"})
    http_timeout_s: float = field(default=120.0, metadata={
        "help": "seconds to wait for Overpass' whole answer (a total, not per read)"})
    max_answer_mb: float = field(default=16.0, metadata={
        "help": "the most of one Overpass answer read, in MB (decompressed); a larger answer is refused in words"})
    max_request_chars: int = field(default=MAX_REQUEST_CHARS, metadata={"help": "longer requests are refused in words"})
    long_request_chars: int = field(default=LONG_REQUEST_CHARS, metadata={
        "help": "longer requests compile one at a time (the others side by side), so that many of them slow "
                "a short request no more than one does"})
    max_query_chars: int = field(default=MAX_QUERY_CHARS, metadata={"help": "longer queries are refused in words"})
    kept_downloads: int = field(default=100, metadata={
        "help": "downloads kept in the demo's folder (the oldest go first; all go when the demo stops)"})
    max_retries: int = field(default=3, metadata={"help": "retries after 429/504/no answer (shown with a countdown)"})
    backoff_s: float = field(default=2.0, metadata={"help": "first retry delay in seconds; doubles each retry"})
    max_table_rows: int = field(default=500, metadata={"help": "rows shown in the element table"})
    max_map_features: int = field(default=20000, metadata={"help": "features drawn on the map (the download has all)"})
    concurrency: int = field(default=8, metadata={"help": "requests the app works on at once"})
    compile_slots: int = field(default=max(1, (os.cpu_count() or 2) // 2), metadata={
        "help": "requests of ordinary length compiled at once, the others waiting their turn in order (default: "
                "half the cores: one compile of the CPU default keeps about two cores busy, and more at once "
                "share them, so every answer comes later; a thread-safe backend is needed for more than one)"})
    check_services: bool = field(default=True, metadata={
        "help": "at start, ask the dataset host and the npm registry whether they answer when the "
                "first start needs them (a banner says so when not)"})
    dataset_url: str = field(default=RELEASE_BASE_URL, metadata={"help": "where a missing OverpassNL copy is downloaded from"})
    registry_url: str = field(default=NPM_REGISTRY, metadata={"help": "the npm registry the tag index is built from"})

    def __post_init__(self) -> None:
        try:
            parse_bbox(self.default_bbox)
        except ExpansionError as exc:
            raise ConfigError(f"default_bbox: {exc}") from None
        try:
            self.overpass_url = endpoint_url(self.overpass_url)
            self.more_overpass_urls = tuple(dict.fromkeys(endpoint_url(u) for u in self.more_overpass_urls))
        except ConfigError as exc:
            raise ConfigError(f"overpass_url: {exc}") from None
        if self.max_answer_mb <= 0:
            raise ConfigError(f"max_answer_mb must be > 0 (got {self.max_answer_mb}); e.g. 16")
        # Check the endpoints now (their configs name the fix), not on the first run.
        self.overpass_options()
        NominatimConfig(url=self.nominatim_url)
        for name in ("max_request_chars", "long_request_chars", "max_query_chars", "kept_downloads", "compile_slots"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1 (got {getattr(self, name)})")
        if self.max_map_features < 1:
            raise ConfigError(f"max_map_features must be >= 1 (got {self.max_map_features})")
        if self.max_table_rows < 1:
            raise ConfigError(f"max_table_rows must be >= 1 (got {self.max_table_rows})")
        if self.concurrency < 1:
            raise ConfigError(f"concurrency must be >= 1 (got {self.concurrency}); 8 is a good start")

    def overpass_options(self, url: str | None = None, **more) -> dict:
        """``OverpassConfig`` fields of the page's clients (checked: a bad value is a ``ConfigError``)."""
        options = dict(cache_dir=self.cache_dir, query_timeout_s=self.query_timeout_s,
                       http_timeout_s=self.http_timeout_s, max_answer_bytes=int(self.max_answer_mb * 2**20),
                       max_retries=self.max_retries, backoff_s=self.backoff_s, **more)
        OverpassConfig(url=url or self.overpass_url, **options)
        return options

    @property
    def operator_urls(self) -> tuple[str, ...]:
        """The servers the operator configured: trusted, whatever their address."""
        return (self.overpass_url, *self.more_overpass_urls)


@dataclass
class CompileView:
    query: str | None  # None: keep what the query box holds
    tags: str
    examples: str
    info: str
    status: str
    explanation: str = ""  # the query in plain words
    unsupported: str = ""  # a warning naming the query's parts the request does not license
    doubts: str = ""  # a warning: low confidence, words the query does not cover, no close training request, no output
    turbo: str = ""  # the "Open in overpass-turbo" link
    query_errors: str = ""  # the query's syntax errors, marked by line and column


@dataclass
class RunView:
    map: str
    rows: list[list[Any]]
    summary: str
    download: str | None  # GeoJSON, or CSV for a count, named after the request
    status: str
    query_errors: str = ""
    sent: bool = False


# ---------------------------------------------------------------- formatting


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


_MARKUP = re.compile(r"([\\`*_\[\]|!#~$])")


def _md_text(text: Any) -> str:
    """Text from outside (what a server said, a visitor's words) as Markdown that shows it as
    written, on one line: no HTML (``<``, ``&`` escaped), no link, image, emphasis or code.

    >>> _md_text('<img src=x onerror="alert(1)"> [a](javascript:x) *b*')
    '&lt;img src=x onerror="alert(1)"&gt; \\\\[a\\\\](javascript:x) \\\\*b\\\\*'
    """
    return _MARKUP.sub(r"\\\1", html.escape(str(text), quote=False)).replace("\n", " ")


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks in ``text``, so the text cannot end the block."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


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


def _format_unsupported(parts) -> str:
    """A warning naming the parts of the query nothing in the request licenses (``Compilation.unlicensed``),
    each with why; empty when there are none."""
    if not parts:
        return ""
    named = "; ".join(f"{_md_escape(p.kind)} `{_md_escape(p.text)}` ({_md_escape(p.why)})" for p in parts)
    return f"⚠ The query uses things your request does not mention: {named} — check them before you run it."


def _format_doubts(compilation) -> str:
    """The compiler's doubts (``Compilation.doubts``: off topic, low confidence, words not
    covered, no close training request) as one warning; empty when it has none. The unlicensed
    parts have a warning of their own (:func:`_format_unsupported`), with their reasons."""
    parts = getattr(compilation, "unlicensed", None) or []
    doubts = [str(d) for d in (getattr(compilation, "doubts", None) or [])
              if not (parts and d == unlicensed_warning(parts))]
    if not doubts:
        return ""
    return "⚠ **Check this query:** " + " · ".join(_md_text(d) for d in doubts)  # they quote the request's words


def _format_examples(examples) -> str:
    if not examples:
        return "_no few-shot examples_"
    parts = []
    for ex in examples:
        nl = getattr(ex, "nl", "")
        query = getattr(ex, "query", str(ex))
        index = getattr(ex, "index", None)
        head = f"**{_md_escape(nl)}**" + (f" (train #{index})" if index is not None else "")
        parts.append(f"{head}\n{_fence(query)}\n{query}\n{_fence(query)}")
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
    confidence = getattr(compilation, "confidence", None)
    if isinstance(confidence, (int, float)):
        line += f" · **confidence:** {confidence:.2f}"
    warnings = getattr(compilation, "warnings", None) or []
    return line + ("\n\n" + "; ".join(str(w) for w in warnings) if warnings else "")


def _format_problems(query: str, problems) -> str:
    """The syntax errors under the query box, each with its line and a caret at its column."""
    if not problems:
        return ""
    # The first error is the one to fix: the parser's later ones mostly follow from it.
    marked = mark_problems(query, problems, limit=1)
    return f"**Syntax error — this query will not be sent:**\n{_fence(marked)}\n{marked}\n{_fence(marked)}"


def _turbo_html(query: str) -> str:
    if not (query or "").strip():
        return ""
    return (f'<a id="turbo-link" href="{html.escape(turbo_link(query), quote=True)}" target="_blank" '
            'rel="noopener">Open in overpass-turbo ↗</a>')


def _pretty(query: str) -> str:
    try:
        return overpassql.pretty(query)
    except Exception:  # the one-line query is still a query
        log.exception("pretty-printing failed for %r", query)
        return query


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60}:{seconds % 60:02d}"


# ---------------------------------------------------------------- readiness


def _live_bars() -> list:
    """The progress bars (tqdm) open right now, in any thread."""
    try:
        from tqdm import tqdm
    except ImportError:  # nothing reports progress without it
        return []
    classes, bars = [tqdm], []
    while classes:
        cls = classes.pop()
        classes.extend(cls.__subclasses__())
        instances = cls.__dict__.get("_instances")
        if instances is None:
            continue
        try:
            bars.extend(list(instances))
        except RuntimeError:  # the set changed while being read: the next look sees it
            pass
    return [b for b in dict.fromkeys(bars) if not getattr(b, "disable", False)]


@dataclass
class Step:
    name: str
    n: float = 0
    total: float | None = None
    unit: str = "it"
    elapsed_s: float = 0.0
    rate: float | None = None
    done: bool = False
    detail: str = ""  # the bar's postfix: what it works on now ("id-tagging-schema")

    @property
    def left_s(self) -> float | None:
        if self.done or not self.total or not self.rate:
            return None
        return max(0.0, (self.total - self.n) / self.rate)

    def line(self) -> str:
        amount = f"{int(self.n)}/{int(self.total)} {self.unit}" if self.total else f"{int(self.n)} {self.unit}"
        if self.done:
            return f"- ✓ {self.name}: done ({amount}, {_clock(self.elapsed_s)})"
        share = f" ({100 * self.n / self.total:.0f} %)" if self.total else ""
        left = self.left_s
        rest = f", about {_clock(left)} left" if left is not None else ""
        now = f" — {self.detail}" if self.detail else ""
        return f"- {self.name}: {amount}{share}{now}, {_clock(self.elapsed_s)} so far{rest}"


class Preparation:
    """The one-time preparation of the backend, watched: the work runs once (the first
    :meth:`start` starts it, :meth:`wait` waits for it); meanwhile every progress bar it
    opens becomes a :class:`Step` with its progress and time left."""

    def __init__(self, work: Callable[[], None], *, poll_s: float = 0.5, background: Callable[[], str] | None = None):
        self._work = work
        self._poll_s = poll_s
        # After the work: a line while something it started goes on (the CPU default's full model), else ''.
        self._background = background or (lambda: "")
        self.state = "idle"  # idle -> preparing -> ready | failed
        self.error = ""
        self.started: float | None = None
        self.finished: float | None = None
        self._steps: dict[str, Step] = {}
        self._lock = threading.Lock()
        self._done = threading.Event()

    @property
    def ready(self) -> bool:
        return self.state in ("ready", "failed")

    def start(self) -> None:
        with self._lock:
            if self.state != "idle":
                return
            self.state, self.started = "preparing", time.monotonic()
        threading.Thread(target=self._run, name="geoql-ui-prepare", daemon=True).start()
        threading.Thread(target=self._watch, name="geoql-ui-progress", daemon=True).start()

    def wait(self, timeout: float | None = None) -> bool:
        self.start()
        return self._done.wait(timeout)

    def _run(self) -> None:
        try:
            self._work()
            state, error = "ready", ""
        except Exception as exc:  # shown on the page; the first compile says it again
            log.exception("preparation failed")
            state, error = "failed", _first_line(exc)
        self._sample()
        with self._lock:
            for step in self._steps.values():
                step.done = True
            self.state, self.error, self.finished = state, error, time.monotonic()
        self._done.set()

    def _watch(self) -> None:
        while not self._done.wait(self._poll_s):
            self._sample()
        while self.background():  # the steps of what goes on behind the ready compiler
            time.sleep(self._poll_s)
            self._sample()

    def background(self) -> str:
        """What goes on after the work (``''``: nothing); never raises."""
        try:
            return self._background() or ""
        except Exception:  # noqa: BLE001 (the page must not break over a status line)
            log.exception("background status failed")
            return ""

    def _sample(self) -> None:
        seen = set()
        for bar in _live_bars():
            try:
                info = bar.format_dict
            except Exception:  # a bar closing under us
                continue
            name = str(info.get("prefix") or getattr(bar, "desc", "") or "working").strip().rstrip(":")
            seen.add(name)
            with self._lock:
                step = self._steps.setdefault(name, Step(name))
                step.n, step.total, step.unit = info.get("n", 0), info.get("total"), info.get("unit", "it")
                step.elapsed_s, step.rate, step.done = info.get("elapsed", 0.0), info.get("rate"), False
                step.detail = str(info.get("postfix") or "").strip(", ")
                if step.rate is None and step.elapsed_s and step.n:
                    step.rate = step.n / step.elapsed_s
        with self._lock:
            for name, step in self._steps.items():
                if name not in seen and not step.done:
                    # A bar closes when its work is through; its last updates may fall between two samples.
                    step.done = True
                    if step.total:
                        step.n = step.total

    def steps(self) -> list[Step]:
        with self._lock:
            return [Step(**vars(s)) for s in self._steps.values()]

    def markdown(self) -> str:
        """What the page shows: the steps with their progress before it is ready; after, only
        what still goes on behind it (the CPU default's full model), else nothing."""
        if self.state == "ready":
            note = self.background()
            if not note:
                return ""
            return "\n".join([note] + [s.line() for s in self.steps() if not s.done])
        if self.state == "failed":
            return f"**The compiler could not be prepared:** {_md_escape(self.error)}"
        if self.state == "idle":
            return "_The compiler is prepared on the first request._"
        since = _clock(time.monotonic() - (self.started or time.monotonic()))
        lines = [f"**Getting ready ({since}):** on its first start on a machine the CPU default builds its tag "
                 "index (about 2 minutes on 2 cores, once) and takes the selector shipped with GeoQL (seconds). Where "
                 "the index differs from the one that selector was trained with, it trains a quick first model "
                 "instead (about 1.5 minutes) and the full model behind it. The buttons work when it is done."]
        lines += [s.line() for s in self.steps()] or ["- loading the compiler"]
        return "\n".join(lines)


def _import_what_gradio_imports_per_call() -> None:
    """Gradio switches matplotlib's backend around every call, where matplotlib is installed (a
    --dev install has it): the first call imports it and pyplot in the server's event loop, about
    0.5 s in which no page of any visitor gets an answer. Done while the page is getting ready,
    the calls find them imported."""
    try:
        import matplotlib
    except ImportError:
        return
    try:
        matplotlib.get_backend()
    except Exception:  # noqa: BLE001 (a broken matplotlib is gradio's to meet, not a reason to stop)
        log.warning("matplotlib is installed but does not load; gradio will meet it on the first call")


def _answers(url: str, timeout: float = 3.0) -> bool:
    import requests

    try:
        requests.head(url, timeout=timeout, allow_redirects=True)
        return True
    except requests.RequestException:
        return False


# ---------------------------------------------------------------- the service


class DemoService:
    """Prepare, compile, check and run for the demo; thread-safe, never raises to the caller."""

    def __init__(self, config: DemoConfig | None = None, *, backend=None, compiler=None, client=None):
        """``backend``: a name or a Backend object (default ``config.backend``);
        ``compiler``: a ready ``app.Compiler`` (wins over ``backend``);
        ``client``: a ready ``geoql.osm.overpass.OverpassClient`` for ``config.overpass_url``."""
        self.config = config or DemoConfig()
        self._backend = backend if backend is not None else self.config.backend
        self._compiler = compiler
        self._compiler_lock = threading.Lock()
        # Only for a backend that is not thread-safe (Backend.thread_safe): one request at a time, whatever its length.
        self._compile_lock = threading.Lock()
        # Requests of ordinary length compile in compile_slots at once, in order: measured on 2 cores
        # (benchmarks/ui_concurrency.py, 20 at once), all side by side gave every answer later (p95 x 1.17)
        # than one at a time, since a compile already keeps two cores busy.
        self._slots = threading.BoundedSemaphore(self.config.compile_slots)
        # Long requests (long_request_chars) have a lane of their own and take turns in it: they never hold
        # an ordinary request's slot, and a flood of them slows a short request no more than one does.
        self._long_lane = threading.Lock()
        self._client_lock = threading.Lock()
        # One client per server of the operator's and of the list (a bounded set); a server a visitor
        # typed gets a client for the one run, with no cache, so nothing accumulates per URL.
        self._clients: dict[str, Any] = {}
        self._geocoder = None
        if client is not None:
            self._clients[client.config.url] = client
        self._notices: list[str] | None = None
        self._notices_lock = threading.Lock()
        self.download_dir = Path(tempfile.mkdtemp(prefix="geoql-ui-"))
        self._downloads_lock = threading.Lock()
        self.preparation = Preparation(self._prepare, background=self.background_note)

    # -- collaborators, built lazily so the app starts at once
    def compiler(self):
        with self._compiler_lock:
            if self._compiler is None:
                # The CPU default answers from a quick first model while its full model trains.
                is_cpu = self._backend is None or (isinstance(self._backend, str)
                                                   and canonical_name(self._backend) == CpuBackend.name)
                self._compiler = Compiler(self._backend, **({"quick_start": True} if is_cpu else {}))
            return self._compiler

    @property
    def client(self):
        """The client of the page's default endpoint."""
        return self.client_for(self.config.overpass_url)

    def geocoder(self):
        """The one geocoder of every client of the page (one cache file, one rate limit)."""
        with self._client_lock:
            if self._geocoder is None:
                self._geocoder = make_geocoder(cache_dir=self.config.cache_dir, nominatim_url=self.config.nominatim_url)
            return self._geocoder

    def client_for(self, endpoint: str | None):
        """The client for ``endpoint`` (a listed name or a URL; default: the page's first server).

        The operator's servers (``overpass_url``, ``more_overpass_urls``) are trusted; the listed
        public ones and, where ``allow_custom_server``, a URL a visitor typed are reached only
        at public addresses (``OverpassConfig.public_only``). Anything else is a ``ConfigError``
        that names what the page accepts."""
        cfg = self.config
        url = endpoint_url(endpoint or cfg.overpass_url)
        listed = url in {u for _, u in ENDPOINTS}
        if url not in cfg.operator_urls and not listed and not cfg.allow_custom_server:
            names = ", ".join(dict.fromkeys([*cfg.operator_urls, *(n for n, _ in ENDPOINTS)]))
            raise ConfigError(f"this demo runs queries only on the servers in its list ({names}); choose one of them")
        trusted = url in cfg.operator_urls
        if not trusted and not listed:
            # Answers of a typed server are not cached: one visitor's server cannot fill the disk or the cache.
            return make_client(url, geocoder=self.geocoder(), **cfg.overpass_options(url, public_only=True,
                                                                                     use_cache=False))
        geocoder = self.geocoder()
        with self._client_lock:
            if url not in self._clients:
                self._clients[url] = make_client(url, geocoder=geocoder,
                                                 **cfg.overpass_options(url, public_only=not trusted))
            return self._clients[url]

    def close(self) -> None:
        """Close the clients and remove the download folder (``launch`` calls it when the page stops)."""
        with self._client_lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()
        shutil.rmtree(self.download_dir, ignore_errors=True)

    def _export(self, result, name: str) -> Path | None:
        """The run's download in the demo's folder, of which only the newest ``kept_downloads`` stay
        (the page's file component serves its own copy)."""
        with self._downloads_lock:
            self.download_dir.mkdir(parents=True, exist_ok=True)
            folders = sorted(self.download_dir.glob("result-*"), key=lambda p: p.stat().st_mtime)
            for old in folders[: max(0, len(folders) - self.config.kept_downloads + 1)]:
                shutil.rmtree(old, ignore_errors=True)
        return export(result, self.download_dir, name)

    def _prepare(self) -> None:
        backend = self.compiler().backend()
        # The CPU default loads (or, the first time, trains) its model on first use.
        getattr(backend, "model", None)
        # What requests would otherwise load one at a time while the others wait: every request's
        # reading looks words up in the feature lexicon, whose files are read on first use.
        Lexicon.default().read_all()
        _import_what_gradio_imports_per_call()

    def background_note(self) -> str:
        """While the CPU default's full model trains behind its quick one: what the page says (else '')."""
        if not self.preparation.ready:  # asked only once the backend is made (making one may load a model)
            return ""
        backend = self.compiler().backend()
        if not getattr(backend, "quick_model", False):
            return ""
        if getattr(backend, "upgrade_error", ""):
            return (f"**Answers come from the quick first model:** training the full one failed "
                    f"({_md_escape(backend.upgrade_error)}); `geoql cpu train` trains it.")
        return (f"**Answers come from a quick first model** (trained on the first {QUICK_TRAINING['limit']:,} "
                "training requests) while the full model trains; it takes over by itself when it is done, "
                "and answers may then change.")

    def warm_up_in_background(self) -> Preparation:
        """Load (or, for the CPU default, build and train once) the backend while the page opens."""
        self.preparation.start()
        return self.preparation

    def notices(self) -> list[str]:
        """Why the first start will fail or be weaker, said on page load: a missing dataset
        the CPU model must be trained from, a registry the tag index cannot be built without."""
        with self._notices_lock:
            if self._notices is None:
                try:
                    self._notices = self._find_notices()
                except Exception:  # a check that cannot run is no reason to fail the page
                    log.exception("start checks failed")
                    self._notices = []
            return list(self._notices)

    def _find_notices(self) -> list[str]:
        try:
            backend = self.compiler().backend()
        except Exception as exc:
            return [f"The compiler backend cannot start: {_first_line(exc)}"]
        if not isinstance(backend, CpuBackend):
            return []
        model_dir = backend.model_dir or default_model_dir()
        if (Path(model_dir) / MODEL_MANIFEST).is_file():
            return []
        found = []
        cfg = self.config
        try:
            resolve_data_dir(backend.data_dir, download=False)
        except DatasetError as exc:
            host = cfg.dataset_url.split("/")[2] if "//" in cfg.dataset_url else cfg.dataset_url
            if not cfg.check_services:
                found.append(f"The CPU model is not trained yet, and the dataset it is trained from is not here: {exc} "
                             f"The first request will try to download it from {host}.")
            elif not _answers(cfg.dataset_url):
                found.append(f"The CPU model is not trained yet, and it cannot be: {exc} The download host ({host}) "
                             "does not answer either. Compiling will fail until the dataset is there.")
        try:
            load_manifest(backend.index_dir)
        except IndexMissingError:
            if cfg.check_services and not _answers(cfg.registry_url):
                found.append(f"The tag index is not built yet and the npm registry ({cfg.registry_url}) does not "
                             "answer, so it cannot be: the CPU default will train without tag hints (weaker tags). "
                             "Build it later with `geoql index build`.")
        return found

    # -- the actions
    def compile(self, request: str) -> CompileView:
        request = (request or "").strip()
        if not request:
            return CompileView(None, "", "", "", "Type a request first, e.g. “cafés with outdoor seating in Heidelberg”.")
        if len(request) > self.config.max_request_chars:
            return CompileView(None, "", "", "", f"**The request is too long:** {len(request):,} characters; this "
                               f"demo takes up to {self.config.max_request_chars:,}. Ask for one thing, e.g. "
                               "“cafés with outdoor seating in Heidelberg”.")
        started = time.perf_counter()
        try:
            compiler = self.compiler()
            self.preparation.wait()  # the first request waits for (or starts) the one-time preparation
            backend = compiler.backend()
            # A backend that is not thread-safe takes one request at a time; on the others, ordinary
            # requests take one of the slots and long ones their own lane, one at a time.
            long = len(request) > self.config.long_request_chars
            alone = not getattr(backend, "thread_safe", False)
            with self._long_lane if long else self._slots, self._compile_lock if alone else nullcontext():
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
        shown = _pretty(query)
        problems = syntax_problems(shown)
        said = getattr(compilation, "status", None)
        said = said if isinstance(said, str) and said else "Compiled."
        if problems:
            status = f"{said} The query has a syntax error (marked under it): fix it before running."
        else:
            status = f"{said} Edit the query if you like, then press **Run on Overpass**."
        return CompileView(
            shown,
            _format_tags(getattr(compilation, "tags", None), query),
            _format_examples(getattr(compilation, "examples", None)),
            _format_info(compilation, elapsed),
            status,
            self._explain(query, compiler, request),
            _format_unsupported(getattr(compilation, "unlicensed", None)),
            _format_doubts(compilation),
            _turbo_html(shown),
            _format_problems(shown, problems),
        )

    @staticmethod
    def _explain(query: str, compiler, request: str = "") -> str:
        """The query in words: in the request's language where ``overpassql.explain`` has
        it (English below it then), else in English."""
        # The compiler's tag index names the tags; without one, explain() looks in the default place.
        index_dir = getattr(getattr(compiler, "config", None), "index_dir", None)
        try:
            lang = guess_language(request) if request.strip() else "en"
        except Exception:  # a guess that fails is English
            lang = "en"
        try:
            english = explain(query, "en", index_dir=index_dir)
            if lang not in EXPLAINED_LANGUAGES or lang == "en":
                return english
            return explain(query, lang, index_dir=index_dir) + "\n\n_In English:_ " + english
        except Exception:  # the explanation is a help, never a reason to lose the query
            log.exception("explain failed for %r", query)
            return ""

    def check(self, query: str, request: str = "") -> tuple[str, str, str]:
        """For the query as it is being edited: (syntax errors marked, explanation, turbo link)."""
        query = query or ""
        if not query.strip():
            return "", "", ""
        if len(query) > self.config.max_query_chars:
            return self._too_long(query), "", ""
        problems = syntax_problems(query)
        words = "" if problems else self._explain(query, self._compiler, request or "")
        return _format_problems(query, problems), words, _turbo_html(query)

    def _too_long(self, query: str) -> str:
        return (f"**The query is too long:** {len(query):,} characters; this demo takes up to "
                f"{self.config.max_query_chars:,}. Nothing was sent.")

    def run(self, query: str, bbox: str | None = None, endpoint: str | None = None, request: str = "",
            on_wait: Optional[Callable[[str], None]] = None) -> RunView:
        """Run ``query`` (as written in the box) on ``endpoint``; ``request`` names the download.

        What the server sent reaches the page as text only: the status and the summary are
        escaped (:func:`_md_text`), the map draws it in a sandboxed frame (``geoql.app.geo``)."""
        bbox = (bbox or "").strip() or self.config.default_bbox
        try:
            view = parse_bbox(bbox)
        except ExpansionError:
            view = parse_bbox(self.config.default_bbox)
        empty_map = map_html({"type": "FeatureCollection", "features": []}, view=view)
        query = query or ""
        if len(query) > self.config.max_query_chars:
            return RunView(empty_map, [], "", None, self._too_long(query))
        try:
            client = self.client_for(endpoint)
        except ConfigError as exc:
            return RunView(empty_map, [], "", None, f"**The query did not run:** {_md_text(exc)}")
        try:
            result = run_query(query, bbox=bbox, client=client, on_wait=on_wait)
        except Exception as exc:  # run_query says what went wrong itself; this is a bug's last word
            log.exception("run failed for %r", query)
            return RunView(empty_map, [], "", None, f"**Something went wrong while running the query:** {_md_text(_first_line(exc))}")
        if not result.ok:
            head, _, rest = result.message.partition(": ")
            status = f"**{_md_text(head)}:** {_md_text(rest)}" if rest else _md_text(result.message)
            return RunView(empty_map, [], "", None, status, _format_problems(query, result.problems), result.sent)
        try:
            geojson = result.geojson()
            path = self._export(result, request or _name_from(query))
            summary = _md_text(result.summary(geojson))
            shown = geojson
            if len(geojson["features"]) > self.config.max_map_features:
                # A browser tab chokes on huge inline layers; the download has everything.
                shown = {"type": "FeatureCollection", "features": geojson["features"][: self.config.max_map_features]}
                summary += f" (the map shows the first {self.config.max_map_features}; the download has all)"
            if result.is_count:
                summary = f"**{summary}**"
            rows = element_rows(result.data, self.config.max_table_rows)
            drawn = map_html(shown, view=view)
        except Exception as exc:  # read_answer leaves nothing unreadable; this is a bug's last word
            log.exception("reading the result failed for %r", query)
            return RunView(empty_map, [], "", None, f"**The answer could not be read:** {_md_text(_first_line(exc))}",
                           "", True)
        return RunView(drawn, rows, summary, str(path) if path else None, _md_text(result.message), "", True)

    def compile_and_run(self, request: str, bbox: str | None = None, endpoint: str | None = None,
                        on_wait: Optional[Callable[[str], None]] = None) -> tuple[CompileView, RunView | None]:
        compiled = self.compile(request)
        if not compiled.query:
            return compiled, None
        if compiled.query_errors:  # never sent: the page shows where it does not parse
            return compiled, None
        return compiled, self.run(compiled.query, bbox, endpoint, request, on_wait)


def _name_from(query: str) -> str:
    pairs, keys = _query_tags(query)
    first = sorted(pairs)[:1] or sorted(keys)[:1]
    return first[0].split("=")[-1] if first else ""


# ---------------------------------------------------------------- Gradio

CSS = """
#query textarea { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px;
                  white-space: pre; overflow-x: auto; line-height: 1.45; }
#query-errors pre, #query-errors code { color: #b00020; }
#doubts, #unsupported { color: #8a4b00; }
#readiness { border-left: 4px solid #2a7ab0; padding-left: 8px; }
#banner { border-left: 4px solid #b00020; padding-left: 8px; }
"""


def _endpoint_choices(config: DemoConfig) -> list[tuple[str, str]]:
    """The operator's servers first (the page's default among them), then the public list."""
    listed = {url for _, url in ENDPOINTS}
    own = [u for u in config.operator_urls if u not in listed]
    labels = ["this server's default"] + ["this server's"] * (len(own) - 1)
    if config.overpass_url in listed:
        labels = ["this server's"] * len(own)
    return ([(f"{label} — {url}", url) for label, url in zip(labels, own)]
            + [(f"{name} — {url}", url) for name, url in ENDPOINTS])


def build_app(service: DemoService):
    """The Gradio Blocks app around ``service``."""
    import gradio as gr

    def table(rows):
        return {"headers": TABLE_HEADERS, "data": rows}

    def compile_outputs(view: CompileView):
        if view.query is None:  # the query box keeps its query, and so do the words about it
            return (gr.skip(), view.tags, view.examples, view.info, view.status, gr.skip(), gr.skip(), gr.skip(),
                    gr.skip(), gr.skip())
        return (view.query, view.tags, view.examples, view.info, view.status, view.explanation, view.unsupported,
                view.doubts, view.turbo, view.query_errors)

    def run_outputs(view: RunView):
        return view.map, table(view.rows), view.summary, view.download, view.status, view.query_errors

    def counting_down(call, finish, n_outputs: int, status_at: int):
        """Run ``call(on_wait)`` in a thread; while it waits for a retry, show the countdown."""
        heard: queue.Queue = queue.Queue()
        box: dict = {}

        def work():
            box["view"] = call(heard.put)

        worker = threading.Thread(target=work, name="geoql-ui-run", daemon=True)
        worker.start()
        while worker.is_alive():
            try:
                message = heard.get(timeout=0.2)
            except queue.Empty:
                continue
            while not heard.empty():
                message = heard.get_nowait()
            update = [gr.skip()] * n_outputs
            update[status_at] = "↻ " + _md_text(message)  # it names the server, which a visitor may have typed
            yield tuple(update)
        worker.join()
        yield finish(box["view"])

    def on_compile(request):
        return compile_outputs(service.compile(request))

    def on_run(query, bbox, endpoint, request):
        yield from counting_down(lambda on_wait: service.run(query, bbox, endpoint, request, on_wait),
                                 run_outputs, len(RUN_OUTPUTS), RUN_OUTPUTS.index("status"))

    def both(pair):
        compiled, ran = pair
        shown = compile_outputs(compiled)
        if ran is None:
            return (*shown, gr.skip(), gr.skip(), gr.skip(), gr.skip())
        status = compiled.status.replace(" Edit the query if you like, then press **Run on Overpass**.", "")
        merged = list(shown)
        merged[COMPILE_OUTPUTS.index("status")] = status + " " + ran.status
        if ran.query_errors:
            merged[COMPILE_OUTPUTS.index("query_errors")] = ran.query_errors
        return (*merged, *run_outputs(ran)[:4])

    def on_compile_and_run(request, bbox, endpoint):
        n = len(COMPILE_OUTPUTS) + 4
        yield from counting_down(lambda on_wait: service.compile_and_run(request, bbox, endpoint, on_wait),
                                 both, n, COMPILE_OUTPUTS.index("status"))

    def on_check(query, request):
        errors, words, link = service.check(query, request)
        uses_box = "{{bbox}}" in (query or "") or "{{center}}" in (query or "")
        info = ("this query uses it" if uses_box else "not used by this query") if (query or "").strip() else None
        return errors, words, link, gr.update(info=info)

    def readiness():
        prep = service.preparation
        waiting = prep.state == "preparing"
        why = " (waits: getting ready)"
        notices = service.notices()
        banner = "\n\n".join(f"⚠ {_md_escape(n)}" for n in notices)
        return (
            prep.markdown() if prep.state != "idle" else "",
            banner,
            gr.update(value="Compile" + (why if waiting else ""), interactive=not waiting),
            gr.update(value="Compile & run" + (why if waiting else ""), interactive=not waiting),
            gr.Timer(active=not prep.ready or bool(prep.background())),
        )

    default_view = parse_bbox(service.config.default_bbox)
    # delete_cache: Gradio's copies of the downloads go after an hour, and all of them when the page stops.
    with gr.Blocks(title="GeoQL: plain words to OverpassQL", analytics_enabled=False,
                   delete_cache=(600, 3600)) as demo:
        gr.Markdown(
            "# GeoQL\nAsk for places in plain words; GeoQL writes the "
            "[Overpass](https://wiki.openstreetmap.org/wiki/Overpass_API) query, says what it does and shows the result."
        )
        banner = gr.Markdown(elem_id="banner")
        ready_md = gr.Markdown(elem_id="readiness")
        with gr.Row():
            with gr.Column(scale=3):
                request = gr.Textbox(label="Request", placeholder=EXAMPLES[0], lines=2, elem_id="request",
                                     max_length=service.config.max_request_chars)
                with gr.Row():
                    compile_btn = gr.Button("Compile", elem_id="compile")
                    go_btn = gr.Button("Compile & run", variant="primary", elem_id="compile-and-run")
                gr.Examples(EXAMPLES, inputs=[request])
            with gr.Column(scale=2):
                info = gr.Markdown(elem_id="info")
        status = gr.Markdown(elem_id="status")
        doubts = gr.Markdown(elem_id="doubts")
        unsupported = gr.Markdown(elem_id="unsupported")
        with gr.Row():
            with gr.Column(scale=2):
                # A plain text box, not a code editor: it grows with the query, and it does not
                # close brackets by itself (gr.Code's editor does, and cannot be told not to).
                query = gr.Textbox(label="OverpassQL (editable)", lines=3, max_lines=40, elem_id="query",
                                   buttons=["copy"], autoscroll=False,
                                   html_attributes=gr.InputHTMLAttributes(autocapitalize="off", autocorrect="off",
                                                                          spellcheck=False, autocomplete="off"))
                query_errors = gr.Markdown(elem_id="query-errors")
                explanation = gr.Markdown(elem_id="explanation")
                with gr.Row():
                    custom = service.config.allow_custom_server  # else the list is all a visitor may choose
                    endpoint = gr.Dropdown(choices=_endpoint_choices(service.config),
                                           value=service.config.overpass_url, allow_custom_value=custom,
                                           label="Overpass server" + (" (or type a URL)" if custom else ""),
                                           elem_id="endpoint", scale=3)
                    run_btn = gr.Button("Run on Overpass", elem_id="run", scale=1)
                bbox = gr.Textbox(label="Map area for {{bbox}}: south,west,north,east — follows the map (drag, zoom, "
                                  "or shift-drag a box)", value=service.config.default_bbox, elem_id="bbox", max_lines=1)
                turbo = gr.HTML(elem_id="turbo")
            with gr.Column(scale=3):
                map_view = gr.HTML(map_html({"type": "FeatureCollection", "features": []}, view=default_view),
                                   elem_id="map")
        summary = gr.Markdown(elem_id="summary")
        with gr.Row():
            # datatype "str": the cells are text (an answer's tags are data, never markup)
            rows = gr.Dataframe(headers=TABLE_HEADERS, label="Elements (untagged nodes of ways and members of "
                                "relations are folded into them)", interactive=False, wrap=True, elem_id="elements",
                                datatype="str")
        download = gr.File(label="Download (GeoJSON, or CSV for a count)", elem_id="download", height=90,
                           interactive=False)
        with gr.Accordion("Candidate tags and few-shot examples used", open=False):
            with gr.Row():
                tags = gr.Markdown()
                examples = gr.Markdown()
        timer = gr.Timer(1.0)

        by_name = {"query": query, "tags": tags, "examples": examples, "info": info, "status": status,
                   "explanation": explanation, "unsupported": unsupported, "doubts": doubts, "turbo": turbo,
                   "query_errors": query_errors, "map": map_view, "table": rows, "summary": summary,
                   "download": download}
        compile_out = [by_name[n] for n in COMPILE_OUTPUTS]
        run_out = [by_name[n] for n in RUN_OUTPUTS]
        both_out = compile_out + [map_view, rows, summary, download]
        ready_out = [ready_md, banner, compile_btn, go_btn, timer]
        compile_btn.click(on_compile, [request], compile_out, api_name="compile")
        request.submit(on_compile_and_run, [request, bbox, endpoint], both_out, api_visibility="private")
        run_btn.click(on_run, [query, bbox, endpoint, request], run_out, api_name="run")
        go_btn.click(on_compile_and_run, [request, bbox, endpoint], both_out, api_name="compile_and_run")
        query.change(on_check, [query, request], [query_errors, explanation, turbo, bbox], api_visibility="private",
                     show_progress="hidden")
        timer.tick(readiness, None, ready_out, api_visibility="private", show_progress="hidden")
        demo.load(readiness, None, ready_out, api_visibility="private", show_progress="hidden")
    demo.queue(default_concurrency_limit=service.config.concurrency)
    return demo


def token_check(token: str) -> Callable[[str, str], bool]:
    """Gradio's ``auth``: any user name, ``token`` as the password (compared in constant time)."""
    expected = token.encode("utf-8")

    def check(user: str, password: str) -> bool:
        return hmac.compare_digest(str(password).encode("utf-8"), expected)

    return check


def launch(service: DemoService, *, host: str = "127.0.0.1", port: int | None = 7860, block: bool = True,
           auth_token: str | None = None):
    """Start the app; returns the Blocks object (already serving when ``block`` is False).

    ``auth_token``: a shared secret every visitor must give (Gradio's login page: any user name,
    the token as the password; ``gradio_client.Client(url, auth=(name, token))``). When the
    server stops, the service closes (its clients, its download folder)."""
    demo = build_app(service)
    # The start checks may ask two servers (seconds): begun now, they are done when the page loads.
    threading.Thread(target=service.notices, name="geoql-ui-checks", daemon=True).start()

    @asynccontextmanager
    async def lifespan(app):
        yield
        service.close()

    demo.launch(
        server_name=host,
        server_port=port,
        prevent_thread_lock=not block,
        show_error=False,
        quiet=not block,
        allowed_paths=[str(service.download_dir)],
        css=CSS,
        head=MAP_MESSAGE_LISTENER,  # the sandboxed map tells the page its view
        auth=token_check(auth_token) if auth_token else None,
        auth_message="This GeoQL demo asks for its shared secret: any user name, the secret as the password."
        if auth_token else None,
        app_kwargs={"lifespan": lifespan},
    )
    return demo
