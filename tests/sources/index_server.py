"""A package index on 127.0.0.1 for the tests: PEP 503 project pages and wheels (and source
distributions), with or without HTTP range requests (no network: the real pip and apiaudit's
range reader both talk to it)."""

from __future__ import annotations

import hashlib
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename


@dataclass
class IndexServer:
    wheels: list[Path]  # the files it serves: wheels, and sdists (.tar.gz, .zip)
    ranges: bool = True  # False: every request gets the whole file (200), Range ignored
    hashes: bool = True  # False: the page's links carry no `#sha256=` (as a JSON page's do not)
    keep_alive: bool = False  # True: HTTP/1.1, a connection serves many requests
    idle_timeout: float | None = None  # with keep_alive: a connection idle this long is closed
    wheel_delay_s: float = 0.0  # each answer about a wheel waits this long (a slow index)
    requests: list[tuple[str, str | None]] = field(default_factory=list)  # (path, Range header)
    connections: set[int] = field(default_factory=set)  # the client port of each connection served
    bytes_sent: int = 0
    url: str = ""

    def page(self, project: str) -> bytes | None:
        links = []
        for wheel in self.wheels:
            named = parse_wheel_filename(wheel.name)[0] if wheel.name.endswith(".whl") else parse_sdist_filename(wheel.name)[0]
            if str(canonicalize_name(named)) == project:
                digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
                fragment = f"#sha256={digest}" if self.hashes else ""
                links.append(f'<a href="../../files/{wheel.name}{fragment}">{wheel.name}</a>')
        if not links:
            return None
        return ("<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n").encode()

    def wheel_reads(self) -> list[str | None]:
        """The Range header of each request for a wheel (None: the whole file was asked for)."""
        return [header for path, header in self.requests if path.endswith(".whl")]


def start(server_state: IndexServer) -> tuple[ThreadingHTTPServer, threading.Thread]:
    state = server_state

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            state.requests.append((self.path, self.headers.get("Range")))
            state.connections.add(self.client_address[1])
            moved = re.match(r"^/(moved|to-file)/(.+)$", self.path)
            if moved:  # a redirect to the wheel, or to a local file
                self.send_response(302)
                self.send_header("Location", f"/files/{moved[2]}" if moved[1] == "moved" else "file:///etc/hostname")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            match = re.match(r"^/simple/([^/]+)/?$", self.path)
            if match:
                body = state.page(match[1])
                if body is None:
                    self.send_error(404)
                    return
                self._send(200, body, "text/html")
                return
            if self.path.startswith("/files/"):
                time.sleep(state.wheel_delay_s)
                found = [w for w in state.wheels if w.name == self.path[len("/files/"):]]
                if not found:
                    self.send_error(404)
                    return
                data = found[0].read_bytes()
                wanted = self.headers.get("Range")
                if state.ranges and wanted:
                    span = re.match(r"^bytes=(\d*)-(\d*)$", wanted)
                    if span is None:
                        self.send_error(416)
                        return
                    if span[1] == "":
                        start, end = max(0, len(data) - int(span[2])), len(data) - 1
                    else:
                        start, end = int(span[1]), min(len(data) - 1, int(span[2] or len(data) - 1))
                    self._send(206, data[start: end + 1], "application/octet-stream",
                               {"Content-Range": f"bytes {start}-{end}/{len(data)}"})  # fmt: skip
                    return
                self._send(200, data, "application/octet-stream")
                return
            self.send_error(404)

        def _send(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            if state.ranges:
                self.send_header("Accept-Ranges", "bytes")
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)
            state.bytes_sent += len(body) if self.path.endswith(".whl") else 0

    if state.keep_alive:
        Handler.protocol_version = "HTTP/1.1"
        Handler.timeout = state.idle_timeout
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    return httpd, thread
