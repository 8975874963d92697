"""Rule data meets findings: recipes explain and make fixable what the engine found;
patterns add drift that signatures cannot show."""

from __future__ import annotations

from dataclasses import replace

from apiaudit.consumer.model import ConsumerFile
from apiaudit.findings import Finding
from apiaudit.recipes import RuleBook
from apiaudit.recipes.model import IN_SCOPE_PLACEHOLDER
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
        for package in provider.packages:
            out.extend(match_patterns("\n".join(file.lines) + "\n", file.path, book.patterns, consumer=consumer or tree.name, provider_package=package))
    return out


def _explain(book: RuleBook, finding: Finding) -> Finding:
    for recipe in book.recipes:
        if recipe.change == "moved-symbol":
            if finding.rule == "import-missing" and finding.callee == recipe.symbol:
                return _with(finding, recipe, f"Import it from `{recipe.module}`.", ("moved_to", recipe.module or ""))
            continue
        if recipe.change == "renamed-attribute":
            if finding.rule == "attribute-missing" and finding.detail("attribute") == recipe.old:
                return _with(finding, recipe, f"Use `{recipe.new}` instead.", ("rename_to", recipe.new or ""))
            continue
        if not recipe.matches_symbol(finding.callee):
            continue
        if recipe.change == "added-parameter" and finding.rule == "missing-required" and finding.param == recipe.param:
            extra = [("value", recipe.value or "")] + [("import", s) for s in recipe.imports]
            shown = IN_SCOPE_PLACEHOLDER.sub(lambda m: f"<the {m.group(1)} value in scope>", recipe.value or "")
            return _with(finding, recipe, f"Pass `{recipe.param}={shown}`.", *extra)
        if recipe.change == "removed-parameter" and finding.rule == "unexpected-keyword" and finding.param == recipe.param:
            return _with(finding, recipe, f"Remove `{recipe.param}=` from the call.")
        if recipe.change == "renamed-parameter" and finding.rule == "unexpected-keyword" and finding.param == recipe.old:
            return _with(finding, recipe, f"Rename `{recipe.old}=` to `{recipe.new}=`.", ("rename_to", recipe.new or ""))
    return finding


def _with(finding: Finding, recipe, advice: str, *details: tuple[str, str]) -> Finding:
    return replace(
        finding,
        advice=f"{advice} ({recipe.rationale})",
        details=finding.details + (("recipe", recipe.id),) + tuple(details),
    )
