"""Symbolic guards decided against a real (fixture) provider index, as Python would at import/run time."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from apiaudit.checks.chains import evaluate_chain
from apiaudit.checks.conditions import decide, import_fails, verdict
from apiaudit.checks.context import CheckContext, HostRules
from apiaudit.consumer.records import (
    Condition,
    ConditionKind,
    ImportRef,
    Liveness,
    Root,
    Step,
)
from apiaudit.provider.index import ProviderIndex

PROVIDERS = Path(__file__).resolve().parents[2] / "fixtures" / "providers"


def ctx_for(version: str) -> CheckContext:
    index = ProviderIndex(PROVIDERS / f"shim_{version}", ("shim",))
    return CheckContext("c", index, (), HostRules(), evaluate_chain=evaluate_chain)


@pytest.mark.parametrize(
    ("refs", "caught", "v1", "v2"),
    [
        ((ImportRef("shim.new_place", "helper"),), "ImportError", True, False),  # a missing module
        ((ImportRef("shim.utils", "get_hash"),), "ImportError", False, True),  # a missing name
        # ModuleNotFoundError does not catch a missing name: the handler does not run
        ((ImportRef("shim.utils", "get_hash"),), "ModuleNotFoundError", False, False),
        ((ImportRef("shim.fast", None),), "ModuleNotFoundError", True, False),
    ],
)
def test_import_failures_respect_the_exception_type(refs, caught, v1, v2):
    assert import_fails(ctx_for("v1"), refs, caught) is v1
    assert import_fails(ctx_for("v2"), refs, caught) is v2


def _instance(cls: str):
    steps = tuple(Step("attr", name=p, check=False) for p in cls.split(".")[1:]) + (Step("instance", check=False),)
    return (Root("symbol", cls.split(".")[0]), steps)


def test_feature_conditions_read_the_release():
    engine = _instance("shim.engine.Engine")
    has_new = Condition(ConditionKind.HAS_ATTR, True, "hasattr(e, 'new_method')", target=engine, name="new_method")
    assert decide(ctx_for("v2"), has_new) is False and decide(ctx_for("v3"), has_new) is True
    generate = (Root("symbol", "shim"), (Step("attr", name="engine", check=False), Step("attr", name="Engine", check=False), Step("attr", name="generate", check=False)))
    has_param = Condition(ConditionKind.HAS_PARAM, True, "'progress' in ...", target=generate, name="progress")
    assert decide(ctx_for("v1"), has_param) is False and decide(ctx_for("v2"), has_param) is True
    # `e = Engine(...)` is an Engine; `e: Engine` (an annotation) may be its subclass AsyncEngine.
    built = (Root("symbol", "shim"), (Step("attr", name="engine", check=False), Step("attr", name="Engine", check=False), Step("call", check=False)))
    is_async = Condition(ConditionKind.IS_INSTANCE, True, "isinstance(e, AsyncEngine)", target=built, name="shim.engine.AsyncEngine")
    assert decide(ctx_for("v1"), is_async) is False
    assert decide(ctx_for("v1"), replace(is_async, target=engine)) is None
    layer = Condition(ConditionKind.HAS_ATTR, True, "hasattr(l, 'fused')", target=_instance("shim.layers.Layer"), name="fused")
    assert decide(ctx_for("v1"), layer) is None  # torch.nn.Module lies outside the provider


def test_a_false_condition_is_dead_and_an_undecided_one_is_conditional():
    ctx = ctx_for("v2")
    dead = Liveness((Condition(ConditionKind.IMPORT_FAILS, True, "x fails", imports=(ImportRef("shim.fast", None),)),))
    assert verdict(ctx, dead).dead
    layer = Condition(ConditionKind.HAS_ATTR, True, "hasattr(l, 'fused')", target=_instance("shim.layers.Layer"), name="fused")
    assert verdict(ctx, Liveness((layer,))).guard == "hasattr(l, 'fused')"
    assert verdict(ctx, Liveness(undecided=("v >= 1",))).guard == "v >= 1"


def test_a_launch_line_flag_that_spells_an_injection_keyword_names_the_class_it_installs():
    """`vllm serve ... --worker-extension-cls pkg.ext.Ext` (or `--flag=pkg.ext:Ext`) installs the
    class as the keyword does (issue 37, cause 10); a value only run time knows names nothing."""
    from apiaudit.checks.conditions import _launch_injections
    from apiaudit.consumer.records import UNKNOWN, ConsumerFile, LaunchArg, LaunchLine, Site

    def line(*texts: str) -> LaunchLine:
        return LaunchLine("server", "prov.cli", "prov serve", Site(1, 0), tuple(LaunchArg(t, Site(1, 0)) for t in texts))

    file = ConsumerFile(path="job.py", module="job", launch_lines=(
        line("model", "--worker-extension-cls", "pkg.ext.Ext", "--port", "1"),
        line("--worker-extension-cls=pkg.ext:Other"),
        line("--worker-extension-cls", UNKNOWN),
        line("--other-flag", "pkg.ext.Nope"),
    ))  # fmt: skip
    assert _launch_injections(file, {"worker_extension_cls": ("prov.Worker",)}) == [
        ("pkg.ext.Ext", "worker_extension_cls"), ("pkg.ext.Other", "worker_extension_cls"),
    ]  # fmt: skip


def _fixed(version: str):
    """fixedplug's findings in runners.py against fixedkit `version` (fixtures/providers/fixedkit_v{1,2})."""
    from apiaudit.audit import scan

    report = scan(
        [str(PROVIDERS.parent / "consumers" / "fixedplug" / "fixedplug")], str(PROVIDERS / f"fixedkit_v{version}" / "fixedkit"),
        cache_dir=None, use_index_cache=False,
    )  # fmt: skip
    return sorted((f.line, f.rule, f.severity.value, f.callee) for f in report.findings if f.path == "fixedplug/runners.py")


def test_a_flag_the_provider_keeps_at_one_literal_decides_the_consumer_test_on_it():
    """vllm-omni 0.30.0's `if self.cascade_attn_enabled and ...: self._compute_cascade_attn_prefix_lens(...)`
    on vLLM 0.32.0, whose GPUModelRunner.__init__ sets the flag to False ("kept for out-of-tree model
    runners") and never again, and which omni never sets: the branch never runs, so fixedplug's
    `_compute_prefix` has no finding on fixedkit 2.0. A flag the consumer sets (by attribute or by
    name with setattr), one the provider sets to another value elsewhere, one a base from outside
    the provider may set (a warning, as before), and one on a class that sets attributes by computed
    names (cannot-judge, as before) keep their findings; so does the call after the test."""
    prefix = "fixedkit.runner.ModelRunner"
    assert _fixed("1") == []
    assert _fixed("2") == [
        (15, "attribute-missing", "error", f"{prefix}._legacy_prepare"),  # the consumer sets legacy_enabled
        (17, "attribute-missing", "error", f"{prefix}._spec_prepare"),  # the provider sets spec_enabled to True too
        (19, "attribute-missing", "error", f"{prefix}._offload"),  # setattr(runner, "offload_enabled", True)
        (20, "unexpected-keyword", "error", f"{prefix}._build_metadata"),
        (26, "attribute-missing", "warning", f"{prefix}._compute_prefix"),  # ForeignRunner, from outside, may set it
        (33, "cannot-judge", "info", "fixedkit.runner.ConfigurableRunner._compute_prefix"),  # configure(): setattr by name
    ]
