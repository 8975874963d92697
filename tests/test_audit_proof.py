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


# --- cause 14: a behaviour rule is rated by what happens, where the receiver is shown -------


def test_a_behaviour_rule_is_an_error_where_the_receiver_is_shown_to_be_the_provider_class():
    """generate-needs-drain fails whenever the line runs on the provider's engine: an error where
    the call binds to a method of engine.core.base.EngineBase (`self.llm = LLM(...)`); the same
    text on the consumer's own class or an unknown receiver is a warning, with the reason."""
    report = _scan("stepping/stepping", "engine_v2/engine", (PROVIDERS / "proof_rules",))
    rule, path = "generate-needs-drain", "stepping/__init__.py"
    assert {(f.rule, f.severity.value, f.path, f.line) for f in report.findings if f.rule == rule} == {
        (rule, "error", path, 11),
        (rule, "warning", path, 26),
        (rule, "warning", path, 30),
    }
    assert {f.line: f.reason for f in report.findings if f.rule == rule} == {
        11: None,
        26: "the receiver is matched by its text, not shown to be an instance of engine.core.base.EngineBase",
        30: "the receiver is matched by its text, not shown to be an instance of engine.core.base.EngineBase",
    }


# --- cause 5: version selectors and signature probes decide which code runs -------------------


def test_version_selectors_and_signature_probes_decide_which_code_runs():
    """probeuse against probelib 2.0: `probelib.VERSION >= (1, 5)` and `__version_tuple__` imported
    under another name are compared with the literals the release binds (`VERSION`, the build's
    `_version.py`); `"x" in inspect.signature(f).parameters` kept in a module flag or returned by
    a probe helper (one line, or `sig = ...` then `lru_cache`d) is the probe itself. Every dead
    branch is quiet; the live branch that reads a removed method is still an error."""
    found = _found(_scan("probeuse/probeuse", "probelib_v2/probelib"))
    assert {f for f in found if f[2] in ("probeuse/compat.py", "probeuse/http.py", "probeuse/grpc.py")} == {
        ("attribute-missing", "error", "probeuse/compat.py", 23, "probelib.engine.EngineClient.get_model_config", None),
    }


def test_a_requirement_check_that_raises_makes_the_rest_of_its_caller_dead_where_it_fails():
    """`_require_x()`, a consumer function that is `if not hasattr(EngineClient, "m"): raise` (or
    `"x" not in inspect.signature(f).parameters`, kept in a local or not), called before the code
    it guards: on a release where the check fails nothing after the call runs (in a function, or
    at import: the module stops there); where it passes, what follows is checked as usual. 2.0
    lacks `get_model_config` and `inputs`, 1.0 lacks `seed`: each release gets only the break of
    the code its check lets run."""
    def required(provider):
        found = _found(_scan("probeuse/probeuse", provider))
        return {f for f in found if f[2] in ("probeuse/require.py", "probeuse/require_at_import.py")}

    assert required("probelib_v1/probelib") == {
        ("unexpected-keyword", "error", "probeuse/require.py", 34, "probelib.engine.token_inputs", "cache_salt"),
    }
    assert required("probelib_v2/probelib") == {
        ("unexpected-keyword", "error", "probeuse/require.py", 39, "probelib.params.LLM", "device"),
    }


# --- cause 12: a feature probe narrows only what it tests --------------------------------------


def test_a_class_chosen_at_run_time_is_checked_for_each_choice():
    """`engine_cls = AsyncLLM if use_async else LLM`, a probe about `seed` filling `**kw`, then
    `engine_cls(model, device=device, **kw)`: `device=` is gone from both classes on 2.0."""
    found = _found(_scan("probeuse/probeuse", "probelib_v2/probelib"))
    assert {f for f in found if f[2] == "probeuse/kwargs.py" and f[3] == 14} == {
        ("unexpected-keyword", "error", "probeuse/kwargs.py", 14, "probelib.params.AsyncLLM", "device"),
        ("unexpected-keyword", "error", "probeuse/kwargs.py", 14, "probelib.params.LLM", "device"),
    }


# --- cause 13: keys added in a loop over a literal list ----------------------------------------


