"""Deprecation forecast in the matrix: a toy provider deprecates a keyword and a function, then removes them."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from apiaudit.matrix.forecast import forecast
from apiaudit.matrix.render import render_matrix
from apiaudit.matrix.sweep import run_matrix
from apiaudit.sources import cache

NAME = "deptoy"
_PLAIN = '''
def connect(host, timeout=None):
    return host


def ping(host):
    return host
'''
_DEPRECATED = '''
import warnings

from typing_extensions import deprecated


def connect(host, timeout=None, *, retries=None):
    if timeout is not None:
        warnings.warn("timeout is deprecated; use retries", DeprecationWarning)
    return host


@deprecated("ping() goes away; use connect()")
def ping(host):
    return host
'''
_REMOVED = '''
def connect(host, *, retries=None):
    return host
'''
HISTORY = {"1.0": _PLAIN, "1.1": _DEPRECATED, "1.2": _DEPRECATED, "1.3": _REMOVED}
CONSUMER = '''
from deptoy.api import connect, ping


def go():
    connect("h", timeout=3)
    ping("h")
'''


def _publish(cache_dir: Path) -> None:
    for version, source in HISTORY.items():
        entry = cache.entry_dir(cache_dir, NAME, version)
        (entry / NAME).mkdir(parents=True)
        (entry / NAME / "__init__.py").write_text("")
        (entry / NAME / "api.py").write_text(textwrap.dedent(source))
        info = entry / f"{NAME}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\n\n")
        (info / "top_level.txt").write_text(f"{NAME}\n")
        files = cache.tree_files(entry)
        marker = cache.Marker(NAME, version, f"{NAME}-{version}-py3-none-any.whl", "0" * 64, len(files), cache.tree_digest(entry, files))
        (entry / cache.MARKER_NAME).write_text(marker.to_json())


def test_matrix_says_when_each_deprecated_use_disappears(tmp_path, monkeypatch):
    monkeypatch.setenv("APIAUDIT_CONFIG", "none")
    cache_dir = tmp_path / "cache"
    _publish(cache_dir)
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "job.py").write_text(textwrap.dedent(CONSUMER))
    result = run_matrix([str(jobs)], "deptoy>=1.0", cache_dir=cache_dir, available=list(HISTORY), scan_jobs=1)
    got = {(fc.finding.param, fc.finding.line, fc.deprecated_in, fc.removed_in) for fc in forecast(result.rows)}
    assert got == {("timeout", 6, "1.1", "1.3"), (None, 7, "1.1", "1.3")}

    table = render_matrix(result, "table")
    assert "deprecated: job.py:6: connect(timeout=...) deprecated (seen from 1.1), removed in 1.3" in table
    assert "deprecated: job.py:7: ping() deprecated (seen from 1.1), removed in 1.3" in table
    doc = json.loads(render_matrix(result, "json"))
    assert {(d["param"], d["removed_in"]) for d in doc["deprecations"]} == {("timeout", "1.3"), (None, "1.3")}


def test_a_deprecation_still_present_at_the_end_has_no_removal(tmp_path, monkeypatch):
    monkeypatch.setenv("APIAUDIT_CONFIG", "none")
    cache_dir = tmp_path / "cache"
    _publish(cache_dir)
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "job.py").write_text(textwrap.dedent(CONSUMER))
    result = run_matrix([str(jobs)], "deptoy<=1.2", cache_dir=cache_dir, available=list(HISTORY), scan_jobs=1)
    assert {fc.removed_in for fc in forecast(result.rows)} == {None}
    assert "still present in the last release scanned" in render_matrix(result, "table")
