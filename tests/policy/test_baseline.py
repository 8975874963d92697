"""Baseline: written, read back, surviving a line shift and a reformat, new findings still reported."""

from __future__ import annotations

import json
import textwrap

from policy_helpers import run, validate_report, write_config

from apiaudit.findings import Finding, Severity
from apiaudit.policy.baseline import BaselineKey, baseline_document, normalize_source

SCAN = ("scan", "--consumer", "jobs", "--provider", "prov/tinyprov")


def _scan(*extra: str) -> tuple[int, dict]:
    code, out = run(*SCAN, "--format", "json", *extra)
    return code, validate_report(json.loads(out))


def test_round_trip_survives_a_line_shift_and_reformatting(project):
    code, out = run(*SCAN, "--write-baseline", "baseline.json")
    assert code == 0 and "wrote 2 findings to baseline baseline.json" in out
    entries = json.loads((project / "baseline.json").read_text())["entries"]
    assert [(e["rule"], e["path"], e["param"], e["count"]) for e in entries] == [
        ("unexpected-keyword", "bad.py", "c", 1), ("unexpected-keyword", "bad.py", "y", 1)
    ]  # fmt: skip
    assert all("line" not in e for e in entries)
    code, doc = _scan("--baseline", "baseline.json")
    assert code == 0 and doc["findings"] == [] and doc["baseline"]["matched"] == 2

    # Lines added above, the call reformatted over three lines, and one new bad call.
    (project / "jobs" / "bad.py").write_text(textwrap.dedent("""\
        '''A docstring pushed everything down.'''
        import os

        from tinyprov import make, other
        make(
            1, b=2,   c=3,  # still here
        )
        other(1, y=2)
        other(1, z=2)
    """))
    code, doc = _scan("--baseline", "baseline.json")
    assert code == 1
    assert [(f["param"], f["line"]) for f in doc["findings"]] == [("z", 9)]
    assert doc["baseline"] == {"path": "baseline.json", "matched": 2, "fixed": 0}
    assert sorted(s["by"] for s in doc["suppressed"]) == ["baseline", "baseline"]


def test_fixed_entries_are_counted(project):
    run(*SCAN, "--write-baseline", "baseline.json")
    (project / "jobs" / "bad.py").write_text("from tinyprov import make, other\nmake(1, b=2, c=3)\nother(1)\n")
    code, doc = _scan("--baseline", "baseline.json")
    assert code == 0 and doc["baseline"]["fixed"] == 1
    _, table = run(*SCAN, "--format", "table", "--baseline", "baseline.json")
    assert "baseline baseline.json: 1 known finding left out, 1 entry now fixed" in table


def test_identical_calls_are_counted_not_merged(project):
    (project / "jobs" / "bad.py").write_text("from tinyprov import other\nother(1, y=2)\nother(1, y=2)\n")
    run(*SCAN, "--write-baseline", "baseline.json")
    (project / "jobs" / "bad.py").write_text("from tinyprov import other\nother(1, y=2)\nother(1, y=2)\nother(1, y=2)\n")
    code, doc = _scan("--baseline", "baseline.json")
    assert code == 1 and [f["line"] for f in doc["findings"]] == [4]


def test_config_baseline_and_a_missing_or_broken_file_is_one_line(project):
    write_config(project, 'baseline = "nothing-here.json"\n')
    code, out = run(*SCAN, "--format", "json")
    assert code == 2 and out.count("\n") == 1
    assert "baseline file" in out and "nothing-here.json does not exist (write one with --write-baseline" in out
    (project / "broken.json").write_text("{")
    code, out = run(*SCAN, "--format", "json", "--baseline", "broken.json")
    assert code == 2 and out.count("\n") == 1 and "not readable JSON" in out
    (project / "other.json").write_text('{"version": 2}')
    code, out = run(*SCAN, "--format", "json", "--baseline", "other.json")
    assert code == 2 and "is not an apiaudit baseline" in out


def test_key_ignores_layout_and_comments():
    assert normalize_source("make(\n  1,  c=3,  # why\n)") == normalize_source("make(1, c=3)")
    f = Finding("unexpected-keyword", Severity.ERROR, "jobs", "bad.py", 2, 0, "tinyprov.make", "c", "m", source="make(1, c=3)")
    moved = Finding("unexpected-keyword", Severity.ERROR, "jobs", "bad.py", 40, 4, "tinyprov.make", "c", "m",
                    source="make(1,\n     c=3)")  # fmt: skip
    assert BaselineKey.of(f) == BaselineKey.of(moved)
    assert baseline_document([f, moved])["entries"][0]["count"] == 2
