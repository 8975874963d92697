"""The consumer stage extracts provider uses from source alone (it never sees the provider)."""

from __future__ import annotations

import textwrap

from apiaudit.consumer import collect
from apiaudit.consumer.records import ConsumerOptions
from apiaudit.sources.local import resolve_path

OPTIONS = ConsumerOptions(
    provider_packages=("prov",),
    rpc_methods=(("collective_rpc", 0, "method"),),
    injection_keywords=("worker_extension_cls",),
)


def files_of(tmp_path, options: ConsumerOptions = OPTIONS, **sources):
    """A consumer package `cons` of the given modules, collected: path -> ConsumerFile."""
    pkg = tmp_path / "cons"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, text in sources.items():
        (pkg / f"{name}.py").write_text(textwrap.dedent(text))
    return {f.path: f for f in collect(resolve_path(str(pkg)), options)}


def chains(file):
    return sorted(
        (u.site.line, u.root.kind, u.root.name, tuple((s.kind, s.name, s.check) for s in u.steps)) for u in file.uses
    )


def test_import_forms_and_function_local_imports(tmp_path):
    f = files_of(tmp_path, a="""
        import prov.core as c
        import prov.util
        from prov.cfg import Config as C
        def f():
            from prov.sched import Scheduler
            Scheduler(1)
        c.make(x=1)
        prov.util.helper()
        C()
    """)["cons/a.py"]
    assert [(i.module, i.name) for i in f.imports] == [("prov.core", None), ("prov.util", None), ("prov.cfg", "Config"), ("prov.sched", "Scheduler")]
    roots = {(u.root.name, u.steps[0].kind if u.steps else None) for u in f.uses}
    assert ("prov.sched.Scheduler", "call") in roots
    assert ("prov.core", "attr") in roots and ("prov", "attr") in roots and ("prov.cfg.Config", "call") in roots


def test_locals_and_self_attributes_carry_types_without_rechecking(tmp_path):
    f = files_of(tmp_path, b="""
        from prov.sched import Scheduler
        class Runner:
            def __init__(self):
                self.s = Scheduler(1)
            def go(self, other: Scheduler | None):
                self.s.step()
                other.stop()
        x = Scheduler(2)
        x.gone
    """)["cons/b.py"]
    found = chains(f)
    # self.s.step(): the constructor call is replayed unchecked, the method call is checked.
    assert (7, "symbol", "prov.sched.Scheduler", (("call", None, False), ("attr", "step", True), ("call", None, True))) in found
    assert (8, "symbol", "prov.sched.Scheduler", (("instance", None, False), ("attr", "stop", True), ("call", None, True))) in found
    assert (10, "symbol", "prov.sched.Scheduler", (("call", None, False), ("attr", "gone", True))) in found


def test_a_name_bound_to_two_provider_values_is_forgotten(tmp_path):
    f = files_of(tmp_path, c="""
        from prov import A, B
        def f(flag):
            if flag:
                x = A()
            else:
                x = B()
            for x in []:
                pass
            x.method()
    """)["cons/c.py"]
    # Line 1 is the blank line after the opening quotes: A() is line 5, B() line 7, x.method()
    # line 10 (line 9 is `pass`, which no use can be on).
    assert sorted(u.site.line for u in f.uses) == [5, 7]
    assert not any(s.name == "method" for u in f.uses for s in u.steps)


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


def test_rpc_names_injections_and_method_bindings(tmp_path):
    f = files_of(tmp_path, g="""
        import types
        from prov.config import ParallelConfig
        from prov.executor import Executor
        def patched(self, x):
            return self.embed(x)
        def setup(ex: Executor, model):
            ParallelConfig(worker_extension_cls="cons.g.Ext")
            ex.collective_rpc("load", args=())
            ex.collective_rpc(method=name_from_somewhere)
            model.forward = types.MethodType(patched, model)
        class Ext:
            def load(self):
                return self.model_runner
    """)["cons/g.py"]
    assert [(i.keyword, i.target) for i in f.injections] == [("worker_extension_cls", "cons.g.Ext")]
    assert [(r.method, r.name) for r in f.rpc_calls] == [("collective_rpc", "load"), ("collective_rpc", None)]
    assert [b.function for b in f.method_bindings] == ["cons.g.patched"]
    assert any(u.root.kind == "fself" and u.steps[0].name == "embed" for u in f.uses)
    assert any(u.root.kind == "self" and u.root.name == "cons.g.Ext" and u.steps[0].name == "model_runner" for u in f.uses)


def test_a_file_that_does_not_parse_is_reported_not_raised(tmp_path):
    f = files_of(tmp_path, h="def broken(:\n")["cons/h.py"]
    assert f.error and f.error_site.line == 1 and f.uses == ()


