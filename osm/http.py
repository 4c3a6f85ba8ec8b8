"""One HTTP request for the OSM clients: a total deadline, a size cap, no redirects, and for an
address a visitor typed, public addresses only.

The Overpass client sends every query through :func:`fetch`:

* **a total deadline**: ``deadline_s`` bounds the whole answer (connect, headers, body), not
  each read: a server that drips a byte every 2 s cannot hold a 3 s deadline any longer;
* **a size cap**: the body is read in chunks and reading stops past ``max_bytes``
  (after gzip decoding: a small compressed answer cannot unpack into gigabytes);
* **no redirects**: a 3xx answer is an error (:class:`HttpError` kind ``redirect``), never followed;
* **public addresses only** (``public_only``, for a server URL a visitor of the demo typed):
  the host name is resolved once, every address it resolves to must be public (no
  private, loopback, link-local, multicast, unspecified or reserved address, also not
  inside an IPv4-mapped, 6to4, Teredo or NAT64 IPv6 address), and the connection goes to
  the checked address, so a second DNS answer cannot point it elsewhere.

The operator's own endpoints (``--overpass-url``, ``geoql run --endpoint``) are trusted:
they may be on loopback or a private network. Environment proxies are not used.

>>> public_address("93.184.215.14"), public_address("127.0.0.1"), public_address("::ffff:10.0.0.1")
(True, False, False)
>>> typed_url_problem("http://user:pw@example.org/api/interpreter")
'a server address must not carry a user name or password'
>>> typed_url_problem("https://overpass.example.org/api/interpreter") is None
True
"""

from __future__ import annotations

import errno
import http.client
import ipaddress
import re
import socket
import ssl
import threading
import time
import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import urlencode, urlsplit

from geoql.core.errors import GeoqlError

__all__ = ["HttpError", "Answer", "fetch", "public_address", "typed_url_problem", "STANDARD_PORTS"]

STANDARD_PORTS = {"http": 80, "https": 443}
_CHUNK = 64 * 1024
# What RFC 3986 lets a URL hold (anything else is %-encoded): a typed address is shown back in words.
_URL_CHARACTERS = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+")
# NAT64's well-known prefix: 64:ff9b::a.b.c.d reaches the IPv4 address a.b.c.d.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class HttpError(GeoqlError):
    """No usable HTTP answer. ``kind``: ``timeout`` (the deadline passed), ``unreachable``
    (no connection, or it broke before an answer), ``interrupted`` (the body broke off),
    ``too_large`` (past ``max_bytes``), ``redirect`` (3xx), ``not_public`` (a typed address
    that is not public), ``bad_response`` (not HTTP, or an encoding not asked for).
    ``reason`` is a short phrase for the caller's sentence ("connection refused")."""

    def __init__(self, kind: str, reason: str = "", status: int = 0):
        super().__init__(reason or kind)
        self.kind, self.reason, self.status = kind, reason, status


@dataclass
class Answer:
    status: int
    text: str
    headers: dict[str, str] = field(default_factory=dict)  # names in lower case
    size: int = 0  # bytes of the body after decoding


