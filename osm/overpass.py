"""Overpass API client shared by the demo, the execution metrics and rewards.

One request path for everything that runs a query:

1. :func:`geoql.osm.turbo.expand` replaces overpass-turbo shortcuts (``{{bbox}}``,
   ``{{geocodeArea:X}}``, ``{{date:1day}}``, ...) with real values;
2. :func:`prepare_query` sets the settings the official OverpassNL execution
   evaluation sets: ``[timeout:300]``, ``maxsize`` capped at 1 GiB and
   ``[out:json]``;
3. :class:`OverpassClient` sends the query (HTTP GET ``data=``, through
   :func:`geoql.osm.http.fetch`: a total deadline and a size cap per answer, no
   redirects, and with ``public_only`` public addresses only), retries only
   where retrying can help (429 rate limiting, 504 gateway timeouts, refused
   connections), classifies errors the way Overpass reports them (HTML error
   page for parse/static errors, a ``remark`` for runtime errors) and keeps
   deterministic answers in an SQLite cache (:mod:`geoql.osm.cache`) keyed by
   the final query text.

>>> prepare_query("node[amenity=cafe]({{bbox}});out;")
'[out:json][timeout:300];node[amenity=cafe]({{bbox}});out;'
>>> prepare_query("[out:xml][timeout:25][maxsize:2147483648];way;out;")
'[out:json][timeout:300][maxsize:1073741824];way;out;'
>>> classify(200, '{"elements": [], "remark": "runtime error: Query timed out in \\\\"query\\\\" at line 1 after 3 seconds."}').kind
'runtime_timeout'
"""

from __future__ import annotations

import html
import json
import re
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geoql.core.errors import ConfigError, GeoqlError
from geoql.core.paths import user_dir
from geoql.osm.cache import SqliteStore
from geoql.osm.http import HttpError, fetch as http_fetch, typed_url_problem
from geoql.osm.nominatim import USER_AGENT, Nominatim, NominatimConfig
from geoql.osm.turbo import ExpansionError, expand as expand_shortcuts

__all__ = [
    "DEFAULT_OVERPASS_URL",
    "EVAL_TIMEOUT_S",
    "EVAL_MAXSIZE",
    "OverpassConfig",
    "OverpassClient",
    "OverpassError",
    "OverpassResult",
    "RawResponse",
    "RetryWait",
    "classify",
    "prepare_query",
]

DEFAULT_OVERPASS_URL = "https://overpass-api.de/api/interpreter"
# The official evaluation rewrites every query to these values "to have
# consistent evaluation"; results differ with other limits, so we keep them.
EVAL_TIMEOUT_S = 300
EVAL_MAXSIZE = 1073741824
# The official client waits this long for an answer before giving up.
OFFICIAL_HTTP_TIMEOUT_S = 500
# The most of one answer that is read: the server's own memory cap (maxsize), which the JSON of
# its result rarely passes; the demo reads far less (``geoql.app.ui.DemoConfig.max_answer_mb``).
MAX_ANSWER_BYTES = EVAL_MAXSIZE

_OUT_SETTING = re.compile(r"\[out:[^\]]+\]")
# Queries longer than this (characters) are sent by POST instead of GET.
_MAX_GET_QUERY = 2000


def prepare_query(query: str, *, timeout: int = EVAL_TIMEOUT_S, maxsize: int = EVAL_MAXSIZE) -> str:
    """Apply the official evaluation's settings: timeout, capped maxsize, JSON output.

    Only the first ``maxsize:``/``timeout:`` value found is rewritten (every
    textual copy of it), as the official code does; a query without a timeout
    gets a ``[timeout:N]`` setting in front.

    >>> prepare_query("[out:csv(name)];node(1);out;")
    '[timeout:300][out:json];node(1);out;'
    """
    query = query.strip()
    found = re.search(r"maxsize:(\d+)", query)
    if found:
        current = found.group(1)
        query = query.replace("maxsize:" + current, "maxsize:" + str(min(int(current), maxsize)))
    found = re.search(r"timeout:(\d+)", query)
    if found:
        query = query.replace("timeout:" + found.group(1), "timeout:" + str(timeout))
    else:
        # A settings block must end with ';' before the first statement.
        if not query.startswith("["):
            query = ";" + query
        query = f"[timeout:{timeout}]" + query
    query = _OUT_SETTING.sub("[out:json]", query)
    if "[out:json]" not in query:
        query = "[out:json]" + query
    return query


