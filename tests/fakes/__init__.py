"""Loopback stand-ins for public internet services (Overpass, Nominatim) used by the tests."""
