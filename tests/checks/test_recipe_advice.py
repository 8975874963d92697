"""Recipes meet findings (apiaudit/checks/recipe_advice.py) and pattern hits kept in the consumer cache."""

from __future__ import annotations

from pathlib import Path

from apiaudit.audit import scan
from apiaudit.evidence import PatternFacts
from apiaudit.policy.config import Settings

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PROVIDER = FIXTURES / "providers" / "engine_v2" / "engine"
RULES = FIXTURES / "fixes" / "rules"
CONSUMER = FIXTURES / "consumers" / "protocol"


def test_a_warm_scan_reads_back_the_name_a_pattern_result_is_bound_to(tmp_path):
    cache = tmp_path / "cache"
    cold = scan([str(CONSUMER)], str(PROVIDER), rules_dirs=[RULES], cache_dir=cache, settings=Settings())
    bound = sorted(f.facts.bound for f in cold.findings if isinstance(f.facts, PatternFacts) and f.facts.bound)
    assert bound == ["replies"]
    assert any((cache / "consumer").glob("*.json"))
    warm = scan([str(CONSUMER)], str(PROVIDER), rules_dirs=[RULES], cache_dir=cache, settings=Settings())
    assert warm.findings == cold.findings
