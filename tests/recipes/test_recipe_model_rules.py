"""The model rule kinds: [[registry]], [[slot]], [[factory]] and [[remote_code]], and their errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from apiaudit.errors import InputError
from apiaudit.findings import Severity
from apiaudit.recipes import load_rule_file, load_rulebook
from apiaudit.recipes.loader import load_remote_code_rules
from apiaudit.recipes.records import FactoryRule, RegistryRule, SlotRule

REPO = Path(__file__).resolve().parents[2]

REGISTRY = """
[[registry]]
name = "models"
module = "demo.models.registry"
maps = ["_MODELS"]
package = "demo.models"
"""
SLOT = """
[[slot]]
class = "demo.runner.Runner"
attribute = "model"
"""
FACTORY = """
[[factory]]
function = "demo.models.utils.build"
"""
REMOTE = """
[[remote_code]]
id = "demo-remote"
module = "demo_hf"
method = "from_pretrained"
keyword = "trust_remote_code"
files = ["config.json"]
message = "custom code"
[remote_code.auto_map_keys]
AutoThing = "AutoThing"
"""


def _write(tmp_path: Path, body: str, provider: str = "demo", name: str = "demo.toml") -> Path:
    path = tmp_path / name
    path.write_text(f'[provider]\nname = "{provider}"\n' + body)
    return path


def test_the_shipped_vllm_model_rules():
    book = load_rulebook([], "vllm")
    source = book.registries[0].source
    assert book.registries == (
        RegistryRule("models", "vllm.model_executor.models.registry", ("_VLLM_MODELS",), "vllm.model_executor.models", source),
        # The speculative-decoding models: in the registry, never a job's target model.
        RegistryRule("draft-models", "vllm.model_executor.models.registry", ("_SPECULATIVE_DECODING_MODELS",),
                     "vllm.model_executor.models", source, target=False),
    )  # fmt: skip
    assert [(s.owner, s.attribute, s.registry) for s in book.slots] == [("vllm.v1.worker.gpu_model_runner.GPUModelRunner", "model", "models")]
    assert [(f.function, f.registry, f.architectures_keyword, f.nested_config) for f in book.factories] == [
        ("vllm.model_executor.models.utils.init_vllm_registered_model", "models", "architectures", "text_config")
    ]
    assert book.applicable("0.16.0").registries == book.registries  # not versioned


def test_the_shipped_remote_code_rule_applies_whatever_the_provider():
    rules = load_remote_code_rules()
    assert [(r.id, r.severity, r.module, r.method, r.keyword) for r in rules] == [
        ("remote-code-required", Severity.ERROR, "transformers", "from_pretrained", "trust_remote_code")
    ]
    assert rules[0].auto_map_key("AutoTokenizer") == "AutoTokenizer"
    assert rules[0].auto_map_key("BertModel") is None
    assert rules[0].files == ("config.json", "tokenizer_config.json")


def test_one_registry_may_go_unnamed_in_slots_and_factories(tmp_path):
    rule_file = load_rule_file(_write(tmp_path, REGISTRY + SLOT + FACTORY))
    assert rule_file.slots == (SlotRule("demo.runner.Runner", "model", "models", rule_file.slots[0].source),)
    assert rule_file.factories == (FactoryRule("demo.models.utils.build", "models", source=rule_file.factories[0].source),)


def test_a_registry_may_say_its_models_are_never_the_target(tmp_path):
    drafts = REGISTRY.replace('name = "models"', 'name = "drafts"').replace('["_MODELS"]', '["_DRAFTS"]')
    rule_file = load_rule_file(_write(tmp_path, REGISTRY + drafts + "target = false\n"))
    assert [(r.name, r.target) for r in rule_file.registries] == [("models", True), ("drafts", False)]
    with pytest.raises(InputError, match=r"registry .*'target' must be true or false"):
        load_rule_file(_write(tmp_path, REGISTRY + 'target = "no"\n'))


def test_the_fixture_provider_rules_load():
    book = load_rulebook([REPO / "fixtures" / "providers"], "modelhub")
    assert book.registry().maps == ("_HUB_MODELS",) and book.slots and book.factories


@pytest.mark.parametrize(
    "body, message",
    [
        (SLOT, "slot [1]: needs 'registry' (the file defines none or several)"),
        (REGISTRY + SLOT.replace('attribute = "model"', 'attribute = "model"\nregistry = "other"'), "slot [1]: registry 'other' is not defined"),
        (REGISTRY + REGISTRY, "registry 'models' [2]: duplicate registry name"),
        (REGISTRY.replace('maps = ["_MODELS"]', "maps = []"), "'maps' is empty"),
        (REGISTRY.replace('package = "demo.models"', 'package = "demo models"'), "is not a dotted package path"),
        (REGISTRY + FACTORY.replace('function = "demo.models.utils.build"', 'function = "demo.models.utils.build"\nnested_config = 3'), "'nested_config' must be"),
        (REGISTRY + SLOT.replace("attribute", "attr"), "unknown key 'attr'"),
        (REMOTE.replace('files = ["config.json"]', 'files = ["weights.bin"]'), "'files' must list model files"),
        (REMOTE.replace('AutoThing = "AutoThing"', "AutoThing = 3"), "'auto_map_keys' entry 'AutoThing'"),
        (REMOTE.replace('id = "demo-remote"', 'id = "unexpected-keyword"'), "is an engine rule id"),
        (REMOTE.replace('message = "custom code"', 'message = "custom code"\nseverity = "fatal"'), "unknown severity 'fatal'"),
    ],
)
def test_errors_name_the_file_and_entry(tmp_path, body, message):
    with pytest.raises(InputError) as err:
        load_rule_file(_write(tmp_path, body))
    assert message in str(err.value), str(err.value)
    assert "demo.toml" in str(err.value)


def test_a_remote_code_id_is_unique_across_files(tmp_path):
    _write(tmp_path, REMOTE, name="a.toml")
    _write(tmp_path, REMOTE, provider="other", name="b.toml")
    with pytest.raises(InputError, match="remote_code 'demo-remote' \\[1\\]: duplicate id"):
        load_rulebook([tmp_path], "demo")


def test_user_remote_code_rules_are_collected_from_every_file(tmp_path):
    _write(tmp_path, REMOTE, provider="unrelated")
    assert [r.id for r in load_remote_code_rules([tmp_path])] == ["remote-code-required", "demo-remote"]