def test_keys_filled_in_a_loop_over_literals_are_bound():
    """`for key in ["n", "best_of", "temperature"]: kw[key] = ...; SamplingParams(**kw)`: the splat
    holds exactly those keys, and `best_of` is gone on 2.0. A call in a parameter annotation runs
    when the `def` does (confection's `constr(regex=)`), nested or not."""
    found = _found(_scan("probeuse/probeuse", "probelib_v2/probelib"))
    assert {f for f in found if f[2] == "probeuse/kwargs.py" and f[3] != 14} == {
        ("unexpected-keyword", "error", "probeuse/kwargs.py", 21, "probelib.params.SamplingParams", "best_of"),
        ("unexpected-keyword", "error", "probeuse/kwargs.py", 24, "probelib.params.SamplingParams", "best_of"),
        ("unexpected-keyword", "error", "probeuse/kwargs.py", 25, "probelib.params.SamplingParams", "best_of"),
    }


# --- cause N9: a private helper whose every call is behind a probe that fails -----------------


def test_a_private_helper_called_only_behind_failing_probes_never_runs():
    """`if find_spec("probelib.profiler.wrapper") is None: return self._legacy()` and `if getattr(envs,
    "PROFILER_DIR", None) is not None: return self._legacy()`: on 2.0 the module exists and the name
    is gone, so `_legacy` never runs and its read of the removed name is no finding; `_current`,
    called behind `find_spec(...) is not None`, runs, and its read is an error."""
    found = _found(_scan("probeuse/probeuse", "probelib_v2/probelib"))
    assert {f for f in found if f[2] == "probeuse/profiler.py"} == {
        ("attribute-missing", "error", "probeuse/profiler.py", 25, "probelib.envs.PROFILER_DIR", None),
    }


# --- cause 6: cooperative multiple inheritance through **kwargs -----------------------------


def test_kwargs_passed_on_by_super_follow_the_mro_of_the_object_being_built():
    """fieldkit (Django's fields): `DateField(CheckMixin, Field)` and `RelatedField(CacheMixin,
    Field)` pass `**kwargs` on with `super().__init__`; the mixins define no `__init__`, so Field
    takes `null`, `blank` and `db_column` (5 false errors on django-model-utils). `class
    Layer(Base, Dim)`: Base's `super().__init__(**kwargs)` reaches Dim by Layer's MRO, which takes
    `input_dim` (issue 27's shape). What nothing along the way takes is still an error."""
    report = _scan("fielduse/fielduse", "fieldkit_v1/fieldkit")
    assert {f for f in _found(report) if f[2] in ("fielduse/models.py", "fielduse/layers.py")} == {
        ("unexpected-keyword", "error", "fielduse/models.py", 5, "fieldkit.fields.DateTimeField", "nullable"),
        ("unexpected-keyword", "error", "fielduse/layers.py", 11, "fieldkit.layers.Base.__init__", "width"),
    }
    rejected = {f.line: f.facts.rejected_by for f in report.findings if f.path in ("fielduse/models.py", "fielduse/layers.py")}
    assert rejected == {5: "fieldkit.fields.Field", 11: "fieldkit.layers.Module"}


# --- cause N10: a classmethod subclass used as a decorator ------------------------------------


def test_a_classmethod_subclass_decorator_binds_cls():
    """`@classonlymethod def as_view(cls, **initkwargs)` (Django; `class classonlymethod(classmethod)`)
    binds `cls` like `@classmethod` (2 false missing-required on djangorestframework's urls.py);
    a positional argument it has no room for is still an error."""
    urls = {f for f in _found(_scan("fielduse/fielduse", "fieldkit_v1/fieldkit")) if f[2] == "fielduse/urls.py"}
    assert urls == {("too-many-positional", "error", "fielduse/urls.py", 5, "fieldkit.views.View.as_view", None)}


# --- cause N6: a call probed by `try: ... except TypeError:` ----------------------------------


def test_a_call_whose_type_error_the_consumer_handles_is_a_warning():
    """`try: make_aware(v, tz, is_dst)` / `except TypeError: make_aware(v, tz)` (sentence-transformers'
    `_tie_encoder_decoder_weights`, vllm-omni's `compute_logits(..., sampling_metadata=)`): the
    handler takes the other way, so the first call is a warning that names the handler; a handler
    that re-raises leaves it an error."""
    report = _scan("fielduse/fielduse", "fieldkit_v1/fieldkit")
    tz = {f for f in _found(report) if f[2] == "fielduse/tz.py"}
    assert tz == {
        ("too-many-positional", "warning", "fielduse/tz.py", 6, "fieldkit.timezone.make_aware", None),
        ("unexpected-keyword", "warning", "fielduse/tz.py", 13, "fieldkit.timezone.Model.compute_logits", "sampling_metadata"),
        ("too-many-positional", "error", "fielduse/tz.py", 20, "fieldkit.timezone.make_aware", None),
    }
    reasons = {f.line: f.reason for f in report.findings if f.path == "fielduse/tz.py"}
    assert reasons == {
        6: "the TypeError it raises is handled by `except TypeError:` at line 7, which does not re-raise",
        13: "the TypeError it raises is handled by `except TypeError:` at line 14, which does not re-raise",
        20: None,
    }


