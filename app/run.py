"""Running a query: the one path the demo, ``Compilation.run()`` and ``geoql run`` share.

1. check the text with the project's parser: a query that does not parse is never sent,
   and its errors are given by line and column (:func:`syntax_problems`);
2. expand the overpass-turbo placeholders and prepare it (``geoql.osm.overpass``);
3. send it, retrying where a retry can help, with a countdown (``on_wait``);
4. hand back a :class:`RunResult` whose ``message`` says in words what happened.

The wording lives here only, so the page and the command line say the same things.

>>> str(syntax_problems('node["amenity"="cafe"({{bbox}});out;')[0])
"line 1, column 22: ']' expected - '(' found."
>>> slug("Benches in Zürich!")
'benches-in-zurich'
>>> turbo_link('node({{bbox}});out;')
'https://overpass-turbo.eu/?Q=node%28%7B%7Bbbox%7D%7D%29%3Bout%3B'
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional
from urllib.parse import quote

import overpassql

from geoql.app.geo import counts, is_count, read_answer, summarize, to_geojson, write_counts, write_geojson
from geoql.core.errors import ConfigError
from geoql.eval.dataset import benchmark_geocodes
from geoql.nl.text import fold
from geoql.osm.nominatim import DEFAULT_NOMINATIM_URL, Nominatim, NominatimConfig
from geoql.osm.overpass import DEFAULT_OVERPASS_URL, OverpassClient, OverpassConfig, OverpassError, RetryWait

__all__ = ["ENDPOINTS", "SyntaxProblem", "RunResult", "syntax_problems", "mark_problems", "make_client", "make_geocoder",
           "run_query", "wait_message", "turbo_link", "slug", "export", "endpoint_url"]

# Public Overpass instances (the OSM wiki's list of ones open to everyone), by host name.
ENDPOINTS: tuple[tuple[str, str], ...] = (
    ("overpass-api.de", DEFAULT_OVERPASS_URL),
    ("overpass.kumi.systems", "https://overpass.kumi.systems/api/interpreter"),
    ("overpass.private.coffee", "https://overpass.private.coffee/api/interpreter"),
    ("maps.mail.ru", "https://maps.mail.ru/osm/tools/overpass/api/interpreter"),
)
TURBO_URL = "https://overpass-turbo.eu/"


def endpoint_url(choice: str | None) -> str:
    """A listed instance's host name (or its URL), or a custom ``http(s)://`` URL -> the URL.

    >>> endpoint_url("maps.mail.ru")
    'https://maps.mail.ru/osm/tools/overpass/api/interpreter'
    """
    text = (choice or "").strip()
    if not text:
        return DEFAULT_OVERPASS_URL
    for name, url in ENDPOINTS:
        if text in (name, url):
            return url
    if not re.match(r"^https?://\S+$", text):
        raise ConfigError(
            f"Overpass endpoint {text!r} is neither a listed server ({', '.join(n for n, _ in ENDPOINTS)}) "
            f"nor a URL: a URL must start with http:// or https://, e.g. https://host/api/interpreter"
        )
    return text


# ---------------------------------------------------------------- checking


@dataclass(frozen=True)
class SyntaxProblem:
    """Why the query does not parse, where: ``line`` and ``column`` count from 1 in the text
    as written (placeholders and all); ``column`` is 0 where only the line is known."""

    line: int
    column: int
    message: str
    kind: str = "parse"

    def __str__(self) -> str:
        where = f"line {self.line}" + (f", column {self.column}" if self.column else "")
        return f"{where}: {self.message}"


def syntax_problems(query: str) -> list[SyntaxProblem]:
    """Every reason ``overpassql.check`` finds not to send ``query``; empty when it may go.

    Positions come from the parse that keeps the placeholders (``check`` replaces them
    first, which shifts the columns); a static error (a valid clause used wrongly) has
    its line only."""
    if not (query or "").strip():
        return [SyntaxProblem(1, 0, "the query is empty")]
    problems = overpassql.check(query)
    if not problems:
        return []
    own = overpassql.parse(query, collect_errors=True).errors
    found = own if own else problems
    seen: set[tuple] = set()
    out = []
    for d in found:
        column = d.column if d.kind == "parse" else 0
        key = (d.line, column, d.message)
        if key not in seen:
            seen.add(key)
            out.append(SyntaxProblem(d.line, column, d.message, d.kind))
    return out


def mark_problems(query: str, problems: list[SyntaxProblem], limit: int = 3) -> str:
    """The lines of ``query`` with a problem, a caret under its column and the message.

    >>> print(mark_problems('node(1);\\nnod(2);', syntax_problems('node(1);\\nnod(2);')))
    line 2, column 1: Unknown type "nod"
       2 | nod(2);
         | ^
    """
    lines = query.split("\n")
    out = []
    for p in problems[:limit]:
        out.append(str(p))
        if 1 <= p.line <= len(lines):
            out.append(f"{p.line:>4} | {lines[p.line - 1]}")
            if p.column:
                out.append("     | " + " " * (p.column - 1) + "^")
    if len(problems) > limit:
        out.append(f"(and {len(problems) - limit} more)")
    return "\n".join(out)


def _syntax_message(problems: list[SyntaxProblem]) -> str:
    first = problems[0]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    what = "is not valid Overpass QL" if first.kind == "parse" else "is not accepted by Overpass"
    return f"The query {what} at {first}{more}. Nothing was sent: fix it and run it again."


# ---------------------------------------------------------------- running


@dataclass
class RunResult:
    """What happened to one run. ``ok`` with ``data`` (Overpass JSON), or ``kind`` saying
    what went wrong ("syntax", "expansion", or an ``OverpassError`` kind); ``message``
    says it in words either way. ``sent`` is False when nothing reached a server."""

    query: str
    endpoint: str
    ok: bool = False
    message: str = ""
    kind: str = ""
    sent: bool = False
    final: str = ""  # the text sent, placeholders expanded and settings applied
    data: Optional[dict[str, Any]] = None
    elapsed_s: float = 0.0
    attempts: int = 0
    from_cache: bool = False
    remark: Optional[str] = None
    problems: list[SyntaxProblem] = field(default_factory=list)

    @property
    def elements(self) -> list[dict[str, Any]]:
        return (self.data or {}).get("elements") or []

    @property
    def is_count(self) -> bool:
        return self.data is not None and is_count(self.data)

    @property
    def counts(self) -> list[dict]:
        return counts(self.data or {})

    def summary(self, geojson: dict | None = None) -> str:
        return summarize(self.data, geojson) if self.ok and self.data is not None else ""

    def geojson(self) -> dict:
        return to_geojson(self.data or {})


def make_geocoder(*, cache_dir: str | None = None, nominatim_url: str = DEFAULT_NOMINATIM_URL) -> Nominatim:
    """The geocoder of the ``{{geocodeArea:...}}`` shortcuts, knowing the benchmark's places first."""
    return Nominatim(NominatimConfig(url=nominatim_url, cache_dir=cache_dir), seed=benchmark_geocodes())


