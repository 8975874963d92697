"""GitLab Code Quality: the fields GitLab reads, unique fingerprints stable across a line shift."""

from __future__ import annotations

import json
from dataclasses import replace

import jsonschema

from apiaudit.report import render

# The fields GitLab's Code Quality widget requires (its documented report format).
CODE_QUALITY = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string"},
            "check_name": {"type": "string"},
            "fingerprint": {"type": "string"},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {
                "type": "object",
                "required": ["path", "lines"],
                "properties": {"path": {"type": "string"},
                               "lines": {"type": "object", "required": ["begin"],
                                         "properties": {"begin": {"type": "integer", "minimum": 1}}}},
            },
        },
    },
}


def test_issues_validate_and_fingerprints_are_unique(report, make_finding):
    twin = make_finding(line=50, column=0)
    report = replace(report, findings=report.findings + (twin, replace(twin, line=51)))
    issues = json.loads(render(report, "gitlab"))
    jsonschema.validate(issues, CODE_QUALITY)
    fingerprints = [i["fingerprint"] for i in issues]
    assert len(set(fingerprints)) == len(fingerprints)
    assert {i["severity"] for i in issues} == {"critical", "major"}


def test_fingerprint_survives_a_line_shift(report):
    before = json.loads(render(report, "gitlab"))
    moved = replace(report, findings=tuple(replace(f, line=f.line + 7) for f in report.findings))
    after = json.loads(render(moved, "gitlab"))
    assert [i["fingerprint"] for i in before] == [i["fingerprint"] for i in after]
