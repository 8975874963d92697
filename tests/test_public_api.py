"""The public API is exactly what docs/api.md lists, with the engine's real signatures."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import apiaudit

DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def test_inventory_matches_the_docs():
    documented = set(re.findall(r"^### `(\w+)`", DOC.read_text(encoding="utf-8"), re.M))
    assert set(apiaudit.__all__) - {"__version__"} == documented


def test_signatures_are_the_engines_own():
    from apiaudit.audit import scan
    from apiaudit.gate import PreflightFailed, preflight

    assert apiaudit.scan is scan and apiaudit.preflight is preflight and apiaudit.PreflightFailed is PreflightFailed
    params = inspect.signature(apiaudit.scan).parameters
    assert list(params)[:2] == ["consumers", "provider"] and "cache_dir" in params
    assert "fail_on" in inspect.signature(apiaudit.preflight).parameters


def test_importing_apiaudit_loads_no_engine():
    code = "import sys, apiaudit; print(sorted({'griffe', 'libcst', 'click', 'apiaudit.audit'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
