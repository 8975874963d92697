"""Modules deferred until first use: one import, whichever thread asks first."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_a_deferred_module_runs_on_first_attribute_and_load_all_runs_the_rest():
    code = textwrap.dedent("""\
        import sys
        from apiaudit.infra import lazyimport
        lazy = lazyimport.lazy_module("json.tool")
        ran_before = "json.tool" in sys.modules and hasattr(type(lazy), "__getattribute__") and type(lazy).__name__ != "module"
        lazyimport.load_all()
        print(ran_before, type(lazy).__name__, callable(lazy.main), lazyimport.lazy_module("json.tool") is lazy)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "module", "True", "True"]


def test_a_missing_module_fails_at_once():
    import pytest

    from apiaudit.infra.lazyimport import lazy_module

    with pytest.raises(ModuleNotFoundError):
        lazy_module("no_such_module_apiaudit_test")
