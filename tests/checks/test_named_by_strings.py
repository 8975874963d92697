"""Provider objects named by strings (issue 37, cause 3): `importlib.import_module("pkg.mod")`,
`getattr(mod, "Class")`, `mock.patch("pkg.mod.Class.name", f)`, and a patch that an `if
hasattr(...)` pre-check quietly skips."""

from __future__ import annotations

import textwrap

from apiaudit.audit import scan

PROVIDER = {
    "__init__.py": "",
    "sched.py": """
        class Sched:
            def schedule(self, out):
                return out


        def step(s: Sched):
            return s.schedule(1)
    """,
}

CONSUMER = """
    import importlib
    from unittest import mock


    def _schedule(self, out, extra):
        return out


    def install():
        mod = importlib.import_module("tinyprov.sched")
        cls = getattr(mod, "Sched")
        gone = importlib.import_module("tinyprov.gone")
        other = getattr(mod, "Nope")
        if hasattr(mod.Sched, "old_hook"):
            mod.Sched.old_hook = _schedule
        return cls, gone, other


    def patched():
        return mock.patch("tinyprov.sched.Sched.schedule", _schedule)
"""


def _findings(tmp_path):
    prov = tmp_path / "prov" / "tinyprov"
    prov.mkdir(parents=True)
    for name, text in PROVIDER.items():
        (prov / name).write_text(textwrap.dedent(text))
    cons = tmp_path / "cons" / "cons"
    cons.mkdir(parents=True)
    (cons / "__init__.py").write_text("")
    (cons / "patch.py").write_text(textwrap.dedent(CONSUMER))
    report = scan([str(cons)], str(prov), use_index_cache=False)
    return {(f.line, f.rule, f.severity.value): f.message for f in report.findings}


def test_modules_classes_and_patch_targets_named_by_strings_are_checked(tmp_path):
    found = _findings(tmp_path)
    assert set(found) == {
        (13, "import-missing", "error"),  # import_module of a module the release lacks
        (14, "attribute-missing", "error"),  # getattr(mod, "Nope") raises AttributeError
        (16, "patch-target-missing", "warning"),  # skipped by its hasattr pre-check
        (21, "replacement-incompatible", "error"),  # sched.py's step passes one argument
    }
    assert "the guard `hasattr(mod.Sched, 'old_hook')` skips the patch" in found[(16, "patch-target-missing", "warning")]
