"""``geoql ui``: start the Gradio demo.

On loopback (the default) only this machine reaches it. ``--host`` opens it to others: it
says so, and ``--auth-token`` (better: ``$GEOQL_UI_TOKEN``, which ``ps`` does not show) makes
every visitor give a shared secret. Visitors run queries on the servers the page lists (the
operator's ``--overpass-url`` and the public instances); ``--allow-custom-server`` lets them
type their own, reached at public addresses only.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import signal
import sys

from geoql.app.backends import DEFAULT_BACKEND, backend_class
from geoql.core.errors import UserError

TOKEN_ENV = "GEOQL_UI_TOKEN"
# A shared secret a visitor could guess in a few thousand tries is none.
MIN_TOKEN_CHARS = 16


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
    parser.add_argument("--overpass-url", action="append", metavar="URL",
                        help="Overpass API interpreter the page starts with (default: the public overpass-api.de); "
                             "repeat it to offer more of your own. Yours are trusted: loopback and private "
                             "addresses work")
    parser.add_argument("--allow-custom-server", action="store_true",
                        help="let visitors type a server URL of their own (only public addresses after DNS "
                             "resolution, standard ports, no redirects); by default they choose from the list")
    parser.add_argument("--auth-token", metavar="SECRET",
                        help=f"a shared secret every visitor must give (login page: any user name, the secret as "
                             f"the password); at least {MIN_TOKEN_CHARS} characters. Default: ${TOKEN_ENV}, which "
                             "other users of this machine cannot read from the process list")
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
    token = args.auth_token or os.environ.get(TOKEN_ENV) or None
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise UserError(f"the shared secret has {len(token)} characters; use at least {MIN_TOKEN_CHARS}, e.g. "
                        "python -c 'import secrets; print(secrets.token_urlsafe(24))'")
    options = {"backend": args.backend, "cache_dir": args.cache_dir, "allow_custom_server": args.allow_custom_server}
    if args.overpass_url:
        options["overpass_url"], *more = args.overpass_url
        options["more_overpass_urls"] = tuple(more)
    if args.nominatim_url:
        options["nominatim_url"] = args.nominatim_url
    config = DemoConfig(**options)  # a bad flag value is a ConfigError: one line from the dispatcher
    backend_class(config.backend or DEFAULT_BACKEND)  # an unknown name fails now, not on the first request
    if not _loopback(args.host):
        print(f"geoql ui: warning: listening on {args.host}, not only this machine: whoever reaches it can use "
              "the demo (this machine's CPU, the Overpass servers it lists)"
              + ("; visitors must give the shared secret (no TLS here: put an HTTPS proxy in front)." if token else
                 f". Set ${TOKEN_ENV} (or --auth-token) to ask for a shared secret."), file=sys.stderr, flush=True)
    service = DemoService(config)
    # A service manager stops it with SIGTERM: as Ctrl+C, so that its temporary files go with it.
    signal.signal(signal.SIGTERM, _interrupt)
    demo = None
    try:
        try:
            demo = launch(service, host=args.host, port=args.port, block=False, auth_token=token)
        except OSError as exc:
            raise UserError(f"cannot serve on {args.host}:{args.port} ({exc}): pass another --port") from None
        # The address first, on a line of its own; the preparation's progress bars come after it
        # (they share the terminal, and the page shows the same steps).
        shown = "127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host
        print(f"GeoQL demo: http://{shown}:{args.port}/ (Ctrl+C stops it)", flush=True)
        if not args.no_warm_up:
            print("geoql ui: preparing the compiler in the background; the page shows its progress", file=sys.stderr,
                  flush=True)
            service.warm_up_in_background()
        demo.block_thread()
    except KeyboardInterrupt:  # stopped before the page served
        pass
    finally:
        if demo is not None:
            demo.close()
        service.close()
    return 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _loopback(host: str) -> bool:
    """Whether ``host`` is reached from this machine only.

    >>> _loopback("127.0.0.1"), _loopback("::1"), _loopback("localhost"), _loopback("0.0.0.0"), _loopback("demo.example")
    (True, True, True, False, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
