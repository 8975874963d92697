"""Each finding's fix as exact edits (JSON `fix`, SARIF `fixes`): what `apiaudit fix` would change
for that finding alone, as replacements of the scanned file's text."""

from __future__ import annotations

import bisect
import difflib
import os.path
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from apiaudit.findings import ExactFix, Finding, Replacement, Report, may_fix
from apiaudit.fixes.plan import plan_fixes
from apiaudit.recipes.records import RuleBook

# A line as Python counts lines (ast, tokenize): ended by \r\n, \r or \n; the last may have no end.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def with_exact_fixes(report: Report, book: RuleBook) -> Report:
    """The report with `Finding.exact_fix` set on each finding `apiaudit fix` can fix (`book`: the
    provider release's rules, for recipe fixes); the others stay as they were."""
    fixed: dict[Finding, ExactFix] = {}
    parsed: dict = {}
    for origin in report.consumers:
        findings = [f for f in report.findings if f.consumer == origin.key and may_fix(f)]
        for f in findings:
            exact = exact_fix(f, Path(origin.root), book, parsed)
            if exact is not None:
                fixed[f] = exact
    if not fixed:
        return report
    return replace(report, findings=tuple(replace(f, exact_fix=fixed[f]) if f in fixed else f for f in report.findings))


def exact_fix(f: Finding, root: Path, book: RuleBook | Sequence = (), parsed: dict | None = None) -> ExactFix | None:
    """`f`'s fix alone as replacements of its file (under the import root `root`), or None when
    `apiaudit fix` has none for it. `parsed`: files already parsed (shared by the findings of a
    report: each file is parsed once, however many of its findings are planned)."""
    plan = plan_fixes([f], root, book, parsed=parsed)
    changed = plan.changed_files
    if len(changed) != 1 or len(changed[0].fixes) != 1:
        return None
    file_fix = changed[0]
    before = file_fix.original.decode("utf-8", errors="surrogateescape")
    after = file_fix.patched.decode("utf-8", errors="surrogateescape")
    return ExactFix(file_fix.fixes[0].description, replacements(before, after))


def replacements(before: str, after: str) -> tuple[Replacement, ...]:
    """The edits that make `after` of `before`: one per changed run of lines, each narrowed to
    the characters that differ."""
    old, new = _LINE.findall(before), _LINE.findall(after)
    starts = [0]
    for line in old:
        starts.append(starts[-1] + len(line))

    def position(offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(starts, offset) - 1
        if line == len(old) and old and not old[-1].endswith(("\n", "\r")):
            line -= 1  # the end of a last line with no line end is on that line
        return line + 1, offset - starts[line]

    edits = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        removed, added = "".join(old[i1:i2]), "".join(new[j1:j2])
        prefix = len(_common_prefix(removed, added))
        suffix = len(_common_prefix(removed[prefix:][::-1], added[prefix:][::-1]))
        start, end = starts[i1] + prefix, starts[i2] - suffix
        edits.append(Replacement(*position(start), *position(end), added[prefix:len(added) - suffix]))
    return tuple(edits)


def _common_prefix(a: str, b: str) -> str:
    return os.path.commonprefix([a, b])