# --- cause 10: a line after one that already fails --------------------------------------------


def test_a_failure_inside_an_init_the_factory_cannot_call_follows_the_first():
    """hostlib 2.0's factory passes three arguments to a plugin whose `__init__` takes two: the
    first failure of that path (`constructor-incompatible`) is the error; the `super().__init__`
    call in the body, also wrong, never runs when the factory builds the class: a warning that
    names the first failure. On 1.0 the factory binds, and the same line is the error."""
    rules = (PROVIDERS,)
    path = "plugin_chain/connector.py"
    v2 = _scan("plugin_chain/plugin_chain", "hostlib_v2/hostlib", rules)
    assert _found(v2) == {
        ("constructor-incompatible", "error", path, 7, "hostlib.factory.ConnectorFactory.create", "cache_config"),
        ("unexpected-keyword", "warning", path, 8, "hostlib.connector.ConnectorBase.__init__", "prefix"),
    }
    assert {f.line: f.reason for f in v2.findings}[8] == (
        "follows the failure at line 7: hostlib.factory.ConnectorFactory.create cannot call this __init__ "
        "(constructor-incompatible), so its body does not run when the provider builds the class"
    )
    assert _found(_scan("plugin_chain/plugin_chain", "hostlib_v1/hostlib", rules)) == {
        ("unexpected-keyword", "error", path, 8, "hostlib.connector.ConnectorBase.__init__", "prefix"),
    }


def _in(report, *paths: str) -> set[tuple]:
    return {found for found in _found(report) if found[2] in paths}


# --- cause 7: a module __getattr__ over a map of names declared under TYPE_CHECKING -------------


def test_a_module_getattr_serves_the_keys_of_its_map():
    """envkit.envs (vLLM's envs.py shape): the names are declared under `if TYPE_CHECKING:` only,
    and `__getattr__` serves the keys of a map of getters, some added after the literal
    (`.update({...})`, `env["K"] = ...`). Those exist (that was 9 false errors on vllm-spyre and
    vllm-omni); a name the map does not serve is missing, declared or not, and one gone from
    both on 2.0 is the error it is."""
    paths = ("envuse/__init__.py",)
    retired = ("attribute-missing", "error", "envuse/__init__.py", 9, "envkit.envs.ENVKIT_RETIRED", None)
    assert _in(_scan("envuse/envuse", "envkit_v1/envkit"), *paths) == {retired}
    assert _in(_scan("envuse/envuse", "envkit_v2/envkit"), *paths) == {
        ("attribute-missing", "error", "envuse/__init__.py", 6, "envkit.envs.ENVKIT_PLUGINS", None),
        retired,
    }


def test_a_module_getattr_whose_names_cannot_be_read_makes_a_warning():
    """envkit.computed builds its map's keys in a comprehension: a name outside those read is
    likely missing, not proven missing, and the reason says why."""
    report = _scan("envuse/envuse", "envkit_v1/envkit")
    assert _in(report, "envuse/flags.py") == {("attribute-missing", "warning", "envuse/flags.py", 3, "envkit.computed.ENVKIT_FAST", None)}
    (finding,) = [f for f in report.findings if f.path == "envuse/flags.py"]
    assert finding.reason == "envkit.computed defines a module __getattr__ and its names are computed (line 6)"


# --- cause N1: a module __getattr__ deprecation shim answering by name comparison ---------------