def make_client(endpoint: str | None = None, *, cache_dir: str | None = None,
                nominatim_url: str = DEFAULT_NOMINATIM_URL, geocoder: Nominatim | None = None,
                **config) -> OverpassClient:
    """An Overpass client for ``endpoint`` (a listed name or a URL) whose geocoder (``geocoder``,
    else a new :func:`make_geocoder`) knows the benchmark's places first; ``config``: more
    ``OverpassConfig`` fields."""
    overpass = OverpassConfig(url=endpoint_url(endpoint), cache_dir=cache_dir, **config)  # a bad URL fails first
    geocoder = geocoder or make_geocoder(cache_dir=cache_dir, nominatim_url=nominatim_url)
    return OverpassClient(overpass, geocoder=geocoder)


_WAIT_REASON = {
    "unreachable": "No server answered at {url}",
    "rate_limited": "{url} is limiting requests from this address",
    "gateway_timeout": "{url} is too busy to take the query",
}


def wait_message(wait: RetryWait, url: str) -> str:
    """``No server answered at URL; trying again in 3 s (retry 1 of 3).``"""
    reason = _WAIT_REASON.get(wait.error.kind, "{url} did not answer").format(url=url)
    return f"{reason}; trying again in {max(1, round(wait.left_s))} s (retry {wait.retry} of {wait.retries})."


