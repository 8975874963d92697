"""GitHub Actions workflow commands: one `::error file=...::message` line per finding.

Escaping follows @actions/core (toolkit `command.ts`): in the message `%`, CR and
LF are percent-encoded; in properties `:` and `,` are too, since they delimit.
"""

from __future__ import annotations

from apiaudit.findings import Finding, Report, Severity
from apiaudit.report.base import (
    RenderOptions,
    policy_lines,
    suppressed_phrase,
    visible_findings,
)

COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def annotation(f: Finding, *, severity: Severity | None = None, prefix: str = "") -> str:
    properties = [("file", f.path)]
    if f.line > 0:
        # GitHub counts columns from 1; findings count from 0.
        properties += [("line", str(f.line)), ("col", str(f.column + 1))]
        if f.end_line is not None and f.end_line >= f.line:
            properties.append(("endLine", str(f.end_line)))
            if f.end_column is not None:
                properties.append(("endColumn", str(f.end_column + 1)))
    properties.append(("title", f.rule))
    message = prefix + f.message + (f"\nWhy: {f.reason}" if f.reason else "") + (f"\nFix: {f.advice}" if f.advice else "")
    props = ",".join(f"{key}={escape_property(value)}" for key, value in properties)
    return f"::{COMMANDS[severity or f.severity]} {props}::{escape_data(message)}"


def render(report: Report, options: RenderOptions) -> str:
    lines = [annotation(f) for f in visible_findings(report, options.show_unresolved, options.show_unreachable)]
    if options.show_suppressed:
        lines += [
            annotation(s.finding, severity=Severity.INFO, prefix=f"suppressed ({s.by.value}: {s.where}"
                       + (f" -- {s.reason}" if s.reason else "") + "): ")
            for s in report.suppressed
        ]  # fmt: skip
    # Counted here too: one notice, so a CI log never hides that findings were silenced.
    notes = policy_lines(report, unreachable_listed=options.show_unreachable)
    if report.suppressed:
        notes.append(suppressed_phrase(report, listed=options.show_suppressed))
    if notes:
        lines.append(f"::notice title=apiaudit::{escape_data('; '.join(notes))}")
    return "".join(line + "\n" for line in lines)
