"""OverpassNL data, the official metrics reproduced offline, and the eval command."""
