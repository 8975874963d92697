"""The project audits its own runner (issue 4, done-means 4): no error against speculators."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

from apiaudit.audit import scan
from apiaudit.findings import Severity
from apiaudit.gate.layers import format_finding

RUNNER = Path(__file__).resolve().parents[2] / "apiaudit" / "runner"


def _errors(report):
    return [format_finding(f) for f in report.findings if f.severity is Severity.ERROR]


def test_runner_against_installed_speculators(tmp_path):
    try:
        metadata.version("speculators")
    except metadata.PackageNotFoundError:
        pytest.skip("speculators is not installed here (the runner extra installs it)")
    report = scan([str(RUNNER)], "speculators", cache_dir=tmp_path)
    assert report.calls_checked > 10, "the runner's calls into speculators were not found"
    assert _errors(report) == []


@pytest.mark.network
@pytest.mark.parametrize("release", ["speculators==0.3.0", "speculators==0.4.0"])
def test_runner_against_every_supported_release(release, release_cache):
    report = scan([str(RUNNER)], release, cache_dir=release_cache)
    assert report.calls_checked > 10
    assert _errors(report) == []
