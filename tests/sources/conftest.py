"""Fixtures of the sources tests: a package index made of wheels built in the test."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from index_server import IndexServer, start  # noqa: E402
from wheel_helpers import build_wheel  # noqa: E402

TOY_MEMBERS: dict[str, bytes | str] = {
    "toypkg/__init__.py": "from toypkg.mod import f\n",
    "toypkg/mod.py": "def f(a, *, b=1): ...\n",
    "toypkg/mod.pyi": "def f(a: int, *, b: int = ...) -> None: ...\n",
    "toypkg/data.json": "{}",
    "toypkg/_native.cpython-312-x86_64-linux-gnu.so": b"\x7fELF junk",
    "toypkg-1.0.dist-info/top_level.txt": "toypkg\n",
    "toypkg-1.0.dist-info/entry_points.txt": "[console_scripts]\ntoy = toypkg:f\n",
    "toypkg-1.0.data/purelib/toypkg_extra/__init__.py": "",
    "toypkg-1.0.data/scripts/toy-tool.py": "print('never extracted')\n",
}


@pytest.fixture
def local_index(tmp_path, monkeypatch) -> Path:
    """Point the real pip at a folder of wheels only (no index, no user pip config)."""
    links = tmp_path / "links"
    build_wheel(links, "toypkg", "1.0", TOY_MEMBERS, record=True)
    build_wheel(links, "toypkg", "0.9", {"toypkg/__init__.py": ""})
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    return links


@pytest.fixture
def serve(tmp_path, monkeypatch):
    """serve(wheels, ranges=True) -> the IndexServer; pip's only index is it (no user config)."""
    servers = []

    def start_index(wheels: list[Path], *, ranges: bool = True, keep_alive: bool = False) -> IndexServer:
        state = IndexServer(wheels=wheels, ranges=ranges, keep_alive=keep_alive)
        servers.append(start(state)[0])
        monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
        monkeypatch.setenv("PIP_INDEX_URL", f"{state.url}/simple/")
        for variable in ("PIP_NO_INDEX", "PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL"):
            monkeypatch.delenv(variable, raising=False)
        # A fresh setting per test (the port differs): nothing learnt by an earlier test is reused.
        monkeypatch.setenv("PIP_DEFAULT_TIMEOUT", "20")
        return state

    yield start_index
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def http():
    """A range-read client with no pip settings, its kept connections closed after the test."""
    from apiaudit.sources import ranged

    client = ranged.client(ranged.NetworkSettings())
    yield client
    client.close()
