"""The contract the provider calls (issue 25): overrides, plugin constructors, abstract members.

Fixture provider `hostlib` v1 -> v2 (fixtures/providers/hostlib_v{1,2}) builds and calls the
consumer `plugin` (fixtures/consumers/plugin): each line's comment says what v2 breaks.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from apiaudit.audit import scan
from apiaudit.consumer.contracts import defined_functions
from apiaudit.policy.config import Settings

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PROVIDERS = FIXTURES / "providers"
CONSUMER = FIXTURES / "consumers" / "plugin" / "plugin"
CONTRACT_RULES = {
    "override-incompatible", "constructor-incompatible", "abstract-unimplemented", "replacement-incompatible", "patch-target-missing",
    "entry-point-incompatible",
}  # fmt: skip


def _findings(version: str):
    report = scan(
        [str(CONSUMER)], str(PROVIDERS / f"hostlib_v{version}" / "hostlib"), rules_dirs=[PROVIDERS],
        cache_dir=None, use_index_cache=False, settings=Settings(),
    )  # fmt: skip
    return sorted(
        (f.path, f.line, f.rule, f.severity.value, f.param, f.provider_location)
        for f in report.findings
        if f.rule in CONTRACT_RULES
    )


def test_nothing_breaks_on_the_release_the_plugin_was_written_for():
    assert _findings("1") == []


def test_modules_only_the_provider_loads_by_name_are_live():
    """`_boot` (an entry point the host loads), `_named` (registered by name) and `_configured`
    (a config value's module path) are imported by nothing in the package: each is live."""
    report = scan(
        [str(CONSUMER)], str(PROVIDERS / "hostlib_v2" / "hostlib"), rules_dirs=[PROVIDERS],
        cache_dir=None, use_index_cache=False, settings=Settings(),
    )  # fmt: skip
    named = [f for f in report.findings if f.path in ("plugin/_boot.py", "plugin/_named.py", "plugin/_configured.py")]
    assert len(named) == 3 and not any(f.conditional or f.unreachable for f in named)


def test_each_break_on_the_next_release_names_the_provider_call_site():
    assert _findings("2") == [
        # named, not derived: an entry point the host calls, a registration, a config value
        ("plugin/_boot.py", 6, "entry-point-incompatible", "error", None, "hostlib/plugins.py:7"),
        ("plugin/_configured.py", 5, "constructor-incompatible", "error", "cache_config", "hostlib/factory.py:14"),
        # issue 37, cause 11: the plugin's own version gate, at the raise the release takes
        ("plugin/_gate.py", 14, "entry-point-incompatible", "error", None, None),
        ("plugin/_named.py", 5, "constructor-incompatible", "error", "cache_config", "hostlib/factory.py:14"),
        # precision cause N12: the provider's schedule calls allocate on the manager it holds;
        # OwnBlockManager (line 8) is held only by a scheduler whose schedule replaces it
        ("plugin/blocks.py", 22, "override-incompatible", "error", "lookahead", "hostlib/blocks.py:14"),
        ("plugin/connector.py", 6, "abstract-unimplemented", "error", "finish", None),
        ("plugin/connector.py", 7, "constructor-incompatible", "error", "cache_config", "hostlib/factory.py:14"),
        ("plugin/connector.py", 16, "override-incompatible", "error", "external_tokens", "hostlib/scheduler.py:12"),
        ("plugin/connector.py", 19, "override-incompatible", "warning", None, "hostlib/scheduler.py:11"),
        ("plugin/executor.py", 7, "override-incompatible", "error", "non_block", "hostlib/executor.py:6"),
        # precision cause N14: Experts.forward_modular's call runs only from Runner, which the
        # plugin substitutes (a warning naming it); DenseExperts.run's does not (an error)
        ("plugin/experts.py", 19, "override-incompatible", "warning", None, "hostlib/pluggable.py:28"),
        ("plugin/experts.py", 25, "override-incompatible", "error", None, "hostlib/pluggable.py:49"),
        ("plugin/models.py", 7, "override-incompatible", "error", "config", "hostlib/positions.py:6"),
        ("plugin/patches.py", 21, "replacement-incompatible", "error", "metadata", "hostlib/model.py:16"),
        ("plugin/patches.py", 22, "patch-target-missing", "warning", "old_hook", None),
        ("plugin/patches.py", 26, "replacement-incompatible", "error", "positions", "hostlib/model.py:19"),
        # through `self.net(x, None, scale=2.0)`: nn.Module.__call__ runs forward ([[call_dispatch]])
        ("plugin/patches.py", 34, "replacement-incompatible", "error", "scale", "hostlib/net.py:19"),
        # one finding per override, whatever the number of parameters and call sites it fails
        # a base imported with a stand-in, its hook called on a name typed for type checkers only
        ("plugin/platform.py", 14, "override-incompatible", "error", "num_heads", "hostlib/selector.py:7"),
        # cause 1 of issue 37: the contract is the nearest declaration (FusedMoEMethodBase.apply):
        # the base-typed calls of the linear layers reach MyLinearMethod, not MyMoEMethod
        ("plugin/quant.py", 10, "override-incompatible", "error", "activation", "hostlib/quantization.py:45"),
        ("plugin/quant.py", 17, "override-incompatible", "error", None, "hostlib/quantization.py:29"),
        ("plugin/servers.py", 13, "override-incompatible", "error", "params", "hostlib/serving.py:10"),
        ("plugin/trainers.py", 7, "override-incompatible", "error", "model", "hostlib/trainer.py:19"),
        ("plugin/trainers.py", 10, "override-incompatible", "error", "model", "hostlib/trainer.py:20"),
    ]


def test_a_provider_call_only_one_configuration_runs_makes_a_conditional_finding_with_its_guard():
    """A call in one branch of the provider's if/elif chain (`elif self.is_fsdp:`), or in a
    module the release imports only in one branch (`if self.use_v2: from .runner_v2 import`),
    may never run: the finding is conditional and names the provider's guard. A call outside
    any such branch stays unconditional (trainers.py:10)."""
    report = scan(
        [str(CONSUMER)], str(PROVIDERS / "hostlib_v2" / "hostlib"), rules_dirs=[PROVIDERS],
        cache_dir=None, use_index_cache=False, settings=Settings(),
    )  # fmt: skip
    found = {
        (f.path, f.line, f.param, f.conditional, f.guard)
        for f in report.findings
        if f.rule == "override-incompatible" and f.path in ("plugin/trainers.py", "plugin/models.py")
    }
    assert found == {
        ("plugin/trainers.py", 7, "model", True, "the provider's elif self.is_fsdp: (hostlib/trainer.py:18)"),
        ("plugin/trainers.py", 10, "model", False, None),
        ("plugin/models.py", 7, "config", True, "the provider's if self.use_v2: (hostlib/worker.py:9)"),
    }


def test_a_call_made_on_self_in_a_method_the_instance_never_runs_does_not_bind():
    """hostlib's Serving._pipeline calls _log_inputs(params=) and runs only through handle,
    which only PoolingServing calls (on itself): MyChat(ChatServing) never runs it, MyPooling
    does (servers.py:13 above, and nothing at line 8)."""
    assert [f for f in _findings("2") if f[0] == "plugin/servers.py" and f[1] == 8] == []


def _attribute_findings(consumer: Path, provider: Path, rules_dirs=()):
    report = scan(
        [str(consumer)], str(provider), rules_dirs=list(rules_dirs), cache_dir=None, use_index_cache=False, settings=Settings()
    )
    return sorted((f.path, f.line, f.severity.value, f.reason) for f in report.findings if f.rule == "attribute-missing")


def test_an_override_parameter_holds_what_the_base_method_annotates():
    """Issue 25 item 7: `build_meta(self, scheduler_output)` overrides ConnectorBase.build_meta,
    whose parameter is annotated `SchedulerOutput`: its attribute uses are checked against that
    class, a claim like any provider annotation (a member only a subclass has is a warning)."""
    assert _attribute_findings(CONSUMER, PROVIDERS / "hostlib_v1" / "hostlib", [PROVIDERS]) == []
    assert _attribute_findings(CONSUMER, PROVIDERS / "hostlib_v2" / "hostlib", [PROVIDERS]) == [
        ("plugin/connector.py", 25, "warning", "declared SchedulerOutput (a provider annotation); a subclass may define 'kv_events' (EventfulSchedulerOutput)"),
        ("plugin/connector.py", 26, "error", None),
    ]  # fmt: skip


def test_an_override_parameter_is_matched_by_name_then_by_position(tmp_path):
    """A renamed parameter takes the base's annotation at its position; an unannotated base
    parameter, a class of no provider base or a method the provider does not define: unknown."""
    prov = tmp_path / "hp"
    prov.mkdir()
    (prov / "__init__.py").write_text(
        "class Out:\n    kept: int\n\n\nclass Base:\n    def hook(self, out: Out, *, flag: Out = None): ...\n\n"
        "    def plain(self, x): ...\n"
    )
    cons = tmp_path / "cons"
    cons.mkdir()
    (cons / "__init__.py").write_text(
        "from hp import Base\n\n\nclass C(Base):\n    def hook(self, renamed, *, flag=None):\n"
        "        return renamed.gone, flag.gone, renamed.kept\n\n    def plain(self, x):\n        return x.gone\n\n"
        "    def own(self, out):\n        return out.gone\n\n\nclass D:\n    def hook(self, out):\n        return out.gone\n"
    )
    assert _attribute_findings(cons, prov) == [("cons/__init__.py", 6, "error", None), ("cons/__init__.py", 6, "error", None)]


def test_a_replacement_parameter_holds_what_the_replaced_method_annotates(tmp_path):
    """Issue 25 item 7, replacements: a function put over a provider method (`Cls.m = f`,
    `types.MethodType(f, obj)`) is called with what the method's callers pass, typed by its
    annotations (by name, then by position). A function installed nowhere, or over a method the
    class lacks, holds nothing known."""
    prov = tmp_path / "hp"
    prov.mkdir()
    (prov / "__init__.py").write_text("class Out:\n    kept: int\n\n\nclass Base:\n    def hook(self, out: Out): ...\n")
    cons = tmp_path / "cons"
    cons.mkdir()
    (cons / "__init__.py").write_text(
        "import types\n\nfrom hp import Base\n\n\n"
        "def patched(self, out):\n    return out.gone, out.kept\n\n\nBase.hook = patched\n\n\n"
        "def bound(self, renamed):\n    return renamed.gone\n\n\n"
        "def install(b: Base):\n    b.hook = types.MethodType(bound, b)\n\n\n"
        "def unused(self, out):\n    return out.gone\n\n\n"
        "def elsewhere(self, out):\n    return out.gone\n\n\nBase.absent = elsewhere\n"
    )
    assert _attribute_findings(cons, prov) == [("cons/__init__.py", 7, "error", None), ("cons/__init__.py", 14, "error", None)]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("class A(B):\n    def f(self, x, /, y=1, *a, k, **kw):\n        return x, y\n", [("m.A.f", "method", (2,))]),
        ("class A(B):\n    @staticmethod\n    def f(x):\n        return g(*x)\n", [("m.A.f", "staticmethod", (None,))]),
        ("def f(x):\n    def inner():\n        return 1, 2\n", [("m.f", "function", ())]),
        ("if X:\n    class A:\n        def f(self):\n            return (1, 2)\n", [("m.A.f", "method", (2,))]),
    ],
)
def test_definitions_record_what_a_caller_binds_to(source, expected):
    import ast

    found = defined_functions(ast.parse(source), "m")
    assert [(f.dotted, f.kind, f.returns) for f in found] == expected