VERSIONED = ConsumerOptions(
    provider_packages=("prov",),
    rpc_methods=(("collective_rpc", 0, "method"),),
    injection_keywords=("worker_extension_cls", "worker_cls"),
    provider_version="0.10.0",
    provider_distribution="prov",
    python_version=(3, 11, 0),
)


def versioned_files(tmp_path, options=VERSIONED, **sources):
    return files_of(tmp_path, options, **sources)


GUARDED = """
    import prov
    from packaging.version import Version
    from cons.flags import NEW, at_least
    def f(x):
        if Version(prov.__version__) >= Version("0.10"):
            prov.new_api()
        else:
            prov.old_api()
        if not NEW:
            prov.old_flag()
        if at_least("0.11"):
            prov.newer()
        if x:
            prov.runtime()
"""
FLAGS = """
    import prov
    from packaging.version import Version
    NEW = Version(prov.__version__) >= Version("0.10")
    def at_least(v):
        return Version(prov.__version__) >= Version(v)
"""


def test_a_dead_branch_emits_nothing_and_constants_and_helpers_fold_across_modules(tmp_path):
    f = versioned_files(tmp_path, a=GUARDED, flags=FLAGS)["cons/a.py"]
    names = {u.steps[0].name: u for u in f.uses if u.root.name == "prov" and u.steps}
    assert "new_api" in names and "runtime" in names
    assert not {"old_api", "old_flag", "newer"} & set(names)
    assert not names["runtime"].live.conditional  # a test on run-time data is not a guard


def test_an_unknown_provider_version_keeps_both_branches_conditional(tmp_path):
    from dataclasses import replace

    f = versioned_files(tmp_path, replace(VERSIONED, provider_version=None), a=GUARDED, flags=FLAGS)["cons/a.py"]
    names = {u.steps[0].name: u for u in f.uses if u.root.name == "prov" and u.steps}
    assert {"new_api", "old_api", "old_flag", "newer"} <= set(names)
    assert names["old_api"].live.guard == "not (Version(prov.__version__) >= Version('0.10'))"
    assert not names["runtime"].live.conditional


def test_a_version_compared_as_text_is_noted_and_evaluated_as_python_does(tmp_path):
    f = versioned_files(tmp_path, a="""
        import prov
        if prov.__version__ >= "0.9":
            prov.never()
        else:
            prov.always()
    """)["cons/a.py"]
    assert [n.kind for n in f.notes] == ["version-compared-as-string"]
    assert {u.steps[0].name for u in f.uses if u.steps} == {"always", "__version__"}  # the read is a use too


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


def test_dict_splats_bind_their_known_keys(tmp_path):
    f = versioned_files(tmp_path, a="""
        from prov import Args
        def f(extra):
            kw = {"a": 1}
            kw["b"] = 2
            kw.update(c=3)
            kw.pop("a")
            Args(**kw)
            kw.update(extra)
            Args(**kw)
    """)["cons/a.py"]
    shapes = [u.steps[-1].call for u in f.uses if u.steps and u.steps[-1].kind == "call"]
    assert [sorted(a.name for a in s.keywords) for s in shapes] == [["b", "c"], ["b", "c"]]
    assert [s.has_starstar for s in shapes] == [False, True]
    assert all(a.via_splat for s in shapes for a in s.keywords)


def test_what_self_attributes_hold_is_learned_from_every_method_that_can_change_it(tmp_path):
    # The class's learning pass skips methods that cannot change what self.X holds: a dict held
    # by self.X still changes through a call in a method that stores no attribute, and a store
    # in any method makes the value conflict.
    f = versioned_files(tmp_path, a="""
        from prov import Args, Engine, Other
        class Job:
            def __init__(self):
                self.kw = {"a": 1}
                self.engine = Engine()
            def widen(self, extra):
                self.kw.update(extra)
            def later(self):
                self.engine = Other()
            def run(self):
                Args(**self.kw)
                self.engine.step()
        class Plain:
            def __init__(self):
                self.kw = {"a": 1}
            def other(self):
                Args(a=2)
            def run(self):
                Args(**self.kw)
    """)["cons/a.py"]
    shapes = [u.steps[-1].call for u in f.uses if u.steps and u.steps[-1].kind == "call" and u.root.name == "prov.Args"]
    assert [s.has_starstar for s in shapes] == [True, False, False]  # widened by a call elsewhere; known keys
    assert [sorted(a.name for a in s.keywords) for s in shapes][2] == ["a"]
    assert not [u for u in f.uses if u.text == "self.engine.step()"]  # conflicting values: nothing known


def test_injection_by_name_through_variables_and_dicts(tmp_path):
    f = versioned_files(tmp_path, a="""
        from prov import LLM
        name = "cons.a.Ext"
        opts = {"worker_cls": "cons.a.Other"}
        LLM(worker_extension_cls=name, **opts)
        class Ext: pass
        class Other: pass
    """)["cons/a.py"]
    assert sorted((i.keyword, i.target) for i in f.injections) == [("worker_cls", "cons.a.Other"), ("worker_extension_cls", "cons.a.Ext")]


