"""Statements narrow whether the lines after them run: imports under guards and fallbacks (`walk/statements.py`)."""

from __future__ import annotations

import ast
import textwrap
from dataclasses import replace

from apiaudit.consumer.imports import names_of
from apiaudit.consumer.records import ConditionKind
from apiaudit.consumer.values import Helper
from apiaudit.consumer.visitor import ModuleVisitor
from apiaudit.consumer.walk import statements
from tests.consumer.test_visitor import OPTIONS, files_of, versioned_files


def test_guards_and_relative_imports(tmp_path):
    f = files_of(tmp_path, d="""
        from typing import TYPE_CHECKING
        try:
            from prov.fast import speedup
        except ImportError:
            speedup = None
        if TYPE_CHECKING:
            from prov.types import Thing
        from .e import helper
    """, e="def helper(): pass\n")["cons/d.py"]
    assert {(i.name, i.guarded) for i in f.imports} == {("speedup", "try/except ImportError"), ("Thing", "TYPE_CHECKING")}


def test_import_fallbacks_become_conditions_the_checks_decide(tmp_path):
    f = versioned_files(tmp_path, a="""
        try:
            from prov.new import thing
        except ImportError:
            from prov.old import thing
        try:
            from prov.fast import accel
        except ModuleNotFoundError:
            accel = None
        thing()
        accel.go()
    """)["cons/a.py"]
    handler = [i for i in f.imports if i.module == "prov.old"][0]
    assert handler.live.conditions[0].kind.value == "import-fails" and handler.live.conditions[0].expect
    body = [i for i in f.imports if i.module == "prov.fast"][0]
    assert body.caught == "ModuleNotFoundError" and body.guarded
    thing_uses = [u for u in f.uses if u.site.line == 10]
    assert {u.root.name for u in thing_uses} == {"prov.new.thing", "prov.old.thing"}
    failed = [u for u in f.uses if u.site.line == 11 and u.failed_import is not None]
    assert failed and failed[0].failed_import.line == 7


def test_a_call_under_a_type_error_handler_that_does_not_reraise_records_the_handler(tmp_path):
    """`try: f(x, new=1)` / `except TypeError: f(x)` probes a signature (issue 27, cause N6): each
    use in the body records the handler's line; a handler that raises, one that catches something
    else, the handler's own body and a function defined in the body record none."""
    f = files_of(tmp_path, d="""
        from prov.api import f, g, h, k
        try:
            f(1, new=2)
        except (TypeError, ValueError):
            f(1)
        try:
            g(1, new=2)
        except TypeError as exc:
            raise RuntimeError("no") from exc
        try:
            h(1, new=2)
            def later():
                k(1)
        except TypeError:
            pass
        try:
            f(1, new=2)
        except KeyError:
            pass
    """)["cons/d.py"]
    assert {u.site.line: u.type_error_handler for u in f.uses} == {4: 5, 6: 0, 8: 0, 12: 15, 14: 0, 18: 0}


def test_a_fallback_def_in_the_import_handler_binds_the_name(tmp_path):
    """`except ImportError: def f(...)` gives `f` the consumer's own function: a call after the
    `try` uses the provider's `f` when the import works and the fallback when it fails, never an
    unbound name (issue 27, cause N2)."""
    f = versioned_files(tmp_path, a="""
        try:
            from prov.processing import set_request_id
        except ImportError:

            def set_request_id(_request_id):
                return None

        set_request_id("r1")
    """)["cons/a.py"]
    calls = [u for u in f.uses if u.site.line == 9]
    assert calls and all(u.failed_import is None for u in calls)
    assert {u.root.name for u in calls} == {"prov.processing.set_request_id"}