def test_a_definition_keeps_every_parameter_kind_and_default():
    import ast

    (f,) = defined_functions(ast.parse("def f(a, /, b=1, *c, d, e=2, **g): pass\n"), "m")
    assert [(p.name, p.kind, p.has_default) for p in f.params] == [
        ("a", "positional-only", False), ("b", "positional-or-keyword", True), ("c", "var-positional", False),
        ("d", "keyword-only", False), ("e", "keyword-only", True), ("g", "var-keyword", False),
    ]  # fmt: skip


@pytest.mark.network
@pytest.mark.parametrize("vllm", ["0.16.0", "0.20.0"])
def test_speculators_030_patched_forward_is_judged_against_the_model_calls(vllm, released, release_cache, tmp_path):
    """speculators 0.3.0 binds `_patched_forward(self, input_ids, positions,
    intermediate_tensors=None, inputs_embeds=None)` over the inner model's forward; vLLM calls
    that model as an object, `self.model(input_ids, positions, intermediate_tensors,
    inputs_embeds)` (llama.py, qwen3.py, deepseek_v2.py), which nn.Module.__call__ sends to
    forward ([[call_dispatch]] in rules/vllm.toml). Those calls are what the patch is judged
    against: the release's function fits them; one taking two parameters does not."""
    from apiaudit.provider.index import ProviderIndex

    provider = released(f"vllm=={vllm}")
    index = ProviderIndex(provider.root, provider.packages)
    models = "vllm.model_executor.models"
    passed = {
        (call.location.rpartition(":")[0], call.positional, call.keywords)
        for call in index.instance_calls([f"{models}.llama.LlamaModel", f"{models}.qwen3.Qwen3Model", f"{models}.deepseek_v2.DeepseekV2Model"])
    }
    for module in ("llama", "qwen3", "deepseek_v2"):
        assert (f"vllm/model_executor/models/{module}.py", 4, ()) in passed

    consumer = released("speculators==0.3.0")
    worker = "speculators/data_generation/custom_worker.py"
    report = scan(["speculators==0.3.0"], f"vllm=={vllm}", cache_dir=release_cache)
    assert [f for f in report.findings if f.rule == "replacement-incompatible"] == []

    # the same worker with a patch taking two parameters: every model call passes more
    text = (consumer.root / worker).read_text(encoding="utf-8")
    narrowed = text.replace("self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None", "self, input_ids, positions", 1)
    assert narrowed != text
    copy = tmp_path / "speculators"
    shutil.copytree(consumer.root / "speculators", copy)  # the worker is injected by another module's launch
    (tmp_path / worker).write_text(narrowed, encoding="utf-8")
    found = [f for f in scan([str(copy)], f"vllm=={vllm}", cache_dir=release_cache).findings if f.rule == "replacement-incompatible"]
    assert [(f.path, f.line) for f in found] == [(worker, 109)]
    assert found[0].provider_location.startswith("vllm/model_executor/models/")


