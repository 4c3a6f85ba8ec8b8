"""Nominatim geocoder with a polite client and an on-disk cache.

overpass-turbo shortcuts such as ``{{geocodeArea:Heidelberg}}`` need a
geocoder. The answers are kept in SQLite in the shape the official OverpassNL
evaluation caches them (so its ``nominatim_cache.json`` can seed ours, and the
benchmark's gold queries expand exactly as they did for the authors):

* ``"<text>"``        -> ``{"osm_id": 285864, "osm_type": "relation"}``
* ``"<text>_centre"`` -> ``{"lat": "49.4", "lon": "8.6"}``
* ``"<text>_bbox"``   -> ``{"bbox": [south, north, west, east]}`` (Nominatim's order)
* ``null`` where Nominatim found nothing.

Live look-ups follow the Nominatim usage policy: an identifying User-Agent
and at most one request per second (per endpoint, across threads).

>>> cache_key("  \\"Heidelberg\\" ", "bbox")
'Heidelberg_bbox'
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from geoql.core.errors import ConfigError, GeoqlError
from geoql.core.paths import user_dir
from geoql.osm.cache import SqliteStore

__all__ = ["DEFAULT_NOMINATIM_URL", "GeocodeError", "Nominatim", "NominatimConfig", "cache_key", "KINDS", "USER_AGENT"]

DEFAULT_NOMINATIM_URL = "https://nominatim.openstreetmap.org/search"
# How GeoQL names itself to every OSM service (Nominatim's usage policy asks for it).
USER_AGENT = "geoql/0.1 (natural language to OverpassQL; python-requests)"
KINDS = ("id", "centre", "bbox")
_SUFFIX = {"id": "", "centre": "_centre", "bbox": "_bbox"}


class GeocodeError(GeoqlError):
    """Nominatim could not be asked (network, HTTP error, bad answer); message names the fix."""


def cache_key(text: str, kind: str = "id") -> str:
    """The official cache key: text without surrounding blanks and quotes, plus a kind suffix."""
    if kind not in _SUFFIX:
        raise ValueError(f"kind must be one of {', '.join(KINDS)} (got {kind!r})")
    return text.strip().strip('"') + _SUFFIX[kind]


@dataclass
class NominatimConfig:
    url: str = field(default=DEFAULT_NOMINATIM_URL, metadata={"help": "Nominatim /search endpoint"})
    user_agent: str = field(default=USER_AGENT, metadata={"help": "identifying User-Agent (usage policy)"})
    min_interval_s: float = field(default=1.0, metadata={"help": "seconds between live requests (policy: 1)"})
    http_timeout_s: float = field(default=30.0, metadata={"help": "seconds to wait for an answer"})
    max_retries: int = field(default=2, metadata={"help": "retries after 429/5xx/connection errors"})
    backoff_s: float = field(default=2.0, metadata={"help": "first retry delay; doubles each retry"})
    cache_dir: str | None = field(
        default=None, metadata={"help": "directory of nominatim_cache.sqlite (default: user cache dir)"}
    )

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise ConfigError(f"Nominatim URL {self.url!r} must start with http(s)://, e.g. {DEFAULT_NOMINATIM_URL}")
        if self.min_interval_s < 0:
            raise ConfigError(f"min_interval_s must be >= 0 (got {self.min_interval_s}); the usage policy asks for 1")
        if self.http_timeout_s <= 0:
            raise ConfigError(f"http_timeout_s must be > 0 (got {self.http_timeout_s})")
        if self.max_retries < 0:
            raise ConfigError(f"max_retries must be >= 0 (got {self.max_retries})")


# One clock per endpoint for the whole process: several Nominatim objects
# (demo workers, eval threads) must still share the 1 request/s budget.
_RATE_LOCK = threading.Lock()
_LAST_REQUEST: dict[str, float] = {}


def _wait_turn(url: str, interval: float) -> None:
    with _RATE_LOCK:
        wait = _LAST_REQUEST.get(url, 0.0) + interval - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        _LAST_REQUEST[url] = time.monotonic()


class Nominatim:
    """``lookup(text, kind)`` -> cached or live answer (see module doc for shapes).

    ``seed`` preloads answers keyed by :func:`cache_key`, such as OverpassNL's
    ``nominatim_cache.json`` (``geoql.eval.dataset.benchmark_geocodes``); answers
    this cache already holds are kept.
    """

    CACHE_FILE = "nominatim_cache.sqlite"

    def __init__(
        self, config: NominatimConfig | None = None, *, seed: Mapping[str, dict | None] | None = None, **overrides
    ):
        if config is None:
            config = NominatimConfig(**overrides)
        elif overrides:
            raise TypeError("pass either config or keyword overrides, not both")
        self.config = config
        directory = Path(config.cache_dir) if config.cache_dir else user_dir("cache")
        self.store = SqliteStore(directory / self.CACHE_FILE, "geocode")
        self.live_requests = 0
        if seed:
            # INSERT OR IGNORE: answers fetched live earlier are kept.
            self.store.put_many({k: json.dumps(v).encode() for k, v in seed.items()})

    def lookup(self, text: str, kind: str = "id") -> dict | None:
        """The geocoder answer for ``text`` (``None``: Nominatim knows no such place)."""
        key = cache_key(text, kind)
        blob = self.store.get(key)
        if blob is not None:
            return json.loads(blob)
        answer = self._ask(cache_key(text), kind)
        self.store.put(key, json.dumps(answer).encode())
        return answer

    def _ask(self, q: str, kind: str) -> dict | None:
        import requests

        if not q:
            return None
        params = {"q": q, "format": "jsonv2", "limit": "1"}
        headers = {"User-Agent": self.config.user_agent}
        for attempt in range(self.config.max_retries + 1):
            _wait_turn(self.config.url, self.config.min_interval_s)
            self.live_requests += 1
            try:
                response = requests.get(self.config.url, params=params, headers=headers, timeout=self.config.http_timeout_s)
            except requests.RequestException as exc:
                problem = f"could not reach Nominatim at {self.config.url} ({type(exc).__name__})"
            else:
                if response.status_code == 200:
                    try:
                        results = response.json()
                    except ValueError:
                        raise GeocodeError(f"Nominatim at {self.config.url} did not answer JSON; check the URL") from None
                    return _shape(results, kind)
                problem = f"Nominatim at {self.config.url} answered HTTP {response.status_code}"
                if response.status_code not in (429, 500, 502, 503, 504):
                    raise GeocodeError(problem + "; check the URL")
            if attempt < self.config.max_retries:
                time.sleep(self.config.backoff_s * (2**attempt))
        raise GeocodeError(problem + "; try again later or point --nominatim-url at another instance")


def _shape(results, kind: str) -> dict | None:
    if not isinstance(results, list) or not results:
        return None
    first = results[0]
    try:
        if kind == "centre":
            return {"lat": first["lat"], "lon": first["lon"]}
        if kind == "bbox":
            return {"bbox": list(first["boundingbox"])}
        if "osm_id" not in first:
            return None
        return {"osm_id": first["osm_id"], "osm_type": first["osm_type"]}
    except (KeyError, TypeError):
        return None
