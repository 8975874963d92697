"""The runner's CONFIG.toml: parsed, defaulted and checked before any stage starts.

Everything a user can get wrong in the file (an unknown key, a missing model, a layer
index the model does not have, more GPUs than the machine has) is reported here as one
`InputError` naming the file and the key, so no stage starts on a config that would
fail later. Reading the config needs neither torch nor speculators: the target model's
shape comes from its `config.json`, the GPU count from torch only when torch is there.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, field, fields
from pathlib import Path
from typing import Any

from apiaudit.errors import ConfigError
from apiaudit.infra.frozen import record
from apiaudit.infra.suggest import closest
from apiaudit.infra.tomlcompat import tomllib

STAGES = ("prepare", "extract", "vocab", "train")
BACKENDS = ("hf", "vllm", "vllm-server")
# The server line: `vllm serve` as a managed child, hidden states through its KV connector.
SERVER_BACKEND = "vllm-server"
SERVER_CLIENTS = ("auto", "speculators", "http")
DTYPES = ("float32", "bfloat16", "float16")
SCHEDULERS = ("linear", "cosine", "none")
# Dataset names speculators' `load_raw_dataset` knows besides local .json/.jsonl files.
KNOWN_DATASET_NAMES = ("sharegpt", "ultrachat")
# EAGLE-3 feeds the draft three auxiliary layers of the target (its `fc` takes 3 x hidden).
AUX_LAYER_COUNT = 3


@record
class ModelSection:
    path: Path


@record
class DataSection:
    conversations: str
    max_samples: int | None = None
    seq_length: int = 2048
    seed: int = 0
    num_proc: int = 1


@record
class ExtractSection:
    backend: str = "hf"
    # Auxiliary layers; the target's last layer is always captured after them.
    layers: tuple[int, ...] | None = None
    gpus: int = 1
    device: str = "auto"
    dtype: str = "bfloat16"
    batch_size: int = 8
    gpu_memory_utilization: float = 0.8


# speculators' default draft vocabulary; smaller targets keep their whole vocabulary.
DEFAULT_DRAFT_VOCAB_SIZE = 32000


@record
class VocabSection:
    draft_vocab_size: int = DEFAULT_DRAFT_VOCAB_SIZE


@record
class ServerSection:
    """How the server line starts `vllm serve` and talks to it (backend "vllm-server")."""

    # The interpreter of the server's environment: the server starts as
    # `PYTHON -m vllm.entrypoints.cli.main serve MODEL ...`; default: the runner's own.
    python: str = ""
    # Or the whole launcher, MODEL and the flags appended (e.g. ["vllm", "serve"]); wins over python.
    command: tuple[str, ...] = ()
    host: str = "127.0.0.1"
    port: int = 0  # 0: a free port
    startup_timeout_s: float = 900.0
    request_timeout_s: float = 120.0
    shutdown_grace_s: float = 30.0
    connector: str = "ExampleHiddenStatesConnector"
    num_speculative_tokens: int = 1
    extra_args: tuple[str, ...] = ()
    concurrency: int = 8
    # Who sends the requests: speculators' own vllm_client when importable ("auto"), or the
    # same HTTP contract spoken by the runner.
    client: str = "auto"


@record
class TrainSection:
    gpus: int = 1
    device: str = "auto"
    # CPU worker processes (gloo): the CPU counterpart of `gpus`, for a distributed run without GPUs.
    processes: int = 1
    epochs: int = 1
    lr: float = 1e-4
    num_layers: int = 1
    total_seq_len: int = 2048
    ttt_steps: int = 3
    ttt_step_loss_decay: float = 1.0
    norm_before_residual: bool = True
    noise_std: float = 0.05
    val_ratio: float = 0.1
    num_workers: int = 0
    scheduler: str = "linear"
    seed: int = 0
    hidden_states_dtype: str = "float32"
    # The server line's trainer environment (speculators 0.7+); default: the runner's own interpreter.
    python: str = ""
    # The server line: flags for speculators' trainer, passed as they are after the runner's own
    # (a choice the config has no key for, e.g. speculators 0.9's `--loss-implementation eager`).
    trainer_flags: tuple[str, ...] = ()

    @property
    def world_size(self) -> int:
        """Training processes: one per GPU, or `processes` on the CPU (the two never both exceed 1)."""
        return max(self.gpus, self.processes)


def world_size_of(train: dict[str, Any]) -> int:
    """The world size a train section's JSON form (a manifest's or an attempt's) asks for."""
    return max(int(train.get("gpus", 1)), int(train.get("processes", 1)))


