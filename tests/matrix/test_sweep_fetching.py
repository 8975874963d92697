"""A matrix fetching several releases fetches them in worker processes
(`apiaudit/matrix/sweep.py`): each worker reads by ranges or downloads whole wheels as this
process would (`--verify-wheels` included), its progress lines reach this process, and a
release that cannot be fetched is one failed row.

Wheels built in the test, served by a local index to the real pip and to the range reader.
"""

from __future__ import annotations

import json
import os
import sys
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "sources"))

from index_server import IndexServer, start  # noqa: E402
from wheel_helpers import build_wheel, record_hash  # noqa: E402

from apiaudit.infra.progress import NullProgress  # noqa: E402
from apiaudit.matrix.sweep import run_matrix  # noqa: E402
from apiaudit.sources import release  # noqa: E402
from apiaudit.sources.cache import MARKER_NAME  # noqa: E402

VERSIONS = ["1.0", "2.0", "3.0"]


class Recorder(NullProgress):
    def __init__(self) -> None:
        self.steps: list[str] = []

    def step(self, message: str) -> None:
        self.steps.append(message)


def toy_wheel(folder: Path, version: str, *, broken: bool = False) -> Path:
    members: dict[str, bytes | str] = {
        "toypkg/__init__.py": "",
        "toypkg/mod.py": "def f(a, *, b=1):\n    return a + b\n",
        f"toypkg-{version}.dist-info/top_level.txt": "toypkg\n",
    }
    if broken:  # RECORD names another content for mod.py
        members[f"toypkg-{version}.dist-info/RECORD"] = f"toypkg/mod.py,{record_hash(b'other')},5\n"
    return build_wheel(folder, "toypkg", version, members, record=True, compression=zipfile.ZIP_DEFLATED)


@pytest.fixture
def index(tmp_path, monkeypatch):
    servers = []

    def serve(broken: tuple[str, ...] = ()) -> IndexServer:
        wheels = [toy_wheel(tmp_path / "wheels", v, broken=v in broken) for v in VERSIONS]
        state = IndexServer(wheels=wheels)
        servers.append(start(state)[0])
        monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
        monkeypatch.setenv("PIP_INDEX_URL", f"{state.url}/simple/")
        monkeypatch.setenv("PIP_DEFAULT_TIMEOUT", "20")
        for variable in ("PIP_NO_INDEX", "PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL"):
            monkeypatch.delenv(variable, raising=False)
        return state

    yield serve
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def consumer(tmp_path) -> Path:
    job = tmp_path / "job.py"
    job.write_text("from toypkg.mod import f\nf(1, b=2)\n", encoding="utf-8")
    return job


def fetched_by(cache_dir: Path) -> dict[str, str]:
    return {
        v: json.loads((cache_dir / "releases" / f"toypkg-{v}" / MARKER_NAME).read_text(encoding="utf-8"))["fetched_by"]
        for v in VERSIONS
    }


def test_releases_fetched_by_workers_read_ranges_and_show_their_progress(tmp_path, index, consumer):
    index()
    progress = Recorder()
    result = run_matrix([str(consumer)], "toypkg", cache_dir=tmp_path / "cache", available=VERSIONS, fetch_jobs=2,
                        scan_jobs=1, progress=progress)  # fmt: skip
    assert [(r.version, r.scanned, r.fetched, r.errors) for r in result.rows] == [(v, True, True, 0) for v in VERSIONS]
    assert fetched_by(tmp_path / "cache") == {v: "ranges" for v in VERSIONS}
    for v in VERSIONS:
        assert any(f"toypkg-{v}-py3-none-any.whl by byte ranges" in step for step in progress.steps), progress.steps


@pytest.mark.parametrize("how", ["argument", "process default"])
def test_verify_wheels_reaches_the_workers(tmp_path, index, consumer, monkeypatch, how):
    index()
    monkeypatch.setattr(release, "_VERIFY_WHEELS", how == "process default")
    run_matrix([str(consumer)], "toypkg", cache_dir=tmp_path / "cache", available=VERSIONS, fetch_jobs=2, scan_jobs=1,
               verify_wheels=True if how == "argument" else None)  # fmt: skip
    assert fetched_by(tmp_path / "cache") == {v: "download" for v in VERSIONS}


def test_a_release_a_worker_cannot_fetch_is_one_failed_row(tmp_path, index, consumer):
    index(broken=("2.0",))
    result = run_matrix([str(consumer)], "toypkg", cache_dir=tmp_path / "cache", available=VERSIONS, fetch_jobs=2, scan_jobs=1)
    rows = {r.version: r for r in result.rows}
    assert rows["1.0"].scanned and rows["3.0"].scanned
    assert not rows["2.0"].scanned and "malformed wheel" in (rows["2.0"].failure or "")
    assert "\n" not in (rows["2.0"].failure or "")


def test_ctrl_c_ends_the_fetch_workers_at_once_and_leaves_nothing(tmp_path, index, consumer):
    """Ctrl-C reaches the whole process group; the matrix ends its workers, removes their partial
    folders and says one line, however long their requests would still have taken."""
    import signal
    import subprocess
    import time

    state = index()
    state.wheel_delay_s = 60.0
    cache_dir = tmp_path / "cache"
    run = subprocess.Popen(
        [sys.executable, "-m", "apiaudit", "matrix", "--consumer", str(consumer), "--provider", "toypkg",
         "--cache-dir", str(cache_dir), "--no-progress", "--jobs", "2", "--scan-jobs", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, cwd=tmp_path,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not [p for p, _ in state.requests if p.startswith("/files/")] and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    started = time.monotonic()
    os.killpg(run.pid, signal.SIGINT)
    output, _ = run.communicate(timeout=30)
    assert time.monotonic() - started < 15
    text = output.decode()
    assert run.returncode == 130, text
    assert text.rstrip().splitlines()[-1] == "apiaudit: interrupted", text
    assert "Traceback" not in text and "leaked" not in text, text
    assert not list((cache_dir / "releases").glob(".partial-*"))
    deadline = time.monotonic() + 10  # the resource tracker sees the matrix gone and exits too
    while time.monotonic() < deadline:
        try:
            os.killpg(run.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        left = subprocess.run(["ps", "-o", "pid,stat,args", "-g", str(run.pid)], capture_output=True, text=True).stdout
        pytest.fail(f"a process of the matrix outlived it:\n{left}")
