"""ModelFacts: plain frozen values (safe to pickle into worker processes and caches)."""

from __future__ import annotations

import dataclasses
import pickle

from apiaudit.model import AutoMapEntry, ConfigFile, ModelFacts, ModelSource


def test_frozen_and_round_trips_through_pickle():
    facts = ModelFacts(
        architectures=("A",), auto_map=(AutoMapEntry(ConfigFile.CONFIG, "AutoConfig", ("c.C",)),),
        path="/models/m", source=ModelSource.DIRECTORY,
    )  # fmt: skip
    assert pickle.loads(pickle.dumps(facts)) == facts
    assert dataclasses.is_dataclass(facts)
    try:
        facts.architectures = ()  # type: ignore[misc]
    except dataclasses.FrozenInstanceError:
        pass
    else:  # pragma: no cover
        raise AssertionError("ModelFacts must be frozen")


def test_label_names_the_directory_else_the_architecture():
    assert ModelFacts(("A",), path="/x/kimi-k2.5/").label == "kimi-k2.5"
    assert ModelFacts(("LlamaForCausalLM",)).label == "LlamaForCausalLM"
    assert ModelFacts().label == "the model"
