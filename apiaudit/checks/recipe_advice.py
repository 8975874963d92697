"""Rule data meets findings: recipes explain and make fixable what the engine found.

(Text [[pattern]]s are matched where the consumer stage parses each file,
`apiaudit.consumer.patterns`; their findings are made in `apiaudit.checks.pattern_findings`.)
"""

from __future__ import annotations

from dataclasses import replace

from apiaudit.evidence import AttributeFacts
from apiaudit.findings import Finding, Severity
from apiaudit.recipes import RuleBook
from apiaudit.recipes.records import ChangeKind


def apply_recipes(book: RuleBook, findings: list[Finding]) -> list[Finding]:
    """Each finding with the advice, rationale and facts of the first recipe that explains it."""
    return [_explain(book, f) for f in findings]


def _explain(book: RuleBook, finding: Finding) -> Finding:
    for recipe in book.recipes:
        if recipe.explains(finding):
            explained = replace(finding, advice=f"{recipe.change.advice()} ({recipe.rationale})", recipe=recipe.change.facts(recipe.id))
            return _proven(explained, recipe.kind)
    return finding


def _proven(finding: Finding, kind: ChangeKind) -> Finding:
    """An attribute the provider's code does not define, on classes whose base outside the provider
    might (a warning, docs/rules.md): a recipe saying the provider renamed it is the proof that
    it is gone, so the finding is the error it would be on a class the engine reads whole."""
    facts = finding.facts
    if (
        kind is ChangeKind.RENAMED_ATTRIBUTE
        and finding.rule == "attribute-missing"
        and isinstance(facts, AttributeFacts)
        and facts.external_base is not None
        and finding.severity is Severity.WARNING
    ):
        return replace(finding, severity=Severity.ERROR, reason=None)
    return finding


__all__ = ["apply_recipes"]
