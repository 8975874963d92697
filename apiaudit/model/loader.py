"""Read a model's config facts from a local model directory or config.json (never weights).

Every problem is one InputError line: a missing path, a config.json that is absent or not
JSON, or one without `architectures` when no `--architecture` states it.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, overload

from apiaudit.errors import InputError, NotFoundError
from apiaudit.model.config import AutoMapEntry, ConfigFile, ModelFacts, ModelSource


def load_model(path: str | Path | None = None, architecture: str | None = None, *,
               require_architectures: bool = True) -> ModelFacts | None:
    """ModelFacts for `--model PATH` and/or `--architecture NAME`; None when neither is given.

    PATH is a model directory or its config.json. `architecture` overrides the config's
    architectures (it states what the provider will load). A config without architectures
    is an error unless `require_architectures` is false (the runner's own model check
    reads other fields; then only the model-facing rules use it).
    """
    if path is None and not architecture:
        return None
    if architecture is not None and not architecture.strip():
        raise InputError("--architecture is empty: name a model class, e.g. LlamaForCausalLM")
    if path is None:
        assert architecture is not None  # the first test returned when both are missing
        return ModelFacts(architectures=(architecture.strip(),), source=ModelSource.ARCHITECTURE)
    facts = _from_path(Path(path))
    if architecture:
        facts = replace(facts, architectures=(architecture.strip(),))
    if not facts.architectures and require_architectures:
        raise InputError(f"{_config_of(Path(path))}: has no \"architectures\" list; name the class with --architecture NAME")
    return facts


def _config_of(path: Path) -> Path:
    return path / ConfigFile.CONFIG.value if path.is_dir() else path


def _from_path(path: Path) -> ModelFacts:
    if not path.exists():
        raise NotFoundError(f"--model {path}: no such model directory or config.json")
    if path.is_dir():
        directory, source = path, ModelSource.DIRECTORY
        config_path = path / ConfigFile.CONFIG.value
        if not config_path.is_file():
            raise NotFoundError(f"--model {path}: has no config.json (not a Hugging Face model directory)")
    else:
        directory, source, config_path = path.parent, ModelSource.CONFIG_FILE, path
    config = _read_json(config_path, required=True)
    files_read = [ConfigFile.CONFIG]
    auto_map = list(_auto_map(config, ConfigFile.CONFIG))
    for extra in (ConfigFile.TOKENIZER_CONFIG, ConfigFile.GENERATION_CONFIG):
        data = _read_json(directory / extra.value, required=False)
        if data is not None:
            files_read.append(extra)
            auto_map.extend(_auto_map(data, extra))
    text = config.get("text_config")
    text = text if isinstance(text, dict) else {}
    return ModelFacts(
        architectures=_strings(config.get("architectures"), config_path, "architectures"),
        model_type=_string(config.get("model_type")),
        text_architectures=_strings(text.get("architectures"), config_path, "text_config.architectures"),
        text_model_type=_string(text.get("model_type")),
        auto_map=tuple(auto_map),
        path=str(directory),
        source=source,
        files_read=tuple(files_read),
    )


@overload
def _read_json(path: Path, *, required: Literal[True]) -> dict[str, Any]: ...
@overload
def _read_json(path: Path, *, required: bool) -> dict[str, Any] | None: ...
def _read_json(path: Path, *, required: bool) -> dict[str, Any] | None:
    if not path.is_file():
        if required:
            raise NotFoundError(f"{path}: no such file")
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: is not a JSON object")
    return data


def _strings(value: Any, path: Path, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{path}: \"{key}\" must be a list of class names")
    return tuple(value)


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _auto_map(data: dict[str, Any], file: ConfigFile):
    auto_map = data.get("auto_map")
    if not isinstance(auto_map, dict):
        return
    for auto_class, target in auto_map.items():
        items = target if isinstance(target, list) else [target]
        targets = tuple(t for t in items if isinstance(t, str) and t)
        if targets:
            yield AutoMapEntry(file=file, auto_class=str(auto_class), targets=targets)