def test_a_failing_assert_of_the_release_refuses_it_and_keeps_what_follows_as_intent(tmp_path):
    """`assert <version test>` that fails on the audited release (0.10.0) is a refusal as a
    release gate's raise is (an `else: raise` too, raising when its test is false): the rest of
    the block never runs, and a class it would install by keyword is recorded as behind it."""
    f = versioned_files(tmp_path, a="""
        import prov
        def pick():
            if prov.__version__ in ["0.8.5"]:
                pass
            else:
                raise RuntimeError("unsupported")
        def build():
            assert prov.__version__ > "0.8.2"
            prov.after()
            return prov.LLM(worker_cls="cons.a.Ext")
        def fine():
            assert prov.__version__.startswith("0.10")
            return prov.LLM(worker_cls="cons.a.Ext")
    """)["cons/a.py"]
    assert [(g.site.line, g.raises_when) for g in f.release_gates] == [(7, False), (9, False)]
    assert "after" not in {u.steps[0].name for u in f.uses if u.steps}
    assert [(i.site.line, i.target, i.behind) for i in f.injections] == [
        (11, "cons.a.Ext", "`assert prov.__version__ > '0.8.2'` (cons.a, line 9)"),
        (14, "cons.a.Ext", None),
    ]
    assert [(n.site.line, n.breaks) for n in f.notes] == [(9, True)]


def test_strings_in_statements_the_release_never_runs_name_no_module(tmp_path):
    """vllm-plugin-meralion2 0.3.0 on vLLM 0.19.1: `register()` raises when the release is out
    of its range, then `import_module("pkg.vllm0101")`; on a release it refuses, that module is
    not run by this one. Neither is a module named in an arm the release decides dead; what
    follows a test no release decides (run-time data) is still an edge."""
    f = versioned_files(tmp_path, a="""
        import prov
        from importlib import import_module
        def register():
            if prov.__version__ not in ["0.9.0", "0.9.1"]:
                raise RuntimeError("unsupported")
            return import_module("cons.after_gate")
        def backend():
            if prov.__version__ in ["0.9.0"]:
                return "cons.dead_arm"
            return "cons.live_arm"
        def pick(flag):
            if flag:
                raise ValueError(flag)
            return import_module("cons.after_runtime_test")
    """)["cons/a.py"]
    assert "cons.after_gate" not in f.reaches and "cons.dead_arm" not in f.reaches
    assert {"cons.live_arm", "cons.after_runtime_test"} <= set(f.reaches)


def test_a_function_named_only_in_code_the_release_never_runs_says_which_test_keeps_it_from_running(tmp_path):
    """On prov 0.10.0 the ladder returns at its first arm: `old_patch` is named only after it (why:
    the `if` that leaves the block), `older_patch` only in an arm the release decides false."""
    f = versioned_files(tmp_path, a="""
        import prov
        from packaging import version
        def old_patch(x): return x
        def older_patch(x): return x
        def new_patch(x): return x
        def install(registry):
            ver = version.parse(prov.__version__)
            if ver >= version.parse("0.9.0"):
                registry.append(new_patch)
                return
            registry.append(old_patch)
            if ver < version.parse("0.5.0"):
                registry.append(older_patch)
    """)["cons/a.py"]
    assert [(d.name, d.named_at, d.why) for d in f.dead_named] == [
        ("old_patch", 12, "after `if ver >= version.parse('0.9.0')` (line 9), which leaves the block on this release"),
        ("older_patch", 14, "after `if ver >= version.parse('0.9.0')` (line 9), which leaves the block on this release"),
    ]


def test_an_arm_the_release_decides_false_is_named_as_the_reason(tmp_path):
    f = versioned_files(tmp_path, a="""
        import prov
        from packaging import version
        def old_patch(x): return x
        def install(registry):
            if version.parse(prov.__version__) < version.parse("0.5.0"):
                registry.append(old_patch)
    """)["cons/a.py"]
    assert [(d.name, d.body, d.named_at, d.why) for d in f.dead_named] == [
        ("old_patch", (4, 4), 7, "under `if version.parse(prov.__version__) < version.parse('0.5.0')` (line 6), false on this release"),
    ]


