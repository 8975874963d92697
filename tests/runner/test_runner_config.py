"""A bad runner config is one clear error before any stage starts (no torch needed)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from apiaudit.cli.run import run_command
from apiaudit.errors import InputError
from apiaudit.runner.config import default_aux_layers, load_config

CONVERSATIONS = Path(__file__).resolve().parents[2] / "fixtures" / "runner" / "conversations.jsonl"


@pytest.fixture
def model_dir(tmp_path) -> Path:
    """Only what the config check reads: the model's config.json (8 layers, vocabulary 1000)."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(
        json.dumps({"model_type": "llama", "num_hidden_layers": 8, "hidden_size": 64, "vocab_size": 1000})
    )
    return model


def _config(tmp_path: Path, model: Path, body: str = "", *, top: str = "") -> Path:
    path = tmp_path / "run.toml"
    path.write_text(
        f'{top}\n[model]\npath = "{model}"\n\n[data]\nconversations = "{CONVERSATIONS}"\n{body}', encoding="utf-8"
    )
    return path


def test_minimal_config_gets_speculators_defaults(tmp_path, model_dir):
    config = load_config(_config(tmp_path, model_dir), available_gpus=0)
    assert config.aux_layers == default_aux_layers(8) == (2, 4, 5)
    assert config.captured_layers == (2, 4, 5, 7)
    assert config.extract.backend == "hf"
    assert config.run_dir == (tmp_path / "run").resolve()
    assert config.target.vocab_size == 1000


@pytest.mark.parametrize(
    ("body", "top", "expected"),
    [
        ("[train]\nepoch = 3\n", "", r"unknown key train\.epoch \(did you mean train\.epochs\?\)"),
        ("", "rundir = 'x'", r"unknown key rundir"),
        ("[extract]\nlayers = [1, 2, 8]\n", "", r"layer index 8 out of range: model has 8 layers \(0\.\.7\)"),
        ("[extract]\nlayers = [1, 2]\n", "", r"extract\.layers must name 3 auxiliary layers"),
        ("[train]\ngpus = 2\n", "", r"train\.gpus = 2 but this machine has 0 GPUs"),
        ('[extract]\nbackend = "vllm"\n', "", r"extract\.gpus = 1 but this machine has 0 GPUs"),
        ('[extract]\nbackend = "tgi"\n', "", r"extract\.backend must be one of hf, vllm"),
        ("[vocab]\ndraft_vocab_size = 4096\n", "", r"exceeds the target's vocabulary \(1000 tokens\)"),
        ("[train]\nlr = 'fast'\n", "", r"train\.lr must be a number"),
        ("[train]\nprocesses = 2\n", "", r'train\.processes = 2 needs train\.device = "cpu"'),
        ('[train]\nprocesses = 0\ndevice = "cpu"\n', "", r"train\.processes must be at least 1"),
    ],
)
def test_bad_config_is_one_clear_error(tmp_path, model_dir, body, top, expected):
    with pytest.raises(InputError, match=expected):
        load_config(_config(tmp_path, model_dir, body, top=top), available_gpus=0)


def test_missing_model_path(tmp_path):
    with pytest.raises(InputError, match=r"model\.path: no such model directory: .*nowhere"):
        load_config(_config(tmp_path, tmp_path / "nowhere"), available_gpus=0)


def test_small_model_needs_explicit_layers(tmp_path, model_dir):
    (model_dir / "config.json").write_text(
        json.dumps({"num_hidden_layers": 2, "hidden_size": 64, "vocab_size": 1000})
    )
    with pytest.raises(InputError, match=r"default extract\.layers.*set extract\.layers"):
        load_config(_config(tmp_path, model_dir), available_gpus=0)


def test_missing_conversations_file(tmp_path, model_dir):
    path = tmp_path / "run.toml"
    path.write_text(f'[model]\npath = "{model_dir}"\n[data]\nconversations = "gone.jsonl"\n')
    with pytest.raises(InputError, match=r"data\.conversations: no such file"):
        load_config(path, available_gpus=0)


def test_enough_gpus_pass(tmp_path, model_dir):
    config = load_config(_config(tmp_path, model_dir, "[train]\ngpus = 4\n"), available_gpus=4)
    assert config.train.gpus == 4