def _ip_public(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if ip.version == 6:
        embedded = [ip.ipv4_mapped, ip.sixtofour, *(ip.teredo or ())]
        if ip in _NAT64:
            embedded.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
        if any(e is not None and not _ip_public(e) for e in embedded):
            return False
    return ip.is_global and not (ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_multicast
                                 or ip.is_unspecified or ip.is_reserved)


def public_address(address: str) -> bool:
    """Whether ``address`` (an IP address as text) is a public unicast address."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])  # an IPv6 scope ("fe80::1%eth0") is link-local anyway
    except ValueError:
        return False
    return _ip_public(ip)


def typed_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a server a visitor typed (None: its form is fine; its address is
    checked when it is used): http(s) only, no user name or password, no query string of its
    own (the query is the only ``data=``), the scheme's standard port."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "the address is not a valid URL"
    if parts.scheme not in STANDARD_PORTS:
        return "a server address must start with http:// or https://"
    if not _URL_CHARACTERS.fullmatch(url):
        return "the address has characters a URL does not (spaces, quotes, < >): write it %-encoded"
    if "@" in parts.netloc:
        return "a server address must not carry a user name or password"
    if not parts.hostname:
        return "the address has no host name"
    if parts.query or parts.fragment or "?" in url or "#" in url:
        return "a server address must not carry a query string (GeoQL sends the query itself)"
    if port is not None and port != STANDARD_PORTS[parts.scheme]:
        return f"a typed server must use the standard port ({STANDARD_PORTS[parts.scheme]} for {parts.scheme})"
    return None


def _public_addresses(host: str, port: int) -> list[tuple]:
    """Every address ``host`` resolves to, all checked public; else :class:`HttpError` ``not_public``.
    A name that does not resolve gets the same words: what a private name resolves to is not
    the visitor's business."""
    refused = HttpError("not_public", "it is not a public address")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        raise refused from None
    if not infos or not all(public_address(info[4][0]) for info in infos):
        raise refused
    return [(info[0], info[4]) for info in infos]


@lru_cache(maxsize=1)
def _tls_context() -> ssl.SSLContext:
    try:  # the CA bundle requests uses, where installed; else the system's
        import certifi

        return ssl.create_default_context(cafile=certifi.where())
    except (ImportError, OSError):
        return ssl.create_default_context()


def _connect(host: str, port: int, addresses: list[tuple] | None, timeout: float) -> socket.socket:
    if addresses is None:  # a trusted endpoint: the system resolves it, as for any client
        return socket.create_connection((host, port), timeout)
    error: OSError | None = None
    for family, sockaddr in addresses:  # only the checked addresses
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(sockaddr)
            return sock
        except OSError as exc:
            sock.close()
            error = exc
    raise error or OSError("no address to connect to")


class _Connection(http.client.HTTPConnection):
    def __init__(self, host, port, *, addresses, timeout):
        super().__init__(host, port, timeout=timeout)
        self._addresses = addresses

    def connect(self):
        self.sock = _connect(self.host, self.port, self._addresses, self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _TlsConnection(_Connection):
    default_port = http.client.HTTPS_PORT

    def connect(self):
        super().connect()
        # The certificate is checked against the host name, whatever address was connected to.
        self.sock = _tls_context().wrap_socket(self.sock, server_hostname=self.host)


def _failure(exc: BaseException) -> HttpError:
    if isinstance(exc, HttpError):
        return exc
    if isinstance(exc, socket.gaierror):
        return HttpError("unreachable", "the name does not resolve")
    if isinstance(exc, TimeoutError):
        return HttpError("timeout")
    if isinstance(exc, ConnectionRefusedError):
        return HttpError("unreachable", "connection refused")
    if isinstance(exc, ssl.SSLCertVerificationError):
        return HttpError("unreachable", "its TLS certificate was not accepted")
    if isinstance(exc, ssl.SSLError):
        return HttpError("unreachable", "the TLS handshake failed")
    if isinstance(exc, (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)):
        return HttpError("unreachable", "the connection was reset")
    if isinstance(exc, http.client.RemoteDisconnected):
        return HttpError("unreachable", "the server closed the connection without answering")
    if isinstance(exc, http.client.HTTPException):
        return HttpError("bad_response", "the server did not answer in HTTP")
    if isinstance(exc, OSError) and exc.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH):
        return HttpError("unreachable", "the network is unreachable")
    return HttpError("unreachable", "")


def _read_body(response: http.client.HTTPResponse, max_bytes: int) -> bytes:
    encoding = (response.getheader("Content-Encoding") or "identity").strip().lower()
    if encoding not in ("identity", "gzip"):
        raise HttpError("bad_response", f"the answer came in an encoding GeoQL did not ask for ({encoding[:20]})")
    decoder = zlib.decompressobj(16 + zlib.MAX_WBITS) if encoding == "gzip" else None
    parts, size = [], 0
    while True:
        chunk = response.read1(_CHUNK)
        if not chunk:
            break
        if decoder is not None:
            # At most one byte past the cap is unpacked: enough to know it is too large.
            try:
                chunk = decoder.decompress(chunk, max_bytes - size + 1)
            except zlib.error:
                raise HttpError("bad_response", "the compressed answer is damaged") from None
        size += len(chunk)
        if size > max_bytes:
            raise HttpError("too_large")
        parts.append(chunk)
    if response.length:  # the server promised more than it sent
        raise HttpError("interrupted", "the answer broke off before its end")
    if decoder is not None:
        rest = decoder.flush()
        if size + len(rest) > max_bytes:
            raise HttpError("too_large")
        parts.append(rest)
    return b"".join(parts)


def fetch(url: str, form: dict[str, str], *, post: bool = False, headers: dict[str, str] | None = None,
          deadline_s: float, max_bytes: int, public_only: bool = False) -> Answer:
    """Send ``form`` to ``url`` (GET with it as the query string, or POST it as a form) and read
    the whole answer within ``deadline_s`` seconds and ``max_bytes`` bytes; :class:`HttpError`
    otherwise. A status other than 2xx/4xx/5xx's body is an :class:`Answer` too: the caller
    classifies it; 3xx is ``redirect``."""
    started = time.monotonic()
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or STANDARD_PORTS.get(parts.scheme, 80)
    addresses = _public_addresses(host, port) if public_only else None
    body = urlencode(form)
    query = "&".join(q for q in (parts.query, "" if post else body) if q)  # an operator's URL may carry its own
    path = (parts.path or "/") + ("?" + query if query else "")
    left = deadline_s - (time.monotonic() - started)
    if left <= 0:
        raise HttpError("timeout")
    kind = _TlsConnection if parts.scheme == "https" else _Connection
    conn = kind(host, port, addresses=addresses, timeout=left)
    expired = threading.Event()

    def expire():  # the deadline: whatever blocks on the socket wakes up now
        expired.set()
        sock = conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    timer = threading.Timer(left, expire)
    timer.daemon = True
    timer.start()
    sent = {"User-Agent": "GeoQL", **(headers or {}), "Accept-Encoding": "gzip", "Connection": "close"}
    try:
        try:
            if post:
                sent["Content-Type"] = "application/x-www-form-urlencoded"
                conn.request("POST", path, body=body.encode("ascii"), headers=sent)
            else:
                conn.request("GET", path, headers=sent)
            response = conn.getresponse()
        except Exception as exc:  # noqa: BLE001 (every way a connection fails becomes one kind)
            raise HttpError("timeout") if expired.is_set() else _failure(exc) from None
        status = response.status
        names = {k.lower(): v for k, v in response.getheaders()}
        if 300 <= status < 400:
            raise HttpError("redirect", status=status)
        declared = names.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes and names.get("content-encoding", "identity") == "identity":
            raise HttpError("too_large", status=status)
        try:
            data = _read_body(response, max_bytes)
        except HttpError as exc:
            raise HttpError("timeout") if expired.is_set() else exc from None
        except Exception as exc:  # noqa: BLE001
            raise HttpError("timeout") if expired.is_set() else HttpError(
                "interrupted", "the answer broke off before its end") from exc
        if expired.is_set():  # the watchdog's shutdown looks like an ordinary end of the answer
            raise HttpError("timeout")
    finally:
        timer.cancel()
        conn.close()
    charset = response.msg.get_content_charset() or "utf-8"
    try:
        text = data.decode(charset, errors="replace")
    except LookupError:  # a charset Python does not know
        text = data.decode("utf-8", errors="replace")
    return Answer(status, text, names, len(data))
