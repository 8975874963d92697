"""A tiny provider and consumer in a project directory: the policy tests run scans on them."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture
def project(tmp_path, monkeypatch):
    """tmp_path/ holds prov/tinyprov (the provider), jobs/ (the consumer); the working directory is tmp_path."""
    prov = tmp_path / "prov" / "tinyprov"
    prov.mkdir(parents=True)
    (prov / "__init__.py").write_text("def make(a, *, b):\n    return a\n\ndef other(x):\n    return x\n")
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "bad.py").write_text(textwrap.dedent("""\
        from tinyprov import make, other
        make(1, b=2, c=3)
        other(1, y=2)
    """))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("APIAUDIT_CONFIG", raising=False)
    monkeypatch.setenv("APIAUDIT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path

