"""``geoql ui``: start the Gradio demo."""

from __future__ import annotations

import argparse
import sys

from geoql.app.backends import DEFAULT_BACKEND, backend_class
from geoql.core.errors import UserError


def register(subparsers) -> None:
    parser = subparsers.add_parser("ui", help="open the demo: plain words -> OverpassQL -> results on a map")
    parser.add_argument("--backend", help=f"compiler backend (default: the CPU default, {DEFAULT_BACKEND!r})")
    parser.add_argument("--port", type=int, default=7860, help="port to serve on (default 7860)")
    parser.add_argument(
        "--host",
        nargs="?",
        const="0.0.0.0",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; --host alone: all interfaces)",
    )
    parser.add_argument("--overpass-url", help="Overpass API interpreter (default: the public overpass-api.de)")
    parser.add_argument("--nominatim-url", help="Nominatim /search endpoint (default: nominatim.openstreetmap.org)")
    parser.add_argument("--cache-dir", help="result and geocoder caches (default: $GEOQL_CACHE_DIR or the user cache)")
    parser.add_argument(
        "--no-warm-up", action="store_true", help="load the backend on the first request, not at start"
    )
    parser.set_defaults(handler=_ui)


def _ui(args: argparse.Namespace) -> int:
    from geoql.app.ui import DemoConfig, DemoService, launch  # the map and results code: not for `geoql --help`

    if not 0 < args.port < 65536:
        raise UserError(f"--port {args.port} is not a TCP port: use 1-65535, e.g. 7860")
    options = {"backend": args.backend, "cache_dir": args.cache_dir}
    if args.overpass_url:
        options["overpass_url"] = args.overpass_url
    if args.nominatim_url:
        options["nominatim_url"] = args.nominatim_url
    config = DemoConfig(**options)  # a bad flag value is a ConfigError: one line from the dispatcher
    backend_class(config.backend or DEFAULT_BACKEND)  # an unknown name fails now, not on the first request
    service = DemoService(config)
    try:
        demo = launch(service, host=args.host, port=args.port, block=False)
    except OSError as exc:
        raise UserError(f"cannot serve on {args.host}:{args.port} ({exc}): pass another --port") from None
    # The address first, on a line of its own; the preparation's progress bars come after it
    # (they share the terminal, and the page shows the same steps).
    shown = "127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host
    print(f"GeoQL demo: http://{shown}:{args.port}/ (Ctrl+C stops it)", flush=True)
    if not args.no_warm_up:
        print("geoql ui: preparing the compiler in the background; the page shows its progress", file=sys.stderr, flush=True)
        service.warm_up_in_background()
    try:
        demo.block_thread()
    finally:
        demo.close()
    return 0