@record
class PreflightSection:
    # The user's own job scripts or packages to audit against the installed speculators.
    consumers: tuple[str, ...] = ()
    fail_on: str = "error"
    rules_dirs: tuple[str, ...] = ()


@record
class TargetModel:
    """What the runner needs to know about the target model, read from its config.json."""

    num_layers: int
    hidden_size: int
    vocab_size: int
    model_type: str


@record
class RunConfig:
    source: Path  # the CONFIG.toml it was read from
    run_dir: Path
    model: ModelSection
    data: DataSection
    extract: ExtractSection
    vocab: VocabSection
    train: TrainSection
    preflight: PreflightSection
    target: TargetModel = field(compare=False)
    server: ServerSection = ServerSection()

    @property
    def server_line(self) -> bool:
        return self.extract.backend == SERVER_BACKEND

    @property
    def aux_layers(self) -> tuple[int, ...]:
        return self.extract.layers if self.extract.layers is not None else default_aux_layers(self.target.num_layers)

    @property
    def captured_layers(self) -> tuple[int, ...]:
        """Every layer whose output the extract stage stores: the auxiliary ones, then the last."""
        return (*self.aux_layers, self.target.num_layers - 1)

    def section(self, name: str) -> dict[str, Any]:
        """One section as plain JSON-able values (for manifests)."""
        value = getattr(self, name)
        return json.loads(json.dumps(asdict(value), default=str))


_SECTION_TYPES: dict[str, type] = {
    "model": ModelSection,
    "data": DataSection,
    "extract": ExtractSection,
    "vocab": VocabSection,
    "train": TrainSection,
    "preflight": PreflightSection,
    "server": ServerSection,
}
_TOP_LEVEL_KEYS = ("run_dir", *_SECTION_TYPES)


