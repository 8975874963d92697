"""The call-protocol fix kinds (insert-call-after, drop-subscript): pattern findings on small
consumer texts, fixed through their recipes. Format is kept, and fixing fixed code is a no-op
(the same edits report already-applied; a new scan finds nothing)."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from apiaudit.findings import Severity
from apiaudit.fixes import plan_fixes
from apiaudit.fixes.codemods import (
    ALREADY,
    APPLIED,
    CONFLICT,
    DropSubscript,
    FileIndex,
    InsertCallAfter,
    apply_edits,
)
from apiaudit.checks.pattern_findings import match_patterns
from apiaudit.recipes import Recipe
from apiaudit.recipes.changes import DropSubscript as DropSubscriptChange
from apiaudit.recipes.changes import InsertCallAfter as InsertCallAfterChange
from apiaudit.recipes.records import Pattern

RECIPES = (
    Recipe(id="step-then-finish", symbol="provider.Engine.step", versions=">=2", rationale="split in 2.0",
           change=InsertCallAfterChange(method="finish", args="None")),
    Recipe(id="gather-single", symbol="provider.Engine.gather", versions=">=2", rationale="one reply in 2.0",
           change=DropSubscriptChange()),
)  # fmt: skip
PATTERNS = (
    Pattern(id="step-needs-finish", severity=Severity.WARNING, versions=">=2", kind="call-not-followed-by",
            method="step", then="finish", message="m", recipe="step-then-finish"),
    Pattern(id="gather-single-reply", severity=Severity.ERROR, versions=">=2", kind="result-subscripted",
            method="gather", when_keyword="rank", subscript="int-literal", message="m", recipe="gather-single"),
)  # fmt: skip


def _fix(tmp_path: Path, source: str):
    path = tmp_path / "job.py"
    path.write_text(source)
    findings = match_patterns(source, "job.py", PATTERNS, consumer="c", provider_packages=("provider",))
    return findings, plan_fixes(findings, tmp_path, RECIPES)


def _patched(plan) -> str:
    return plan.files[0].patched.decode() if plan.files else ""


SOURCE = textwrap.dedent(
    """\
    import provider


    class Job:
        def run(self, batch):
            self.engine.step(batch)  # forward only
            for item in batch:
                pass
            replies = self.engine.gather(
                "state",
                rank=0,
            )
            state = replies[0]
            first = self.engine.gather("other", rank=0)[0]
            return state, first
    """
)
FIXED = SOURCE.replace(
    "self.engine.step(batch)  # forward only\n", "self.engine.step(batch)  # forward only\n        self.engine.finish(None)\n"
).replace("state = replies[0]", "state = replies").replace('gather("other", rank=0)[0]', 'gather("other", rank=0)')


def test_both_kinds_patch_exactly_and_nothing_else(tmp_path: Path) -> None:
    findings, plan = _fix(tmp_path, SOURCE)
    assert sorted(f.rule for f in findings) == ["gather-single-reply", "gather-single-reply", "step-needs-finish"]
    assert not plan.unfixable, plan.unfixable
    assert _patched(plan) == FIXED
    assert {f.recipe for f in plan.fixed} == {"step-then-finish", "gather-single"}


def test_fixing_fixed_code_is_a_no_op(tmp_path: Path) -> None:
    findings, plan = _fix(tmp_path, SOURCE)
    index = FileIndex(FIXED)
    # The same edits, on the fixed text: one line was inserted after the step call.
    step_line = next(f.line for f in findings if f.rule == "step-needs-finish")
    edits = _edits_of([replace(f, line=f.line + (f.line > step_line)) for f in findings])
    result = apply_edits(index, edits)
    assert result.code.decode() == FIXED
    assert {o.status for o in result.outcomes} == {ALREADY}
    again, replan = _fix(tmp_path, FIXED)
    assert again == [] and not replan.changed_files


def _edits_of(findings):
    by_rule = {"step-needs-finish": lambda f: InsertCallAfter(f.line, f.column, "finish", "None", "step"),
               "gather-single-reply": lambda f: DropSubscript(f.line, f.column, f.facts.bound, "gather")}  # fmt: skip
    return [by_rule[f.rule](f) for f in findings]


def test_insert_keeps_an_await_and_the_indentation(tmp_path: Path) -> None:
    source = "import provider\n\n\nasync def go(e):\n    if e:\n        out = await e.step(1)\n    return out\n"
    _, plan = _fix(tmp_path, source)
    assert _patched(plan) == source.replace("await e.step(1)\n", "await e.step(1)\n        await e.finish(None)\n")


@pytest.mark.parametrize(
    "statement",
    ["return e.step(1)", "if e.step(1): pass", "x = [e.step(i) for i in y]", "e.step(1); z = 2", "f(e.step(1))"],
)
def test_insert_refuses_what_is_not_a_simple_statement_of_its_own(tmp_path: Path, statement: str) -> None:
    source = f"import provider\n\n\ndef go(e, y):\n    {statement}\n"
    findings, plan = _fix(tmp_path, source)
    assert findings and not plan.changed_files
    assert "not a simple statement of its own" in plan.unfixable[0].reason


def test_insert_is_already_applied_when_the_next_statement_is_the_call() -> None:
    source = "def go(e):\n    e.step(1)\n    e.finish(None)\n"
    result = apply_edits(FileIndex(source), [InsertCallAfter(2, 4, "finish", "None", "step")])
    assert result.outcomes[0].status is ALREADY and result.code.decode() == source


def test_drop_subscript_refuses_another_index_and_keeps_other_names() -> None:
    source = "def go(e):\n    r = e.gather(rank=0)\n    a = r[1]\n    b = other[0]\n    return e.gather(rank=0)[2]\n"
    index = FileIndex(source)
    result = apply_edits(index, [DropSubscript(2, 8, "r", "gather"), DropSubscript(5, 11, None, "gather")])
    assert [o.status for o in result.outcomes] == [CONFLICT, CONFLICT]
    assert result.code.decode() == source


def test_drop_subscript_only_in_the_same_function_after_the_call() -> None:
    source = "def go(e):\n    r = [1]\n    a = r[0]\n    r = e.gather(rank=0)\n    return r[0]\n\n\ndef other(r):\n    return r[0]\n"
    result = apply_edits(FileIndex(source), [DropSubscript(4, 8, "r", "gather")])
    assert result.outcomes[0].status is APPLIED
    assert result.code.decode() == source.replace("    return r[0]\n\n", "    return r\n\n")