# ---------------------------------------------------------------- errors


@dataclass(eq=False)
class OverpassError(GeoqlError):
    """A query that did not produce a usable answer, in words a person understands.

    ``kind`` is one of: ``parse_error``, ``static_error``, ``runtime_timeout``,
    ``memory``, ``runtime_error``, ``rate_limited``, ``gateway_timeout``,
    ``timeout`` (no whole answer in time), ``unreachable``, ``interrupted`` (the
    answer broke off), ``too_large`` (past ``max_answer_bytes``), ``redirect``,
    ``not_public`` (a typed server that is not a public address), ``http_error``,
    ``bad_response``, ``expansion`` (a shortcut could not be expanded).

    ``detail`` is what the server said in Overpass' own forms (the error lines of its
    error page, its ``remark``), never a raw excerpt of an answer.
    """

    kind: str
    message: str
    detail: str = ""
    status: int = 0

    def __str__(self) -> str:
        return self.message + (f" Server said: {self.detail}" if self.detail else "")

    @property
    def retryable(self) -> bool:
        """Would the same request later plausibly succeed?"""
        return self.kind in RETRYABLE


RETRYABLE = frozenset({"rate_limited", "gateway_timeout", "unreachable"})

_HTML_ERROR = re.compile(r"<strong[^>]*>\s*Error\s*</strong>\s*:?\s*(.*?)</p>", re.S | re.I)
_XML_REMARK = re.compile(r"<remark>(.*?)</remark>", re.S)


def _server_messages(text: str) -> list[str]:
    """The error lines of an Overpass HTML error page, unescaped and untagged."""
    lines = [html.unescape(re.sub(r"<[^>]+>", "", m)).strip() for m in _HTML_ERROR.findall(text)]
    return [line for line in lines if line]


def _remark(text: str, data: dict | None) -> str | None:
    if data is not None:
        remark = data.get("remark")
        return str(remark).strip() if remark else None
    found = _XML_REMARK.search(text)
    return html.unescape(found.group(1)).strip() if found else None


def classify(status: int, text: str, data: dict | None = None) -> OverpassError | None:
    """Turn one Overpass answer into an :class:`OverpassError`, or ``None`` when it is usable.

    ``data`` is the parsed JSON when the caller already has it.
    """
    is_json = text.lstrip().startswith("{")
    messages = _server_messages(text) if not is_json else []
    joined = " ".join(messages)
    # Dispatcher refusals come as an HTML page (429/504, some mirrors with 200);
    # a JSON result that merely mentions the words is a result.
    page = "" if is_json else text[:5000]
    if status == 429 or "request_read_and_idx::rate_limited" in page:
        return OverpassError(
            "rate_limited",
            "The Overpass server is limiting requests from this address; wait a minute and try again.",
            joined,
            status,
        )
    if status == 504 or "request_read_and_idx::timeout" in page:
        return OverpassError(
            "gateway_timeout",
            "The Overpass server is too busy to take the query right now; try again in a moment.",
            joined,
            status,
        )
    if "parse error:" in joined:
        return OverpassError(
            "parse_error", "The query is not valid Overpass QL (syntax error).", joined, status
        )
    if "static error:" in joined:
        return OverpassError(
            "static_error",
            "The query is well-formed but Overpass rejects it (wrong setting, value or statement use).",
            joined,
            status,
        )
    if status != 200:
        # Only Overpass' own error lines: an arbitrary page (a proxy's, a login form) is not shown.
        return OverpassError("http_error", f"The Overpass server answered HTTP {status}.", joined, status)
    if data is None and is_json:
        try:
            data = json.loads(text)
        except ValueError:
            return OverpassError("bad_response", "The Overpass server sent a broken JSON answer.", "", status)
    remark = _remark(text, data)
    if not (remark and "runtime error" in remark) and "runtime error" in joined:
        remark = joined  # the HTML page form of a runtime error
    if remark and "runtime error" in remark:
        if "timed out" in remark:
            return OverpassError(
                "runtime_timeout",
                "The query ran out of time on the server; narrow the area or the filters.",
                remark,
                status,
            )
        if "out of memory" in remark:
            return OverpassError(
                "memory",
                "The query needed more memory than the server allows; narrow the area or the filters.",
                remark,
                status,
            )
        return OverpassError("runtime_error", "The query failed while running on the server.", remark, status)
    if messages:
        return OverpassError("runtime_error", "The Overpass server reported an error.", joined, status)
    return None


