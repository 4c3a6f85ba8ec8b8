"""Source 3 (optional): usage counts and descriptions from the taginfo API.

Only tried when the machine reaches the public internet: one short probe, then
one ``/key/values`` page per popular key, cached on disk. Without internet the
build records the source as skipped and goes on.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import quote

from geoql.core.files import write_atomic

USER_AGENT = "geoql-index/0.1 (https://github.com/; OverpassQL tag index build)"
MAX_KEYS = 80  # the API is a community service: a few dozen polite calls, never a crawl


def _get(url: str, timeout: float) -> dict:
    import requests

    response = requests.get(url, timeout=timeout, headers={"User-Agent": USER_AGENT})
    response.raise_for_status()
    return response.json()


def fetch_usage(keys: list[str], base_url: str, cache_dir: Path, *, timeout: float, progress: bool = True) -> tuple[dict, dict]:
    """Return ({"key=value": (count, description)}, source info); empty when unreachable."""
    import requests
    from tqdm import tqdm

    cache_dir.mkdir(parents=True, exist_ok=True)
    try:
        site = _get(f"{base_url}/site/info", timeout)
    except (requests.RequestException, ValueError) as exc:
        return {}, {"status": "skipped", "reason": f"taginfo unreachable ({type(exc).__name__})"}
    usage: dict[str, tuple[int, str]] = {}
    fetched = 0
    for key in tqdm(keys[:MAX_KEYS], desc="taginfo values", disable=not progress):
        cache_file = cache_dir / f"taginfo-values-{quote(key, safe='')}.json"
        if cache_file.is_file():
            payload = json.loads(cache_file.read_text(encoding="utf-8"))
        else:
            url = f"{base_url}/key/values?key={quote(key)}&page=1&rp=500&sortname=count_all&sortorder=desc"
            try:
                payload = _get(url, timeout)
            except (requests.RequestException, ValueError):
                continue
            write_atomic(cache_file, json.dumps(payload))
            fetched += 1
            time.sleep(0.1)
        for row in payload.get("data", []):
            value = row.get("value")
            if isinstance(value, str) and value:
                usage[f"{key}={value}"] = (int(row.get("count") or 0), str(row.get("description") or ""))
    info = {"status": "used", "url": base_url, "data_until": site.get("data_until", ""), "keys": len(keys[:MAX_KEYS]), "fetched": fetched}
    return usage, info
