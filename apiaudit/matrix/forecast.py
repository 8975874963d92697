"""Deprecation forecast over a matrix: for each `deprecated-use`, the later release where it is gone.

A deprecated keyword is gone in the first later release whose scan reports the same call
(same file and line) with that keyword unexpected; a deprecated callable, in the first later
release whose scan reports its name missing in that file (an import or an attribute).
"""

from __future__ import annotations


from apiaudit.checks.deprecations import RULE
from apiaudit.findings import Finding
from apiaudit.infra.frozen import record

GONE_RULES = ("unexpected-keyword", "import-missing", "attribute-missing")


@record
class Forecast:
    finding: Finding  # the deprecated-use finding, from the first release that reports it
    deprecated_in: str  # first scanned release with the deprecation
    removed_in: str | None  # first later release where it is gone; None: still there in the range


def _name(path: str | None) -> str:
    if not path:
        return ""
    parts = path.split(".")
    return parts[-2] if parts[-1] == "__init__" and len(parts) > 1 else parts[-1]


def _gone(deprecated: Finding, later: Finding) -> bool:
    if later.rule not in GONE_RULES or later.consumer != deprecated.consumer or later.path != deprecated.path:
        return False
    if deprecated.param is not None:
        return later.rule == "unexpected-keyword" and later.param == deprecated.param and later.line == deprecated.line
    # `callee` of an import-missing is the dotted name looked for; the message names it otherwise.
    name = _name(deprecated.callee)
    return bool(name) and (_name(later.callee) == name or f"'{name}'" in later.message or f" {name}" in later.message)


def forecast(rows) -> list[Forecast]:
    """Forecasts for every deprecated use in the matrix rows (oldest release first)."""
    scanned = [r for r in rows if r.report is not None]
    seen: dict[tuple, Forecast] = {}
    for i, row in enumerate(scanned):
        for f in row.report.findings:
            if f.rule != RULE:
                continue
            key = (f.consumer, f.path, f.line, f.callee, f.param)
            if key in seen:
                continue
            removed = next(
                (later.version for later in scanned[i + 1 :] if any(_gone(f, g) for g in later.report.findings)),
                None,
            )
            seen[key] = Forecast(f, row.version, removed)
    return sorted(seen.values(), key=lambda fc: fc.finding.sort_key)


def describe(fc: Forecast) -> str:
    f = fc.finding
    what = f"{_name(f.callee)}({f.param}=...)" if f.param else f"{_name(f.callee)}()"
    gone = f"removed in {fc.removed_in}" if fc.removed_in else "still present in the last release scanned"
    return f"{f.path}:{f.line}: {what} deprecated (seen from {fc.deprecated_in}), {gone}"