def test_an_error_in_an_init_the_factory_cannot_call_follows_that_failure():
    """Issue 27, cause 10: the first failure of a path, once. On hostlib 2.0 the factory cannot
    call ChainedConnector.__init__, so its body's wrong `super().__init__(...)` is a warning that
    names the first failure; on 1.0 the factory binds and the same line is an error."""

    def severities(version: str):
        report = scan(
            [str(FIXTURES / "consumers" / "plugin_chain" / "plugin_chain")], str(PROVIDERS / f"hostlib_v{version}" / "hostlib"),
            rules_dirs=[PROVIDERS], cache_dir=None, use_index_cache=False, settings=Settings(),
        )  # fmt: skip
        return sorted((f.line, f.rule, f.severity.value, "follows the failure at line 7" in (f.reason or "")) for f in report.findings)

    assert severities("2") == [(7, "constructor-incompatible", "error", False), (8, "unexpected-keyword", "warning", True)]
    assert severities("1") == [(8, "unexpected-keyword", "error", False)]


def test_whether_a_method_runs_reads_the_release_only_when_the_consumer_text_does_not_decide():
    """A method the consumer's own code names may be run from there: the answer, without the
    pass over the release's files that reading its references costs (each checking process
    made it on a 1,000-file consumer)."""
    from types import SimpleNamespace

    from apiaudit.checks.contracts import _Entry
    from apiaudit.consumer.records import ConsumerFile

    asked: list[str] = []

    class References:
        def references_of(self, methods):
            asked.extend(methods)
            return {m: () for m in methods}

    ctx = SimpleNamespace(index=References(), files=(ConsumerFile(path="a.py", module="a", source="runner.prepare()\n"),))
    entry = _Entry(ctx, frozenset(), frozenset())
    assert entry.runs("prepare", 5) is True and asked == []
    # named nowhere in the consumer: the release decides (named nowhere there either: run from outside)
    assert entry.runs("shutdown", 5) is True and asked == ["shutdown"]


