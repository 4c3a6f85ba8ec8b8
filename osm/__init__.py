"""The outside OpenStreetMap services, below the evaluation layer.

- ``geoql.osm.overpass``: the Overpass API client (:class:`OverpassClient`), the
  official query preparation and error classification;
- ``geoql.osm.nominatim``: the Nominatim geocoder with its polite client;
- ``geoql.osm.turbo``: overpass-turbo shortcut expansion with real values;
- ``geoql.osm.cache``: the SQLite key/value table that all of them cache in.

Each imports only the ones after it in this list (and ``geoql.core``).
"""
