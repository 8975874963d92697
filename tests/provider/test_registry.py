"""The provider's model registry as data, and which classes a model object can be.

Fixture provider `modelhub` (fixtures/providers/modelhub_v{1,2}) reproduces vLLM's shapes;
the network tests read the real vLLM 0.16.0 wheel.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from apiaudit.errors import InputError
from apiaudit.model import ModelFacts, load_model
from apiaudit.provider.index import ProviderIndex
from apiaudit.provider.registry import (
    Candidates,
    CandidateSource,
    ModelTypes,
    RegistryEntry,
    check_architecture,
    first_release_registering,
    parse_registry,
    read_registry,
)
from apiaudit.recipes import load_rulebook
from apiaudit.recipes.records import RegistryRule

REPO = Path(__file__).resolve().parents[2]
PROVIDERS = REPO / "fixtures" / "providers"
MODELS = REPO / "fixtures" / "models"
M = "modelhub.models."


def _types(version: str = "v1") -> ModelTypes:
    index = ProviderIndex(PROVIDERS / f"modelhub_{version}", ("modelhub",))
    return ModelTypes(index, load_rulebook([PROVIDERS], "modelhub"))


def test_the_registry_follows_splats_and_maps_each_architecture():
    registry = _types().registry()
    assert [e.architecture for e in registry.entries] == [
        "DenseForCausalLM", "DenseAliasForCausalLM", "MoeForCausalLM", "MoeV3ForCausalLM", "WrapperForConditionalGeneration",
    ]  # fmt: skip
    assert registry.lookup("MoeV3ForCausalLM") == RegistryEntry("MoeV3ForCausalLM", M + "moe", "MoeV3ForCausalLM")
    assert registry.class_paths() == (M + "dense.DenseForCausalLM", M + "moe.MoeForCausalLM", M + "moe.MoeV3ForCausalLM",
                                      M + "wrapper.WrapperForConditionalGeneration")  # fmt: skip
    assert registry.architectures_of(M + "dense.DenseForCausalLM") == ("DenseForCausalLM", "DenseAliasForCausalLM")
    assert registry.location == "modelhub/models/registry.py"
    assert registry.lookup("RetiredForCausalLM") is None  # another dict, not named by the rule


def test_parse_registry_later_keys_win_and_non_literals_are_skipped():
    rule = RegistryRule("m", "p.registry", ("_ALL",), "p.models")
    source = '_A = {"X": ("a", "X"), "Y": make()}\n_ALL = {**_A, "X": ("b", "X2"), **_MISSING}\n'
    registry = parse_registry(source, rule)
    assert registry.entries == (RegistryEntry("X", "p.models.b", "X2"),)
    assert registry.skipped == ("Y",)


def test_the_registry_is_memoised_in_the_index_as_plain_values():
    types = _types()
    rule = types.book.registry()
    first = read_registry(types.index, rule)
    assert read_registry(types.index, rule) is first
    assert pickle.loads(pickle.dumps(first)) == first
    assert "modelhub/models/registry.py" in types.index.loader.touched  # a changed registry invalidates the cache


def test_model_classes_with_and_without_a_model():
    types = _types()
    assert types.model_classes(ModelFacts(("WrapperForConditionalGeneration",))) == Candidates(
        (M + "wrapper.WrapperForConditionalGeneration",), CandidateSource.MODEL, ("WrapperForConditionalGeneration",)
    )
    # The provider loads the first architecture it registers.
    assert types.model_classes(ModelFacts(("Unknown", "MoeForCausalLM"))).classes == (M + "moe.MoeForCausalLM",)
    every = types.model_classes(None)
    assert every.source is CandidateSource.ALL and len(every.classes) == 4 and not every.definite


def test_a_registry_marked_not_target_leaves_its_models_out_of_the_union_without_a_model():
    """As vLLM's speculative-decoding models: listed in the registry the slot names, never the target."""
    from dataclasses import replace

    base = _types()
    drafts = RegistryRule("drafts", "modelhub.models.registry", ("_MULTIMODAL_MODELS",), "modelhub.models", target=False)
    types = ModelTypes(base.index, replace(base.book, registries=(*base.book.registries, drafts)))
    wrapper = M + "wrapper.WrapperForConditionalGeneration"
    every = types.model_classes(None)
    assert every.source is CandidateSource.ALL and wrapper not in every.classes and len(every.classes) == 3
    runner = types.attribute_classes("modelhub.worker.model_runner.ModelRunner", "model", None)
    assert runner is not None and wrapper not in runner.classes
    assert dict(types.origins(every))[M + "dense.DenseForCausalLM"] == ("DenseForCausalLM", "DenseAliasForCausalLM")
    # A model that names a draft architecture is still that model; the full registry still knows it.
    named = types.model_classes(ModelFacts(("WrapperForConditionalGeneration",)))
    assert named.classes == (wrapper,)
    assert types.unregistered(ModelFacts(("WrapperForConditionalGeneration",))) is None
    # The non-target registry itself keeps its own models.
    assert types.model_classes(None, "drafts").classes == (wrapper,)