def test_an_override_is_judged_against_the_calls_that_reach_its_nearest_declaration():
    """MyMoEMethod overrides FusedMoEMethodBase.apply, which re-declares the general base's apply
    with its own parameters: the linear layers' base-typed calls (which FusedMoEMethodBase.apply
    cannot take either) serve other subclasses and make no finding; one finding per override
    lists every call site that fails it (issue 37, cause 1)."""
    report = scan(
        [str(CONSUMER)], str(PROVIDERS / "hostlib_v1" / "hostlib"), rules_dirs=[PROVIDERS],
        cache_dir=None, use_index_cache=False, settings=Settings(),
    )  # fmt: skip
    assert [f for f in report.findings if f.path == "plugin/quant.py" and f.rule == "override-incompatible"] == []
    report = scan(
        [str(CONSUMER)], str(PROVIDERS / "hostlib_v2" / "hostlib"), rules_dirs=[PROVIDERS],
        cache_dir=None, use_index_cache=False, settings=Settings(),
    )  # fmt: skip
    linear = [f for f in report.findings if f.path == "plugin/quant.py" and f.line == 17]
    assert len(linear) == 1
    assert "hostlib/quantization.py:29" in linear[0].message and "also hostlib/quantization.py:37" in linear[0].message


def test_a_call_on_a_declared_base_the_consumers_own_built_subclass_takes_is_a_warning():
    """Issue 37, cause 2 (calls): `self.quant_method.apply(layer, x, logits, 2)` on a receiver
    declared as LinearMethodBase, whose apply takes (layer, x, bias); the consumer builds its own
    MyFusedLinearMethod there, whose apply takes the call: a warning naming it, not an error."""
    for version in ("1", "2"):
        report = scan(
            [str(CONSUMER)], str(PROVIDERS / f"hostlib_v{version}" / "hostlib"), rules_dirs=[PROVIDERS],
            cache_dir=None, use_index_cache=False, settings=Settings(),
        )  # fmt: skip
        (call,) = [f for f in report.findings if f.path == "plugin/quant.py" and f.line == 35]
        assert call.rule == "too-many-positional" and call.severity.value == "warning"
        assert call.reason == "declared LinearMethodBase, but the consumer builds its own MyFusedLinearMethod, whose apply takes the call"