def test_a_deprecation_shim_serves_the_name_and_its_calls_bind_to_the_function_it_returns():
    """envkit.tokenizer 1.0 answers `get_tokenizer` with `envkit.tokenizers.get_tokenizer` (with a
    DeprecationWarning): the import works, each call is a deprecation (the shim's own message),
    and the calls bind to that function (its missing `revision` is found). 2.0 drops the shim:
    the import fails, and the advice names where the function lives."""
    paths = ("envuse/tok.py",)
    report = _scan("envuse/envuse", "envkit_v1/envkit")
    assert _in(report, *paths) == {
        ("deprecated-use", "warning", "envuse/tok.py", 3, "envkit.tokenizer.get_tokenizer", None),
        ("deprecated-use", "warning", "envuse/tok.py", 4, "envkit.tokenizer.get_tokenizer", None),
        ("unexpected-keyword", "error", "envuse/tok.py", 4, "envkit.tokenizers.get_tokenizer", "revision"),
    }
    deprecations = {f.message for f in report.findings if f.rule == "deprecated-use"}
    assert deprecations == {"get_tokenizer() is deprecated: `envkit.tokenizer.get_tokenizer` has moved to `envkit.tokenizers`"}
    assert _in(_scan("envuse/envuse", "envkit_v2/envkit"), *paths) == {
        ("import-missing", "error", "envuse/tok.py", 1, "envkit.tokenizer.get_tokenizer", None),
    }


# --- cause N2: a fallback definition in the ImportError handler binds the name ----------------


def test_a_fallback_def_in_the_import_handler_is_what_runs_when_the_import_fails():
    """`except ImportError: def set_request_id(...)`: on 2.0 the import fails (a warning: it is
    guarded) and the call runs the consumer's fallback, not an unbound name."""
    paths = ("envuse/ids.py",)
    assert _in(_scan("envuse/envuse", "envkit_v1/envkit"), *paths) == set()
    assert _in(_scan("envuse/envuse", "envkit_v2/envkit"), *paths) == {
        ("import-missing", "warning", "envuse/ids.py", 2, "envkit.processing.set_request_id", None),
    }


# --- cause 3: self of the consumer's own mixin ----------------------------------------------


def test_self_of_a_mixin_is_any_consumer_class_deriving_from_it():
    """`class VisionMixin(SupportsQuant)` reads `self.visual`, which `class Model(nn.Module,
    VisionMixin)` assigns: self may be a Model, so the member is found (12 false errors on
    vllm-omni). A provider class's self with no such class, its MRO all read, is still an error; a
    class with no provider base of its own is not made one by a subclass (`Tracking`, whose
    subclass exists only if the function making it runs: django-model-utils' tracker)."""
    mixin = {f for f in _found(_scan("selfmro/selfmro", "modelhub_v2/modelhub", (PROVIDERS,))) if f[2] == "selfmro/mixin.py"}
    assert mixin == {
        ("attribute-missing", "error", "selfmro/mixin.py", 24, "modelhub.models.interfaces.SupportsQuant.packed_mapping", None),
    }


# --- cause 8: bases of the consumer's class from neither side --------------------------------


def test_bases_of_the_consumers_class_from_neither_side_may_supply_the_member():
    """`class Audio(nn.Module, SupportsMultiModal, SupportsQuant)`: nn.Module's members are found
    (`register_buffer`, `named_parameters`), a name it may serve from a registration is a warning
    naming it; a runner whose subclass also derives from another package's runner may have any
    member overridden (its signature, `self.model`'s members): warnings naming that base. The
    same call on a runner whose bases are all read stays an error."""
    report = _scan("selfmro/selfmro", "modelhub_v2/modelhub", (PROVIDERS,))
    path = "selfmro/outside.py"
    runner = "modelhub.worker.model_runner.ModelRunner.load_model"
    assert {f for f in _found(report) if f[2] == path} == {
        ("attribute-missing", "warning", path, 21, "modelhub.models.interfaces.SupportsMultiModal._buf", None),
        ("unexpected-keyword", "warning", path, 26, runner, "device"),
        ("attribute-missing", "warning", path, 31, "modelhub.models.dense.DenseForCausalLM.clear_loads", None),
        ("unexpected-keyword", "error", path, 36, runner, "device"),
    }
    assert {f.line: f.reason for f in report.findings if f.path == path} == {
        21: "base torch.nn.Module lies outside the provider and may define '_buf'",
        26: "base platformpkg.worker.PlatformModelRunner lies outside the provider and may define 'load_model'",
        31: "base platformpkg.worker.PlatformModelRunner lies outside the provider and may define 'model'",
        36: None,
    }


# --- cause 4: a string RPC through the consumer's own override ------------------------------


