"""Exact fixes, cached (apiaudit/cache/fixes.py): kept by the files they edit, read back whole."""

from __future__ import annotations

from apiaudit.cache import fixes
from apiaudit.findings import ExactFix, Finding, Replacement, Severity


def _finding(path: str) -> Finding:
    return Finding(rule="unexpected-keyword", severity=Severity.ERROR, consumer="pkg", path=path, line=3, column=4, callee=None, param="k", message="m")


def test_fixes_round_trip_and_a_changed_file_changes_the_key(tmp_path):
    source = tmp_path / "pkg" / "a.py"
    source.parent.mkdir()
    source.write_text("x = 1\n")
    found = [(_finding("pkg/a.py"), source)]
    name = fixes.key("engine", "rules", "prov", found)
    assert name is not None
    fix = ExactFix("removed keyword k", (Replacement(3, 4, 3, 9, ""),))
    fixes.store(tmp_path / "cache", name, [fix, None])
    assert fixes.lookup(tmp_path / "cache", name, 2) == [fix, None]
    assert fixes.lookup(tmp_path / "cache", name, 3) is None  # another set of findings
    source.write_text("x = 2\n")
    assert fixes.key("engine", "rules", "prov", found) != name
    (tmp_path / "cache" / "exact-fixes" / f"{name}.json").write_text("{broken")
    assert fixes.lookup(tmp_path / "cache", name, 2) is None
    source.unlink()
    assert fixes.key("engine", "rules", "prov", found) is None