def test_a_call_made_only_from_a_substituted_class_names_the_substitution():
    report = scan(
        [str(CONSUMER)], str(PROVIDERS / "hostlib_v2" / "hostlib"), rules_dirs=[PROVIDERS],
        cache_dir=None, use_index_cache=False, settings=Settings(),
    )  # fmt: skip
    warned = next(f for f in report.findings if f.path == "plugin/experts.py" and f.line == 19)
    assert warned.reason == (
        "hostlib/pluggable.py:28 is in Experts.forward_modular, which the provider calls only from Runner.forward "
        "(hostlib/pluggable.py:36), whose class the plugin replaces by MyRunner (plugin/experts.py:29)"
    )


# --- the `is None` side of a test on an argument every construction call passes ----------------


def _guarded(version: str):
    report = scan(
        [str(FIXTURES / "consumers" / "guardplug" / "guardplug")], str(PROVIDERS / f"guardkit_v{version}" / "guardkit"),
        rules_dirs=[PROVIDERS], cache_dir=None, use_index_cache=False, settings=Settings(),
    )  # fmt: skip
    return sorted((f.path, f.line, f.rule, f.severity.value, f.callee, f.param, f.conditional) for f in report.findings)


def test_the_none_side_of_an_argument_the_factory_always_passes_never_runs():
    """guardplug's GuardedConnector is lmcache 0.4.4's LMCacheConnectorV1Dynamic: `if cache_config is
    not None: super().__init__(..., cache_config=cache_config)` / `else: super().__init__(config=...,
    role=...)`. guardkit 2.0's base requires cache_config, and its factory (the only caller: the
    consumer never builds the class) always passes it a parameter declared `CacheConfig`, not
    Optional: the `else:` never runs there, so its lines are not judged (it was a false
    `missing-required` error, and the attribute read beside it another). The same class built by the
    consumer itself without the argument, a parent whose subclass's `super().__init__` passes nothing,
    a class handed to other code (`functools.partial`), one building its own kind (`cls(...)`), one
    looked up by a string, and an `if cache_config:` test (a value not None may be false) keep their
    errors; the registration and the configuration dict naming GuardedConnector for the factory do
    not make it unknown. On 1.0 the factory may build the class with two arguments
    (or pass None): the `else:` runs, and its missing attribute is an error."""
    init, path = "guardkit.connector.ConnectorBase.__init__", "guardplug/connector.py"
    assert _guarded("1") == [(path, 21, "attribute-missing", "error", "guardkit.connector.LEGACY_ROLES", None, False)]
    assert _guarded("2") == [
        (path, 31, "missing-required", "error", init, "cache_config", False),  # BuiltConnector: the consumer builds it
        (path, 41, "missing-required", "error", init, "cache_config", False),  # ParentConnector: ChildConnector derives from it
        (path, 54, "missing-required", "error", init, "cache_config", False),  # HandedConnector: handed to functools.partial
        (path, 66, "missing-required", "error", init, "cache_config", False),  # TruthyConnector: `if cache_config:`
        (path, 76, "missing-required", "error", init, "cache_config", False),  # CopiedConnector: `cls(...)` in its body
        (path, 90, "missing-required", "error", init, "cache_config", False),  # NamedConnector: looked up by a string
    ]


