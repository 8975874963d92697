"""GitLab Code Quality: a JSON array of issues (`artifacts:reports:codequality`).

Fields as GitLab documents them: description, check_name, fingerprint (unique per issue, stable
across commits: the SARIF fingerprint), severity (info|minor|major|critical|blocker), location.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from apiaudit.findings import Finding, Report, Severity
from apiaudit.report.base import RenderOptions, finding_id, visible_findings

SEVERITIES = {Severity.ERROR: "critical", Severity.WARNING: "major", Severity.INFO: "info"}


def issue(f: Finding, identity: str) -> dict[str, Any]:
    description = f.message if not f.advice else f"{f.message} Fix: {f.advice}"
    return {
        "type": "issue",
        "description": description,
        "check_name": f.rule,
        "categories": ["Bug Risk"],
        "fingerprint": identity,
        "severity": SEVERITIES[f.severity],
        "location": {"path": f.path, "lines": {"begin": max(f.line, 1), **({"end": f.end_line} if f.end_line else {})}},
    }


def report_to_issues(report: Report, *, show_unresolved: bool = False, show_unreachable: bool = False) -> list[dict[str, Any]]:
    seen: Counter = Counter()
    return [issue(f, finding_id(f, seen)) for f in visible_findings(report, show_unresolved, show_unreachable)]


def render(report: Report, options: RenderOptions) -> str:
    issues = report_to_issues(report, show_unresolved=options.show_unresolved, show_unreachable=options.show_unreachable)
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"
