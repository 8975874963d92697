"""[[pattern]] rules as findings: drift that signatures cannot show.

The matching runs on the parsed file, in the consumer stage (`apiaudit.consumer.patterns`),
and each file carries its `PatternHit`s; this module turns them into findings.
`match_patterns` does both for one source text (rule authors' tests, the fix tests).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from apiaudit.checks.context import BoundCall, source_text
from apiaudit.consumer import parse_quietly
from apiaudit.consumer.patterns import pattern_hits
from apiaudit.consumer.positions import to_characters
from apiaudit.consumer.records import PatternHit
from apiaudit.evidence import PatternFacts, RecipeFacts
from apiaudit.findings import Finding, Severity
from apiaudit.recipes.records import Pattern


def proven_hits(hits: Iterable[PatternHit], patterns: Sequence[Pattern], calls: Sequence[BoundCall], derives) -> set[PatternHit]:
    """The hits of patterns naming a `receiver_class` whose call the checks bound, at the same
    site, to the pattern's method on a class derived from it (`derives(class, base)`): the
    receiver is that class's instance, so the hit is a proof, not a text match."""
    by_id = {p.id: p for p in patterns if p.receiver_class}
    bound: dict[tuple[int, int], list[str]] = {}
    for call in calls:
        if call.site is not None:
            bound.setdefault((call.site.line, call.site.column), []).append(call.info.callee.path)
    proven = set()
    for hit in hits:
        pattern = by_id.get(hit.pattern)
        if pattern is None or pattern.receiver_class is None:
            continue
        for callee in bound.get((hit.site.line, hit.site.column), ()):
            owner, _, method = callee.rpartition(".")
            if method == pattern.method and owner and derives(owner, pattern.receiver_class):
                proven.add(hit)
                break
    return proven


def findings_of_hits(
    hits: Iterable[PatternHit], lines: tuple[str, ...], path: str, patterns: Sequence[Pattern], *, consumer: str,
    proven: set[PatternHit] | None = None,
) -> list[Finding]:
    """The findings a file's pattern hits stand for (columns already characters), in report order.
    A hit of a pattern naming a `receiver_class` is a warning unless it is in `proven`."""
    by_id = {p.id: p for p in reversed(patterns)}  # the first pattern of an id wins
    findings: list[Finding] = []
    for hit in hits:
        pattern = by_id.get(hit.pattern)
        if pattern is None:
            continue  # a pattern not in force here
        site = hit.site
        severity, reason = pattern.severity, None
        if pattern.receiver_class and hit not in (proven or set()) and severity is Severity.ERROR:
            severity = Severity.WARNING
            reason = f"the receiver is matched by its text, not shown to be an instance of {pattern.receiver_class}"
        findings.append(
            Finding(
                rule=pattern.id,
                severity=severity,
                reason=reason,
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
