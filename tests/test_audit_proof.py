"""No error without proof (issue 27): each cause of a false error, or of a miss, reproduced by a
small fixture provider and a consumer of exactly the shape met in real code, findings asserted
exactly. fixtures/README.md lists the fixtures; docs/rules.md states the rule."""

from __future__ import annotations

import functools
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PROVIDERS = FIXTURES / "providers"
CONSUMERS = FIXTURES / "consumers"


@functools.lru_cache(maxsize=None)
def _scan(consumer: str, provider: str, rules: tuple[Path, ...] = ()):
    from apiaudit.audit import scan

    return scan([str(CONSUMERS / consumer)], str(PROVIDERS / provider), use_index_cache=False, rules_dirs=list(rules))


def _found(report) -> set[tuple]:
    return {(f.rule, f.severity.value, f.path, f.line, f.callee, f.param) for f in report.findings}


# --- cause 9: placeholders for a missing optional dependency -------------------------------


def test_the_real_class_not_the_placeholder_of_a_missing_optional_dependency():
    """modelkit (transformers' shape): `Trainer` is a dummy when torch is missing; a consumer that
    uses it runs with torch. On 1.0 nothing is wrong (the dummy has no `args`: that was 6 false
    errors); on 2.0 the real breaks are found (they were missed)."""
    assert _found(_scan("finetune/finetune", "modelkit_v1/modelkit")) == set()
    assert _found(_scan("finetune/finetune", "modelkit_v2/modelkit")) == {
        ("unexpected-keyword", "error", "finetune/train.py", 10, "modelkit.trainer.Trainer", "tokenizer"),
        ("attribute-missing", "error", "finetune/train.py", 14, "modelkit.trainer.Trainer.tokenizer", None),
    }


# --- cause 11: the provider's `__version__` read on a release that has none -------------------


def test_reading_a_version_the_release_no_longer_defines_is_reported():
    """verlib 2.0 has no `__version__`: the reads raise, in a user agent and in a version guard
    alike (folding the guard on the release's version must not hide the read)."""
    assert _found(_scan("useragent/useragent", "verlib_v1/verlib")) == set()
    assert _found(_scan("useragent/useragent", "verlib_v2/verlib")) == {
        ("attribute-missing", "error", "useragent/__init__.py", 8, "verlib.__version__", None),
        ("attribute-missing", "error", "useragent/__init__.py", 13, "verlib.__version__", None),
        ("import-missing", "error", "useragent/__init__.py", 19, "verlib.__version__", None),
    }


# --- cause 8: members a base outside the provider may supply --------------------------------


def test_a_base_outside_the_provider_may_supply_the_member():
    """Every modelhub model class derives from torch.nn.Module, outside the provider. Its public
    members are known (`named_parameters`, `eval`: fine; `get_input_embeddings` on 2.0: proven
    missing); a private name it may hold at run time is a warning naming the base, never an error."""
    consumer, path = "modeluse/modeluse", "modeluse/inspect_ext.py"
    ext = "modelhub.models.dense.DenseForCausalLM"
    report = _scan(consumer, "modelhub_v2/modelhub", (PROVIDERS,))
    assert _found(report) == {
        ("attribute-missing", "warning", path, 17, f"{ext}._hf_hook", None),
        ("attribute-missing", "error", path, 21, f"{ext}.get_input_embeddings", None),
    }
    assert {f.line: f.reason for f in report.findings} == {
        17: "base torch.nn.Module lies outside the provider and may define '_hf_hook'",
        21: None,
    }


# --- cause 2: an annotation is the consumer's claim, not the object -------------------------


def test_an_annotated_abstract_base_may_be_a_subclass_that_has_the_member():
    """`engine: EngineClient` (abstract): the object is one of the classes derived from it. A
    member some of them define (the provider's AsyncEngine, the consumer's LocalEngine) is a
    warning naming them; one no class derived from it defines is the error it was."""
    path, base = "server/serve.py", "enginekit.protocol.EngineClient"
    v1 = _scan("server/server", "enginekit_v1/enginekit")
    v2 = _scan("server/server", "enginekit_v2/enginekit")
    assert _found(v1) == {
        ("attribute-missing", "warning", path, 23, f"{base}.do_log_stats", None),
        ("attribute-missing", "warning", path, 24, f"{base}.warm_up", None),
    }
    assert _found(v2) == _found(v1) | {
        ("attribute-missing", "warning", path, 25, f"{base}.abort", None),
        ("attribute-missing", "error", path, 26, f"{base}.is_running", None),
    }
    assert {f.line: f.reason for f in v2.findings} == {
        23: "annotated EngineClient; a subclass may define 'do_log_stats' (AsyncEngine)",
        24: "annotated EngineClient; the consumer's LocalEngine derives from it and defines 'warm_up'",
        25: "annotated EngineClient; the consumer's LocalEngine derives from it and defines 'abort'",
        26: None,
    }


# --- cause 1: modules nothing runs ----------------------------------------------------------


