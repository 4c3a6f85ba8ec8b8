"""GeoQL application layer: ``compile(nl)``, model backends, demo and CLI."""
