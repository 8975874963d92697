"""`base-not-a-class`: a consumer class statement whose provider base is a function on the release.

Python runs a class statement by calling the metaclass of its bases; a plain function as a base
makes that call `function(name, bases, namespace)`, which raises `TypeError: function() argument
'code' must be code, not str` when the statement runs (at import, for a module-level class). A
provider that turns a class into a factory function (vLLM 0.24.0's `def FusedMoE(...) ->
MoERunner`, a class on 0.23.0) breaks every subclass there, at the class statement: nothing in
the class body runs after it (`checks/__init__.py` makes the body's errors follow this one).
"""

from __future__ import annotations

from dataclasses import replace

from apiaudit.checks.conditions import verdict
from apiaudit.consumer.records import ClassFacts, ConsumerFile, Site
from apiaudit.findings import Finding
from apiaudit.provider.records import Found, SymbolKind

RULE = "base-not-a-class"


def function_base_findings(ctx, file: ConsumerFile) -> list[Finding]:
    """One `base-not-a-class` per class statement that may run and names, as a provider base, a
    name the release defines with `def`: an error where the statement runs, conditional behind an
    undecided guard. A base the index cannot resolve, or resolves to anything else (a class, an
    attribute that may hold one, an outside object), is no finding."""
    findings: list[Finding] = []
    for facts in file.classes:
        if not facts.provider_bases:
            continue
        v = verdict(ctx, facts.live)
        if v.dead:
            continue
        for base in facts.provider_bases:
            res = ctx.index.resolve(base)
            if not (isinstance(res, Found) and res.symbol.kind is SymbolKind.FUNCTION):
                continue
            findings.append(_finding(ctx, file, facts, base, res.symbol.location, v.guard))
            break  # the statement fails once, at its first such base
    return findings


def _finding(ctx, file: ConsumerFile, facts: ClassFacts, base: str, location: str | None, guard: str | None) -> Finding:
    name = facts.dotted.rpartition(".")[2]
    short = base.rpartition(".")[2]
    where = f" ({location})" if location else ""
    found = ctx.finding(
        file, Site(facts.site.line, facts.site.column), RULE,
        f"{short} is a function on this release{where}, not a class: the statement `class {name}({short})` raises "
        "TypeError when it runs, so nothing in the class is defined",
        callee=base,
    )  # fmt: skip
    return found if guard is None else replace(found, conditional=True, guard=guard)


def class_statement_failures(file: ConsumerFile, findings: list[Finding]) -> list[tuple[int, int, Finding]]:
    """(first, last line, the failure) of each class whose statement fails (`base-not-a-class`
    errors): its body, lines after the first, never runs."""
    failed = {(f.line, f.column): f for f in findings if f.rule == RULE}
    return [
        (facts.site.line, facts.site.end_line, failed[(facts.site.line, facts.site.column)])
        for facts in file.classes
        if (facts.site.line, facts.site.column) in failed and facts.site.end_line
    ]
