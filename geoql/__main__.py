"""``python -m geoql``: the same as the ``geoql`` command."""

import sys

from geoql.app.cli import main

sys.exit(main())
