"""What apiaudit knows about the model a job loads: frozen config facts, never weights."""

from __future__ import annotations

import enum

from apiaudit.infra.frozen import record



class ConfigFile(str, enum.Enum):
    """The Hugging Face model files whose facts are read."""

    CONFIG = "config.json"
    TOKENIZER_CONFIG = "tokenizer_config.json"
    GENERATION_CONFIG = "generation_config.json"


class ModelSource(str, enum.Enum):
    """How the user named the model."""

    DIRECTORY = "directory"  # --model DIR
    CONFIG_FILE = "config-file"  # --model DIR/config.json
    ARCHITECTURE = "architecture"  # --architecture NAME only


@record
class AutoMapEntry:
    """One `auto_map` entry: in `file`, the Auto class `auto_class` maps to custom code `targets`.

    `targets` holds the entry's non-null strings (a tokenizer's entry is a [slow, fast] pair).
    """

    file: ConfigFile
    auto_class: str
    targets: tuple[str, ...]


@record
class ModelFacts:
    """The model's architectures and custom-code map, as its config files state them.

    `text_architectures`/`text_model_type` come from a nested `text_config` (multimodal
    checkpoints keep their language model's config there). `architecture_override` is
    set when `--architecture NAME` stated the architecture.
    """

    architectures: tuple[str, ...] = ()
    model_type: str | None = None
    text_architectures: tuple[str, ...] = ()
    text_model_type: str | None = None
    auto_map: tuple[AutoMapEntry, ...] = ()
    path: str | None = None  # the model directory, when one was given
    source: ModelSource = ModelSource.ARCHITECTURE
    files_read: tuple[ConfigFile, ...] = ()

    def auto_map_for(self, auto_class: str, files: tuple[ConfigFile, ...] | None = None) -> AutoMapEntry | None:
        """The auto_map entry naming `auto_class` (in one of `files`, default any), or None."""
        for entry in self.auto_map:
            if entry.auto_class == auto_class and (files is None or entry.file in files):
                return entry
        return None

    @property
    def label(self) -> str:
        """How findings and messages name the model: its directory's name, else the architecture."""
        if self.path:
            return self.path.rstrip("/").rsplit("/", 1)[-1] or self.path
        return self.architectures[0] if self.architectures else "the model"