def test_an_rpc_the_consumers_own_override_takes_is_not_judged_against_the_provider():
    """`self.collective_rpc("init_own_worker")` on a class overriding `collective_rpc` sends to the
    consumer's own workers (verl's executor); through the provider's method it is still missing."""
    assert _found(_scan("selfrpc/selfrpc", "engine_v2/engine", (PROVIDERS,))) == {
        ("rpc-missing", "error", "selfrpc/executor.py", 16, "engine.worker.Worker.init_own_worker", None),
    }


# --- N4: a function nested in a method is not a method ---------------------------------------


def test_the_first_parameter_of_a_nested_function_is_not_self():
    """`def ensure(x)` inside a method: x is a tensor, not self (4 false errors on vllm-omni); the
    method's own self, seen from a nested function, is still self."""
    nested = {f for f in _found(_scan("selfmro/selfmro", "modelhub_v2/modelhub", (PROVIDERS,))) if f[2] == "selfmro/nested.py"}
    assert {f for f in nested if f[3] < 25} == {
        ("attribute-missing", "error", "selfmro/nested.py", 20, "modelhub.models.interfaces.SupportsQuant.packed_mapping", None),
    }


# --- N5: super(Cls, self) starts after Cls ---------------------------------------------------


def test_super_with_an_explicit_class_resolves_past_it():
    """`super(DenseForCausalLM, self).__init__()` skips DenseForCausalLM's own __init__ (its
    keyword-only `hub_config`): nn.Module's runs. `super(Own, self)` is `super()`."""
    nested = {f for f in _found(_scan("selfmro/selfmro", "modelhub_v2/modelhub", (PROVIDERS,))) if f[2] == "selfmro/nested.py"}
    assert {f for f in nested if f[3] >= 25} == {
        ("missing-required", "error", "selfmro/nested.py", 32, "modelhub.models.dense.DenseForCausalLM.__init__", "hub_config"),
    }


# --- cause 2 (continued): a provider's annotation is a claim too ------------------------------


def test_a_provider_annotation_is_a_claim_a_subclass_may_refine():
    """claimkit: a factory `-> RequestQueue` builds FCFSRequestQueue(deque, RequestQueue), whose
    deque (outside the provider) may supply popleft/append; an attribute the provider annotates
    `ModelConfig` may hold the consumer's own subclass; a parameter the consumer annotates
    `EngineClient` may be passed its own engine of no provider base; isinstance narrows a declared
    Collector to its subclass Class (it may pass, and past it the object is judged as a Class, not
    conditionally). Members nothing can supply stay errors: SleepTracker (tracker.py) defines
    `is_sleeping` but is never passed where an EngineClient is declared, so it is no evidence."""
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
        ("attribute-missing", "warning", "claims/served.py", 19, f"{client}.get_stats", None),
        ("attribute-missing", "error", "claims/hooks.py", 16, "claimkit.nodes.Class.cls_name", None),
    }
    assert not any(f.conditional for f in report.findings)
    reasons = {(f.path, f.line): f.reason for f in report.findings}
    assert reasons[("claims/sched.py", 12)] == "declared RequestQueue (a provider annotation); a subclass may define 'popleft' (FCFSRequestQueue)"
    assert reasons[("claims/configs.py", 19)] == (
        "declared ModelConfig (a provider annotation); the consumer's StageModelConfig derives from it and defines 'stage'"
    )
    assert reasons[("claims/duck.py", 16)] == (
        "annotated EngineClient; the consumer's own OmniEngine, which defines 'get_app_config', is put there (claims/duck.py:22)"
    )
    assert reasons[("claims/configs.py", 18)] is None and reasons[("claims/duck.py", 17)] is None
    assert reasons[("claims/served.py", 19)] == (
        "annotated EngineClient; the consumer's own ServedEngine, which defines 'get_stats', is put there (claims/served.py:14)"
    )


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


# --- N3, continued: a member the consumer sets on a provider module ---------------------------


def test_a_module_attribute_the_consumer_sets_itself_is_not_proven_missing():
    """`engine.worker._GROUP = None` in one function, read in another (by attribute and by
    `from ... import`): the consumer's own member, a warning naming where it is set; a name
    nothing sets is still proven missing."""
    report = _scan("modstore/modstore", "engine_v2/engine")
    path = "modstore/__init__.py"
    assert _found(report) == {
        ("import-missing", "warning", path, 11, "engine.worker._GROUP", None),
        ("attribute-missing", "warning", path, 13, "engine.worker._GROUP", None),
        ("attribute-missing", "error", path, 17, "engine.worker._NEVER_SET", None),
    }
    reason = "the consumer sets '_GROUP' on engine.worker itself (modstore/__init__.py:7)"
    assert {f.line: f.reason for f in report.findings} == {11: reason, 13: reason, 17: None}


