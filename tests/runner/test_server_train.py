"""The server line's train stage: speculators' own trainer under `[train] python` (no torch needed here).

What runs is speculators' trainer (0.8+: `speculators.train.cli.main`; 0.7: the calls of
its scripts/train.py, apiaudit/trainer_env/speculators_train_0_7.py), so CI checks the
command line the stage builds, its refusal of a trainer environment below 0.7, and (with
the network) that the scripts it runs match the speculators 0.7 and 0.9 wheels.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest

from apiaudit.audit import scan
from apiaudit.errors import InputError
from apiaudit.findings import Severity
from apiaudit.gate.layers import format_finding
from apiaudit.runner.config import load_config
from apiaudit.runner.context import StageContext
from apiaudit.runner.progress import QuietReporter
from apiaudit.runner.server_train import ENTRY, ENTRY_0_7, run_server_train, trainer_argv, trainer_scripts
from apiaudit.runner.train import train_config

CONVERSATIONS = Path(__file__).resolve().parents[2] / "fixtures" / "runner" / "conversations.jsonl"


def _config(tmp_path: Path, *, backend: str = "vllm-server", train: str = "", gpus: int = 0):
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text(json.dumps(
        {"model_type": "llama", "num_hidden_layers": 8, "hidden_size": 64, "vocab_size": 1000}))
    path = tmp_path / "run.toml"
    path.write_text(f'[model]\npath = "{model}"\n[data]\nconversations = "{CONVERSATIONS}"\n'
                    f'[extract]\nbackend = "{backend}"\nlayers = [1, 3, 5]\n[vocab]\ndraft_vocab_size = 500\n'
                    f"[train]\nepochs = 3\nval_ratio = 0.25\n{train}", encoding="utf-8")
    return load_config(path, available_gpus=gpus)


def _context(config) -> StageContext:
    return StageContext(config=config, stage="train", reporter=QuietReporter(), resume=False,
                        log=logging.getLogger("test"))


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_trainer_command_reads_what_extract_and_vocab_wrote(tmp_path):
    config = _config(tmp_path)
    ctx = _context(config)
    argv = trainer_argv(config, ctx, ctx.stage_dir / "checkpoints")
    assert argv[:2] == [sys.executable, str(ENTRY)]
    run = config.run_dir
    assert _flag(argv, "--data-path") == str(run / "extract" / "data")
    assert _flag(argv, "--hidden-states-path") == str(run / "extract" / "hidden_states")
    assert _flag(argv, "--on-missing") == "raise"
    assert _flag(argv, "--d2t-path") == str(run / "vocab" / "d2t.npy")
    assert _flag(argv, "--save-path") == str(run / "train" / "checkpoints")
    # Layers 1, 3, 5 are vLLM's ids 2, 4, 6: the ids the server extracted them by.
    start = argv.index("--target-layer-ids") + 1
    assert argv[start:start + 3] == ["2", "4", "6"] and argv[start + 3].startswith("--")
    assert _flag(argv, "--train-data-ratio") == "0.75" and _flag(argv, "--epochs") == "3"
    assert "--norm-before-residual" in argv and _flag(argv, "--draft-vocab-size") == "500"
    # Noise augmentation only where the trainer has it (speculators 0.9 dropped --noise-std).
    assert argv[argv.index("--if-known"):] == ["--if-known", "--noise-std", "0.05"]


def test_trainer_flags_from_the_config_pass_as_they_are(tmp_path):
    config = _config(tmp_path, train='trainer_flags = ["--loss-implementation", "eager"]\n')
    ctx = _context(config)
    argv = trainer_argv(config, ctx, ctx.stage_dir / "checkpoints")
    assert argv[argv.index("--loss-implementation"):argv.index("--if-known")] == ["--loss-implementation", "eager"]


def test_several_gpus_train_through_torchrun(tmp_path):
    config = _config(tmp_path, train='gpus = 2\npython = "/opt/trainer/bin/python"', gpus=2)
    ctx = _context(config)
    argv = trainer_argv(config, ctx, ctx.stage_dir / "checkpoints")
    assert argv[:6] == ["/opt/trainer/bin/python", "-m", "torch.distributed.run", "--standalone",
                        "--nproc_per_node=2", str(ENTRY)]


def test_a_trainer_below_0_7_is_refused_in_one_line(tmp_path):
    """The runner's own environment (speculators 0.3/0.4, or none) cannot train the server line's data."""
    config = _config(tmp_path)
    with pytest.raises(InputError) as refused:
        run_server_train(_context(config))
    message = str(refused.value)
    assert message.startswith("the server line trains with speculators 0.7+") and "set train.python" in message
    assert "\n" not in message


def test_an_interpreter_that_does_not_run_is_one_line(tmp_path):
    config = _config(tmp_path, train=f'python = "{tmp_path / "no-such-python"}"')
    with pytest.raises(InputError, match=r"^train.python: cannot run "):
        train_config(config)


def test_other_backends_keep_their_train_config():
    """train.python is the server line's: the hf/vllm train stage's config (and old manifests) do not change."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        config = _config(Path(folder), backend="hf")
        assert "python" not in train_config(config)["train"] and "trainer" not in train_config(config)
        assert "trainer_flags" not in train_config(config)["train"]


def test_the_scripts_a_trainer_runs_depend_on_its_release():
    assert trainer_scripts("0.7.0") == (str(ENTRY), str(ENTRY_0_7))
    assert trainer_scripts("0.9.0") == trainer_scripts("0.8.1") == (str(ENTRY),)


@pytest.mark.network
@pytest.mark.parametrize("release", ["0.7.0", "0.9.0"])
def test_trainer_scripts_match_the_release_they_run_with(release, release_cache):
    """What the preflight checks on the server line: the trainer scripts against the trainer's speculators."""
    report = scan(list(trainer_scripts(release)), f"speculators=={release}", cache_dir=release_cache)
    assert report.calls_checked >= 2
    assert [format_finding(f) for f in report.findings if f.severity is Severity.ERROR] == []
