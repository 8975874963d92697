"""Range reads over kept connections (`apiaudit/sources/connections.py`): one connection serves
many requests, one lookup serves a host, a connection the server closed is reopened, and
redirects are followed to http(s) only.

Against a local index built in the test (HTTP/1.1 with keep-alive, or HTTP/1.0 closing every
connection, which the other range tests use).
"""

from __future__ import annotations

import random
import socket
import time
import zipfile

import pytest
from index_server import IndexServer, start
from wheel_helpers import build_wheel

from apiaudit.sources import connections, ranged

# Kept members between large members not kept: a range read takes several requests.
_NOISE = random.Random(5)
MEMBERS: dict[str, bytes | str] = {}
for _i in range(6):
    MEMBERS[f"toypkg/m{_i}.py"] = f"X{_i} = {_i}\n" * 300
    MEMBERS[f"toypkg/_n{_i}.cpython-312-x86_64-linux-gnu.so"] = _NOISE.randbytes(400_000)


@pytest.fixture
def index(tmp_path):
    servers = []

    def serve(**options) -> tuple[IndexServer, str]:
        wheel = build_wheel(tmp_path / "wheels", "toypkg", "1.0", MEMBERS, record=True, compression=zipfile.ZIP_DEFLATED)
        state = IndexServer(wheels=[wheel], **options)
        servers.append(start(state)[0])
        return state, wheel.name

    yield serve
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


def read_all_members(url: str, http: connections.Client) -> dict[str, bytes]:
    wheel = ranged.RangedWheel(url, http)
    with zipfile.ZipFile(wheel) as archive:  # type: ignore[arg-type]
        kept = [i for i in archive.infolist() if i.filename.endswith(".py")]
        wheel.prefetch([(i.header_offset, i.header_offset + i.compress_size + 200) for i in kept])
        return {i.filename: archive.read(i) for i in kept}


def test_one_connection_serves_many_requests(index, http):
    state, name = index(keep_alive=True)
    members = read_all_members(f"{state.url}/files/{name}", http)
    assert members == {k: v.encode() for k, v in MEMBERS.items() if k.endswith(".py")}
    reads = state.wheel_reads()
    assert len(reads) >= 4, "the wheel was read in fewer requests than the test needs"
    assert http.connections_opened <= ranged._PARALLEL and http.connections_opened < len(reads)
    before, requests_before = http.connections_opened, len(reads)
    read_all_members(f"{state.url}/files/{name}", http)  # a second wheel read: the kept connections again
    # (its parallel requests may still open one while another's is not yet back in the pool)
    assert http.connections_opened - before < len(state.wheel_reads()) - requests_before


def test_a_server_closing_each_connection_is_read_all_the_same(index, http):
    state, name = index(keep_alive=False)
    assert read_all_members(f"{state.url}/files/{name}", http) == {k: v.encode() for k, v in MEMBERS.items() if k.endswith(".py")}
    assert http.connections_opened == len(state.wheel_reads())


def test_a_kept_connection_the_server_closed_is_reopened(index, http):
    state, name = index(keep_alive=True, idle_timeout=0.2)
    url = f"{state.url}/files/{name}"
    first = ranged.RangedWheel(url, http)
    time.sleep(0.6)  # the server has closed the connection kept by the first request
    second = ranged.RangedWheel(url, http)
    assert second.size == first.size
    assert http.connections_opened == 2


def test_a_host_is_looked_up_once(index, monkeypatch, http):
    state, name = index(keep_alive=False)  # a new connection per request
    lookups = []
    real = socket.getaddrinfo
    monkeypatch.setattr(connections, "_ADDRESSES", {})
    monkeypatch.setattr(connections.socket, "getaddrinfo", lambda *a, **k: lookups.append(a[0]) or real(*a, **k))
    read_all_members(f"{state.url.replace('127.0.0.1', 'localhost')}/files/{name}", http)
    assert http.connections_opened >= 3 and lookups == ["localhost"]


def test_redirects_are_followed_to_http_only(index, http):
    state, name = index(keep_alive=True)
    wheel = ranged.RangedWheel(f"{state.url}/moved/{name}", http)
    assert wheel.size > 0
    with pytest.raises(ranged.RangesUnavailable, match="redirect to file"):
        ranged.RangedWheel(f"{state.url}/to-file/{name}", http)
