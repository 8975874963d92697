"""HTTP(S) GETs over kept connections, for the range reads of a release's wheel.

A range read of vLLM's wheel takes about fifteen requests, and a cold matrix runs several
at once. Opening a connection per request (as `urllib` does) pays a name lookup, a TCP
and a TLS handshake each time, and on networks whose resolver drops queries under load (a
known fault of container networks) one lookup in twenty took 5 s here. So each host is
looked up once per process (for a few minutes) and each connection serves request after
request until the server closes it; a kept connection the server dropped meanwhile is
reopened once.

What the requests follow is pip's: its CA bundle and proxy (else the environment's proxy
and `no_proxy`), and redirects only to http(s) addresses.
"""

from __future__ import annotations

import base64
import http.client
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
from email.message import Message

from apiaudit.infra.frozen import record

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_MAX_REDIRECTS = 5
_LOOKUP_TTL_SECONDS = 300.0
_IDLE_PER_HOST = 16


class RequestFailed(Exception):
    """A request that got no answer (unreachable, refused, a broken connection, a bad redirect)."""


@record
class Answer:
    status: int
    headers: Message
    body: bytes
    url: str  # where the answer came from, after any redirect


def is_http(url: str) -> bool:
    return urllib.parse.urlsplit(url).scheme in ("http", "https")


# ------------------------------------------------------------------------------- name lookups

_ADDRESSES: dict[tuple[str, int], tuple[float, list]] = {}
_ADDRESSES_LOCK = threading.Lock()


def _addresses(host: str, port: int) -> list:
    key = (host, port)
    with _ADDRESSES_LOCK:
        known = _ADDRESSES.get(key)
        if known is not None and time.monotonic() - known[0] < _LOOKUP_TTL_SECONDS:
            return known[1]
    found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    with _ADDRESSES_LOCK:
        _ADDRESSES[key] = (time.monotonic(), found)
    return found


def _create_connection(address: tuple[str, int], timeout: float | None = None, source_address=None) -> socket.socket:
    """`socket.create_connection` with the host looked up once (see `_addresses`)."""
    host, port = address
    failure: OSError | None = None
    for family, kind, proto, _name, sockaddr in _addresses(host, port):
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(timeout)
            if source_address:
                sock.bind(source_address)
            sock.connect(sockaddr)
            return sock
        except OSError as exc:
            sock.close()
            failure = exc
    raise failure or OSError(f"no address for {host}")


# ------------------------------------------------------------------------------- the client


@record
class _Route:
    """Where a connection goes: the server itself, or a proxy (tunnelled for https)."""

    scheme: str
    host: str
    port: int
    proxy: tuple[str, int, str | None] | None  # (host, port, Proxy-Authorization)


class Client:
    """GETs over kept connections, safe to share between threads."""

    def __init__(self, *, cafile: str | None = None, proxy: str | None = None, timeout: float = 60.0):
        self._context = ssl.create_default_context(cafile=cafile) if cafile else ssl.create_default_context()
        self._proxy = proxy
        self._timeout = timeout
        self._idle: dict[_Route, list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()
        self.connections_opened = 0

    def get(self, url: str, headers: dict[str, str], *, max_bytes: int) -> Answer:
        """GET `url` (following redirects to http(s) only); at most `max_bytes` of the body are read."""
        for _ in range(_MAX_REDIRECTS + 1):
            answer, location = self._get_once(url, headers, max_bytes)
            if location is None:
                return answer
            target = urllib.parse.urljoin(url, location)
            if not is_http(target):
                raise RequestFailed(f"a redirect to {urllib.parse.urlsplit(target).scheme}: refused")
            url = target
        raise RequestFailed(f"more than {_MAX_REDIRECTS} redirects")

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.close()

    def _get_once(self, url: str, headers: dict[str, str], max_bytes: int) -> tuple[Answer, str | None]:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise RequestFailed(f"{url} is not an http(s) address")
        route = self._route(parts)
        target = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
        sent = dict(headers)
        if route.proxy is not None and route.scheme == "http":
            target = urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path or "/", parts.query, ""))
            if route.proxy[2]:
                sent["Proxy-Authorization"] = route.proxy[2]
        for attempt in (0, 1):
            connection, reused = self._take(route)
            try:
                connection.request("GET", target, headers=sent)
                response = connection.getresponse()
                location = response.getheader("Location") if response.status in _REDIRECTS else None
                body = response.read(max_bytes + 1) if location is None else response.read(1 << 16)
            except (http.client.HTTPException, OSError) as exc:
                connection.close()
                if reused and attempt == 0:
                    continue  # a kept connection the server closed meanwhile: once more, afresh
                raise RequestFailed(str(exc) or type(exc).__name__) from None
            if response.isclosed() and not response.will_close:
                self._give(route, connection)
            else:
                connection.close()  # not read to its end, or the server closes it
            return Answer(response.status, response.headers, body, url), location
        raise RequestFailed("no answer")  # pragma: no cover - the loop returns or raises

    def _route(self, parts: urllib.parse.SplitResult) -> _Route:
        default_port = 443 if parts.scheme == "https" else 80
        try:
            port = parts.port or default_port
        except ValueError:
            raise RequestFailed(f"a malformed port in {parts.netloc}") from None
        host = parts.hostname or ""
        proxy_url = self._proxy
        if proxy_url is None:
            proxies = urllib.request.getproxies()
            proxy_url = None if urllib.request.proxy_bypass(host) else proxies.get(parts.scheme)
        if not proxy_url:
            return _Route(parts.scheme, host, port, None)
        if "://" not in proxy_url:
            proxy_url = f"http://{proxy_url}"
        proxied = urllib.parse.urlsplit(proxy_url)
        if proxied.scheme != "http" or not proxied.hostname:
            raise RequestFailed(f"a proxy that is not http:// ({proxied.scheme})")
        credentials = None
        if proxied.username is not None:
            pair = f"{urllib.parse.unquote(proxied.username)}:{urllib.parse.unquote(proxied.password or '')}"
            credentials = "Basic " + base64.b64encode(pair.encode()).decode()
        return _Route(parts.scheme, host, port, (proxied.hostname, proxied.port or 8080, credentials))

    def _take(self, route: _Route) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            idle = self._idle.get(route)
            if idle:
                return idle.pop(), True
            self.connections_opened += 1
        return self._open(route), False

    def _give(self, route: _Route, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            idle = self._idle.setdefault(route, [])
            if len(idle) < _IDLE_PER_HOST:
                idle.append(connection)
                return
        connection.close()

    def _open(self, route: _Route) -> http.client.HTTPConnection:
        connection: http.client.HTTPConnection
        if route.proxy is None:
            if route.scheme == "https":
                connection = http.client.HTTPSConnection(route.host, route.port, timeout=self._timeout, context=self._context)
            else:
                connection = http.client.HTTPConnection(route.host, route.port, timeout=self._timeout)
        else:
            proxy_host, proxy_port, credentials = route.proxy
            if route.scheme == "https":
                connection = http.client.HTTPSConnection(proxy_host, proxy_port, timeout=self._timeout, context=self._context)
                connection.set_tunnel(route.host, route.port, headers={"Proxy-Authorization": credentials} if credentials else None)
            else:
                connection = http.client.HTTPConnection(proxy_host, proxy_port, timeout=self._timeout)
        connection._create_connection = _create_connection  # type: ignore[attr-defined]
        return connection