def test_feature_guards_are_conditions_and_early_exits_narrow_the_rest(tmp_path):
    f = versioned_files(tmp_path, a="""
        import inspect
        from prov import Engine
        def f(e: Engine):
            if not hasattr(e, "new"):
                return e.old()
            e.new()
            if "p" in inspect.signature(Engine.run).parameters:
                e.run(p=1)
    """)["cons/a.py"]
    by_line = {u.site.line: u for u in f.uses}
    assert by_line[6].live.conditions[0].expect is False and by_line[6].live.conditions[0].name == "new"
    assert by_line[7].live.conditions[0].expect is True  # the rest runs only where hasattr held
    assert any(c.kind.value == "has-param" and c.name == "p" for c in by_line[9].live.conditions)


def test_deep_valid_code_degrades_instead_of_crashing(tmp_path):
    f = versioned_files(tmp_path, a="import prov\nx = " + " + ".join(["prov.a"] * 2500) + "\ny = prov." + ".".join(["b"] * 900) + "\nprov.c()\n")["cons/a.py"]
    assert f.error is None
    assert any(u.site.line == 4 for u in f.uses)


def test_a_dict_that_escapes_forgets_its_keys(tmp_path):
    f = versioned_files(tmp_path, a="""
        from prov import Args
        def f(fill):
            kw = {"a": 1, "b": 2}
            gone = kw.pop("a")
            Args(**kw)
            fill(kw)
            Args(**kw)
            other = {"c": 1}
            alias = other
            alias.pop("c")
            Args(**other)
    """)["cons/a.py"]
    shapes = [u.steps[-1].call for u in f.uses if u.steps and u.steps[-1].kind == "call"]
    assert [(sorted(a.name for a in s.keywords), s.has_starstar) for s in shapes] == [(["b"], False), ([], True), ([], True)]


def test_version_text_methods_fold_on_the_audited_release(tmp_path):
    source = """
        import prov
        if prov.__version__.startswith("0.10"):
            prov.on_0_10()
        if int(prov.__version__.split(".")[1]) < 10:
            prov.before_0_10()
        import pkg_resources
        from importlib import metadata
        if pkg_resources.get_distribution("prov").version != metadata.distribution("prov").version:
            prov.never()
    """
    f = versioned_files(tmp_path, a=source)["cons/a.py"]
    assert {u.steps[0].name for u in f.uses if u.steps} == {"on_0_10", "__version__"}  # the read is a use too
    from dataclasses import replace

    (tmp_path / "u").mkdir()
    unknown = versioned_files(tmp_path / "u", replace(VERSIONED, provider_version=None), a=source)["cons/a.py"]
    assert {u.steps[0].name: u.live.conditional for u in unknown.uses if u.steps} == {
        "on_0_10": True, "before_0_10": True, "never": True, "__version__": False,
    }  # fmt: skip


def test_guards_narrow_chains_and_a_guard_and_raise_is_recorded(tmp_path):
    f = files_of(tmp_path, g="""
        import types
        from prov.worker import Worker
        from prov.interfaces import supports_draft

        def forward(self, x):
            return self.embed(x)

        class Ext(Worker):
            def setup(self):
                model = self.runner.model
                if not supports_draft(model):
                    raise ValueError("no")
                base = model.model
                if hasattr(base, "inner"):
                    target = base.inner
                else:
                    target = base
                target._mine = 1
                types.MethodType(forward, target)
                setattr(base, "forward", forward)
        """)["cons/g.py"]
    (stop,) = f.guard_stops
    assert (stop.site.line, stop.condition.kind.value, stop.condition.name, stop.condition.expect, stop.condition.stops) == (
        12, "narrows", "prov.interfaces.supports_draft", True, True)
    # one binding per way `target` can be, then the setattr on `base`
    targets = [tuple((s.kind, s.name) for s in b.target[1]) for b in f.method_bindings]
    narrow = ("narrow", "prov.interfaces.supports_draft")
    assert targets == [
        (("attr", "runner"), ("attr", "model"), narrow, ("attr", "model"), ("narrow", "inner"), ("attr", "inner")),
        (("attr", "runner"), ("attr", "model"), narrow, ("attr", "model"), ("narrow", "inner")),
        (("attr", "runner"), ("attr", "model"), narrow, ("attr", "model")),
    ]
    assert [b.own for b in f.method_bindings] == [("_mine",), ("_mine",), ()]
    guard_step = f.method_bindings[0].target[1][2].guard
    assert guard_step.stops and guard_step.expect is True
    assert [s.guard.expect for s in f.method_bindings[1].target[1] if s.kind == "narrow"] == [True, False]
