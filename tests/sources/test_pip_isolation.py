"""pip runs isolated: a `pip/` package (or sitecustomize) in the working directory or on
PYTHONPATH never runs, whether apiaudit fetches a release or lists versions.

Each hostile module writes a marker file when imported; the real pip must still do the work.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from apiaudit.sources import release as release_module
from apiaudit.sources import release_versions, resolve

HOSTILE = "open({marker!r}, 'a').write({name!r} + '\\n')\n"


def plant(folder: Path, marker: Path) -> None:
    """A folder whose pip, sitecustomize and usercustomize all write to `marker` when run."""
    (folder / "pip").mkdir(parents=True)
    for name in ("pip/__init__.py", "pip/__main__.py", "sitecustomize.py", "usercustomize.py"):
        (folder / name).write_text(HOSTILE.format(marker=str(marker), name=f"{folder.name}/{name}"))


@pytest.fixture
def hostile_places(tmp_path, monkeypatch) -> Path:
    """Hostile code in the working directory and on PYTHONPATH; returns the marker path."""
    marker = tmp_path / "ran.txt"
    checkout, on_path = tmp_path / "checkout", tmp_path / "on-path"
    plant(checkout, marker)
    plant(on_path, marker)
    monkeypatch.chdir(checkout)
    monkeypatch.setenv("PYTHONPATH", str(on_path))
    monkeypatch.setenv("PYTHONSTARTUP", str(on_path / "sitecustomize.py"))
    monkeypatch.setenv("PYTHONUSERBASE", str(on_path))
    return marker


def test_fetching_a_release_never_runs_a_pip_from_the_checkout_or_pythonpath(tmp_path, local_index, hostile_places):
    tree = resolve("toypkg==1.0", cache_dir=tmp_path / "cache")
    assert (tree.root / "toypkg" / "mod.py").is_file(), "the real pip must have fetched the wheel"
    assert not hostile_places.exists(), hostile_places.read_text()


def test_listing_versions_never_runs_a_pip_from_the_checkout_or_pythonpath(local_index, hostile_places):
    assert release_versions("toypkg") == ["0.9", "1.0"]
    assert not hostile_places.exists(), hostile_places.read_text()


def test_a_relative_cache_dir_still_works_from_pips_private_folder(tmp_path, local_index, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tree = resolve("toypkg==1.0", cache_dir=Path("relative-cache"))
    assert (tmp_path / "relative-cache" / "releases" / "toypkg-1.0" / "toypkg" / "mod.py").is_file()
    assert tree.packages == ("toypkg",)


def test_the_pip_command_is_isolated():
    command = release_module.pip_command(["--version"])
    assert command[1:4] == ["-I", "-m", "pip"]


def test_pips_in_fetch_threads_are_stopped_at_once(tmp_path, monkeypatch):
    """`matrix` fetches in threads: terminating must not wait for their downloads."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", f"http://127.0.0.1:{listener.getsockname()[1]}/")
    monkeypatch.setenv("PIP_TIMEOUT", "120")
    results = []
    fetch = threading.Thread(target=lambda: results.append(release_module._run_pip(["download", "-d", str(tmp_path), "x==1"])))
    fetch.start()
    listener.settimeout(120)
    connection, _ = listener.accept()  # pip is waiting on the listener, which never answers
    release_module.stop_running_pips()
    fetch.join(30)
    connection.close()
    listener.close()
    assert not fetch.is_alive(), "pip was not stopped"
    assert results and results[0].returncode != 0
