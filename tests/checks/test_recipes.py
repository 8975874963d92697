"""Recipes meet findings (apiaudit/checks/recipes.py): the pattern matches cached per consumer file."""

from __future__ import annotations

from pathlib import Path

from apiaudit.audit import rulebook_for, scan
from apiaudit.checks.recipes import PatternCache
from apiaudit.policy.config import Settings
from apiaudit.sources import resolve

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PROVIDER = FIXTURES / "providers" / "engine_v2" / "engine"
RULES = FIXTURES / "fixes" / "rules"
CONSUMER = FIXTURES / "consumers" / "protocol"


def test_a_scan_leaves_pattern_matches_a_later_scan_reads_back(tmp_path):
    cache = tmp_path / "cache"
    cold = scan([str(CONSUMER)], str(PROVIDER), rules_dirs=[RULES], cache_dir=cache, settings=Settings())
    provider = resolve(str(PROVIDER))
    saved = PatternCache(cache, resolve(str(CONSUMER)), rulebook_for([RULES], provider), provider.packages)
    source = (CONSUMER / "step_job.py").read_text()
    matches = saved.get("step_job.py", source)
    # (pattern number, line, column, end line, end column, the name a result is bound to)
    assert matches is not None and sorted(m[5] for m in matches if m[5]) == ["replies"]
    warm = scan([str(CONSUMER)], str(PROVIDER), rules_dirs=[RULES], cache_dir=cache, settings=Settings())
    assert warm.findings == cold.findings
