"""JUnit XML: parses, one case per finding, failures by severity, a clean run is one passing case."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace

from apiaudit.report import render


def test_cases_failures_and_skips(report):
    root = ET.fromstring(render(report, "junit", show_unresolved=True))
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == len(report.findings) == int(suite.get("tests"))
    failures = [c.find("failure") for c in cases if c.find("failure") is not None]
    assert sorted(f.get("type") for f in failures) == ["error", "error", "warning", "warning"]
    assert suite.get("failures") == "4" and suite.get("skipped") == "2"
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["cannot_judge"] == "2"
    unexpected = next(c for c in cases if c.get("name").startswith("unexpected-keyword"))
    assert "fix: Drop disable_log_requests" in unexpected.find("failure").text


def test_clean_run_is_one_passing_case(report):
    root = ET.fromstring(render(replace(report, findings=()), "junit"))
    [case] = root.find("testsuite").findall("testcase")
    assert case.get("name") == "no findings" and list(case) == []
