from __future__ import annotations

import re

from apiaudit.findings import Severity
from apiaudit.report import render
from apiaudit.report.github import escape_data, escape_property

COMMAND = re.compile(r"^::(error|warning|notice) ((?:[A-Za-z]+=[^,:]*)(?:,[A-Za-z]+=[^,:]*)*)::(.*)$")


def _parse(line: str) -> tuple[str, dict[str, str], str]:
    match = COMMAND.match(line)
    assert match, line
    props = dict(p.split("=", 1) for p in match.group(2).split(","))
    return match.group(1), props, match.group(3)


def test_escaping_follows_the_actions_toolkit():
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert escape_property("a:b,c%d\n") == "a%3Ab%2Cc%25d%0A"
    # % first, so an escape is never escaped twice
    assert escape_data("%0A") == "%250A"


def test_one_line_per_visible_finding_with_levels(report):
    lines = render(report, "github").splitlines()
    visible = [f for f in report.findings if f.rule != "cannot-judge"]
    assert len(lines) == len(visible)
    levels = sorted(_parse(line)[0] for line in lines)
    expected = sorted({Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}[f.severity] for f in visible)
    assert levels == expected


def test_properties_carry_file_line_column_and_rule(report):
    line = next(l for l in render(report, "github").splitlines() if "unexpected-keyword" in l)
    level, props, message = _parse(line)
    assert level == "error"
    assert props == {
        "file": "speculators/data_generation/generator.py",
        "line": "42",
        "col": "9",
        "endLine": "44",
        "endColumn": "10",
        "title": "unexpected-keyword",
    }
    assert message.startswith("EngineArgs() got an unexpected keyword argument 'disable_log_requests'%0AFix: Drop")


def test_commas_colons_and_newlines_cannot_break_the_command(report):
    line = next(l for l in render(report, "github").splitlines() if "eagle3-aux-hidden-states" in l)
    level, props, _ = _parse(line)
    assert level == "warning"
    assert props["file"] == "run%2C eagle%3A3.py"
    assert "\n" not in line


def test_info_findings_become_notices_and_unresolved_only_on_request(make_report, make_finding):
    report = make_report(findings=(
        make_finding(severity=Severity.INFO, rule="deprecated-call", message="50% of: this, is info\nsecond"),
        make_finding(rule="cannot-judge", severity=Severity.INFO, line=3, message="unbound call"),
    ))
    lines = render(report, "github").splitlines()
    assert len(lines) == 1
    level, _, message = _parse(lines[0])
    assert level == "notice" and message == "50%25 of: this, is info%0Asecond"
    assert len(render(report, "github", show_unresolved=True).splitlines()) == 2


def test_no_findings_no_output(make_report):
    assert render(make_report(findings=()), "github") == ""
