"""From the scan's findings to the report: severity, select/ignore, config ignores, inline
suppressions, baseline, in that order. Nothing is dropped silently: every finding taken out
is kept in `Report.suppressed` with why, and counted by every format.
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
from dataclasses import replace
from pathlib import Path
from typing import Mapping, Sequence

from apiaudit.evidence import SuppressionFacts
from apiaudit.findings import (
    BaselineSummary,
    Finding,
    Report,
    Severity,
    Suppressed,
    SuppressedBy,
)
from apiaudit.infra.frozen import record
from apiaudit.infra.suggest import hint
from apiaudit.policy.config import Settings
from apiaudit.policy.suppressions import Scope, Suppression, read_suppressions

UNUSED_SUPPRESSION = "unused-suppression"


@record
class ConsumerFiles:
    """The files of one consumer the scan read: where suppression comments are looked for."""

    label: str
    root: Path
    paths: tuple[str, ...]  # relative to root, `/`-separated


def excluded(path: str, patterns: Sequence[str]) -> bool:
    """True when `path` (relative, `/`-separated) matches a glob of `exclude` (`*` crosses `/`)."""
    return any(fnmatch.fnmatchcase(path, p) or fnmatch.fnmatchcase(path, p.rstrip("/") + "/*") for p in patterns)


def apply_policy(
    report: Report,
    settings: Settings,
    files: Sequence[ConsumerFiles] = (),
    *,
    use_baseline: bool = True,
    today: _dt.date | None = None,
    known_rules: frozenset[str] | None = None,
) -> Report:
    """`report` as the settings and the consumer's comments say it should be shown.

    `known_rules` (the rule ids of the engine and the provider's rule files) lets an unused
    suppression say that it names no rule at all, the usual reason it matches nothing."""
    today = today or _dt.date.today()
    suppressed: list[Suppressed] = list(report.suppressed)
    notices: list[str] = list(report.notices)
    findings = [f for f in report.findings if not excluded(f.path, settings.exclude)]

    comments: list[Suppression] = []
    for consumer in files:
        comments.extend(read_suppressions(consumer.label, consumer.root, list(consumer.paths)))
    used: set[int] = set()
    kept: list[Finding] = []
    active_ignores = [i for i in settings.ignores if not i.expired(today)]
    for entry in settings.ignores:
        if entry.expired(today):
            notices.append(f"{entry.where}: the ignore of {entry.rule} expired on {entry.until}; its findings are reported again")
    printed = {c.key: c.shown for c in report.consumers}  # the path a report prints, from the project root
    for f in findings:
        paths = (f.path, printed[f.consumer](f.path) if f.consumer in printed else f.path)
        ignored = next((i for i in active_ignores if _ignore_matches(i, f, paths)), None)
        if ignored is not None:
            suppressed.append(Suppressed(f, SuppressedBy.CONFIG, ignored.reason, ignored.where))
            continue
        index = next((n for n, s in enumerate(comments) if _comment_matches(s, f)), None)
        if index is not None:
            used.add(index)
            s = comments[index]
            by = SuppressedBy.INLINE if s.scope is Scope.LINE else SuppressedBy.FILE
            suppressed.append(Suppressed(f, by, s.reason, s.where))
            continue
        kept.append(f)
    kept.extend(_unused(comments, used, known_rules))

    shown: list[Finding] = []
    for f in kept:
        level = settings.severity_for(f.rule)
        off = level == "off" or f.rule in settings.ignore or (settings.select is not None and f.rule not in settings.select)
        if off:
            suppressed.append(Suppressed(f, SuppressedBy.DISABLED, None, _disabled_by(settings, f.rule)))
            continue
        shown.append(replace(f, severity=Severity(level)) if level else f)

    summary = None
    if use_baseline and settings.baseline is not None:
        from apiaudit.policy.baseline import read_baseline

        baseline = read_baseline(settings.baseline)
        shown, known, fixed = baseline.split(shown)
        suppressed.extend(Suppressed(f, SuppressedBy.BASELINE, None, str(settings.baseline)) for f in known)
        summary = BaselineSummary(path=str(settings.baseline), matched=len(known), fixed=fixed)
    return replace(
        report,
        findings=tuple(sorted(shown, key=lambda f: f.sort_key)),
        suppressed=tuple(sorted(suppressed, key=lambda s: s.finding.sort_key)),
        baseline=summary or report.baseline,
        notices=tuple(notices),
    )


def _ignore_matches(entry, f: Finding, paths: tuple[str, ...]) -> bool:
    """`paths`: the finding's path from the import root and as reports print it (from the
    project root); an entry's glob may name either."""
    return (
        entry.rule == f.rule
        and (entry.path is None or any(fnmatch.fnmatchcase(p, entry.path) for p in paths))
        and (entry.callee is None or entry.callee == f.callee or (f.callee or "").startswith(entry.callee + "."))
        and (entry.param is None or entry.param == f.param)
    )


def _comment_matches(s: Suppression, f: Finding) -> bool:
    if s.consumer != f.consumer or s.path != f.path or f.rule not in s.rules:
        return False
    return s.scope is Scope.FILE or s.line == f.line


def _unused(comments: Sequence[Suppression], used: set[int], known_rules: frozenset[str] | None) -> list[Finding]:
    """One `unused-suppression` warning per comment that silenced nothing in this scan."""
    out = []
    for n, s in enumerate(comments):
        if n in used:
            continue
        rules = ", ".join(s.rules)
        unknown = [r for r in s.rules if known_rules is not None and r not in known_rules]
        message = f"`# apiaudit: {s.scope.value}[{rules}]` matches no finding against this provider"
        if unknown:
            message += "".join(
                f"; '{r}' is not a rule id{hint(r, known_rules or (), listing='`apiaudit rule` lists them')}" for r in unknown
            )
        out.append(
            Finding(
                rule=UNUSED_SUPPRESSION, severity=Severity.WARNING, consumer=s.consumer, path=s.path, line=s.line,
                column=s.column, callee=None, param=None,
                message=message,
                advice="Remove the comment, or correct the rule id, if the finding it silenced is gone.",
                facts=SuppressionFacts(tuple(s.rules)),
            )  # fmt: skip
        )
    return out


def _disabled_by(settings: Settings, rule: str) -> str:
    if settings.severity_for(rule) == "off":
        return f"{settings.origin('severity')}: severity.{rule} = off"
    if rule in settings.ignore:
        return f"{settings.origin('ignore')}: ignore"
    return f"{settings.origin('select')}: select"


def files_of(report: Report, paths: Mapping[str, Sequence[str]]) -> list[ConsumerFiles]:
    """ConsumerFiles for each consumer of `report`, given its label -> relative paths."""
    return [ConsumerFiles(c.key, Path(c.root), tuple(paths.get(c.key, ()))) for c in report.consumers]