def test_the_slot_holds_the_model_on_the_runner_and_the_worker_reaches_it():
    types = _types()
    wrapper = load_model(MODELS / "hub-wrapper")
    assert types.attribute_classes("modelhub.worker.model_runner.ModelRunner", "model", wrapper).classes == (
        M + "wrapper.WrapperForConditionalGeneration",
    )
    # worker.model_runner is annotated in init_device (a method other than __init__).
    assert types.index.attribute_type("modelhub.worker.worker.Worker", "model_runner").path == "modelhub.worker.model_runner.ModelRunner"
    assert types.attribute_classes("modelhub.worker.model_runner.ModelRunner", "model", None).source is CandidateSource.ALL
    assert types.slot_classes("modelhub.worker.worker.Worker", "model", wrapper) is None


def test_a_factory_returns_the_class_for_its_literal_or_the_nested_config():
    types = _types()
    wrapper = load_model(MODELS / "hub-wrapper")
    # architectures=["MoeForCausalLM"] in the call wins over the config's text_config.
    assert types.attribute_classes(M + "wrapper.WrapperForConditionalGeneration", "language_model", wrapper) == Candidates(
        (M + "moe.MoeForCausalLM",), CandidateSource.LITERAL, ("MoeForCausalLM",)
    )
    assert types.attribute_classes(M + "wrapper.NestedWrapperForConditionalGeneration", "language_model", wrapper) == Candidates(
        (M + "moe.MoeV3ForCausalLM",), CandidateSource.NESTED_CONFIG, ("MoeV3ForCausalLM",)
    )
    assert types.attribute_classes(M + "wrapper.NestedWrapperForConditionalGeneration", "language_model", None).source is CandidateSource.ALL
    assert types.factory_classes(M + "utils.init_registered_model", ("DenseAliasForCausalLM",), None).classes == (
        M + "dense.DenseForCausalLM",
    )
    assert types.factory_classes(M + "utils.maybe_prefix", None, None) is None


def test_an_unregistered_architecture_is_one_line_naming_the_release(tmp_path):
    types = _types()
    with pytest.raises(InputError) as err:
        check_architecture(types, ModelFacts(("LateForCausalLM",)), "modelhub", "0.1.0", tmp_path)
    assert str(err.value) == (
        "modelhub 0.1.0 does not register the architecture LateForCausalLM in its model registry "
        "(no release in the cache registers it)"
    )
    check_architecture(types, ModelFacts(("DenseForCausalLM",)), "modelhub", "0.1.0", tmp_path)  # registered: fine
    check_architecture(types, ModelFacts(()), "modelhub", "0.1.0", tmp_path)  # nothing stated: nothing to check


def test_the_first_release_registering_comes_from_the_release_cache(tmp_path):
    rule = _types().book.registry()
    for version, fixture in (("0.1.0", "v1"), ("0.10.0", "v2"), ("0.2.0", "v1")):
        target = tmp_path / "releases" / f"modelhub-{version}" / "modelhub" / "models"
        target.mkdir(parents=True)
        (target / "registry.py").write_bytes((PROVIDERS / f"modelhub_{fixture}" / "modelhub" / "models" / "registry.py").read_bytes())
    assert first_release_registering("modelhub", ("LateForCausalLM",), rule, tmp_path) == ("LateForCausalLM", "0.10.0")
    assert first_release_registering("modelhub", ("Nope",), rule, tmp_path) is None
    with pytest.raises(InputError, match=r"modelhub 0.10.0 is the first release in the cache that registers LateForCausalLM"):
        check_architecture(_types(), ModelFacts(("LateForCausalLM",)), "modelhub", "0.1.0", tmp_path)


# ------------------------------------------------------------- real wheels
@pytest.fixture(scope="module")
def vllm016(released):
    tree = released("vllm==0.16.0")
    index = ProviderIndex(tree.root, tree.packages)
    return ModelTypes(index, load_rulebook([], "vllm"))


V = "vllm.model_executor.models."


@pytest.mark.network
def test_vllm_016_registry(vllm016):
    registry = vllm016.registry()
    assert registry.lookup("LlamaForCausalLM").class_path == V + "llama.LlamaForCausalLM"
    assert registry.lookup("KimiK25ForConditionalGeneration").class_path == V + "kimi_k25.KimiK25ForConditionalGeneration"
    assert registry.lookup("DeepseekV3ForCausalLM").class_path == V + "deepseek_v2.DeepseekV3ForCausalLM"
    assert registry.lookup("Qwen3ForCausalLM").class_path == V + "qwen3.Qwen3ForCausalLM"
    assert registry.skipped == ()
    assert len(registry.entries) > 250