# --- a shim module that puts other modules in sys.modules (issue 25: pytest's py.py) ----------


def test_a_module_putting_named_submodules_in_sys_modules_binds_only_those_names():
    """caplib 2.0 is pytest's `py.py` shim: `sys.modules["caplib.error"] = error` for two kept
    modules. A literal key binds that one submodule name (or, naming another package, nothing
    here), not any name: `caplib.io` is proven missing, `caplib.compat` (a key with no static
    binding) may be a member."""
    path = "capuse/__init__.py"
    assert _found(_scan("capuse/capuse", "caplib_v1/caplib")) == {
        ("attribute-missing", "error", path, 16, "caplib.compat", None),
    }
    assert _found(_scan("capuse/capuse", "caplib_v2/caplib")) == {
        ("attribute-missing", "error", path, 7, "caplib.io", None),
    }


# --- hooks the provider calls by keyword (issue 25: pytest's hookspecs, pluggy) ---------------


def test_a_hook_implementation_takes_only_arguments_its_specification_names():
    """hookplug is pytest-flake8 1.3.0's shape: a module declared in the `hooklib11` entry-point
    group (its pyproject.toml), which hooklib registers as a plugin (an [[entry_point]] rule with
    `hookspecs`). A hook taking a name the release's specification lacks is an error at its def
    (`file_path` on 1.0 only); a subset, an argument with a default, a hook renamed by
    `specname=`, a hook no specification names, a method of a class never registered and a module
    no entry point names are not. Issue 37, cause 12: the methods of an object the plugin
    registers at run time (`config.pluginmanager.register(Reporter())`) are hooks too, and a hook's
    unannotated parameter holds what the specification annotates (`config.stash` on 1.0's Config,
    which keeps `_store`)."""
    path = "hookplug/__init__.py"
    report = "override-incompatible", "error", path, 33, "hooklib.hookspec.hooklib_report", "item"
    registered = "override-incompatible", "error", path, 49, "hooklib.hookspec.hooklib_report", "when"
    v1 = _scan("hookplug/hookplug", "hooklib_v1/hooklib", (PROVIDERS,))
    assert _found(v1) == {
        ("attribute-missing", "error", path, 15, "hooklib.config.Config.stash", None),
        ("override-incompatible", "error", path, 19, "hooklib.hookspec.hooklib_collect_file", "file_path"),
        report,
        registered,
    }
    assert _found(_scan("hookplug/hookplug", "hooklib_v2/hooklib", (PROVIDERS,))) == {report, registered}
    assert _found(_scan("hookplug/hookplug", "hooklib_v1/hooklib")) == set()  # no rule: no hook is known
    (collect,) = [f for f in v1.findings if f.line == 19]
    assert collect.message == (
        "hook implementation hooklib_collect_file takes file_path, which the specification "
        "hooklib_collect_file(path, parent) on this release does not provide: the provider calls hook "
        "implementations by keyword with the specification's argument names, so registering the plugin fails"
    )


# --- a guard on a constructor argument the provider's factory never passes ----------------------


def test_a_branch_on_an_argument_the_factory_never_passes_is_conditional():
    """lmcache's connector (shape of hostlib): `if cache_config is not None: super().__init__(...,
    cache_config=...)`, a keyword hostlib 1.0's base does not take. The 1.0 factory builds the
    class as `connector_cls(config, role)`: the branch runs only if some other caller passes the
    argument, which is not proven, so the finding is conditional and names the factory's call (it
    was an error). A parameter the body rebinds, or a class no factory builds, is a test on
    run-time data as before (errors); on 2.0 the factory passes it and the base takes it."""
    rules = (PROVIDERS,)
    path = "plugin_optional/connector.py"
    base = "hostlib.connector.ConnectorBase.__init__"
    own = ("unexpected-keyword", "error", path, 47, "hostlib.scheduler.Scheduler.__init__", "verbose")
    v1 = _scan("plugin_optional/plugin_optional", "hostlib_v1/hostlib", rules)
    assert _found(v1) == {
        ("unexpected-keyword", "error", path, 11, base, "cache_config"),
        ("too-many-positional", "error", path, 16, base, None),
        ("unexpected-keyword", "error", path, 32, base, "cache_config"),
        own,
    }
    why = (
        "cache_config is not None (runs only when a caller passes cache_config; hostlib.factory.ConnectorFactory.create "
        "does not pass it on this release (hostlib/factory.py:14))"
    )
    assert {f.line: (f.conditional, f.guard) for f in v1.findings} == {11: (True, why), 16: (True, why), 32: (False, None), 47: (False, None)}
    assert _found(_scan("plugin_optional/plugin_optional", "hostlib_v2/hostlib", rules)) == {own}


