"""Fixtures shared by every test package."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def release_cache() -> Path:
    """A release cache shared by all tests and kept between runs, so real wheels are fetched once.

    $APIAUDIT_TEST_CACHE, else ~/.cache/apiaudit-test (never the user's real apiaudit cache).
    """
    root = Path(os.environ.get("APIAUDIT_TEST_CACHE") or Path.home() / ".cache" / "apiaudit-test")
    root.mkdir(parents=True, exist_ok=True)
    return root


@pytest.fixture(scope="session")
def released(release_cache: Path):
    """`released("speculators==0.3.0")` -> the CodeTree of that real release (fetched once, cached)."""
    from apiaudit.sources import resolve

    def fetch(spec: str):
        return resolve(spec, cache_dir=release_cache)

    return fetch


@pytest.fixture
def fresh_interpreter(tmp_path: Path):
    """`fresh_interpreter(code)` -> the JSON value `code` prints last, run by a new Python in a
    scratch folder (for what must run in a process of its own, such as forking copies of it)."""
    import json
    import subprocess
    import sys
    import textwrap

    def run(code: str):
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=tmp_path, timeout=900
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    return run