@pytest.mark.network
def test_vllm_016_kimi_wraps_a_deepseek_v2_language_model(vllm016):
    kimi = load_model(MODELS / "kimi-k2.5")
    runner_model = vllm016.attribute_classes("vllm.v1.worker.gpu_model_runner.GPUModelRunner", "model", kimi)
    assert runner_model.classes == (V + "kimi_k25.KimiK25ForConditionalGeneration",)
    language_model = vllm016.attribute_classes(V + "kimi_k25.KimiK25ForConditionalGeneration", "language_model", kimi)
    assert language_model == Candidates((V + "deepseek_v2.DeepseekV2ForCausalLM",), CandidateSource.LITERAL, ("DeepseekV2ForCausalLM",))
    assert vllm016.index.attribute_type(V + "deepseek_v2.DeepseekV2ForCausalLM", "model").path == V + "deepseek_v2.DeepseekV2Model"
    assert vllm016.index.attribute_type("vllm.v1.worker.gpu_worker.Worker", "model_runner").path == (
        "vllm.v1.worker.gpu_model_runner.GPUModelRunner"
    )


@pytest.mark.network
def test_vllm_016_has_no_entry_for_an_architecture_from_nowhere(vllm016, release_cache):
    with pytest.raises(InputError, match=r"^vllm 0.16.0 does not register the architecture NoSuchForCausalLM"):
        check_architecture(vllm016, ModelFacts(("NoSuchForCausalLM",)), "vllm", "0.16.0", release_cache)


@pytest.mark.network
def test_vllm_014_does_not_know_kimi_k25_and_says_where_it_starts(released, release_cache):
    released("vllm==0.15.0")
    tree = released("vllm==0.14.1")
    types = ModelTypes(ProviderIndex(tree.root, tree.packages), load_rulebook([], "vllm"))
    with pytest.raises(InputError) as err:
        check_architecture(types, load_model(MODELS / "kimi-k2.5"), "vllm", "0.14.1", release_cache)
    assert "vllm 0.15.0 is the first release in the cache that registers KimiK25ForConditionalGeneration" in str(err.value)


def _eagle3_bases(types: ModelTypes):
    """(class, base model or None) for every registered class that implements SupportsEagle3 by its MRO."""
    from apiaudit.provider.records import Membership

    protocol = V + "interfaces.SupportsEagle3"
    out = []
    for cls in types.registry().class_paths():
        if types.index.implements(cls, protocol) is Membership.YES:
            base = types.attribute_classes(cls, "model", None)
            out.append((cls, base.classes[0] if base and base.definite else None))
    return out


@pytest.mark.network
def test_vllm_016_no_eagle3_base_model_has_get_input_embeddings(vllm016):
    """The truth in fixtures/models/README.md: 44 classes by MRO, 23 with a provider base model."""
    from apiaudit.provider.records import Membership

    rows = _eagle3_bases(vllm016)
    bases = [b for _, b in rows if b]
    assert (len(rows), len(bases)) == (44, 23)
    assert all(vllm016.index.provider_defines(b, "get_input_embeddings") is Membership.NO for b in bases)
    assert all(vllm016.index.provider_defines(b, "embed_input_ids") is Membership.YES for b in bases)
    kimi = V + "kimi_k25.KimiK25ForConditionalGeneration"
    assert kimi not in [c for c, _ in rows]


@pytest.mark.network
def test_vllm_011_no_eagle3_base_model_has_embed_input_ids(released):
    from apiaudit.provider.records import Membership

    tree = released("vllm==0.11.0")
    types = ModelTypes(ProviderIndex(tree.root, tree.packages), load_rulebook([], "vllm"))
    rows = _eagle3_bases(types)
    assert len(rows) == 19 and all(b for _, b in rows)
    assert not [b for _, b in rows if types.index.provider_defines(b, "embed_input_ids") is not Membership.NO]
    assert len([b for _, b in rows if types.index.provider_defines(b, "get_input_embeddings") is Membership.YES]) == 17


@pytest.mark.network
@pytest.mark.parametrize("version, registered, eagle3", [
    ("0.14.1", False, None), ("0.15.0", True, False), ("0.16.0", True, False), ("0.17.1", True, False), ("0.18.0", True, True),
])  # fmt: skip
def test_kimi_k25_registered_from_015_and_eagle3_from_018(released, version, registered, eagle3):
    from apiaudit.provider.records import Membership

    tree = released(f"vllm=={version}")
    types = ModelTypes(ProviderIndex(tree.root, tree.packages), load_rulebook([], "vllm"))
    entry = types.registry().lookup("KimiK25ForConditionalGeneration")
    assert (entry is not None) is registered
    if entry is not None:
        membership = types.index.implements(entry.class_path, V + "interfaces.SupportsEagle3")
        assert membership is (Membership.YES if eagle3 else Membership.NO)
        assert types.index.provider_defines(entry.class_path, "model") is Membership.NO