# --- a module whose names a registry binds at run time, declared for type checkers --------------


def test_names_a_registry_binds_in_its_module_are_read_from_their_type_checking_declaration():
    """preloadkit (sqlalchemy's util/preloaded.py): `import_prefix` binds `globals()[key] =
    sys.modules[module]` for each registered module, and the module declares those names under
    `if TYPE_CHECKING:` (`sql_dml = _sql_dml`, `_sql_dml` the imported module). The declared name is
    that module, so `TableClause.insert() -> util.preloaded.sql_dml.Insert` names a known class and
    2.0's missing `Insert.execute` is found (it was missed), and reading `preloaded.sql_dml` is no
    longer a false error; a name not declared may still be bound by the registry (not proven
    missing: it was an error)."""
    assert _found(_scan("preloaduse/preloaduse", "preloadkit_v1/preloadkit")) == set()
    assert _found(_scan("preloaduse/preloaduse", "preloadkit_v2/preloadkit")) == {
        ("attribute-missing", "error", "preloaduse/table.py", 11, "preloadkit.sql.dml.Insert.execute", None),
    }



# --- arctic-inference: methods replaced through the consumer's own patching helper --------------


def test_a_function_installed_by_the_consumers_patching_helper_is_a_method_of_the_patched_class():
    """patchplug's `@replace_func(Cls, "name")` (getattr of the original, setattr of a `*args,
    **kwargs` wrapper passing it first) puts the decorated function where `Cls.name` was: its
    `self` (after `orig`) is a `Cls`, so the field its replaced `__init__` sets is the consumer's
    own member (warnings naming the store, where it was 2 false errors), its body's calls are
    checked (v2's `scales` takes the query too) and so are the provider's calls of the replaced
    method (v2's `Runner.step` passes `scale=`). A provider call the original method does not take
    either (`Runner.stale`) is no evidence against the replacement. A member nothing sets is an error."""
    path, config, attention = "patchplug/__init__.py", "patchlib.config.ParallelConfig", "patchlib.layer.Attention"
    v1 = _scan("patchplug/patchplug", "patchlib_v1/patchlib")
    v2 = _scan("patchplug/patchplug", "patchlib_v2/patchlib")
    common = {
        ("attribute-missing", "warning", path, 16, f"{config}.sp_size", None),
        ("attribute-missing", "warning", path, 19, f"{config}.sp_size", None),
        ("attribute-missing", "error", path, 19, f"{config}.dp_size", None),
        ("attribute-missing", "warning", path, 31, f"{attention}.group", None),
        ("attribute-missing", "error", path, 31, f"{attention}.missing", None),
    }
    assert _found(v1) == common
    assert _found(v2) == common | {
        ("replacement-incompatible", "error", path, 28, f"{attention}.forward", "scale"),
        ("missing-required", "error", path, 30, f"{attention}.scales", "value"),
    }
    reasons = {(f.line, f.callee): f.reason for f in v2.findings}
    assert reasons[(16, f"{config}.sp_size")] == f"the consumer sets 'sp_size' on such an object itself ({path}:12)"
    assert reasons[(31, f"{attention}.group")] == f"the consumer sets 'group' on such an object itself ({path}:25)"
    replaced = next(f for f in v2.findings if f.rule == "replacement-incompatible")
    assert replaced.message.startswith("patchlib/layer.py:21 calls Attention.forward(3 positional, scale=), now forward(query, key, value)")


# --- arctic-inference 0.3.0: members a patch class copies onto its target --------------------


