"""`explain` on model-attribute-missing: what changed is said, as for attribute-missing (cache entries, no network)."""

from __future__ import annotations

import shutil
from pathlib import Path

from matrix_toy import seal_entry

from apiaudit.matrix.explain import MODEL_CLASSES_ADDED, RENAMED_ATTRIBUTE, explain
from apiaudit.matrix.render import render_explain
from apiaudit.sources import cache

REPO = Path(__file__).resolve().parents[2]
PROVIDERS = REPO / "fixtures" / "providers"
CONSUMER = str(REPO / "fixtures" / "consumers" / "modeluse")


def _registry(*classes: tuple[str, str]) -> str:
    """A registry.py of modelhub listing only these (module, class) pairs."""
    entries = "".join(f"    {cls!r}: ({module!r}, {cls!r}),\n" for module, cls in classes)
    return (
        f"_HUB_MODELS = {{\n{entries}}}\n\n\nclass _ModelRegistry:\n    def __init__(self, models):\n"
        "        self.models = dict(models)\n\n\nModelRegistry = _ModelRegistry(_HUB_MODELS)\n"
    )


def _write_registry(pkg: Path, *classes: tuple[str, str]) -> None:
    (pkg / "models" / "registry.py").write_text(_registry(*classes), encoding="utf-8")


DENSE = ("dense", "DenseForCausalLM")
MOE = ("moe", "MoeForCausalLM")


def _publish(cache_dir: Path, version: str, edit=None) -> None:
    """modelhub_v1 as the cache entry of modelhub VERSION, after `edit(package_dir)`."""
    entry = cache.entry_dir(cache_dir, "modelhub", version)
    shutil.copytree(PROVIDERS / "modelhub_v1" / "modelhub", entry / "modelhub")
    if edit is not None:
        edit(entry / "modelhub")
    seal_entry(entry, "modelhub", version)


def _model_attribute_explanation(cache_dir: Path):
    result = explain(CONSUMER, "modelhub==0.2.0", since="0.1.0", cache_dir=cache_dir, rules_dirs=[PROVIDERS],
                     available=("0.1.0", "0.2.0"))  # fmt: skip
    (found,) = [e for e in result.explanations if e.finding.rule == "model-attribute-missing"]
    return result, found


def test_classes_registered_without_the_attribute_are_what_changed(tmp_path) -> None:
    # 0.1.0 registers only DenseForCausalLM, which has get_input_embeddings; 0.2.0 adds the MoE
    # and wrapper models, which lack it.
    _publish(tmp_path, "0.1.0", lambda pkg: _write_registry(pkg, DENSE))
    _publish(tmp_path, "0.2.0")
    result, found = _model_attribute_explanation(tmp_path)
    assert (found.last_without, found.introduced_in) == ("0.1.0", "0.2.0")
    assert found.change is not None and found.change.kind is MODEL_CLASSES_ADDED
    assert found.change.old_name == "get_input_embeddings"
    assert found.change.note == (
        "modelhub 0.2.0 registers MoeForCausalLM, MoeV3ForCausalLM, WrapperForConditionalGeneration, which lack 'get_input_embeddings'"
    )
    assert "change  model-classes-added: get_input_embeddings (modelhub 0.2.0 registers MoeForCausalLM" in render_explain(result, "table")


def test_an_attribute_renamed_on_a_class_the_object_can_be_is_what_changed(tmp_path) -> None:
    # Both register the dense and the MoE model; 0.1.0's MoE model has get_input_embeddings too,
    # 0.2.0's renamed it embed_input_ids.
    def moe_has_it(pkg: Path, name: str) -> None:
        _write_registry(pkg, DENSE, MOE)
        moe = pkg / "models" / "moe.py"
        text = moe.read_text(encoding="utf-8")
        head, _, tail = text.partition("class MoeForCausalLM(")
        body, newline, rest = tail.partition("\n")
        method = f"\n    def {name}(self, input_ids):\n        return input_ids\n"
        moe.write_text(f"{head}class MoeForCausalLM({body}{newline}{method}{rest}", encoding="utf-8")

    _publish(tmp_path, "0.1.0", lambda pkg: moe_has_it(pkg, "get_input_embeddings"))
    _publish(tmp_path, "0.2.0", lambda pkg: moe_has_it(pkg, "embed_input_ids"))
    _, found = _model_attribute_explanation(tmp_path)
    assert found.change is not None
    assert (found.change.kind, found.change.old_name, found.change.new_name) == (RENAMED_ATTRIBUTE, "get_input_embeddings", "embed_input_ids")
    assert found.change.symbol.endswith("MoeForCausalLM")
