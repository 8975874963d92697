"""Markdown (job summary, PR comment): counts, one table row per finding, policy lines, <details> lists."""

from __future__ import annotations

from dataclasses import replace

from apiaudit.findings import BaselineSummary, Delta, Suppressed, SuppressedBy
from apiaudit.report import render
from apiaudit.report.markdown import cell, code


def test_rows_counts_and_escaping(report):
    text = render(report, "markdown")
    lines = text.splitlines()
    assert lines[0] == "## apiaudit: speculators 0.3.0, jobs (/srv/audit/my jobs) \u00d7 vllm 0.10.1 (rules 2025.07)"
    assert "2 errors, 2 warnings, 2 cannot judge in 41 files (230 calls checked)" in text
    rows = [line for line in lines if line.startswith("| ") and not line.startswith("| severity")]
    assert len(rows) == 4  # cannot-judge only with show_unresolved
    assert len(render(report, "markdown", show_unresolved=True).splitlines()) > len(lines)
    assert any("`jobs: run, eagle:3.py:5`" in r for r in rows)  # two consumers: each row names its own
    assert all(r.count(" | ") == 3 for r in rows)  # no stray pipe breaks a row
    assert cell("a|b\nc") == "a\\|b<br>c"
    assert code("f(a |\n  b<1)") == "<code>f(a \\| \u23ce b&lt;1)</code>"


def test_policy_lines_fixed_and_suppressed_lists(report):
    f = report.findings
    report = replace(
        report,
        suppressed=(Suppressed(f[0], SuppressedBy.INLINE, "reviewed", "x.py:3"),),
        baseline=BaselineSummary("b.json", 1, 0),
        delta=Delta(against=replace(report.provider, version="0.9.0"), fixed=(f[1],), unchanged=0),
    )
    text = render(report, "markdown", show_suppressed=True)
    assert "> upgrade from vllm 0.9.0 to vllm 0.10.1:" in text
    assert "> baseline b.json: 1 known finding left out, 0 entries now fixed" in text
    assert "<summary>Fixed by the upgrade (1)</summary>" in text
    assert "<summary>Suppressed (1)</summary>" in text and "(inline: `x.py:3` \u2014 reviewed)" in text
    assert "1 suppressed (1 inline)" in render(report, "markdown")


def test_clean_report_says_so(report):
    assert "No findings." in render(replace(report, findings=()), "markdown")
