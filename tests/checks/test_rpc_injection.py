"""String RPCs meet injected classes: named by a string, resolved or not."""

from __future__ import annotations

import textwrap

from apiaudit.audit import scan

RULES = """
[provider]
name = "tinyprov"

[[rpc]]
method = "collective_rpc"
name_arg = 0
hosts = ["tinyprov.Worker"]

[[injection]]
keyword = "worker_cls"
hosts = ["tinyprov.Worker"]
"""


PROVIDER = "class Worker:\n    def run(self):\n        pass\n\nclass LLM:\n    def __init__(self, **kw):\n        pass\n    def collective_rpc(self, name):\n        pass\n"
VERSIONED_PROVIDER = '__version__ = "0.10.0"\n\nclass Worker:\n    pass\n\nclass LLM:\n    def __init__(self, **kw):\n        pass\n    def collective_rpc(self, name):\n        pass\n'


def _report(tmp_path, consumer: str, provider: str = PROVIDER, **options):
    prov = tmp_path / "prov" / "tinyprov"
    prov.mkdir(parents=True)
    (prov / "__init__.py").write_text(provider)
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "tinyprov.toml").write_text(RULES)
    cons = tmp_path / "cons"
    cons.mkdir()
    (cons / "__init__.py").write_text("")
    (cons / "job.py").write_text(textwrap.dedent(consumer))
    return scan([str(cons)], str(prov), rules_dirs=[rules], use_index_cache=False, **options)


def _scan(tmp_path, consumer: str):
    return sorted((f.rule, f.line) for f in _report(tmp_path, consumer).findings)


def test_a_class_named_by_a_string_through_a_variable_receives_the_rpcs(tmp_path):
    assert _scan(tmp_path, """
        from tinyprov import LLM
        class Mine:
            def extra(self):
                pass
        cls_name = "cons.job.Mine"
        llm = LLM(worker_cls=cls_name)
        llm.collective_rpc("extra")
        llm.collective_rpc("run")
        llm.collective_rpc("nowhere")
    """) == [("rpc-missing", 10)]


def test_an_injected_class_that_cannot_be_resolved_makes_unknown_rpcs_cannot_judge(tmp_path):
    assert _scan(tmp_path, """
        import os
        from tinyprov import LLM
        llm = LLM(worker_cls=os.environ["WORKER"])
        llm.collective_rpc("nowhere")
        llm2 = LLM(worker_cls="other_pkg.Worker")
    """) == [("cannot-judge", 5)]


def test_a_class_installed_by_name_on_a_config_object_receives_the_rpcs(tmp_path):
    """Issue 37, cause 10: the class named by assignment on a config object (`config.worker_cls =
    "pkg.mod:Class"`, the `module:Class` spelling included), by `setattr`, or inside a function
    the plugin puts over a provider method to set it, is an RPC host like the keyword's."""
    assert _scan(tmp_path, """
        from tinyprov import LLM
        class Ext:
            def extra(self):
                pass
        class Other:
            def other(self):
                pass
        def patched_config(config):
            config.worker_cls = "cons.job:Ext"
            return config
        def install(config):
            setattr(config, "worker_cls", Other)
        llm = LLM()
        llm.collective_rpc("extra")
        llm.collective_rpc("other")
        llm.collective_rpc("nowhere")
    """) == [("rpc-missing", 17)]


def test_a_class_named_by_its_module_and_name_at_run_time_receives_the_rpcs(tmp_path):
    """The idioms that spell a class's dotted name without writing it: `f"{__name__}.Ext"`,
    `f"{Ext.__module__}.{Ext.__qualname__}"`, `Ext.__module__ + "." + Ext.__name__`."""
    assert _scan(tmp_path, """
        from tinyprov import LLM
        class Ext:
            def extra(self):
                pass
        class Ext2:
            def extra2(self):
                pass
        class Ext3:
            def extra3(self):
                pass
        a = LLM(worker_cls=f"{__name__}.Ext")
        b = LLM(worker_cls=f"{Ext2.__module__}.{Ext2.__qualname__}")
        c = LLM(worker_cls=Ext3.__module__ + "." + Ext3.__name__)
        a.collective_rpc("extra")
        b.collective_rpc("extra2")
        c.collective_rpc("extra3")
        c.collective_rpc("nowhere")
    """) == [("rpc-missing", 18)]


def _scan_versioned(tmp_path, consumer: str):
    report = _report(tmp_path, consumer, VERSIONED_PROVIDER, provider_version="0.10.0")
    return sorted((f.rule, f.line, f.severity.value) for f in report.findings)


ACTOR = """
    import tinyprov
    from tinyprov import LLM
    class Ext:
        def extra(self):
            pass
    class Actor:
        def __init__(self, **kw):
            self.llm = LLM(**kw)
        def call(self):
            return self.llm.collective_rpc("extra")
"""


def test_an_rpc_served_only_by_a_class_installed_after_a_failing_assert_is_no_error(tmp_path):
    """The string-compared assert fails on 0.10.0: it is the break (an error at the assert),
    and the RPC that needs the class installed after it is a warning naming the assert."""
    assert _scan_versioned(tmp_path, ACTOR + """
    def build():
        assert tinyprov.__version__ > "0.8.2"
        return Actor(worker_cls="cons.job.Ext")
    """) == [("rpc-missing", 11, "warning"), ("version-compared-as-string", 14, "error")]


def test_an_rpc_whose_class_is_installed_only_on_a_branch_not_taken_stays_an_error(tmp_path):
    """Counter-case: a branch the release does not take is no refusal (the code goes on and
    builds the engine without the class): the RPC is missing there."""
    assert _scan_versioned(tmp_path, ACTOR + """
    def build():
        if tinyprov.__version__.startswith("0.8"):
            return Actor(worker_cls="cons.job.Ext")
        return Actor()
    """) == [("rpc-missing", 11, "error")]
