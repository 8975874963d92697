"""The upgrade delta: what moving from the current provider release to a new one introduces and fixes.

Findings of the two scans are matched by rule, file, parameter and the normalized call
source (the baseline key without the callee: a provider that moves a class between
modules must not turn one unchanged finding into one introduced and one fixed).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from apiaudit.findings import Delta, Finding, Report
from apiaudit.policy.baseline import BaselineKey


def _key(f: Finding) -> BaselineKey:
    return BaselineKey.of(f, with_callee=False)


def upgrade_delta(new: Report, current: Report) -> Report:
    """`new` with only the findings the upgrade introduces; `delta` holds the fixed ones."""
    before = Counter(_key(f) for f in current.findings)
    introduced: list[Finding] = []
    unchanged = 0
    for f in new.findings:
        key = _key(f)
        if before[key] > 0:
            before[key] -= 1
            unchanged += 1
        else:
            introduced.append(f)
    after = Counter(_key(f) for f in new.findings)
    fixed: list[Finding] = []
    for f in current.findings:
        key = _key(f)
        if after[key] > 0:
            after[key] -= 1
        else:
            fixed.append(f)
    return replace(
        new,
        findings=tuple(introduced),
        delta=Delta(against=current.provider, fixed=tuple(sorted(fixed, key=lambda f: f.sort_key)), unchanged=unchanged),
        duration_s=round(new.duration_s + current.duration_s, 3),
    )
