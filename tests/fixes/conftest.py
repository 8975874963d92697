"""Findings built by hand against fixture files: these tests exercise the codemods, not the engine."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fix_helpers import FIXTURES


@pytest.fixture
def consumer_copy(tmp_path: Path) -> Path:
    """A writable copy of fixtures/fixes/consumer (the import root of `consumerpkg`)."""
    target = tmp_path / "site"
    shutil.copytree(FIXTURES / "consumer", target)
    return target
