"""The outside OpenStreetMap services: the Overpass API client and its cache,
the Nominatim geocoder and overpass-turbo placeholder expansion."""
