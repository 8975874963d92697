"""The consumer stage extracts provider uses from source alone (it never sees the provider)."""

from __future__ import annotations

import textwrap

from apiaudit.consumer import collect
from apiaudit.consumer.model import ConsumerOptions
from apiaudit.sources.local import resolve_path

OPTIONS = ConsumerOptions(
    provider_packages=("prov",),
    rpc_methods=(("collective_rpc", 0, "method"),),
    injection_keywords=("worker_extension_cls",),
)


def files_of(tmp_path, **sources):
    pkg = tmp_path / "cons"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, text in sources.items():
        (pkg / f"{name}.py").write_text(textwrap.dedent(text))
    return {f.path: f for f in collect(resolve_path(str(pkg)), OPTIONS)}


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
    assert not any(u.site.line == 9 for u in f.uses)


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


def test_guards_narrow_the_chains_they_test(tmp_path):
    # isinstance/hasattr/getattr in if, if-expressions, and/or, and assert: the guarded uses of
    # that chain are left out (the object may be a subclass); other chains are still emitted.
    f = files_of(tmp_path, a="""
        from prov.data import Loader
        def f(loader: Loader, other: Loader):
            if hasattr(loader, "extra"):
                loader.extra()
                other.extra()
            size = loader.total if getattr(loader, "prepared", False) else 0
            ok = hasattr(loader, "ready") and loader.ready()
            inner = loader.dataset
            if isinstance(inner, list):
                loader.dataset.dataset
            assert isinstance(other, list)
            other.anything
            loader.plain
    """)
    lines = [line for line, *_ in chains(f["cons/a.py"])]
    assert lines == [6, 9, 14]  # other.extra, loader.dataset, loader.plain