def test_installed_rules_give_a_literal_factory_call_its_class():
    types = _types()
    wrapper = M + "wrapper.WrapperForConditionalGeneration"
    assert types.index.attribute_type(wrapper, "language_model") is None  # no rules: a call result
    types.install()
    assert types.index.attribute_type(wrapper, "language_model").path == M + "moe.MoeForCausalLM"
    # Without a literal the class depends on the model: not a single type.
    assert types.index.attribute_type(M + "wrapper.NestedWrapperForConditionalGeneration", "language_model") is None


@pytest.mark.network
def test_vllm_016_kimi_language_model_has_a_type_once_rules_are_installed(released):
    tree = released("vllm==0.16.0")
    types = ModelTypes(ProviderIndex(tree.root, tree.packages), load_rulebook([], "vllm")).install()
    kimi = V + "kimi_k25.KimiK25ForConditionalGeneration"
    language_model = types.index.attribute_type(kimi, "language_model")
    assert language_model.path == V + "deepseek_v2.DeepseekV2ForCausalLM"
    assert types.index.attribute_type(language_model.path, "model").path == V + "deepseek_v2.DeepseekV2Model"


@pytest.mark.parametrize("version, wrapper", [("v1", False), ("v2", True)])
def test_may_implement_reads_class_bases_with_ast_before_any_module_is_loaded(version, wrapper):
    types = _types(version)
    protocol = "modelhub.models.interfaces.SupportsDraft"
    members = ("supports_draft", "has_own_lm_head", "set_aux_hidden_state_layers", "get_aux_hidden_state_layers")
    m = "modelhub.models."
    assert types.may_implement(m + "dense.DenseForCausalLM", protocol, members)  # a direct base
    assert types.may_implement(m + "moe.MoeV3ForCausalLM", protocol, members)  # through MoeForCausalLM
    assert types.may_implement(m + "wrapper.WrapperForConditionalGeneration", protocol, members) is wrapper
    # no base reaches it, but the body names every member: the index decides (structurally)
    assert types.may_implement(m + "dense.StructuralForCausalLM", protocol, members)
    assert not types.may_implement(m + "dense.StructuralForCausalLM", protocol, None)
    # the answer agrees with the index wherever the pre-check says no
    assert types.index.implements(m + "wrapper.WrapperForConditionalGeneration", protocol).value == ("yes" if wrapper else "no")


def test_may_implement_follows_a_plain_reexport_and_a_header_closed_on_its_own_line(tmp_path):
    """The pre-check reads a header written over several lines whose body is on its last line
    (`): ...`) as one class, the next class as another, and follows a base a package re-exports
    (`from .interfaces import SupportsPP`) to its class statement: no module is loaded to learn
    that a class is not a draft model, and it still says yes where a chain reaches one."""
    files = {
        "prov/__init__.py": "",
        "prov/models/__init__.py": "from .interfaces import SupportsPP\n",
        "prov/models/interfaces.py": (
            "from typing import Protocol, runtime_checkable\n\n\n"
            "@runtime_checkable\nclass SupportsDraft(Protocol):\n    supports_draft: bool = True\n\n\n"
            "class SupportsPP(Protocol):\n    supports_pp: bool = True\n\n\n"
            "class DraftPP(SupportsDraft, SupportsPP):\n    pass\n"
        ),
        "prov/models/plain.py": (
            "from torch import nn\n"
            "from prov.models import SupportsPP\n"
            "from prov.models.interfaces import DraftPP\n\n\n"
            "class Builder(\n    nn.Module\n): ...\n\n\n"
            "@register(\n    info=Builder,\n)\n"
            "class Plain(\n    nn.Module, SupportsPP\n):\n    def forward(self, x):\n        return x\n\n\n"
            "class Drafting(nn.Module, DraftPP):\n    pass\n"
        ),
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    index = ProviderIndex(tmp_path, ("prov",))
    types = ModelTypes(index, load_rulebook([], "prov"))
    protocol, members = "prov.models.interfaces.SupportsDraft", ("supports_draft",)
    assert not types.may_implement("prov.models.plain.Plain", protocol, members)
    assert types.may_implement("prov.models.plain.Drafting", protocol, members)
    assert "prov.models.plain" not in index.loader._modules
    assert types.index.implements("prov.models.plain.Plain", protocol).value == "no"  # the index agrees
