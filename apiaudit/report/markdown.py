"""Markdown: a GitHub job summary or pull-request comment (GitHub-flavoured: tables, <details>)."""

from __future__ import annotations

from apiaudit.findings import Finding, Report
from apiaudit.report.base import (
    RenderOptions,
    headline,
    policy_lines,
    severity_phrases,
    short_finding,
    suppressed_phrase,
    visible_findings,
)

# Longer calls are cut: a summary is read in a browser, the JSON report has every character.
MAX_CELL = 300


def cell(text: str | None) -> str:
    """`text` made safe for one table cell: pipes escaped, new lines as <br>, long text cut."""
    if not text:
        return ""
    text = text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "\u2026"
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", "").replace("\n", "<br>")


def code(text: str | None) -> str:
    """`text` as inline code in a table cell: HTML-escaped, one line (⏎ marks line breaks), pipes escaped."""
    if not text:
        return ""
    text = text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "\u2026"
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = " \u23ce ".join(line.strip() for line in text.replace("\r", "").split("\n"))
    return "<code>" + text.replace("|", "\\|") + "</code>"


def _row(f: Finding) -> str:
    where = f"`{f.path}:{f.line}`" if f.line > 0 else f"`{f.path}`"
    parts = [f"**{cell(f.message)}**"]
    if f.source:
        parts.append(f"call: {code(f.source.strip())}")
    if f.signature:
        parts.append(f"provider: {code(f.signature)}")
    if f.conditional and f.guard:
        parts.append(f"only if: {code(f.guard)}")
    if f.reason:
        parts.append(f"why: {cell(f.reason)}")
    if f.advice:
        parts.append(f"fix: {cell(f.advice)}")
    return f"| {f.severity.value} | `{f.rule}` | {where} | {'<br>'.join(parts)} |"


def _counts(report: Report, unreachable_listed: bool) -> str:
    parts = severity_phrases(report, unreachable_listed=unreachable_listed)
    parts.append(f"{report.cannot_judge} cannot judge")
    if report.suppressed:
        parts.append(suppressed_phrase(report, listed=True))
    return ", ".join(parts) + f" in {report.files_scanned} files ({report.calls_checked} calls checked)"


def render(report: Report, options: RenderOptions) -> str:
    shown = visible_findings(report, options.show_unresolved, options.show_unreachable)
    lines = [f"## apiaudit: {cell(headline(report))}", "", _counts(report, options.show_unreachable), ""]
    notes = policy_lines(report, unreachable_listed=options.show_unreachable)
    lines += [f"> {cell(line)}" for line in notes]
    if notes:
        lines.append("")
    if shown:
        several = len({c.key for c in report.consumers}) > 1
        lines += ["| severity | rule | where | finding |", "|---|---|---|---|"]
        for f in shown:
            row = _row(f)
            lines.append(row.replace(f"| `{f.path}", f"| `{f.consumer}: {f.path}", 1) if several else row)
    else:
        lines.append("No findings." if not report.findings else "No findings to list (cannot-judge only).")
    if report.delta is not None and report.delta.fixed:
        lines += ["", f"<details><summary>Fixed by the upgrade ({len(report.delta.fixed)})</summary>", ""]
        lines += [f"- {code(short_finding(f))}" for f in report.delta.fixed]
        lines += ["", "</details>"]
    if report.suppressed and options.show_suppressed:
        lines += ["", f"<details><summary>Suppressed ({len(report.suppressed)})</summary>", ""]
        for s in report.suppressed:
            reason = f" \u2014 {cell(s.reason)}" if s.reason else ""
            lines.append(f"- {code(short_finding(s.finding))} ({s.by.value}: `{s.where}`{reason})")
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"