def test_a_requirement_check_another_module_exports_narrows_what_follows_its_call():
    """With the consumer's tables complete (as a file read again has them), a call statement
    is a requirement check only where one is among the exports or defined here: the check
    another module exports still narrows the lines after its call."""
    checks = textwrap.dedent("""
        import prov
        def need_start():
            if not hasattr(prov.Engine, "start"):
                raise RuntimeError("too old")
    """)
    uses = textwrap.dedent("""
        import prov
        from cons.checks import need_start
        def run():
            need_start()
            prov.Engine.start()
    """)
    exports = ModuleVisitor(checks, "checks.py", "cons.checks", False, OPTIONS).exports(ast.parse(checks))
    assert isinstance(exports["cons.checks.need_start"], Helper) and exports["cons.checks.need_start"].form == "require"
    for shared in ((), tuple(exports.items())):
        options = replace(OPTIONS, shared_values=shared)
        assert names_of(options).has_requirements is bool(shared)
        f = ModuleVisitor(uses, "uses.py", "cons.uses", False, options).run(ast.parse(uses))
        start = next(u for u in f.uses if u.site.line == 6)
        assert [c.kind for c in start.live.conditions] == ([ConditionKind.HAS_ATTR] if shared else [])


def test_a_name_bound_to_a_call_holds_it_as_read_after_the_call_ran(tmp_path):
    """`made = Args(**kw, x=fill(kw))`: the use is read before `fill(kw)` runs, the value `made`
    keeps after (kw has escaped: any key); a name the call binds with `:=` holds there too."""
    f = versioned_files(tmp_path, a="""
        from prov import Args
        def f(fill):
            kw = {"a": 1}
            made = Args(**kw, x=fill(kw))
            made.run()
        def g():
            made = Args(opts := {"b": 2}, **opts)
            made.run()
    """)["cons/a.py"]
    shapes = {(u.site.line, len(u.steps)): u.steps[0].call for u in f.uses if u.steps and u.steps[0].kind == "call"}
    keys = {where: (sorted(a.name for a in s.keywords), s.has_starstar) for where, s in shapes.items()}
    assert keys == {
        (5, 1): (["a", "x"], False), (6, 3): (["x"], True),  # read before fill(kw) ran; kept after
        (8, 1): ([], True), (9, 3): (["b"], False),  # opts unbound when read; bound after
    }


def test_a_run_time_test_is_read_for_the_provider_only_where_the_module_quotes_its_package(tmp_path, monkeypatch):
    """`Found.branch_tests` feeds `reach.conditional_names`, which reads nothing of a module whose
    text quotes no module of its package: its run-time tests are not searched for provider values."""
    asked: list[int] = []
    monkeypatch.setattr(statements.Statements, "_reads_provider", lambda self, test, scope: asked.append(test.lineno) or True)
    files = files_of(tmp_path, quiet="""
        import prov
        def f(flag):
            if flag:
                return prov.A
            return prov.B
    """, picks="""
        def backend(flag):
            if flag:
                return "cons.one"
            return "cons.two"
    """)
    assert asked == [3]  # picks.py only
    assert [(w.module, w.condition) for w in files["cons/picks.py"].reaches_when] == [("cons.one", "flag"), ("cons.two", "not flag")]


def test_a_literal_declared_under_type_checking_decides_nothing(tmp_path):
    """vllm-rbln's envs module declares `USE_NATIVE: bool = False` under `if TYPE_CHECKING:` and
    serves the name from the environment through a module `__getattr__`: the declaration never
    runs, so `if envs.USE_NATIVE:` elsewhere is a run-time test and both arms name their worker
    on a condition (it was decided False: the native worker's modules were "imported by
    nothing", and their real breaks said so)."""
    files = files_of(tmp_path, envs="""
        import os
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            USE_NATIVE: bool = False
        environment_variables = {"USE_NATIVE": lambda: os.environ.get("USE_NATIVE", "0") == "1"}
        def __getattr__(name):
            return environment_variables[name]()
    """, platform="""
        import cons.envs as envs
        def configure(config):
            if envs.USE_NATIVE:
                config.worker_cls = "cons.native.Worker"
            else:
                config.worker_cls = "cons.compiled.Worker"
    """)
    platform = files["cons/platform.py"]
    assert not [m for m in platform.reaches if m.startswith(("cons.native", "cons.compiled"))]
    assert sorted((r.module, r.condition) for r in platform.reaches_when) == [
        ("cons.compiled.Worker", "not envs.USE_NATIVE"),
        ("cons.native.Worker", "envs.USE_NATIVE"),
    ]
