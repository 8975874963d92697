"""Rule data meets findings: recipes explain and make fixable what the engine found.

(Text [[pattern]]s are matched where the consumer stage parses each file,
`apiaudit.consumer.patterns`; their findings are made in `apiaudit.checks.pattern_findings`.)
"""

from __future__ import annotations

from dataclasses import replace

from apiaudit.findings import Finding
from apiaudit.recipes import RuleBook


def apply_recipes(book: RuleBook, findings: list[Finding]) -> list[Finding]:
    """Each finding with the advice, rationale and facts of the first recipe that explains it."""
    return [_explain(book, f) for f in findings]


def _explain(book: RuleBook, finding: Finding) -> Finding:
    for recipe in book.recipes:
        if recipe.explains(finding):
            return replace(finding, advice=f"{recipe.change.advice()} ({recipe.rationale})", recipe=recipe.change.facts(recipe.id))
    return finding


__all__ = ["apply_recipes"]
