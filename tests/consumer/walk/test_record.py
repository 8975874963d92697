"""What is recorded at call sites: RPC names, injections, functions bound onto objects (`walk/record.py`)."""

from __future__ import annotations

from tests.consumer.test_visitor import files_of, versioned_files


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


def test_attributes_the_consumer_sets_on_objects_are_recorded(tmp_path):
    """`obj.x = v` and `setattr(obj, "x", v)` on anything but the class's own self (issue 27, N3)."""
    f = files_of(tmp_path, s="""
        from prov import make
        def start(session):
            session.config._thing = 1
        def attach():
            out = make()
            setattr(out, "extra", {})
        class C:
            def __init__(self):
                self.own = 1
    """)["cons/s.py"]
    stores = [(s.name, s.target[0].name if s.target else None, s.holder, s.site.line) for s in f.attribute_stores]
    assert stores == [("_thing", None, "config", 4), ("extra", "prov.make", None, 7)]


def test_a_consumer_class_call_is_a_use_rooted_at_the_class(tmp_path):
    """`Sub(...)` and `models.Sub(...)` of a class of the package, the callee read once with the
    call's use; a call inside a longer chain (`Sub(3).run()`) and a local function's are read
    on their own."""
    files = files_of(tmp_path, models="""
        class Sub:
            def run(self):
                pass
    """, a="""
        import prov
        from cons import models
        from cons.models import Sub
        def helper(x):
            return x
        def build():
            Sub(1)
            models.Sub(2, key=prov.X)
            Sub(3).run()
            helper(4)
            prov.make(Sub)
    """)
    uses = [(u.site.line, u.root.name, len(u.steps[0].call.args)) for u in files["cons/a.py"].uses if u.root.kind == "cls"]
    assert uses == [(8, "cons.models.Sub", 1), (9, "cons.models.Sub", 2), (10, "cons.models.Sub", 1)]
