"""pytest fixtures for the loopback servers; import them into a test module to use them."""

from __future__ import annotations

import pytest

from fakes.servers import FakeNominatim, FakeOverpass


@pytest.fixture
def fake_overpass():
    with FakeOverpass() as server:
        yield server


@pytest.fixture
def fake_nominatim():
    with FakeNominatim() as server:
        yield server
