"""Helpers for the fix tests: findings built by hand at places in the fixture files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from apiaudit.findings import Finding, Severity

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "fixes"
EXPECTED = FIXTURES / "expected"


def locate(source: str, needle: str, occurrence: int = 1) -> tuple[int, int]:
    """(1-based line, 0-based column) where the `occurrence`-th `needle` starts in `source`."""
    offset = -1
    for _ in range(occurrence):
        offset = source.index(needle, offset + 1)
    line = source.count("\n", 0, offset) + 1
    column = offset - (source.rfind("\n", 0, offset) + 1)
    return line, column


def make_finding(path: str, needle: str, rule: str, occurrence: int = 1, **overrides: Any) -> Finding:
    """A Finding at `needle` in fixture file `path` (relative to fixtures/fixes)."""
    line, column = locate((FIXTURES / path).read_text(), needle, occurrence)
    base: dict[str, Any] = dict(
        rule=rule,
        severity=Severity.ERROR,
        consumer="fixture",
        path=path,
        line=line,
        column=column,
        callee=None,
        param=None,
        message=f"{rule} (built by hand)",
    )
    base.update(overrides)
    return Finding(**base)


def engine_findings(path: str = "consumerpkg/engine.py") -> list[Finding]:
    """The two findings a scan of the fixture consumer would report."""
    source = (FIXTURES / "consumer" / path).read_text()
    legacy_line, legacy_column = locate(source, "build(")
    second_line, second_column = locate(source, "build(", 2)
    common = dict(severity=Severity.ERROR, consumer="consumerpkg", path=path, callee="provider.api.build", message="m")
    return [
        Finding(rule="unexpected-keyword", line=legacy_line, column=legacy_column, param="legacy", **common),
        Finding(
            rule="missing-required",
            line=second_line,
            column=second_column,
            param="block_size",
            **common,
        ),
    ]
