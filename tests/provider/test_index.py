"""Index queries for model code: light attribute inference, protocol membership, TypeIs functions."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from apiaudit.provider.index import ProviderIndex
from apiaudit.provider.records import AssignedValue, Membership, NarrowKind, ValueKind

REPO = Path(__file__).resolve().parents[2]
PROVIDERS = REPO / "fixtures" / "providers"
M = "modelhub.models."


@pytest.fixture(scope="module")
def hub() -> ProviderIndex:
    return ProviderIndex(PROVIDERS / "modelhub_v1", ("modelhub",))


def _path(symbol):
    return symbol.path if symbol is not None else None


def test_self_attribute_from_a_one_level_helper(hub):
    assert _path(hub.attribute_type(M + "dense.DenseForCausalLM", "model")) == M + "dense.DenseModel"


def test_self_attribute_from_a_class_attribute_called_through_self(hub):
    assert _path(hub.attribute_type(M + "moe.MoeForCausalLM", "model")) == M + "moe.MoeModel"
    assert _path(hub.attribute_type(M + "moe.MoeV3ForCausalLM", "model")) == M + "moe.MoeModel"  # inherited


def test_self_attribute_from_a_direct_constructor_and_a_class_body_annotation(hub):
    assert _path(hub.attribute_type(M + "dense.StructuralForCausalLM", "model")) == M + "dense.DenseModel"
    assert _path(hub.attribute_type(M + "wrapper.WrapperForConditionalGeneration", "vision_tower")) == M + "wrapper.VisionTower"


def test_a_factory_call_is_a_call_result_with_its_literal_lists(hub):
    value = hub.attribute_value(M + "wrapper.WrapperForConditionalGeneration", "language_model")
    assert value.kind is ValueKind.CALL_RESULT
    assert value.symbol.path == M + "utils.init_registered_model"
    assert value.keyword_list("architectures") == ("MoeForCausalLM",)
    assert hub.attribute_type(M + "wrapper.WrapperForConditionalGeneration", "language_model") is None


def test_an_unreadable_assignment_is_not_inferred(hub):
    # model_loader.load_model(...) on a local: the slot rule says what it is, not inference.
    assert hub.attribute_value("modelhub.worker.model_runner.ModelRunner", "model") is None
    assert hub.attribute_value(M + "dense.DenseForCausalLM", "nothing") is None


def test_disagreeing_assignments_and_annotations(tmp_path):
    pkg = tmp_path / "prov"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent("""
        class A: ...
        class B: ...
        def make_a() -> A: ...
        class Host:
            def __init__(self, flag):
                self.either = A() if flag else None
                self.made = make_a()
                self.param = flag
                if flag:
                    self.two = A()
                else:
                    self.two = B()
            def later(self):
                self.ann: "A | None" = None
                self.typed: B = build_something()
    """))
    index = ProviderIndex(tmp_path, ("prov",))
    assert index.attribute_value("prov.Host", "made") == AssignedValue(ValueKind.INSTANCE, index.resolve("prov.A").symbol)
    assert index.attribute_value("prov.Host", "two") is None
    assert index.attribute_value("prov.Host", "either") is None
    assert index.attribute_value("prov.Host", "param") is None
    assert _path(index.attribute_type("prov.Host", "ann")) == "prov.A"
    assert _path(index.attribute_type("prov.Host", "typed")) == "prov.B"


@pytest.mark.parametrize(
    "cls, protocol, expected",
    [
        ("dense.DenseForCausalLM", "interfaces.SupportsDraft", Membership.YES),  # nominal
        ("moe.MoeV3ForCausalLM", "interfaces.SupportsDraft", Membership.YES),  # through its base
        ("moe.MoeV3ForCausalLM", "interfaces.SupportsDraftBase", Membership.YES),  # a protocol's base
        ("dense.StructuralForCausalLM", "interfaces.SupportsDraft", Membership.YES),  # structural
        ("wrapper.WrapperForConditionalGeneration", "interfaces.SupportsDraft", Membership.NO),
        ("wrapper.WrapperForConditionalGeneration", "interfaces.SupportsMultiModal", Membership.YES),
        ("moe.MoeV3ForCausalLM", "interfaces.SupportsQuant", Membership.YES),
        ("dense.DenseForCausalLM", "interfaces.SupportsQuant", Membership.NO),  # not a protocol: nominal only
        ("dense.DenseForCausalLM", "interfaces.Nope", Membership.UNKNOWN),
    ],
)
def test_protocol_membership(hub, cls, protocol, expected):
    assert hub.implements(M + cls, M + protocol) is expected


def test_the_wrapper_implements_the_protocol_from_v2():
    v2 = ProviderIndex(PROVIDERS / "modelhub_v2", ("modelhub",))
    assert v2.implements(M + "wrapper.WrapperForConditionalGeneration", M + "interfaces.SupportsDraft") is Membership.YES


def test_protocol_members_cover_protocol_bases_only(hub):
    assert hub.protocol_members(M + "interfaces.SupportsDraft") == (
        "supports_draft", "set_aux_hidden_state_layers", "get_aux_hidden_state_layers", "has_own_lm_head",
    )  # fmt: skip
    assert hub.protocol_members(M + "interfaces.SupportsQuant") is None


def test_a_provider_getattr_makes_structural_membership_unknown(tmp_path):
    pkg = tmp_path / "prov"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent("""
        from typing import Protocol, runtime_checkable
        @runtime_checkable
        class P(Protocol):
            def go(self) -> None: ...
        class Dynamic:
            def __getattr__(self, name): ...
    """))
    assert ProviderIndex(tmp_path, ("prov",)).implements("prov.Dynamic", "prov.P") is Membership.UNKNOWN


def test_typeis_functions_are_recorded_with_their_targets(hub):
    narrowing = hub.narrowing(M + "interfaces.supports_draft")
    assert narrowing.kind is NarrowKind.TYPE_IS
    assert narrowing.parameter == "model"
    assert narrowing.instance_target.path == M + "interfaces.SupportsDraft"
    assert narrowing.class_target.path == M + "interfaces.SupportsDraft"
    assert hub.narrowing(M + "supports_draft").function.path == M + "interfaces.supports_draft"  # re-exported
    assert hub.narrowing(M + "interfaces.is_multimodal") is None


def test_typeguard_is_recorded_too(tmp_path):
    pkg = tmp_path / "prov"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from typing import TypeGuard\nclass C: ...\ndef is_c(x: object) -> TypeGuard[C]: ...\n")
    narrowing = ProviderIndex(tmp_path, ("prov",)).narrowing("prov.is_c")
    assert (narrowing.kind, narrowing.instance_target.path, narrowing.class_target) == (NarrowKind.TYPE_GUARD, "prov.C", None)


def test_a_decorator_deriving_from_classmethod_or_staticmethod_binds_as_it_does(tmp_path):
    """Django's `class classonlymethod(classmethod)`: `@classonlymethod def as_view(cls, ...)`
    has `cls` bound through the class and an instance alike (issue 27, cause N10)."""
    pkg = tmp_path / "prov"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent("""
        class classonlymethod(classmethod): ...
        class onlystatic(staticmethod): ...
        class other: ...
        class View:
            @classonlymethod
            def as_view(cls, **initkwargs): ...
            @onlystatic
            def tool(a): ...
            @other
            def method(self, a): ...
    """))
    index = ProviderIndex(tmp_path, ("prov",))

    def names(path, via):
        return [p.name for p in index.call(path, via=via).signatures[0].params]

    assert names("prov.View.as_view", "class") == names("prov.View.as_view", "instance") == ["initkwargs"]
    assert names("prov.View.tool", "instance") == ["a"]
    assert names("prov.View.method", "instance") == ["a"]
    assert names("prov.View.method", "class") == ["self", "a"]


# ------------------------------------------------------------- real wheels
V = "vllm.model_executor.models."


@pytest.fixture(scope="module")
def vllm016(released) -> ProviderIndex:
    tree = released("vllm==0.16.0")
    return ProviderIndex(tree.root, tree.packages)


@pytest.mark.network
def test_vllm_016_base_models(vllm016):
    assert _path(vllm016.attribute_type(V + "llama.LlamaForCausalLM", "model")) == V + "llama.LlamaModel"
    assert _path(vllm016.attribute_type(V + "qwen3.Qwen3ForCausalLM", "model")) == V + "qwen3.Qwen3Model"
    assert _path(vllm016.attribute_type(V + "deepseek_v2.DeepseekV3ForCausalLM", "model")) == V + "deepseek_v2.DeepseekV2Model"
    value = vllm016.attribute_value(V + "kimi_k25.KimiK25ForConditionalGeneration", "language_model")
    assert (value.kind, value.symbol.path, value.keyword_list("architectures")) == (
        ValueKind.CALL_RESULT, V + "utils.init_vllm_registered_model", ("DeepseekV2ForCausalLM",)
    )  # fmt: skip


@pytest.mark.network
def test_vllm_016_eagle3_membership_and_supports_eagle3(vllm016):
    protocol = V + "interfaces.SupportsEagle3"
    assert vllm016.implements(V + "llama.LlamaForCausalLM", protocol) is Membership.YES
    assert vllm016.implements(V + "kimi_k25.KimiK25ForConditionalGeneration", protocol) is Membership.NO
    narrowing = vllm016.narrowing(V + "interfaces.supports_eagle3")
    assert (narrowing.kind, narrowing.instance_target.path) == (NarrowKind.TYPE_IS, protocol)


def test_provider_defines_ignores_external_bases(hub):
    wrapper = M + "wrapper.WrapperForConditionalGeneration"
    assert hub.provider_defines(wrapper, "language_model") is Membership.YES
    assert hub.provider_defines(wrapper, "model") is Membership.NO  # nn.Module adds no provider names
    assert hub.provider_defines(M + "dense.DenseModel", "get_input_embeddings") is Membership.YES


@pytest.mark.network
def test_vllm_016_kimi_has_no_model_attribute(vllm016):
    kimi = V + "kimi_k25.KimiK25ForConditionalGeneration"
    assert vllm016.provider_defines(kimi, "model") is Membership.NO
    assert vllm016.provider_defines(kimi, "language_model") is Membership.YES
    assert vllm016.provider_defines(kimi, "get_language_model") is Membership.YES
    assert vllm016.provider_defines(V + "llama.LlamaModel", "get_input_embeddings") is Membership.NO
    assert vllm016.provider_defines(V + "llama.LlamaModel", "embed_input_ids") is Membership.YES


# --- placeholders for a missing optional dependency (issue 27, cause 9) -----------------------


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_a_lazy_module_serves_the_real_class_not_the_placeholder(version):
    """modelkit (transformers' shape): `Trainer` is declared under TYPE_CHECKING (a lazy module
    takes the module's place and serves it) in the `else:` of an availability check whose
    `except` star-imports dummies; a plain module star-imports both sides, dummies first."""
    index = ProviderIndex(PROVIDERS / f"modelkit_{version}", ("modelkit",))
    found = {name: _path(getattr(index.resolve(f"modelkit.{name}"), "symbol", None)) for name in ("Trainer", "PreTrainedModel", "TrainingArguments")}
    assert found == {
        "Trainer": "modelkit.trainer.Trainer",
        "PreTrainedModel": "modelkit.modeling_utils.PreTrainedModel",
        "TrainingArguments": "modelkit.training_args.TrainingArguments",
    }
    assert _path(index.resolve("modelkit.integrations.Trainer").symbol) == "modelkit.trainer.Trainer"


def test_a_name_only_a_placeholder_binds_is_unknown_never_the_dummy(tmp_path):
    package = tmp_path / "optpkg"
    (package / "utils").mkdir(parents=True)
    (package / "utils" / "__init__.py").write_text("class Missing(Exception):\n    pass\n")
    (package / "utils" / "dummies.py").write_text("class OnlyDummy:\n    pass\n")
    (package / "real.py").write_text("class Real:\n    pass\n")
    (package / "__init__.py").write_text(textwrap.dedent("""
        from .utils import Missing
        try:
            if not have_torch():
                raise Missing()
        except Missing:
            from .utils.dummies import *
        else:
            from .real import *
    """))
    index = ProviderIndex(tmp_path, ("optpkg",))
    assert _path(index.resolve("optpkg.Real").symbol) == "optpkg.real.Real"
    only = index.resolve("optpkg.OnlyDummy")
    assert type(only).__name__ == "Unknown" and "placeholder" in only.reason


@pytest.mark.network
@pytest.mark.parametrize("spec", ["transformers==4.46.0", "transformers==5.0.0"])
def test_transformers_trainer_is_the_real_class(released, spec):
    tree = released(spec)
    index = ProviderIndex(tree.root, tree.packages)
    assert _path(index.resolve("transformers.Trainer").symbol) == "transformers.trainer.Trainer"
    assert _path(index.resolve("transformers.TrainingArguments").symbol) == "transformers.training_args.TrainingArguments"
    assert _path(index.resolve("transformers.PreTrainedModel").symbol) == "transformers.modeling_utils.PreTrainedModel"


def test_names_a_module_getattr_serves(tmp_path):
    """A name only a module __getattr__ serves: as the module declares it under TYPE_CHECKING
    (an import there is followed), else an attribute of unknown value; the rest are missing,
    for certain where the served names were all read, with a doubt where they were not."""
    from apiaudit.provider.records import Found, Missing, SymbolKind

    pkg = tmp_path / "prov"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "impl.py").write_text("class Engine: ...\n")
    (pkg / "lazy.py").write_text(textwrap.dedent("""
        import warnings
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from prov.impl import Engine
            FLAG: bool = True
        env = {"FLAG": lambda: True, "HOME": lambda: "/"}
        __all__ = ["Engine"]
        def __getattr__(name):
            if name in env:
                return env[name]()
            if name in __all__:
                import importlib
                return getattr(importlib.import_module("prov.impl"), name)
            if name == "OldEngine":
                warnings.warn("use Engine", DeprecationWarning)
                from prov.impl import Engine
                return Engine
            raise AttributeError(name)
    """))
    (pkg / "computed.py").write_text(textwrap.dedent("""
        names = {f"X_{i}": i for i in range(3)}
        def __getattr__(name):
            if name in names:
                return names[name]
            raise AttributeError(name)
    """))
    index = ProviderIndex(tmp_path, ("prov",))
    flag = index.resolve("prov.lazy.FLAG")
    assert isinstance(flag, Found) and flag.symbol.kind is SymbolKind.ATTRIBUTE and flag.symbol.location == "prov/lazy.py:6"
    home = index.resolve("prov.lazy.HOME")
    assert isinstance(home, Found) and home.symbol.kind is SymbolKind.ATTRIBUTE and home.symbol.location == "prov/lazy.py:9"
    assert index.resolve("prov.lazy.Engine") == Found(index.resolve("prov.impl.Engine").symbol)
    assert index.resolve("prov.lazy.OldEngine") == Found(index.resolve("prov.impl.Engine").symbol)
    assert index.getattr_deprecation("prov.lazy.OldEngine") == "use Engine"
    assert index.getattr_deprecation("prov.lazy.Engine") is None
    missing = index.resolve("prov.lazy.USER")
    assert isinstance(missing, Missing) and missing.doubt is None
    doubted = index.resolve("prov.computed.X_9")
    assert isinstance(doubted, Missing)
    assert doubted.doubt == "prov.computed defines a module __getattr__ and its names are computed (line 2)"


def test_a_lazy_package_serves_what_its_type_checking_star_imports_declare(tmp_path):
    """pydantic 2's shape: `__getattr__` looks names up in a map of `(__spec__.parent, '.mod')`
    pairs (no literal target), and `if TYPE_CHECKING: from .types import *` declares them: a
    name the map serves is the class or function that star import binds, not a value of unknown
    kind (which left every `BaseModel` and `constr(...)` call unjudged)."""
    pkg = tmp_path / "prov"
    pkg.mkdir()
    (pkg / "types.py").write_text("def constr(*, pattern=None): ...\nclass Model: ...\n")
    (pkg / "__init__.py").write_text(textwrap.dedent("""
        import typing
        if typing.TYPE_CHECKING:
            from .types import *
        _dynamic = {'constr': (__spec__.parent, '.types'), 'Model': (__spec__.parent, '.types')}
        def __getattr__(name):
            package, module_name = _dynamic[name]
            from importlib import import_module
            if module_name == '__module__':
                return import_module(f'.{name}', package=package)
            return getattr(import_module(module_name, package=package), name)
    """))
    index = ProviderIndex(tmp_path, ("prov",))
    assert index.resolve("prov.constr").symbol.path == "prov.types.constr"
    assert index.resolve("prov.Model").symbol.path == "prov.types.Model"


def test_a_base_named_like_a_member_of_the_class_is_read_where_the_class_statement_stands(tmp_path):
    """`class MultiValueDict(dict)` defining a `dict` method (Django's): the base is the builtin,
    read before the class exists, not the method; and an MRO asked for again while its own
    bases are being resolved is unknown there, never a recursion without end."""
    from apiaudit.provider.index import ProviderIndex
    from apiaudit.provider.records import Found, UnresolvedBase

    (tmp_path / "prov").mkdir()
    (tmp_path / "prov" / "__init__.py").write_text("")
    (tmp_path / "prov" / "data.py").write_text(
        "class MultiValueDict(dict):\n"
        "    def dict(self):\n        return {}\n\n"
        "    def getlist(self, key):\n        return []\n"
    )
    index = ProviderIndex(tmp_path, ("prov",))
    assert [getattr(k, "path", k) for k in index.mro("prov.data.MultiValueDict")] == ["prov.data.MultiValueDict", "dict"]
    assert isinstance(index.class_member("prov.data.MultiValueDict", "getlist", instance=True), Found)
    index._mro_asked.add("prov.data.Other")  # as while its bases are being resolved
    assert isinstance(index.mro("prov.data.Other")[0], UnresolvedBase)
    assert ("mro-objects", "prov.data.Other") not in index.memo
