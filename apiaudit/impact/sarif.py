"""`impact` on the provider's own lines: SARIF results and GitHub annotations placed on the
definition each change touched on NEW (``pkg/mod.py:LINE``, a path in the provider's checkout),
each naming the downstream sites it breaks. A change with no place on NEW (a name removed) is
placed where it was on OLD, said so; with neither, it has no location."""

from __future__ import annotations

import json
from typing import Any

from apiaudit.impact.results import ChangeImpact, ImpactResult
from apiaudit.report.base import INFORMATION_URI, tool_version
from apiaudit.report.github import escape_data, escape_property
from apiaudit.report.sarif import SARIF_SCHEMA, SARIF_VERSION

RULE_ID = "downstream-break"
RULE_ID_CONDITIONAL = "downstream-conditional"


def _place(impact: ChangeImpact) -> tuple[str, int | None] | None:
    """(path, line) of the change on NEW, else on OLD (line None: a module, no line); None when
    neither side locates it."""
    location = impact.change.location or impact.change.old_location
    if not location:
        return None
    path, _, line = location.rpartition(":")
    return (path, int(line)) if path and line.isdigit() else (location, None)


def message(change: ChangeImpact) -> str:
    c = change.change
    where = "" if c.location or not c.old_location else f" (gone: it was at {c.old_location} on the old side)"
    sites = [f"{b.downstream} at {b.site} ({b.finding.rule}: {b.finding.message})" for b in change.breaks]
    verb = "breaks" if change.blocking else "may break"
    return f"{c.summary.replace('`', '')}{where} {verb} {len(change.downstreams)} downstream(s): " + "; ".join(sites)


def sarif_dict(result: ImpactResult) -> dict[str, Any]:
    rules = [
        {"id": RULE_ID, "shortDescription": {"text": "a provider change breaks a known downstream"},
         "defaultConfiguration": {"level": "error"}},
        {"id": RULE_ID_CONDITIONAL, "shortDescription": {"text": "a provider change may break a known downstream (conditional findings only)"},
         "defaultConfiguration": {"level": "warning"}},
    ]  # fmt: skip
    results = []
    for change in result.by_change:
        entry: dict[str, Any] = {
            "ruleId": RULE_ID if change.blocking else RULE_ID_CONDITIONAL,
            "level": "error" if change.blocking else "warning",
            "message": {"text": message(change)},
            "partialFingerprints": {"apiauditChange/v1": change.change.stable_id},
            "properties": {
                "kind": change.change.kind.value, "symbol": change.change.symbol,
                "downstreams": list(change.downstreams),
                "sites": [{"downstream": b.downstream, "site": b.site, "rule": b.finding.rule} for b in change.breaks],
            },
        }  # fmt: skip
        place = _place(change)
        if place is not None:
            physical: dict[str, Any] = {"artifactLocation": {"uri": place[0], "uriBaseId": "%SRCROOT%"}}
            if place[1] is not None:
                physical["region"] = {"startLine": place[1]}
            entry["locations"] = [{"physicalLocation": physical}]
        results.append(entry)
    run = {
        "tool": {"driver": {"name": "apiaudit-impact", "version": tool_version(), "informationUri": INFORMATION_URI, "rules": rules}},
        "results": results,
        "properties": {"summary": result.summary},
    }
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def render_sarif(result: ImpactResult) -> str:
    return json.dumps(sarif_dict(result), indent=2) + "\n"


def render_github(result: ImpactResult) -> str:
    """One workflow command per provider change, on its line in the provider's checkout."""
    lines = []
    for change in result.by_change:
        command = "error" if change.blocking else "warning"
        place = _place(change)
        props = [("file", place[0])] if place else []
        if place and place[1] is not None:
            props.append(("line", str(place[1])))
        props.append(("title", f"apiaudit impact: {change.change.summary.replace('`', '')}"))
        shown = ",".join(f"{k}={escape_property(v)}" for k, v in props)
        lines.append(f"::{command} {shown}::{escape_data(message(change))}")
    lines.append(f"::notice title=apiaudit impact::{escape_data(result.summary)}")
    return "\n".join(lines) + "\n"
