"""Columns are characters from the consumer stage on: SARIF, annotations, the table and fix agree."""

from __future__ import annotations

import json

from apiaudit.audit import scan
from apiaudit.consumer.positions import char_column
from apiaudit.report import render


def test_char_column_counts_characters_not_bytes():
    line = 'x = "日本"; make(1)'
    assert char_column(line, len(line.encode()[: line.encode().index(b"make")])) == line.index("make")
    assert char_column("plain", 3) == 3


def test_a_scan_reports_character_columns_on_a_non_ascii_line(tmp_path):
    provider = tmp_path / "prov" / "eng"
    provider.mkdir(parents=True)
    (provider / "__init__.py").write_text("def make(a):\n    return a\n")
    job = tmp_path / "job.py"
    line = 'label = "données"; make(1, extra=2)'
    job.write_text(f"from eng import make\n{line}\n", encoding="utf-8")
    report = scan([str(job)], str(provider), cache_dir=tmp_path / "cache")
    (finding,) = [f for f in report.findings if f.rule == "unexpected-keyword"]
    assert finding.column == line.index("make(")
    assert finding.end_column == len(line)
    sarif = json.loads(render(report, "sarif"))
    run = sarif["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    region = run["results"][0]["locations"][0]["physicalLocation"]["region"]
    assert region["startColumn"] == line.index("make(") + 1
