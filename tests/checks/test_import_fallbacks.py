"""Imports the release lacks (checks/imports.py), and fallbacks that drop the feature (issue 37,
cause 6)."""

from __future__ import annotations

import textwrap

from apiaudit.audit import scan

CONSUMER = """
    try:
        from tinyprov.tiering import SecondaryTier, register_tier
        HAS_TIER = True
    except Exception:
        HAS_TIER = False

        class SecondaryTier:
            pass


    try:
        from tinyprov import fast
    except ImportError:
        fast = None

    try:
        from tinyprov.compile import CompilationMode
        USE_MODES = True
    except ImportError:
        USE_MODES = False  # a flag alone: the code takes the other path it tests for


    class MyTier(SecondaryTier):
        def put(self, key):
            return key


    def register():
        if HAS_TIER:
            register_tier("mine", MyTier)
"""


def test_a_fallback_that_drops_the_feature_is_a_conditional_error_an_optional_import_a_warning(tmp_path):
    prov = tmp_path / "prov" / "tinyprov"
    prov.mkdir(parents=True)
    (prov / "__init__.py").write_text("class Base:\n    pass\n")
    cons = tmp_path / "cons" / "cons"
    cons.mkdir(parents=True)
    (cons / "__init__.py").write_text("")
    (cons / "tier.py").write_text(textwrap.dedent(CONSUMER))
    report = scan([str(cons)], str(prov), use_index_cache=False)
    found = {(f.line, f.rule, f.severity.value, f.conditional) for f in report.findings}
    assert found == {(3, "import-missing", "error", True), (13, "import-missing", "warning", False), (18, "import-missing", "warning", False)}
    (tier,) = [f for f in report.findings if f.line == 3]
    assert tier.guard == "try/except Exception: the fallback sets HAS_TIER = False, defines stand-in SecondaryTier"
    assert "so what needs it is absent on this release" in tier.message


def test_a_try_else_block_runs_with_what_the_body_bound(tmp_path):
    """vllm-omni 0.28.0 patch.py:210 on vLLM 0.30.0: `try: from P import X` / `except ImportError:
    log` / `else: X.method`: the `else:` runs only when the import worked, so X is bound there
    (the missing import is reported once, where it is; no use of an unbound name)."""
    prov = tmp_path / "prov" / "tinyprov"
    prov.mkdir(parents=True)
    (prov / "__init__.py").write_text("")
    (prov / "quant.py").write_text("class Other:\n    pass\n")
    cons = tmp_path / "cons" / "mypatch"
    cons.mkdir(parents=True)
    (cons / "__init__.py").write_text(textwrap.dedent("""
        import logging
        try:
            from tinyprov.quant import Method as _Original
        except ImportError as err:
            logging.warning("not installed: %s", err)
        else:
            _original = _Original.process_weights
    """))
    found = sorted((f.line, f.rule) for f in scan([str(cons)], str(prov)).findings if f.rule != "cannot-judge")
    assert found == [(4, "import-missing")]