def _failure(exc: OverpassError, url: str, attempts: int, elapsed: float) -> str:
    text = exc.message.rstrip(".") + "."
    if exc.detail and exc.kind not in ("rate_limited", "gateway_timeout"):
        text += f" The server said: {exc.detail}"
    if attempts > 1:
        text += f" Tried {attempts} times over {elapsed:.0f} s."
    if exc.kind in ("unreachable", "timeout", "rate_limited", "gateway_timeout", "http_error", "bad_response"):
        text += " Try again later, or choose another server."
    return "The query did not run: " + text


def run_query(query: str, *, bbox: str | None = None, endpoint: str | None = None,
              client: OverpassClient | None = None, on_wait: Callable[[str], None] | None = None,
              cache_dir: str | None = None, nominatim_url: str = DEFAULT_NOMINATIM_URL,
              use_cache: bool = True) -> RunResult:
    """Check, expand, send and read ``query``; never raises for a run that goes wrong.

    ``bbox`` ("south,west,north,east") fills ``{{bbox}}``; ``client`` (else one made for
    ``endpoint``) sends it; ``on_wait(message)`` hears the retry countdown, about once a
    second, in the words of :func:`wait_message`.
    """
    query = query or ""
    try:
        client = client or make_client(endpoint, cache_dir=cache_dir, nominatim_url=nominatim_url)
    except ConfigError as exc:
        return RunResult(query, str(endpoint or ""), message=f"The query did not run: {exc}", kind="config")
    url = client.config.url
    if not query.strip():
        return RunResult(query, url, message="There is no query to run: compile a request or write one.", kind="syntax")
    problems = syntax_problems(query)
    if problems:
        return RunResult(query, url, message=_syntax_message(problems), kind="syntax", problems=problems)
    attempts = 1

    def heard(wait: RetryWait) -> None:
        nonlocal attempts
        attempts = wait.retry + 1
        if on_wait is not None:
            on_wait(wait_message(wait, url))

    started = time.monotonic()
    try:
        final = client.prepare(query, bbox=bbox)
    except OverpassError as exc:  # a placeholder that cannot be filled: nothing was sent
        return RunResult(query, url, message=f"The query did not run: {exc.message}", kind=exc.kind)
    try:
        result = client.run(final, expand=False, use_cache=use_cache, on_wait=heard)
    except OverpassError as exc:
        elapsed = time.monotonic() - started
        return RunResult(query, url, message=_failure(exc, url, attempts, elapsed), kind=exc.kind, sent=True,
                         final=final, elapsed_s=elapsed, attempts=attempts)
    source = "answer from the cache" if result.from_cache else f"{result.elapsed_s:.1f} s"
    message = f"Ran on {url} ({source})."
    if result.remark:
        message += f" The server remarked: {result.remark}"
    # Read once, here: whatever the server sent, the table, map, counts and downloads see well-formed elements.
    return RunResult(query, url, ok=True, message=message, sent=not result.from_cache, final=result.query,
                     data=read_answer(result.data), elapsed_s=result.elapsed_s, attempts=attempts,
                     from_cache=result.from_cache, remark=result.remark)


# ---------------------------------------------------------------- sharing


def turbo_link(query: str) -> str:
    """overpass-turbo with ``query`` in its editor (its ``?Q=`` parameter; placeholders kept,
    turbo fills them itself)."""
    return TURBO_URL + "?Q=" + quote(query or "", safe="")


def slug(text: str, limit: int = 60) -> str:
    """A file-name part from a request: folded (``geoql.nl.text.fold``), words joined by '-'."""
    words = re.findall(r"\w+", fold(text or ""))
    out = ""
    for word in words:
        if len(out) + len(word) + 1 > limit:
            break
        out = f"{out}-{word}" if out else word
    return out or (words[0][:limit] if words else "")


def export(result: RunResult, directory: str | Path, name: str = "") -> Path | None:
    """The download for ``result``: its GeoJSON, or for a count its counts as CSV, named
    ``geoql-<slug of name>`` (``name``: the request, else the query is used); None when
    the run did not work."""
    if not result.ok or result.data is None:
        return None
    stem = "geoql-" + (slug(name) or "result")
    if result.is_count:
        return write_counts(result.data, directory, stem)
    return write_geojson(result.geojson(), directory, stem)
