"""The consumer stage extracts provider uses from source alone (it never sees the provider)."""

from __future__ import annotations

import ast
import gc
import textwrap

from apiaudit.consumer import collect
from apiaudit.consumer.records import ConsumerOptions
from apiaudit.consumer.visitor import ModuleVisitor
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


def test_deep_valid_code_degrades_instead_of_crashing(tmp_path):
    f = versioned_files(tmp_path, a="import prov\nx = " + " + ".join(["prov.a"] * 2500) + "\ny = prov." + ".".join(["b"] * 900) + "\nprov.c()\n")["cons/a.py"]
    assert f.error is None
    assert any(u.site.line == 4 for u in f.uses)


def test_a_walk_leaves_no_cyclic_garbage():
    # The walk's parts call back up through parts the visitor hands them, and takes back after
    # the walk: reference counting alone frees it (forked workers run with the collector off).
    tree = ast.parse(textwrap.dedent("""
        import prov
        from prov import Args
        try:
            from prov.fast import speedup
        except ImportError:
            speedup = None
        def at_least(v):
            return prov.__version__ >= v
        class Job(prov.Base):
            def __init__(self):
                self.kw = {"a": 1}
            def run(self):
                if at_least("0.9") and hasattr(self, "x"):
                    Args(**self.kw)
    """))
    gc.collect()
    gc.disable()
    try:
        ModuleVisitor("", "a.py", "cons.a", False, VERSIONED).run(tree)
        ModuleVisitor("", "a.py", "cons.a", False, VERSIONED).exports(tree)
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_a_text_names_the_release_in_any_case_and_separator():
    """The text pre-test sparing helpers a walk: `__version__`, or the provider's name spelled with
    any of `-_.` between its parts, in any case; a name with too many parts is searched by a pattern."""
    from apiaudit.consumer.visitor import _spellings

    assert _spellings(("hs-connectors", "hs_connectors")) == ("hs-connectors", "hs_connectors", "hs.connectors")
    assert _spellings(("a-b-c-d-e",)) is None

    def names(source: str, distribution: str) -> bool:
        options = ConsumerOptions(provider_packages=(distribution.replace("-", "_"),), provider_distribution=distribution)
        return ModuleVisitor(source, "m.py", "m", False, options)._names_release()

    assert names("import HS.Connectors as c", "hs-connectors")
    assert names("x = __version__", "hs-connectors")
    assert not names("import other", "hs-connectors")
    assert names("v = version('A-B_c.D-e')", "a-b-c-d-e") and not names("v = 1", "a-b-c-d-e")