def _megabytes(n: int) -> str:
    """``1 MB`` style, for messages.

    >>> _megabytes(20 * 2**20), _megabytes(2**30)
    ('20 MB', '1024 MB')
    """
    return f"{n / 2**20:.0f} MB" if n >= 2**20 else f"{n:,} bytes"


# ---------------------------------------------------------------- client


@dataclass
class OverpassConfig:
    url: str = field(default=DEFAULT_OVERPASS_URL, metadata={"help": "Overpass API interpreter endpoint"})
    query_timeout_s: int = field(
        default=EVAL_TIMEOUT_S, metadata={"help": "[timeout:N] written into every query (official eval: 300)"}
    )
    maxsize: int = field(default=EVAL_MAXSIZE, metadata={"help": "cap for [maxsize:N] (official eval: 1 GiB)"})
    http_timeout_s: float = field(
        default=OFFICIAL_HTTP_TIMEOUT_S, metadata={"help": "seconds to wait for the whole answer (a total, not per read)"}
    )
    max_answer_bytes: int = field(default=MAX_ANSWER_BYTES, metadata={
        "help": "stop reading an answer past this many bytes (after decompression) with a clear error"})
    public_only: bool = field(default=False, metadata={
        "help": "a server someone typed: http(s) on its standard port, no user name or query string, and only "
                "public addresses after DNS resolution (connected to the checked address); the operator's own "
                "endpoints leave it off"})
    max_retries: int = field(default=3, metadata={"help": "retries after 429/504/connection errors"})
    backoff_s: float = field(default=2.0, metadata={"help": "first retry delay; doubles each retry"})
    cache_dir: str | None = field(
        default=None, metadata={"help": "directory of overpass_cache.sqlite (default: user cache dir)"}
    )
    use_cache: bool = field(default=True, metadata={"help": "read and write the result cache"})
    user_agent: str = field(default=USER_AGENT, metadata={"help": "HTTP User-Agent header"})

    def __post_init__(self) -> None:
        if not re.match(r"^https?://", self.url or ""):
            raise ConfigError(
                f"Overpass URL {self.url!r} must start with http:// or https://, "
                f"e.g. {DEFAULT_OVERPASS_URL}"
            )
        if self.query_timeout_s < 1:
            raise ConfigError(f"query_timeout_s must be >= 1 (got {self.query_timeout_s}); the official value is 300")
        if self.maxsize < 1:
            raise ConfigError(f"maxsize must be >= 1 (got {self.maxsize}); the official cap is {EVAL_MAXSIZE}")
        if self.http_timeout_s <= 0:
            raise ConfigError(f"http_timeout_s must be > 0 (got {self.http_timeout_s}); e.g. 500")
        if self.max_answer_bytes < 1:
            raise ConfigError(f"max_answer_bytes must be >= 1 (got {self.max_answer_bytes})")
        problem = typed_url_problem(self.url) if self.public_only else None
        if problem:
            raise ConfigError(f"Overpass URL {self.url!r}: {problem}")
        if self.max_retries < 0:
            raise ConfigError(f"max_retries must be >= 0 (got {self.max_retries}); use 0 to never retry")
        if self.backoff_s < 0:
            raise ConfigError(f"backoff_s must be >= 0 (got {self.backoff_s})")