def default_aux_layers(num_layers: int) -> tuple[int, ...]:
    """speculators' own choice for the auxiliary layers (its vLLM generator's default, minus the last)."""
    return (2, num_layers // 2, num_layers - 3)


def load_config(path: str | Path, *, available_gpus: int | None = None) -> RunConfig:
    """Read and check CONFIG.toml; every problem is one InputError naming the file and key.

    `available_gpus` overrides the detected GPU count (tests; None detects).
    """
    source = Path(path).expanduser()
    if not source.is_file():
        raise ConfigError(f"no such config file: {path}")
    try:
        raw = tomllib.loads(source.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    base = source.resolve().parent
    where = source.name

    _reject_unknown(raw, _TOP_LEVEL_KEYS, where, "")
    for name in ("model", "data"):
        if name not in raw:
            raise ConfigError(f"{where}: missing section [{name}]")
    sections = {name: _build_section(name, raw.get(name, {}), where) for name in _SECTION_TYPES}

    model_path = _resolve(base, str(sections["model"]["path"]))
    sections["model"]["path"] = model_path
    run_dir = _resolve(base, str(raw.get("run_dir", "run")))

    conversations = str(sections["data"]["conversations"])
    if conversations.endswith((".json", ".jsonl")):
        conversations_path = _resolve(base, conversations)
        if not conversations_path.is_file():
            raise ConfigError(f"{where}: data.conversations: no such file: {conversations_path}")
        conversations = str(conversations_path)
    elif conversations not in KNOWN_DATASET_NAMES:
        raise ConfigError(
            f"{where}: data.conversations must be a .json/.jsonl file or one of "
            f"{', '.join(KNOWN_DATASET_NAMES)}, not {conversations!r}"
        )
    sections["data"]["conversations"] = conversations

    for key in ("layers",):
        if sections["extract"].get(key) is not None:
            sections["extract"][key] = tuple(sections["extract"][key])
    for key in ("consumers", "rules_dirs"):
        sections["preflight"][key] = tuple(sections["preflight"].get(key, ()))
    for key in ("command", "extra_args"):
        sections["server"][key] = tuple(sections["server"].get(key, ()))
    for section, key in (("server", "python"), ("train", "python")):
        if sections[section].get(key):
            sections[section][key] = _interpreter(base, sections[section][key])

    target = read_target_model(model_path, where)
    sections["vocab"].setdefault("draft_vocab_size", min(DEFAULT_DRAFT_VOCAB_SIZE, target.vocab_size))
    config = RunConfig(
        source=source.resolve(),
        run_dir=run_dir,
        model=ModelSection(**sections["model"]),
        data=DataSection(**sections["data"]),
        extract=ExtractSection(**sections["extract"]),
        vocab=VocabSection(**sections["vocab"]),
        train=TrainSection(**sections["train"]),
        preflight=PreflightSection(**sections["preflight"]),
        target=target,
        server=ServerSection(**sections["server"]),
    )
    _check_values(config, where, available_gpus if available_gpus is not None else detect_gpus())
    _check_server_line(config, where, set(raw))
    return config


def read_target_model(model_path: Path, where: str = "config") -> TargetModel:
    config_file = model_path / "config.json"
    if not model_path.is_dir():
        raise ConfigError(f"{where}: model.path: no such model directory: {model_path}")
    if not config_file.is_file():
        raise ConfigError(f"{where}: model.path: {model_path} has no config.json (not a Hugging Face model folder)")
    try:
        model_config = json.loads(config_file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: model.path: {config_file} is not valid JSON: {exc}") from None
    # Multimodal checkpoints keep the language model's shape under text_config.
    text = model_config.get("text_config", model_config)
    try:
        return TargetModel(
            num_layers=int(text["num_hidden_layers"]),
            hidden_size=int(text["hidden_size"]),
            vocab_size=int(text["vocab_size"]),
            model_type=str(text.get("model_type", model_config.get("model_type", ""))),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: model.path: {config_file} lacks {exc} (num_hidden_layers, hidden_size, vocab_size)") from None


def detect_gpus() -> int:
    """CUDA devices this machine has; 0 when torch is absent or has no CUDA."""
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _build_section(name: str, raw: Any, where: str) -> dict[str, Any]:
    section_type = _SECTION_TYPES[name]
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: [{name}] must be a table")
    known = {f.name: f for f in fields(section_type)}
    _reject_unknown(raw, tuple(known), where, f"{name}.")
    required = [f.name for f in fields(section_type) if _has_no_default(f)]
    for key in required:
        if key not in raw:
            raise ConfigError(f"{where}: missing required key {name}.{key}")
    values: dict[str, Any] = {}
    for key, value in raw.items():
        values[key] = _check_type(f"{name}.{key}", value, known[key], where)
    return values


def _has_no_default(f) -> bool:
    from dataclasses import MISSING

    return f.default is MISSING and f.default_factory is MISSING


def _check_type(key: str, value: Any, spec, where: str) -> Any:
    annotation = str(spec.type)
    wants_list = "tuple" in annotation
    wants_bool = annotation.startswith("bool")
    wants_int = annotation.startswith("int")
    wants_float = annotation.startswith("float")
    wants_str = annotation.startswith("str") or annotation.startswith("Path")
    if wants_list:
        item_type = int if "int" in annotation else str
        if not isinstance(value, list) or not all(isinstance(v, item_type) and not isinstance(v, bool) for v in value):
            raise ConfigError(f"{where}: {key} must be a list of {item_type.__name__}s, not {value!r}")
        return value
    if wants_bool and not isinstance(value, bool):
        raise ConfigError(f"{where}: {key} must be true or false, not {value!r}")
    if wants_int and (not isinstance(value, int) or isinstance(value, bool)):
        raise ConfigError(f"{where}: {key} must be an integer, not {value!r}")
    if wants_float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: {key} must be a number, not {value!r}")
        return float(value)
    if wants_str and not isinstance(value, str):
        raise ConfigError(f"{where}: {key} must be a string, not {value!r}")
    return value


def _reject_unknown(raw: dict[str, Any], known: tuple[str, ...], where: str, prefix: str) -> None:
    for key in raw:
        if key not in known:
            match = closest(key, known)
            why = f" (did you mean {prefix}{match}?)" if match else f" (known: {', '.join(known)})"
            raise ConfigError(f"{where}: unknown key {prefix}{key}{why}")


def _resolve(base: Path, value: str) -> Path:
    path = Path(value).expanduser()
    return (path if path.is_absolute() else base / path).resolve()


def _interpreter(base: Path, value: str) -> str:
    """A configured interpreter: a path (relative to the config) or a name looked up on PATH.

    Links are kept: a virtual environment's `bin/python` is a link to the base interpreter,
    and only through the link does it start in that environment.
    """
    if "/" not in value:
        return value
    path = Path(value).expanduser()
    return os.path.normpath(path if path.is_absolute() else base / path)


def _check_server_line(config: RunConfig, where: str, raw_sections: set[str]) -> None:
    server, train = config.server, config.train
    if not config.server_line:
        if "server" in raw_sections:
            raise ConfigError(f"{where}: [server] applies to extract.backend = \"{SERVER_BACKEND}\" only")
        for name, setting in (("python", train.python), ("trainer_flags", train.trainer_flags)):
            if setting:
                raise ConfigError(f"{where}: train.{name} applies to extract.backend = \"{SERVER_BACKEND}\" only "
                                 "(the other backends train in the runner's own process)")
        return
    if server.client not in SERVER_CLIENTS:
        raise ConfigError(f"{where}: server.client must be one of {', '.join(SERVER_CLIENTS)}, not {server.client!r}")
    if not 0 <= server.port <= 65535:
        raise ConfigError(f"{where}: server.port must be 0 (a free port) or a port number, not {server.port}")
    for key, value in (("server.startup_timeout_s", server.startup_timeout_s),
                       ("server.request_timeout_s", server.request_timeout_s),
                       ("server.concurrency", server.concurrency),
                       ("server.num_speculative_tokens", server.num_speculative_tokens)):
        if value <= 0:
            raise ConfigError(f"{where}: {key} must be positive, got {value}")
    if server.shutdown_grace_s < 0:
        raise ConfigError(f"{where}: server.shutdown_grace_s must not be negative")
    if train.val_ratio <= 0.0:
        raise ConfigError(f"{where}: train.val_ratio must be above 0 on the server line "
                         "(speculators' trainer splits the data by a train ratio below 1)")
    if train.processes > 1:
        raise ConfigError(f"{where}: train.processes applies to the hf and vllm backends; "
                         "speculators' own trainer runs on GPUs (train.gpus)")


def _check_values(config: RunConfig, where: str, available_gpus: int) -> None:
    target = config.target
    extract, train, data, vocab = config.extract, config.train, config.data, config.vocab

    if extract.backend not in BACKENDS:
        raise ConfigError(f"{where}: extract.backend must be one of {', '.join(BACKENDS)}, not {extract.backend!r}")
    if extract.dtype not in DTYPES:
        raise ConfigError(f"{where}: extract.dtype must be one of {', '.join(DTYPES)}, not {extract.dtype!r}")
    if train.hidden_states_dtype not in DTYPES:
        raise ConfigError(f"{where}: train.hidden_states_dtype must be one of {', '.join(DTYPES)}")
    if train.scheduler not in SCHEDULERS:
        raise ConfigError(f"{where}: train.scheduler must be one of {', '.join(SCHEDULERS)}, not {train.scheduler!r}")

    layers = config.aux_layers
    if len(layers) != AUX_LAYER_COUNT:
        raise ConfigError(
            f"{where}: extract.layers must name {AUX_LAYER_COUNT} auxiliary layers (EAGLE-3 reads three), "
            f"got {len(layers)}: {list(layers)}"
        )
    for layer in layers:
        if not 0 <= layer < target.num_layers:
            origin = "extract.layers" if extract.layers is not None else "the default extract.layers"
            raise ConfigError(
                f"{where}: {origin}: layer index {layer} out of range: {config.model.path.name} has "
                f"{target.num_layers} layers (0..{target.num_layers - 1})"
                + ("" if extract.layers is not None else "; set extract.layers for a model this small")
            )
    if len(set(layers)) != len(layers):
        raise ConfigError(
            f"{where}: extract.layers repeats a layer: {list(layers)}"
            + ("" if extract.layers is not None else f" (the default for {target.num_layers} layers); set extract.layers")
        )

    for key, value in (
        ("data.seq_length", data.seq_length),
        ("data.num_proc", data.num_proc),
        ("extract.batch_size", extract.batch_size),
        ("vocab.draft_vocab_size", vocab.draft_vocab_size),
        ("train.epochs", train.epochs),
        ("train.num_layers", train.num_layers),
        ("train.total_seq_len", train.total_seq_len),
        ("train.ttt_steps", train.ttt_steps),
        ("train.processes", train.processes),
    ):
        if value < 1:
            raise ConfigError(f"{where}: {key} must be at least 1, got {value}")
    if data.max_samples is not None and data.max_samples < 1:
        raise ConfigError(f"{where}: data.max_samples must be at least 1, got {data.max_samples}")
    if vocab.draft_vocab_size > target.vocab_size:
        raise ConfigError(
            f"{where}: vocab.draft_vocab_size {vocab.draft_vocab_size} exceeds the target's vocabulary "
            f"({target.vocab_size} tokens)"
        )
    if not 0.0 <= train.val_ratio < 1.0:
        raise ConfigError(f"{where}: train.val_ratio must be in [0, 1), got {train.val_ratio}")

    for key, device in (("extract.device", extract.device), ("train.device", train.device)):
        if device not in ("auto", "cpu", "cuda"):
            raise ConfigError(f"{where}: {key} must be auto, cpu or cuda, not {device!r}")
    for key, gpus in (("extract.gpus", extract.gpus), ("train.gpus", train.gpus)):
        if gpus < 1:
            raise ConfigError(f"{where}: {key} must be at least 1, got {gpus}")
        device = extract.device if key.startswith("extract") else train.device
        needs_gpus = gpus > 1 or device == "cuda" or (key == "extract.gpus" and extract.backend == "vllm")
        if needs_gpus and gpus > available_gpus:
            raise ConfigError(
                f"{where}: {key} = {gpus} but this machine has {available_gpus} GPU{'s' if available_gpus != 1 else ''}"
            )
    if extract.backend == "hf" and extract.gpus > 1:
        raise ConfigError(
            f"{where}: extract.gpus = {extract.gpus} needs backend \"vllm\" (tensor parallelism); "
            "the hf backend runs on one device"
        )
    if train.gpus > 1 and train.device == "cpu":
        raise ConfigError(
            f"{where}: train.gpus = {train.gpus} with train.device = \"cpu\": several GPUs need CUDA "
            "(several CPU processes: train.processes)"
        )
    if train.processes > 1 and train.device != "cpu":
        raise ConfigError(
            f"{where}: train.processes = {train.processes} needs train.device = \"cpu\" "
            "(on GPUs the world size is train.gpus)"
        )
    if config.preflight.fail_on not in ("error", "warning", "info", "never"):
        raise ConfigError(f"{where}: preflight.fail_on must be error, warning, info or never")
