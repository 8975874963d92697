"""The published JSON Schema (docs/report.schema.json) describes every JSON report apiaudit writes."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from apiaudit.findings import BaselineSummary, Delta, Suppressed, SuppressedBy
from apiaudit.report import render, report_from_dict

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "report.schema.json").read_text(encoding="utf-8"))


def _full(report):
    """The sample report with every 1.2 field filled: suppressed of each kind, a baseline, a delta."""
    f = report.findings
    suppressed = tuple(Suppressed(f[i], by, "reviewed" if by.value in ("inline", "file", "config") else None, f"x.py:{i}")
                       for i, by in enumerate(SuppressedBy))  # fmt: skip
    return replace(
        report,
        suppressed=suppressed,
        baseline=BaselineSummary(path=".apiaudit-baseline.json", matched=2, fixed=1),
        delta=Delta(against=replace(report.provider, version="0.9.0"), fixed=f[:2], unchanged=3),
        notices=("pyproject.toml [tool.apiaudit]: ignores[0]: the ignore of x expired on 2020-01-01",),
    )


@pytest.mark.parametrize("variant", ["plain", "full", "empty"])
def test_every_json_report_validates_and_reads_back(report, variant):
    if variant == "full":
        report = _full(report)
    elif variant == "empty":
        report = replace(report, findings=(), consumers=(), rules_version=None)
    doc = json.loads(render(report, "json"))
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.validate(doc, SCHEMA)
    assert report_from_dict(doc) == replace(report, findings=tuple(sorted(report.findings, key=lambda f: f.sort_key)))


def test_the_schema_lists_every_suppression_kind_and_rejects_a_broken_report(report):
    by = SCHEMA["$defs"]["suppressed"]["properties"]["by"]["enum"]
    assert by == [k.value for k in SuppressedBy]
    doc = json.loads(render(report, "json"))
    doc["findings"][0]["line"] = "ten"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SCHEMA)


def test_a_followed_dependency_keeps_who_requires_it_through_json(report):
    dependency = replace(report.consumers[0], name="bridge", required_by="app 1.0", requirement="bridge==2.0")
    report = replace(report, consumers=(report.consumers[0], dependency))
    doc = json.loads(render(report, "json"))
    jsonschema.validate(doc, SCHEMA)
    assert doc["consumers"][1]["required_by"] == "app 1.0" and "required_by" not in doc["consumers"][0]
    assert report_from_dict(doc).consumers == report.consumers