def test_several_gpus_on_the_cpu_point_to_processes(tmp_path, model_dir):
    with pytest.raises(InputError, match=r"several GPUs need CUDA \(several CPU processes: train\.processes\)"):
        load_config(_config(tmp_path, model_dir, '[train]\ngpus = 2\ndevice = "cpu"\n'), available_gpus=2)


def test_world_size_is_gpus_or_cpu_processes(tmp_path, model_dir):
    gpus = load_config(_config(tmp_path, model_dir, "[train]\ngpus = 4\n"), available_gpus=4)
    cpu = load_config(_config(tmp_path, model_dir, '[train]\nprocesses = 3\ndevice = "cpu"\n'), available_gpus=0)
    single = load_config(_config(tmp_path, model_dir), available_gpus=0)
    assert (gpus.train.world_size, cpu.train.world_size, single.train.world_size) == (4, 3, 1)


def test_cli_bad_config_starts_nothing(tmp_path, model_dir):
    path = _config(tmp_path, model_dir, "[extract]\nlayers = [0, 1, 99]\n")
    result = CliRunner().invoke(run_command, [str(path)])
    assert result.exit_code == 2
    assert "layer index 99 out of range" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("example", sorted((CONVERSATIONS.parent / "examples").glob("*.toml")), ids=lambda p: p.name)
def test_example_configs_use_only_known_keys(example):
    # The examples name models that are not here: every key is accepted, then the model is missing.
    with pytest.raises(InputError, match=r"model\.path: no such model directory"):
        load_config(example, available_gpus=8)


SERVER = '[extract]\nbackend = "vllm-server"\n'


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('[server]\nport = 8000\n', r'\[server\] applies to extract\.backend = "vllm-server" only'),
        ('[train]\npython = "/opt/x/bin/python"\n', r'train\.python applies to extract\.backend = "vllm-server" only'),
        ('[train]\ntrainer_flags = ["--x"]\n', r'train\.trainer_flags applies to extract\.backend = "vllm-server" only'),
        (SERVER + '[server]\nclient = "grpc"\n', r"server\.client must be one of auto, speculators, http"),
        (SERVER + "[server]\nport = 70000\n", r"server\.port must be 0 \(a free port\) or a port number"),
        (SERVER + "[server]\nstartup_timeout_s = 0\n", r"server\.startup_timeout_s must be positive"),
        (SERVER + "[server]\ncommand = 'vllm serve'\n", r"server\.command must be a list of strs"),
        (SERVER + "[server]\nextra_arg = ['--x']\n", r"unknown key server\.extra_arg \(did you mean server\.extra_args\?\)"),
        (SERVER + "[train]\nval_ratio = 0.0\n", r"train\.val_ratio must be above 0 on the server line"),
        (SERVER + '[train]\nprocesses = 2\ndevice = "cpu"\n', r"speculators' own trainer runs on GPUs"),
    ],
)
def test_bad_server_line_config_is_one_clear_error(tmp_path, model_dir, body, expected):
    with pytest.raises(InputError, match=expected):
        load_config(_config(tmp_path, model_dir, body), available_gpus=0)


def test_server_line_config(tmp_path, model_dir):
    """No GPU is needed to configure it (the server may be any command); interpreters resolve against the file."""
    body = SERVER + ('[server]\npython = "envs/serve/bin/python"\nextra_args = ["--enforce-eager"]\n'
                     '[train]\npython = "python3"\n')
    config = load_config(_config(tmp_path, model_dir, body), available_gpus=0)
    assert config.server_line and config.server.python == str(tmp_path / "envs" / "serve" / "bin" / "python")
    assert config.train.python == "python3", "a bare name is looked up on PATH"
    # A virtual environment's interpreter is a link: it is kept, not resolved to the base Python.
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    (tmp_path / "venv" / "bin" / "python").symlink_to(sys.executable)
    linked = load_config(_config(tmp_path, model_dir, SERVER + '[train]\npython = "venv/bin/python"\n'),
                         available_gpus=0)
    assert linked.train.python == str(tmp_path / "venv" / "bin" / "python")
    assert config.server.extra_args == ("--enforce-eager",) and config.server.port == 0
    assert config.server.connector == "ExampleHiddenStatesConnector" and config.server.client == "auto"