@dataclass
class RetryWait:
    """A retry the client is waiting for: passed to ``on_wait`` about once a second."""

    error: "OverpassError"  # why the last attempt failed
    retry: int  # the retry it waits for, 1-based
    retries: int  # the most it makes (``max_retries``)
    left_s: float  # seconds until it is sent


@dataclass
class RawResponse:
    """What the server sent for one final query (or why nothing came)."""

    query: str
    status: int  # 0 when no HTTP answer arrived
    text: str
    elapsed_s: float = 0.0
    attempts: int = 0
    from_cache: bool = False
    error: OverpassError | None = None


@dataclass
class OverpassResult:
    """A successful answer: the parsed Overpass JSON and where it came from."""

    query: str
    data: dict[str, Any]
    elapsed_s: float
    from_cache: bool
    remark: str | None = None

    @property
    def elements(self) -> list[dict[str, Any]]:
        return self.data.get("elements") or []


class OverpassClient:
    """Run queries against one Overpass endpoint.

    ``run`` is the high-level call (expand shortcuts, prepare, execute, parse);
    ``fetch`` sends an already final query text and returns the raw answer.
    ``geocoder`` answers the ``{{geocodeArea:...}}`` shortcuts; by default a
    :class:`~geoql.osm.nominatim.Nominatim` at the public endpoint that shares
    ``cache_dir``. To expand the benchmark's queries as its authors did, pass one
    seeded with OverpassNL's answers (``geoql.eval.dataset.benchmark_geocodes``).
    """

    CACHE_FILE = "overpass_cache.sqlite"

    def __init__(self, config: OverpassConfig | None = None, *, geocoder=None, **overrides):
        if config is None:
            config = OverpassConfig(**overrides)
        elif overrides:
            raise TypeError("pass either config or keyword overrides, not both")
        self.config = config
        self._geocoder = geocoder
        self._store: SqliteStore | None = None
        self._store_lock = threading.Lock()

    # -- plumbing
    @property
    def store(self) -> SqliteStore | None:
        if not self.config.use_cache:
            return None
        with self._store_lock:
            if self._store is None:
                directory = Path(self.config.cache_dir) if self.config.cache_dir else user_dir("cache")
                self._store = SqliteStore(directory / self.CACHE_FILE, "results")
        return self._store

    @property
    def geocoder(self):
        if self._geocoder is None:
            self._geocoder = Nominatim(NominatimConfig(cache_dir=self.config.cache_dir))
        return self._geocoder

    def _cache_key(self, query: str) -> str:
        return self.config.url + "\n" + query

    # -- public API
    def fetch(self, query: str, *, use_cache: bool = True, on_wait=None) -> RawResponse:
        """Send ``query`` exactly as given; retries transient failures with backoff.

        ``on_wait(RetryWait)`` is called about once a second while a retry waits
        (a countdown for the person who pressed Run); it must return quickly.

        Only answers that will not change on a retry are cached: usable
        results and parse/static errors. Timeouts, rate limiting and
        unreachable servers are never cached.
        """
        store = self.store if use_cache else None
        key = self._cache_key(query)
        if store is not None:
            blob = store.get(key)
            if blob is not None:
                status, text = json.loads(zlib.decompress(blob).decode("utf-8"))
                return RawResponse(query, status, text, 0.0, 0, True, classify(status, text))
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            retry_after = None
            try:
                # Long URLs are cut by proxies; Overpass takes the same form by POST.
                answer = http_fetch(self.config.url, {"data": query}, post=len(query) > _MAX_GET_QUERY,
                                    headers={"User-Agent": self.config.user_agent},
                                    deadline_s=self.config.http_timeout_s, max_bytes=self.config.max_answer_bytes,
                                    public_only=self.config.public_only)
                status, text = answer.status, answer.text
                error = classify(status, text)
                retry_after = answer.headers.get("retry-after")
            except HttpError as exc:
                status, text = exc.status, ""
                error = self._http_failure(exc)
            if error is None or not error.retryable or attempt > self.config.max_retries:
                break
            self._wait(self._delay(attempt, retry_after), error, attempt, on_wait)
        raw = RawResponse(query, status, text, time.monotonic() - started, attempt, False, error)
        if store is not None and (error is None or error.kind in ("parse_error", "static_error")):
            store.put(key, zlib.compress(json.dumps([status, text]).encode("utf-8")))
        return raw

    def _http_failure(self, exc: HttpError) -> OverpassError:
        """No usable answer, in words; what the server sent (if anything) is not repeated."""
        url, why = self.config.url, f" ({exc.reason})" if exc.reason else ""
        messages = {
            "timeout": f"No whole answer from {url} within {self.config.http_timeout_s:g} s; the query is too heavy "
                       "or the server is overloaded.",
            # No server said anything: the reason is the connection's, not a server message.
            "unreachable": f"No server answered at {url}{why}.",
            "interrupted": f"The answer from {url} broke off before its end.",
            "too_large": f"The answer from {url} is larger than {_megabytes(self.config.max_answer_bytes)}, more than "
                         "GeoQL reads here; narrow the area or the filters, or count the results (out count;).",
            "redirect": f"{url} answered with a redirect (HTTP {exc.status}); GeoQL does not follow redirects: "
                        "give the address of the interpreter itself.",
            "not_public": f"{url} is not a public address; queries go to public Overpass servers only.",
            "bad_response": f"{url} did not answer in a form GeoQL reads{why}.",
        }
        return OverpassError(exc.kind, messages.get(exc.kind, f"No usable answer from {url}{why}."), status=exc.status)

    def _wait(self, delay: float, error: OverpassError, attempt: int, on_wait) -> None:
        if on_wait is None:
            time.sleep(delay)
            return
        end = time.monotonic() + delay
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return
            try:
                on_wait(RetryWait(error, attempt, self.config.max_retries, left))
            except Exception:  # a broken display must not stop the run
                pass
            time.sleep(min(1.0, left))

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after and retry_after.strip().isdigit():
            return min(float(retry_after), 60.0)
        return self.config.backoff_s * (2 ** (attempt - 1))

    def prepare(
        self, query: str, *, bbox: str | None = None, center: str | None = None, expand: bool = True, now=None
    ) -> str:
        """Expanded (real overpass-turbo semantics) and prepared final query text.

        ``now`` (a timezone-aware datetime) is the reference for ``{{date:...}}``
        (default: the current time). Raises :class:`OverpassError` (kind
        ``expansion``) when a shortcut cannot be expanded.
        """
        if expand and "{{" in query:
            try:
                query = expand_shortcuts(query, geocoder=self.geocoder, bbox=bbox, center=center, now=now)
            except ExpansionError as exc:
                raise OverpassError("expansion", str(exc)) from None
        return prepare_query(query, timeout=self.config.query_timeout_s, maxsize=self.config.maxsize)

    def run(
        self,
        query: str,
        *,
        bbox: str | None = None,
        center: str | None = None,
        expand: bool = True,
        use_cache: bool = True,
        now=None,
        on_wait=None,
    ) -> OverpassResult:
        """Expand, prepare and execute ``query``; raise :class:`OverpassError` unless it worked.

        ``on_wait``: see :meth:`fetch`."""
        if not query or not query.strip():
            raise OverpassError("parse_error", "The query is empty; write or compile a query first.")
        final = self.prepare(query, bbox=bbox, center=center, expand=expand, now=now)
        raw = self.fetch(final, use_cache=use_cache, on_wait=on_wait)
        if raw.error is not None:
            raise raw.error
        try:
            data = json.loads(raw.text)
        except ValueError:
            raise OverpassError("bad_response", "The Overpass server did not send JSON.", "", raw.status) from None
        if not isinstance(data, dict):
            raise OverpassError("bad_response", "The Overpass server sent an unexpected JSON answer.", "", raw.status)
        return OverpassResult(final, data, raw.elapsed_s, raw.from_cache, _remark(raw.text, data))

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
