"""JUnit XML: one test case per finding, for CI systems that show test reports (GitLab, Jenkins, Azure).

Errors and warnings are failures (their `type` says which); info findings, and
cannot-judge with --show-unresolved, are skipped cases. A clean audit is one passing case,
so the report never looks empty.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from apiaudit.findings import Finding, Report, Severity
from apiaudit.report.base import TOOL_NAME, RenderOptions, headline, visible_findings


def _case(suite: ET.Element, f: Finding) -> None:
    name = f"{f.rule}: {f.path}:{f.line}" + (f" ({f.param})" if f.param else "")
    case = ET.SubElement(suite, "testcase", classname=f"{f.consumer}.{f.path}", name=name, file=f.path, line=str(f.line))
    text = "\n".join(x for x in (f.message, f.source and f"call: {f.source}", f.signature and f"provider: {f.signature}",
                                 f.advice and f"fix: {f.advice}") if x)  # fmt: skip
    if f.severity is Severity.INFO:
        ET.SubElement(case, "skipped", message=f.message)
    else:
        failure = ET.SubElement(case, "failure", message=f.message, type=f.severity.value)
        failure.text = text


def render(report: Report, options: RenderOptions) -> str:
    findings = visible_findings(report, options.show_unresolved, options.show_unreachable)
    failures = sum(1 for f in findings if f.severity is not Severity.INFO)
    skipped = len(findings) - failures
    root = ET.Element("testsuites", name=TOOL_NAME, tests=str(max(len(findings), 1)), failures=str(failures))
    suite = ET.SubElement(
        root, "testsuite", name=headline(report), tests=str(max(len(findings), 1)), failures=str(failures),
        errors="0", skipped=str(skipped), time=f"{report.duration_s:.3f}",
    )  # fmt: skip
    properties = ET.SubElement(suite, "properties")
    for name, value in (("cannot_judge", report.cannot_judge), ("suppressed", len(report.suppressed)),
                        ("files_scanned", report.files_scanned), ("calls_checked", report.calls_checked)):  # fmt: skip
        ET.SubElement(properties, "property", name=name, value=str(value))
    if not findings:
        ET.SubElement(suite, "testcase", classname=TOOL_NAME, name="no findings")
    for f in findings:
        _case(suite, f)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