# --- a provider call in a provider function the consumer replaced, or never runs ---------------


def _replaced(version: str):
    report = scan(
        [str(FIXTURES / "consumers" / "replacedplug" / "replacedplug")], str(PROVIDERS / f"replacedkit_v{version}" / "replacedkit"),
        cache_dir=None, use_index_cache=False, settings=Settings(),
    )  # fmt: skip
    return sorted((f.path, f.line, f.rule, f.severity.value, f.provider_location, f.reason) for f in report.findings)


def test_a_provider_call_in_a_function_the_consumer_replaced_on_its_class_is_no_evidence():
    """replacedkit 2.0's only call of `Builder.build_chunk` (skip_gather=) is in `Builder.build`,
    which the consumer replaces too, at the top of the same module (vllm-kunlun 0.11.1's
    `DeepseekV32IndexerMetadataBuilder`, F7): no finding. The override rule reads it the same way:
    `OwnRunner.prepare` is called by the provider only in `Runner.step`, replaced there. Where the
    caller's replacement is installed only when a function runs (`install_decoder`), the finding
    is a warning naming it; where the consumer keeps the provider's original (`_original_pack =
    Packer.pack`) and calls it, the call runs: an error."""
    assert _replaced("1") == []
    found = _replaced("2")
    assert [f for f in found if f[0] in ("replacedplug/builders.py", "replacedplug/runner.py")] == [
        (
            "replacedplug/builders.py", 28, "replacement-incompatible", "warning", "replacedkit/builders.py:17",
            "replacedkit/builders.py:17 is in Decoder.decode, which the consumer replaces at replacedplug/builders.py:32 "
            "(inside a block, which may not run): where that replacement is installed, the call never runs",
        ),
        ("replacedplug/builders.py", 46, "replacement-incompatible", "error", "replacedkit/builders.py:25", None),
    ]  # fmt: skip


