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
