"""The index records where **kwargs go and where names are defined; a warm scan answers both from its cache."""

from __future__ import annotations

import textwrap

import griffe

from apiaudit.audit import scan
from apiaudit.provider.index import ProviderIndex
from apiaudit.provider.loader import ModuleLoader
from apiaudit.provider.records import Forward


def _provider(tmp_path):
    prov = tmp_path / "prov" / "tinyprov"
    prov.mkdir(parents=True)
    (prov / "__init__.py").write_text("")
    (prov / "args.py").write_text("class Args:\n    def __init__(self, a=0):\n        pass\n")
    (prov / "mid.py").write_text(textwrap.dedent("""
        from tinyprov.args import Args
        def build(x, **kwargs):
            return Args(**kwargs)
        class Holder:
            def __init__(self, *args, **kwargs):
                self.args = Args(*args, **kwargs)
        class Child(Holder):
            def __init__(self, name, **kwargs):
                super().__init__(**kwargs)
    """))
    (prov / "net.py").write_text("def get_ip():\n    return 1\n")
    return prov


def test_forwarding_targets_resolve_through_names_and_super(tmp_path):
    prov = _provider(tmp_path)
    index = ProviderIndex(prov.parent, ("tinyprov",))
    assert index.forwards("tinyprov.mid.build") == (Forward("tinyprov.args.Args"),)
    assert index.forwards("tinyprov.mid.Holder") == (Forward("tinyprov.args.Args"),)
    # super().__init__: the class making the call; where it goes is the instance's MRO's to say
    assert index.forwards("tinyprov.mid.Child") == (Forward("tinyprov.mid.Child", via_super=True),)
    assert index.next_constructor(("tinyprov.mid.Child",), "tinyprov.mid.Child") == "tinyprov.mid.Holder"
    assert index.find_definitions("get_ip") == ("tinyprov.net.get_ip",)
    assert index.find_modules("net") == ("tinyprov.net",)


def test_warm_scan_reports_forwarded_keywords_and_moves_without_reading_the_provider(tmp_path, monkeypatch):
    prov = _provider(tmp_path)
    cons = tmp_path / "cons"
    cons.mkdir()
    (cons / "job.py").write_text(textwrap.dedent("""
        from tinyprov.mid import Child, build
        from tinyprov import get_ip
        Child("n", a=1, b=2)
        build(1, c=3)
    """))
    cache = tmp_path / "cache"
    cold = scan([str(cons)], str(prov), cache_dir=cache)
    got = sorted((f.rule, f.param, getattr(f.facts, "rejected_by", None) or getattr(f.facts, "moved_to", None)) for f in cold.findings)
    assert got == [
        ("import-missing", None, "tinyprov.net"),
        ("unexpected-keyword", "b", "tinyprov.args.Args"),
        ("unexpected-keyword", "c", "tinyprov.args.Args"),
    ]

    def nothing(*args, **kwargs):
        raise AssertionError("a warm scan must not read the provider")

    monkeypatch.setattr(griffe, "visit", nothing)
    monkeypatch.setattr(ModuleLoader, "source_files", nothing)
    assert scan([str(cons)], str(prov), cache_dir=cache).findings == cold.findings


def test_super_init_goes_on_along_the_instance_mro(tmp_path):
    """`super().__init__` in A reaches what follows A in the MRO of the object's class: in
    `P(A, B)` that is B, not A's own base; a mixin without `__init__` is passed over; a base
    outside the provider (not a transparent one) makes it unknown."""
    prov = tmp_path / "prov" / "mroprov"
    prov.mkdir(parents=True)
    (prov / "__init__.py").write_text(textwrap.dedent("""
        import dataclasses
        from torch import nn
        class Root:
            def __init__(self): ...
        class A(Root):
            def __init__(self, **kw):
                super().__init__(**kw)
        class B(Root):
            def __init__(self, dim, **kw):
                super().__init__(**kw)
        class Mixin:
            def helper(self): ...
        class C(Mixin, Root): ...
        @dataclasses.dataclass
        class Data:
            x: int = 0
        class D(Mixin, Data): ...
        class E(Mixin, nn.Module): ...
    """))
    index = ProviderIndex(prov.parent, ("mroprov",))
    assert index.next_constructor(("mroprov.A",), "mroprov.A") == "mroprov.Root"
    assert index.next_constructor(("mroprov.A", "mroprov.B"), "mroprov.A") == "mroprov.B"
    assert index.next_constructor(("mroprov.A", "mroprov.B"), "mroprov.B") == "mroprov.Root"
    assert index.next_constructor(("mroprov.C",), "mroprov.C") == "mroprov.Root"
    assert index.next_constructor(("mroprov.D",), "mroprov.D") == "mroprov.Data"
    assert index.next_constructor(("mroprov.E",), "mroprov.E") is None
    assert index.next_constructor(("mroprov.Root",), "mroprov.Root") is None  # object: nothing follows
    assert index.next_constructor(("mroprov.A",), "mroprov.B") is None  # B is not in A's MRO


def test_a_keyword_the_forwarder_takes_out_of_kwargs_is_not_judged_at_the_target(tmp_path):
    """lm-eval 0.4.11 on vLLM 0.18.0: `LLM(**model_args)` with `swap_space`, which EngineArgs lost
    but `LLM.__init__` pops from its **kwargs (with a deprecation warning) before passing them on.
    A key popped or deleted anywhere in the forwarder may never reach the target: not a rejection."""
    prov = tmp_path / "prov" / "shimprov"
    prov.mkdir(parents=True)
    (prov / "__init__.py").write_text(textwrap.dedent("""
        class EngineArgs:
            def __init__(self, model=""):
                pass
        class LLM:
            def __init__(self, model, **kwargs):
                if "swap_space" in kwargs:
                    kwargs.pop("swap_space")
                del kwargs["old_flag"]
                self.args = EngineArgs(model=model, **kwargs)
    """))
    index = ProviderIndex(prov.parent, ("shimprov",))
    assert index.forwards("shimprov.LLM") == (Forward("shimprov.EngineArgs", ("model",), ("old_flag", "swap_space")),)
    cons = tmp_path / "cons"
    cons.mkdir()
    (cons / "job.py").write_text('from shimprov import LLM\nLLM("m", swap_space=4, old_flag=1, device="cuda")\n')
    found = sorted((f.rule, f.param) for f in scan([str(cons)], str(prov)).findings)
    assert found == [("unexpected-keyword", "device")]
