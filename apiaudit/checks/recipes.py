"""Rule data meets findings: recipes explain and make fixable what the engine found;
patterns add drift that signatures cannot show."""

from __future__ import annotations

from dataclasses import replace

from apiaudit.consumer.model import ConsumerFile
from apiaudit.findings import Finding
from apiaudit.recipes import RuleBook
from apiaudit.recipes.patterns import match_patterns
from apiaudit.sources.base import CodeTree


def apply_recipes(
    book: RuleBook, findings: list[Finding], files: tuple[ConsumerFile, ...], tree: CodeTree, provider: CodeTree,
    consumer: str | None = None,
) -> list[Finding]:
    out = [_explain(book, f) for f in findings]
    for file in files:
        if file.error is not None or not file.lines or not (file.imports or file.uses):
            continue  # patterns only matter where the provider is used
        # One match per file, whatever number of top-level packages the provider has.
        out.extend(
            match_patterns(
                "\n".join(file.lines) + "\n", file.path, book.patterns,
                consumer=consumer or tree.name, provider_packages=provider.packages,
            )
        )  # fmt: skip
    return out


def _explain(book: RuleBook, finding: Finding) -> Finding:
    for recipe in book.recipes:
        if recipe.explains(finding):
            advice, details = recipe.change.advice()
            return replace(
                finding,
                advice=f"{advice} ({recipe.rationale})",
                details=finding.details + (("recipe", recipe.id),) + details,
            )
    return finding
