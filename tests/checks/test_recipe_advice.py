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


def test_a_rename_recipe_proves_an_attribute_a_base_outside_the_provider_might_supply():
    """An attribute-missing warning whose only doubt is a base outside the provider becomes an
    error when a renamed-attribute recipe says the provider renamed it; other findings keep
    their severity (a recipe explains them, it proves nothing about an annotation)."""
    from apiaudit.checks.recipe_advice import apply_recipes
    from apiaudit.evidence import AttributeFacts
    from apiaudit.findings import Finding, Severity
    from apiaudit.recipes.changes import RenamedAttribute
    from apiaudit.recipes.records import Recipe, RuleBook

    book = RuleBook("prov", recipes=(Recipe("prov-rename", "prov.Model", "", RenamedAttribute("old", "new"), "renamed in 2.0"),))

    def finding(facts: AttributeFacts, reason: str) -> Finding:
        return Finding("attribute-missing", Severity.WARNING, "c", "a.py", 1, 0, "prov.Model.old", None, "no old",
                       facts=facts, reason=reason)  # fmt: skip

    outside = finding(AttributeFacts("old", "prov.Model", external_base="hf.PreTrainedModel"), "base hf.PreTrainedModel ...")
    declared = finding(AttributeFacts("old", "prov.Model"), "annotated Model; a subclass may define 'old' (Sub)")
    proven, still = apply_recipes(book, [outside, declared])
    assert (proven.severity, proven.reason, proven.recipe.id) == (Severity.ERROR, None, "prov-rename")
    assert (still.severity, still.reason, still.recipe.id) == (Severity.WARNING, declared.reason, "prov-rename")