def test_per_release_copies_nothing_imports_are_conditional_and_summed_up_in_one_line():
    """vendored ships shim_v0_7/ and shim_v0_8/ (older provider internals, one per release it
    supported); engine.py imports the one for the running release under a version guard. On
    shim 0.10 neither is imported: their findings are conditional ("imported by nothing in
    vendored"), as are those of the private _legacy.py; contrib/tool.py, which nothing imports
    but a user may, and plugins/_reset.py, named by a string, are audited as usual."""
    report = _scan("vendored/vendored", "shim_v2/shim")
    found = {(f.rule, f.path, f.line, f.param, f.conditional, f.unreachable) for f in report.findings}
    copies = {
        ("import-missing", f"vendored/{copy}/runner.py", 2, None, True, True)
        for copy in ("shim_v0_7", "shim_v0_8")
    } | {
        ("unexpected-keyword", f"vendored/{copy}/runner.py", 6, "swap_space", True, True)
        for copy in ("shim_v0_7", "shim_v0_8")
    } | {
        ("attribute-missing", f"vendored/{copy}/runner.py", 7, None, True, True)
        for copy in ("shim_v0_7", "shim_v0_8")
    }  # fmt: skip
    assert found == copies | {
        ("import-missing", "vendored/_legacy.py", 3, None, True, True),
        ("unexpected-keyword", "vendored/contrib/tool.py", 5, "use_tqdm", False, False),
        ("attribute-missing", "vendored/plugins/_reset.py", 6, None, False, False),
    }
    assert {f.reason for f in report.findings if f.unreachable} == {"imported by nothing in vendored"}
    assert report.exit_code() == 1 and len(report.blocking()) == 2  # conditional: not counted without --strict

    from apiaudit.report import render

    table = render(report, "table", width=100)
    assert "shim_v0_7" not in table and "contrib/tool.py" in table
    assert "7 findings in 3 modules imported by nothing in vendored (conditional: they run only if something else " in " ".join(table.split())
    listed = render(report, "table", width=100, show_unreachable=True)
    assert "shim_v0_7/runner.py" in listed and "--show-unreachable to list" not in listed


def test_the_copy_the_version_guard_imports_is_reachable():
    """On shim 0.8 engine.py's guard imports shim_v0_8: that copy runs; shim_v0_7 does not."""
    from apiaudit.consumer import collect
    from apiaudit.consumer.records import ConsumerOptions
    from apiaudit.sources import resolve

    tree = resolve(str(CONSUMERS / "vendored" / "vendored"))

    def dead(version: str) -> set[str]:
        options = ConsumerOptions(provider_packages=("shim",), provider_distribution="shim", provider_version=version)
        return {f.path for f in collect(tree, options) if f.unreachable}

    old_copies = {"vendored/shim_v0_7/__init__.py", "vendored/shim_v0_7/runner.py", "vendored/_legacy.py"}
    assert dead("0.8.0") == old_copies
    assert dead("0.10.0") == old_copies | {"vendored/shim_v0_8/__init__.py", "vendored/shim_v0_8/runner.py"}


def test_what_the_project_knows_is_dead_can_be_excluded():
    """`[tool.apiaudit] exclude`: the per-release copies are not read at all."""
    from apiaudit.audit import scan
    from apiaudit.policy.config import Settings

    report = scan(
        [str(CONSUMERS / "vendored" / "vendored")], str(PROVIDERS / "shim_v2" / "shim"), use_index_cache=False,
        settings=Settings(exclude=("vendored/shim_v0_*/", "vendored/_legacy.py")),
    )  # fmt: skip
    assert {(f.path, f.unreachable) for f in report.findings} == {
        ("vendored/contrib/tool.py", False),
        ("vendored/plugins/_reset.py", False),
    }


def test_a_job_script_given_beside_the_package_reaches_what_it_imports(tmp_path):
    """A job script scanned with the package runs the copy it imports: that copy is reachable."""
    from apiaudit.audit import scan

    (tmp_path / "job.py").write_text("import shim.engine\nfrom vendored.shim_v0_7.runner import make_engine\n\nmake_engine('m')\n")
    report = scan(
        [str(CONSUMERS / "vendored" / "vendored"), str(tmp_path / "job.py")], str(PROVIDERS / "shim_v2" / "shim"),
        use_index_cache=False,
    )  # fmt: skip
    dead = {f.path for f in report.findings if f.unreachable}
    assert dead == {"vendored/shim_v0_8/runner.py", "vendored/_legacy.py"}


# --- cause 2 (continued): a provider's annotation is a claim too ------------------------------


