"""The documents describe what the code emits: a new rule or JSON key without docs fails here."""

from __future__ import annotations

import re
from pathlib import Path

from apiaudit.findings import ENGINE_RULES, SCHEMA_VERSION
from apiaudit.report import report_to_dict

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_every_engine_rule_has_a_section():
    headings = set(re.findall(r"^## (\S+)$", (DOCS / "rules.md").read_text(encoding="utf-8"), re.M))
    assert set(ENGINE_RULES) <= headings, sorted(set(ENGINE_RULES) - headings)


def test_every_json_key_is_documented(report):
    text = (DOCS / "report-format.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", text, re.M))
    d = report_to_dict(report)
    emitted = set(d) | set(d["summary"]) | set(d["provider"]) | set(d["findings"][0])
    assert emitted <= documented, sorted(emitted - documented)
    assert f'"schema_version": "{SCHEMA_VERSION}"' in text
