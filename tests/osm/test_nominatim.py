"""The Nominatim client and its cache, against a Nominatim-protocol server on 127.0.0.1."""

from __future__ import annotations

import json

import pytest
from fakes.fixtures import fake_nominatim  # noqa: F401 (fixture)

from geoql.core.errors import GeoqlError
from geoql.eval.dataset import load_nominatim_cache
from geoql.osm.nominatim import GeocodeError, Nominatim, NominatimConfig, cache_key

# OverpassNL's geocoder answers, the seed that the evaluation passes.
SEED = load_nominatim_cache()


def make(server, tmp_path, seed=None, **overrides) -> Nominatim:
    options = {"url": server.url, "cache_dir": str(tmp_path), "min_interval_s": 0.0, "backoff_s": 0.01}
    options.update(overrides)
    return Nominatim(NominatimConfig(**options), seed=seed)


BENCHMARK_KEYS = sorted(SEED)[:: max(1, len(SEED) // 25)]


@pytest.mark.parametrize("key", BENCHMARK_KEYS)
def test_seeded_answers_are_served_without_asking(fake_nominatim, tmp_path, key):
    expected = SEED[key]
    geocoder = make(fake_nominatim, tmp_path, seed=SEED)
    kind = "centre" if key.endswith("_centre") else "bbox" if key.endswith("_bbox") else "id"
    text = key[: -len("_centre")] if kind == "centre" else key[: -len("_bbox")] if kind == "bbox" else key
    assert geocoder.lookup(text, kind) == expected
    assert fake_nominatim.log == []


@pytest.mark.parametrize(
    "text, kind, expected",
    [
        ("Heidelberg", "id", {"osm_id": 285864, "osm_type": "relation"}),
        (' "Heidelberg" ', "centre", {"lat": "49.4093582", "lon": "8.694724"}),
        ("Heidelberg", "bbox", {"bbox": ["49.3520109", "49.4596946", "8.5731788", "8.7940758"]}),
        ("Brandenburger Tor", "id", {"osm_id": 518071791, "osm_type": "way"}),
        ("Atlantis", "id", None),
    ],
)
def test_live_lookup_protocol_and_cache(fake_nominatim, tmp_path, text, kind, expected):
    geocoder = make(fake_nominatim, tmp_path)
    assert geocoder.lookup(text, kind) == expected
    (request,) = fake_nominatim.log
    assert request["q"] == text.strip().strip('"')
    assert (request["format"], request["limit"]) == ("jsonv2", "1")
    assert request["user_agent"].startswith("geoql/")
    # A second client on the same directory answers from disk, misses included.
    assert make(fake_nominatim, tmp_path).lookup(text, kind) == expected
    assert len(fake_nominatim.log) == 1


def test_rate_limit_spaces_live_requests(fake_nominatim, tmp_path):
    geocoder = make(fake_nominatim, tmp_path, min_interval_s=0.3)
    for place in ("a", "b", "c", "d"):
        geocoder.lookup(place)
    times = [entry["t"] for entry in fake_nominatim.log]
    gaps = [b - a for a, b in zip(times, times[1:])]
    # Unthrottled, loopback requests arrive milliseconds apart; the margin
    # below 0.3 s absorbs scheduling jitter between send and receipt.
    assert len(gaps) == 3 and min(gaps) >= 0.2


def test_429_is_retried(fake_nominatim, tmp_path):
    fake_nominatim.refuse_next = 2
    geocoder = make(fake_nominatim, tmp_path, max_retries=2)
    assert geocoder.lookup("Heidelberg") == {"osm_id": 285864, "osm_type": "relation"}
    assert len(fake_nominatim.log) == 3


def test_failures_raise_and_are_not_cached(fake_nominatim, tmp_path):
    fake_nominatim.refuse_next = 5
    geocoder = make(fake_nominatim, tmp_path, max_retries=1)
    with pytest.raises(GeocodeError, match="HTTP 429") as info:
        geocoder.lookup("Heidelberg")
    assert isinstance(info.value, GeoqlError)
    fake_nominatim.refuse_next = 0
    assert geocoder.lookup("Heidelberg")["osm_id"] == 285864


def test_live_answers_win_over_seed(fake_nominatim, tmp_path):
    key = next(k for k, v in SEED.items() if v and "osm_id" in v)
    geocoder = make(fake_nominatim, tmp_path, seed=SEED)
    geocoder.store.put(key, json.dumps({"osm_id": 1, "osm_type": "node"}).encode())
    assert make(fake_nominatim, tmp_path, seed=SEED).lookup(key) == {"osm_id": 1, "osm_type": "node"}


def test_without_a_seed_nothing_is_preloaded(fake_nominatim, tmp_path):
    key = next(k for k, v in SEED.items() if v and "osm_id" in v)
    geocoder = make(fake_nominatim, tmp_path)
    assert len(geocoder.store) == 0
    geocoder.lookup(key)
    assert [entry["q"] for entry in fake_nominatim.log] == [key]


@pytest.mark.parametrize(
    "overrides, words",
    [({"url": "nominatim.org"}, "must start with http"), ({"min_interval_s": -1}, "usage policy")],
)
def test_config_errors_name_the_fix(overrides, words):
    with pytest.raises(ValueError, match=words):
        NominatimConfig(**overrides)


def test_cache_key_matches_official_shape():
    assert cache_key('"Köln"', "centre") == "Köln_centre"
    with pytest.raises(ValueError, match="kind must be one of"):
        cache_key("x", "area")