def test_a_provider_annotation_is_a_claim_a_subclass_may_refine():
    """claimkit: a factory `-> RequestQueue` builds FCFSRequestQueue(deque, RequestQueue), whose
    deque (outside the provider) may supply popleft/append; an attribute the provider annotates
    `ModelConfig` may hold the consumer's own subclass; a parameter the consumer annotates
    `EngineClient` may be passed its own engine of no provider base; isinstance narrows a declared
    Collector to its subclass Class (it may pass, and past it the object is judged as a Class, not
    conditionally). Members nothing can supply stay errors."""
    report = _scan("claims/claims", "claimkit_v1/claimkit")
    queue, model, client = "claimkit.queues.RequestQueue", "claimkit.config.ModelConfig", "claimkit.client.EngineClient"
    assert {f for f in _found(report) if f[2] != "claims/adds.py"} == {
        ("attribute-missing", "warning", "claims/sched.py", 12, f"{queue}.popleft", None),
        ("attribute-missing", "warning", "claims/sched.py", 13, f"{queue}.append", None),
        ("attribute-missing", "warning", "claims/sched.py", 14, f"{queue}.peek_all", None),
        ("attribute-missing", "warning", "claims/configs.py", 16, f"{model}.async_chunk", None),
        ("attribute-missing", "error", "claims/configs.py", 18, f"{model}.max_len", None),
        ("attribute-missing", "warning", "claims/configs.py", 19, f"{model}.stage", None),
        ("attribute-missing", "warning", "claims/duck.py", 16, f"{client}.get_app_config", None),
        ("attribute-missing", "error", "claims/duck.py", 17, f"{client}.is_sleeping", None),
        ("attribute-missing", "error", "claims/hooks.py", 16, "claimkit.nodes.Class.cls_name", None),
    }
    assert not any(f.conditional for f in report.findings)
    reasons = {(f.path, f.line): f.reason for f in report.findings}
    assert reasons[("claims/sched.py", 12)] == "declared RequestQueue (a provider annotation); a subclass may define 'popleft' (FCFSRequestQueue)"
    assert reasons[("claims/configs.py", 19)] == (
        "declared ModelConfig (a provider annotation); the consumer's StageModelConfig derives from it and defines 'stage'"
    )
    assert reasons[("claims/duck.py", 16)] == "annotated EngineClient; the consumer's OmniEngine defines 'get_app_config' and may be what is passed"
    assert reasons[("claims/configs.py", 18)] is None and reasons[("claims/duck.py", 17)] is None


# --- cause N3: members the consumer itself adds to a provider object ---------------------------


def test_an_attribute_the_consumer_sets_on_the_object_is_not_proven_missing():
    """`setattr(out, "multimodal_output", {})` just before the read, and `session.config._thing =
    ...` in one hook read as `session.config._thing` in another (in an augmented assignment's
    value): warnings naming where the consumer sets it. `_other`, which nothing sets, is an error."""
    report = _scan("claims/claims", "claimkit_v1/claimkit")
    assert {f for f in _found(report) if f[2] == "claims/adds.py"} == {
        ("attribute-missing", "warning", "claims/adds.py", 17, "claimkit.outputs.CompletionOutput.multimodal_output", None),
        ("attribute-missing", "warning", "claims/adds.py", 25, "claimkit.nodes.Config._thing", None),
        ("attribute-missing", "error", "claims/adds.py", 26, "claimkit.nodes.Config._other", None),
    }
    reasons = {f.line: f.reason for f in report.findings if f.path == "claims/adds.py"}
    assert reasons == {
        17: "the consumer sets 'multimodal_output' on such an object itself (claims/adds.py:16)",
        25: "the consumer sets '_thing' on such an object itself (claims/adds.py:21)",
        26: None,
    }


# --- causes N7 and N8: the consumer's own model classes fill the model slot ---------------------


def test_the_consumers_own_model_class_may_fill_the_model_slot():
    """modelplug's OmniModel (nn.Module, modelhub's SupportsQuant) is the plugin's model, which its
    own registry puts in the runner's slot: members only it defines, and a call its method takes
    but the registry's classes' do not, are warnings naming it; a member no class has is an error."""
    path, dense = "modelplug/runner.py", "modelhub.models.dense.DenseForCausalLM"
    v1 = _scan("modelplug/modelplug", "modelhub_v1/modelhub", (PROVIDERS,))
    v2 = _scan("modelplug/modelplug", "modelhub_v2/modelhub", (PROVIDERS,))
    common = {
        ("attribute-missing", "warning", path, 8, f"{dense}.has_preprocess", None),
        ("attribute-missing", "warning", path, 10, f"{dense}.make_omni_output", None),
        ("attribute-missing", "error", path, 12, f"{dense}.compile_graphs", None),
    }
    assert _found(v1) == common | {("attribute-missing", "warning", path, 11, f"{dense}.embed_input_ids", None)}
    assert _found(v2) == common | {
        ("model-attribute-missing", "warning", path, 11, "modelhub.models.moe.MoeForCausalLM.embed_input_ids", None),
        ("unexpected-keyword", "warning", path, 11, f"{dense}.embed_input_ids", "multimodal_embeddings"),
    }
    reasons = {(f.line, f.rule): f.reason for f in v2.findings}
    assert reasons[(10, "attribute-missing")] == "the model object may be the consumer's own OmniModel, which defines 'make_omni_output'"
    assert reasons[(11, "unexpected-keyword")] == "the model object may be the consumer's own OmniModel, which defines 'embed_input_ids'"
    assert reasons[(12, "attribute-missing")] is None
