"""A finding's fix as exact edits (`apiaudit.fixes.exact`): issue 36, item 2."""

from __future__ import annotations

from pathlib import Path

from apiaudit.audit import scan
from apiaudit.findings import Replacement
from apiaudit.fixes.exact import exact_fix, replacements, with_exact_fixes
from apiaudit.policy.config import Settings
from apiaudit.recipes.loader import load_rulebook


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
    provider = tmp_path / "prov" / "tinyprov"
    provider.mkdir(parents=True)
    (provider / "__init__.py").write_text("def make(a, *, b):\n    return a\n")
    package = tmp_path / "cons" / "mypkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    source = "from tinyprov import make\n\nmake(\n    1,\n    b=3,\n    c=2,  # old keyword\n)\nmake(1)\n"
    (package / "job.py").write_text(source)
    report = scan([str(package)], str(provider), settings=Settings(), use_index_cache=False)
    book = load_rulebook([], "tinyprov")
    fixed = with_exact_fixes(report, book)
    by_rule = {f.rule: f for f in fixed.findings}
    keyword = by_rule["unexpected-keyword"].exact_fix
    assert keyword is not None and "c" in keyword.description
    assert "c=2" not in _applied(source, keyword.replacements) and "b=3" in _applied(source, keyword.replacements)
    compile(_applied(source, keyword.replacements), "job.py", "exec")
    # A missing required keyword has no value to add: no exact fix, as `apiaudit fix` has none.
    assert by_rule["missing-required"].exact_fix is None
    assert exact_fix(by_rule["missing-required"], package.parent, book) is None