def test_members_a_patch_class_copies_onto_its_target_are_the_consumers_own():
    """classpatch's `class P(Patch[Target])`, whose base's `apply` copies the subclass's own
    members onto Target with `setattr(target, name, attr)` over `cls.__dict__.items()`: reading
    them on a Target (a class or a module) is not proven missing (warnings naming the patch
    class; on arctic-inference 0.3.0 x vllm 0.26.0 that was 3 false errors). A subscripted base
    that copies nothing (`Tagged`) adds nothing, and a member no patch class defines stays an error."""
    report = _scan("classpatch/classpatch", "patchlib_v1/patchlib")
    path, config = "classpatch/patches.py", "patchlib.config.ParallelConfig"
    assert _found(report) == {
        ("attribute-missing", "warning", path, 29, f"{config}._orig_init", None),
        ("attribute-missing", "warning", path, 30, f"{config}.world", None),
        ("attribute-missing", "error", path, 31, f"{config}.dp_size", None),
        ("attribute-missing", "error", path, 32, f"{config}.pp_size", None),
        ("attribute-missing", "warning", path, 33, "patchlib.config.DEFAULT_SP", None),
        ("attribute-missing", "error", path, 34, "patchlib.config.MISSING", None),
    }
    reasons = {f.line: f.reason for f in report.findings}
    assert reasons[30] == f"the consumer's patch class ({path}:7) copies 'world' onto such an object"
    assert reasons[33] == f"the consumer's patch class ({path}:14) copies 'DEFAULT_SP' onto patchlib.config"


# --- arctic-inference: a field set on an object of a type the engine cannot tell ---------------


def test_a_field_set_on_an_untyped_object_may_be_on_a_receiver_only_declared():
    """metaplug's runner unpacks `super()._prepare(...)` and sets `metadata.logits_indices` on the
    first item (a type the walk cannot tell); its model reads the field through the provider's
    context, whose `metadata` is only annotated with an abstract `Metadata` (what runs there is
    another class): not proven missing, a warning naming the store (it was a false error). A
    field nothing sets is still an error."""
    report = _scan("metaplug/metaplug", "metalib_v1/metalib")
    path, meta = "metaplug/model.py", "metalib.context.Metadata"
    assert {f for f in _found(report) if f[0] != "cannot-judge"} == {
        ("attribute-missing", "warning", path, 6, f"{meta}.logits_indices", None),
        ("attribute-missing", "error", path, 7, f"{meta}.never_set", None),
    }
    reasons = {f.line: f.reason for f in report.findings if f.path == path}
    assert reasons == {
        6: "the consumer sets 'logits_indices' on an object of a type it cannot tell (metaplug/runner.py:7), which may be this one",
        7: None,
    }


# --- arctic-inference: a call of the model object's method, bound to one class of several -------


def test_a_call_on_the_model_object_fails_only_where_every_class_it_can_be_rejects_it():
    """slotplug's `self.model.embed(ids, mm)`: the model object is any class of slothub's registry
    (no --model); the text model's `embed` takes one argument, the vision model's two. The call was
    bound to the first class only (a false error); it is a warning naming the class that takes it.
    Three arguments no class takes: still an error."""
    report = _scan("slotplug/slotplug", "slothub_v1/slothub", (PROVIDERS / "slothub_rules",))
    path, text = "slotplug/__init__.py", "slothub.models.text.TextForCausalLM.embed"
    assert _found(report) == {
        ("too-many-positional", "warning", path, 10, text, None),
        ("too-many-positional", "error", path, 11, text, None),
    }
    assert {f.line: f.reason for f in report.findings} == {
        10: "the model object may be a VisionForConditionalGeneration, whose embed takes the call",
        11: None,
    }


# --- arctic-inference: a base class's setattr that only rebinds a member it read ----------------


def test_a_base_that_only_rebinds_members_it_read_does_not_block_self_checks():
    """setlib's `Runner.update_config` does `config = getattr(self, name)` then `setattr(self, name,
    ...)` (vLLM 0.10's GPUModelRunner): it adds no member, so `self._execute_encoder()` in the
    consumer's subclass is proven missing (it was cannot-judge: a miss). A base whose setattr may
    add any name (no read first, or a read whose AttributeError is caught) still cannot be judged."""
    report = _scan("setplug/setplug", "setlib_v1/setlib")
    path = "setplug/__init__.py"
    assert _found(report) == {
        ("attribute-missing", "error", path, 9, "setlib.runner.Runner._execute_encoder", None),
        ("cannot-judge", "info", path, 14, "setlib.runner.LooseRunner._execute_encoder", None),
        ("cannot-judge", "info", path, 19, "setlib.runner.GuardedRunner._execute_encoder", None),
    }