def test_a_provider_call_reached_only_through_an_attribute_called_in_a_replaced_method_is_no_evidence():
    """Issue 38, F11: replacedkit 2.0's `Rotary.forward_xpu` calls `forward_cuda` with 4
    positionals, and is called by name nowhere: `Op.dispatch_forward` returns it, `Op.__init__`
    stores that into `self._forward_method`, and only `Op.forward` calls it, which the consumer
    replaces on `Rotary` at the top of the same module (vllm-kunlun 0.11.1's `MRotaryEmbedding`
    under vLLM's CustomOp): no finding. Where `forward` is replaced only when a function runs
    (`Scaler`), a warning naming it; where another method the consumer leaves alone calls the
    stored method too (`Mixer.step`), the call runs: an error."""
    assert not [f for f in _replaced("1") if f[0] == "replacedplug/dispatch.py"]
    assert [f for f in _replaced("2") if f[0] == "replacedplug/dispatch.py"] == [
        (
            "replacedplug/dispatch.py", 21, "replacement-incompatible", "warning", "replacedkit/dispatch.py:46",
            "replacedkit/dispatch.py:46 is in Scaler.forward_xpu, which the provider reaches only through `self._forward_method`, "
            "called in Op.forward, which the consumer replaces on Scaler at replacedplug/dispatch.py:25 (inside a block, which "
            "may not run): where that replacement is installed, the call never runs",
        ),
        ("replacedplug/dispatch.py", 32, "replacement-incompatible", "error", "replacedkit/dispatch.py:54", None),
    ]  # fmt: skip


def test_a_managers_override_held_only_by_schedulers_that_replace_the_calling_method_is_not_called():
    """replacedkit 2.0's `Scheduler.schedule` calls `self.block_manager.allocate(..., skip_zeroing=)`.
    SubBlockManager is held only by OwnScheduler (and AsyncOwnScheduler, which inherits its
    `schedule`), whose `schedule` never calls the provider's; another module imports it inside a
    function and calls a static method on the class, which hands no object anywhere (vllm-rbln
    0.12.0's RBLNKVCacheManager, F15): no finding. UpcallBlockManager's holder replaces `schedule`
    too, but its subclass UpcallingScheduler calls `Scheduler.schedule`: an error."""
    assert [f[:4] for f in _replaced("2") if f[0] == "replacedplug/scheduler.py"] == [
        ("replacedplug/scheduler.py", 29, "override-incompatible", "error"),
    ]


def _fixed(version: str, path: str):
    """fixedplug's findings in `path` against fixedkit `version` (fixtures/providers/fixedkit_v{1,2})."""
    report = scan(
        [str(FIXTURES / "consumers" / "fixedplug" / "fixedplug")], str(PROVIDERS / f"fixedkit_v{version}" / "fixedkit"),
        cache_dir=None, use_index_cache=False, settings=Settings(),
    )  # fmt: skip
    return sorted((f.line, f.rule, f.severity.value, f.callee, f.param) for f in report.findings if f.path == path)


def test_a_call_on_an_attribute_the_provider_fills_only_with_its_own_objects_never_reaches_an_override():
    """vllm-omni 0.30.0's MultimodalOutputProcessor.process_outputs on vLLM 0.32.0: LLMEngine.step
    calls `self.output_processor.process_outputs(..., weight_version=...)`, but the only stores of
    `output_processor` in the release are `OutputProcessor(...)` constructions, and omni never puts
    its subclass there (it calls its own object itself): fixedplug's StageProcessor has no finding on
    fixedkit 2.0, though a class of its own has a property of that name and a string names a module
    of that name. A consumer object put in the attribute from outside (`server.sink = ...`), by a
    consumer subclass of the holder (`OwnEngine.__init__`, a property of `ScoringEngine`), an
    attribute holding what its caller hands it (`Pipeline(handler)`), the built class patched by
    the consumer (`mock.patch("fixedkit.engine.Recorder", ...)`), and a holder that sets
    attributes by computed names (`Tunable.configure(monitor=...)`) keep their errors."""
    assert _fixed("1", "fixedplug/outputs.py") == []
    assert _fixed("2", "fixedplug/outputs.py") == [
        (34, "override-incompatible", "error", "fixedkit.output.Sink.write", "flush"),
        (43, "override-incompatible", "error", "fixedkit.output.Detokenizer.decode", "skip_special"),
        (54, "override-incompatible", "error", "fixedkit.output.Handler.handle", "priority"),
        (59, "override-incompatible", "error", "fixedkit.output.Recorder.record", "tag"),
        (64, "override-incompatible", "error", "fixedkit.output.Monitor.observe", "level"),
        (73, "override-incompatible", "error", "fixedkit.output.Scorer.score", "scale"),
    ]
