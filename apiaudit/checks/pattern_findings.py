"""[[pattern]] rules as findings: drift that signatures cannot show.

The matching runs on the parsed file, in the consumer stage (`apiaudit.consumer.patterns`),
and each file carries its `PatternHit`s; this module turns them into findings.
`match_patterns` does both for one source text (rule authors' tests, the fix tests).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from apiaudit.checks.context import source_text
from apiaudit.consumer import parse_quietly
from apiaudit.consumer.patterns import pattern_hits
from apiaudit.consumer.positions import to_characters
from apiaudit.consumer.records import PatternHit
from apiaudit.evidence import PatternFacts, RecipeFacts
from apiaudit.findings import Finding
from apiaudit.recipes.records import Pattern


def findings_of_hits(
    hits: Iterable[PatternHit], lines: tuple[str, ...], path: str, patterns: Sequence[Pattern], *, consumer: str
) -> list[Finding]:
    """The findings a file's pattern hits stand for (columns already characters), in report order."""
    by_id = {p.id: p for p in reversed(patterns)}  # the first pattern of an id wins
    findings: list[Finding] = []
    for hit in hits:
        pattern = by_id.get(hit.pattern)
        if pattern is None:
            continue  # a pattern not in force here
        site = hit.site
        findings.append(
            Finding(
                rule=pattern.id,
                severity=pattern.severity,
                consumer=consumer,
                path=path,
                line=site.line,
                column=site.column,
                callee=None,
                param=None,
                message=pattern.message,
                source=source_text(lines, site),
                advice=pattern.advice,
                end_line=site.end_line,
                end_column=site.end_column,
                facts=PatternFacts(pattern.id, method=pattern.method or "", bound=hit.bound),
                recipe=RecipeFacts(pattern.recipe) if pattern.recipe else None,
            )
        )
    return sorted(findings, key=lambda f: f.sort_key)


def match_patterns(
    source: str,
    path: str,
    patterns: Sequence[Pattern],
    *,
    consumer: str,
    provider_packages: Sequence[str] | None = None,
) -> list[Finding]:
    """Findings for every pattern that fires in one consumer file (`path` as Findings report it).

    A file that does not parse yields nothing here (the engine reports parse errors).
    With `provider_packages`, a file that imports none of them yields nothing.
    """
    try:
        tree = parse_quietly(source)
    except (SyntaxError, ValueError, RecursionError):
        return []
    lines = tuple(source.splitlines())
    hits = to_characters(pattern_hits(tree, patterns, provider_packages), lines)
    return findings_of_hits(hits, lines, path, patterns, consumer=consumer)
