"""A finding's fix as exact edits (`apiaudit.fixes.exact`): issue 36, item 2."""

from __future__ import annotations

from pathlib import Path

from apiaudit.audit import scan
from apiaudit.findings import Replacement
from apiaudit.fixes.exact import exact_fix, replacements, with_exact_fixes
from apiaudit.policy.config import Settings
from apiaudit.recipes.loader import load_rulebook
from fix_helpers import JOB_SOURCE, make_package, make_provider


def _applied(text: str, edits: tuple[Replacement, ...]) -> str:
    """`text` with `edits` made, from the last to the first (each against the original)."""
    lines = text.splitlines(keepends=True)

    def offset(line: int, column: int) -> int:
        return sum(len(x) for x in lines[: line - 1]) + column

    for r in sorted(edits, key=lambda r: (r.start_line, r.start_column), reverse=True):
        text = text[: offset(r.start_line, r.start_column)] + r.text + text[offset(r.end_line, r.end_column):]
    return text


def test_replacements_are_the_characters_that_differ():
    before = "import x\n\ndef f():\n    return g(a=1, legacy=2)\n"
    after = "import x\nimport y\n\ndef f():\n    return g(a=1)\n"
    edits = replacements(before, after)
    assert edits == (Replacement(2, 0, 2, 0, "import y\n"), Replacement(4, 16, 4, 26, ""))
    assert _applied(before, edits) == after


def test_an_edit_at_the_end_of_a_last_line_without_a_line_end():
    assert replacements("f(a=1, b=2)", "f(a=1)") == (Replacement(1, 5, 1, 10, ""),)


def test_each_fixable_finding_gets_the_edit_fix_would_make(tmp_path: Path):
    # JOB_SOURCE passes `c=` (gone upstream) and omits `b` (required; a `b` is in scope).
    provider = make_provider(tmp_path)
    package = make_package(tmp_path / "cons", "mypkg", {"job.py": JOB_SOURCE + "make(1, b=b, d=4)\n"})
    source = (package / "job.py").read_text()
    report = scan([str(package)], str(provider), settings=Settings(), use_index_cache=False)
    book = load_rulebook([], "tinyprov")
    fixed = with_exact_fixes(report, book).findings
    by_param = {f.param: f for f in fixed}
    for param, gone in (("c", "c=2"), ("d", "d=4")):
        edit = by_param[param].exact_fix
        assert edit is not None and param in edit.description
        patched = _applied(source, edit.replacements)
        assert gone not in patched and patched.count("make(") == 2
        compile(patched, "job.py", "exec")
    required = by_param["b"]
    assert (required.exact_fix is not None) == (exact_fix(required, package.parent, book) is not None)
