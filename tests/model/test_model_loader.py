"""Reading a model's config facts: directories, config.json paths, --architecture, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apiaudit.errors import InputError
from apiaudit.model import AutoMapEntry, ConfigFile, ModelFacts, ModelSource, load_model

MODELS = Path(__file__).resolve().parents[2] / "fixtures" / "models"


def test_neither_option_is_no_model():
    assert load_model(None, None) is None


def test_kimi_directory_reads_architectures_text_config_and_both_auto_maps():
    facts = load_model(MODELS / "kimi-k2.5")
    assert facts.architectures == ("KimiK25ForConditionalGeneration",)
    assert facts.model_type == "kimi_k25"
    assert facts.text_architectures == ("DeepseekV3ForCausalLM",)
    assert facts.text_model_type == "deepseek_v3"
    assert facts.source is ModelSource.DIRECTORY
    assert facts.files_read == (ConfigFile.CONFIG, ConfigFile.TOKENIZER_CONFIG)
    assert facts.auto_map_for("AutoTokenizer") == AutoMapEntry(
        ConfigFile.TOKENIZER_CONFIG, "AutoTokenizer", ("tokenization_kimi.TikTokenTokenizer",)
    )
    assert facts.auto_map_for("AutoModelForCausalLM", (ConfigFile.CONFIG,)).targets == (
        "modeling_kimi_k25.KimiK25ForConditionalGeneration",
    )
    assert facts.auto_map_for("AutoTokenizer", (ConfigFile.CONFIG,)) is None
    assert facts.label == "kimi-k2.5"


def test_llama_has_no_custom_code_and_no_text_config():
    facts = load_model(MODELS / "llama-3.1-8b")
    assert (facts.architectures, facts.model_type, facts.text_architectures, facts.auto_map) == (
        ("LlamaForCausalLM",), "llama", (), ()
    )


def test_a_config_json_path_reads_its_directory_too():
    facts = load_model(MODELS / "kimi-k2.5" / "config.json")
    assert facts.source is ModelSource.CONFIG_FILE
    assert facts.path == str(MODELS / "kimi-k2.5")
    assert facts.auto_map_for("AutoTokenizer") is not None


def test_architecture_alone_and_as_override():
    assert load_model(architecture="LlamaForCausalLM") == ModelFacts(("LlamaForCausalLM",), source=ModelSource.ARCHITECTURE)
    overridden = load_model(MODELS / "kimi-k2.5", "DeepseekV3ForCausalLM")
    assert overridden.architectures == ("DeepseekV3ForCausalLM",)
    assert overridden.auto_map_for("AutoTokenizer") is not None  # the directory's facts stay


def test_generation_config_is_read_when_present(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["X"]}))
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": 2}))
    assert load_model(tmp_path).files_read == (ConfigFile.CONFIG, ConfigFile.GENERATION_CONFIG)


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda d: None, "has no config.json"),
        (lambda d: (d / "config.json").write_text("{not json"), "not valid JSON"),
        (lambda d: (d / "config.json").write_text("[1, 2]"), "is not a JSON object"),
        (lambda d: (d / "config.json").write_text('{"model_type": "x"}'), 'has no "architectures"'),
        (lambda d: (d / "config.json").write_text('{"architectures": "X"}'), "must be a list of class names"),
        (
            lambda d: ((d / "config.json").write_text('{"architectures": ["X"]}'), (d / "tokenizer_config.json").write_text("{")),
            "tokenizer_config.json: not valid JSON",
        ),
    ],
)
def test_bad_input_is_one_line(tmp_path, setup, message):
    setup(tmp_path)
    with pytest.raises(InputError) as err:
        load_model(tmp_path)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_missing_path_and_empty_architecture(tmp_path):
    with pytest.raises(InputError, match="no such model directory"):
        load_model(tmp_path / "nope")
    with pytest.raises(InputError, match="--architecture is empty"):
        load_model(architecture=" ")


def test_architectures_may_be_optional_for_the_runner(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "llama"}')
    assert load_model(tmp_path, require_architectures=False).architectures == ()
