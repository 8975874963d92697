"""The train stage's distributed branch on the CPU: torchrun, two gloo processes (issue 15).

The same launch as several GPUs (`python -m torch.distributed.run`, one
`apiaudit.runner.train_worker` per rank, speculators' FSDP wrapping and distributed
checkpointer), with `train.processes = 2` on `train.device = "cpu"`. Upstream stages run
once through the pipeline without preflight (test_runner_pipeline.py covers the gate).
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import pytest
from runner_helpers import write_config

from apiaudit.errors import InputError
from apiaudit.runner.config import load_config
from apiaudit.runner.pipeline import run_pipeline

pytestmark = pytest.mark.runner

TRAIN = 'epochs = 2\ntotal_seq_len = 256\ndevice = "cpu"\nprocesses = {processes}'
# Modules a worker would import if the working directory or PYTHONPATH reached it.
PLANTED = ("numpy", "transformers", "speculators")


def _config(workspace: Path, model: Path, processes: int) -> Path:
    return write_config(workspace, model, train=TRAIN.format(processes=processes))


def _manifest(run_dir: Path, stage: str) -> dict:
    return json.loads((run_dir / stage / "manifest.json").read_text())


def _plant(folder: Path) -> Path:
    """Modules that fail loudly on import, where a careless launch would find them."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in PLANTED:
        (folder / f"{name}.py").write_text(f"raise ImportError('{name} picked up from {folder}')\n")
    return folder


@pytest.fixture(scope="module")
def distributed_run(tiny_model, tmp_path_factory):
    workspace = tmp_path_factory.mktemp("distributed")
    config_path = _config(workspace, tiny_model, processes=2)
    config = load_config(config_path, available_gpus=0)
    run_pipeline(config, only=("prepare", "extract", "vocab"), preflight=False)
    planted = _plant(workspace / "planted")
    previous_cwd, previous_path = os.getcwd(), os.environ.get("PYTHONPATH")
    os.chdir(planted)
    os.environ["PYTHONPATH"] = str(planted)
    try:
        summary = run_pipeline(config, only=("train",), preflight=False)
    finally:
        os.chdir(previous_cwd)
        if previous_path is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = previous_path
    return workspace, config, summary


def test_two_gloo_processes_train_through_torchrun(distributed_run):
    workspace, config, summary = distributed_run
    assert summary.outcome("train").status == "ran"
    train = _manifest(config.run_dir, "train")
    assert train["counts"]["world_size"] == 2 and train["counts"]["backend"] == "gloo"
    assert train["config"]["train"]["processes"] == 2
    log = (config.run_dir / "train" / "stage.log").read_text()
    assert "from torch.distributed.run import main" in log and "--standalone --nproc_per_node=2" in log
    # Both ranks trained every step (each logs its own metrics), with finite losses.
    losses = re.findall(r"step \d+ epoch \d+: .*'loss': ([^,}]+)", log)
    assert len(losses) == 2 * 2, losses  # 2 ranks x 2 epochs of one packed batch each
    assert all(math.isfinite(float(loss)) for loss in losses), losses
    params = json.loads((config.run_dir / "train" / "params.json").read_text())
    assert params["world_size"] == 2 and params["backend"] == "gloo"
    assert (config.run_dir / "train" / "checkpoints" / "1" / "model.safetensors").is_file()


def test_workers_import_nothing_from_the_working_directory(distributed_run):
    """Planted numpy/transformers/speculators in the cwd and on PYTHONPATH were never imported."""
    workspace, config, _summary = distributed_run
    log = (config.run_dir / "train" / "stage.log").read_text()
    assert "picked up from" not in log
    launch = next(line for line in log.splitlines() if "launching in" in line)
    assert str(workspace / "planted") not in launch and " -I " in launch


def test_launch_carries_the_runners_import_path_less_the_working_directory(tmp_path):
    from apiaudit.runner.train import IMPORTS_DIR, carried_import_path

    cwd, library = tmp_path / "cwd", tmp_path / "site"
    (cwd / "src").mkdir(parents=True)
    library.mkdir()
    private = tmp_path / "private"
    private.mkdir()
    parent = ["", ".", "relative", str(cwd), str(cwd / "src"), str(library), str(library)]
    carried = carried_import_path(private, parent, cwd)
    imports = private / IMPORTS_DIR
    assert carried == [str(imports), str(library.resolve())]
    assert sorted(p.name for p in imports.iterdir()) == ["apiaudit", "speculators"]
    assert (imports / "apiaudit" / "runner" / "train_worker.py").is_file()


def test_distributed_checkpoint_loads_and_runs_forward(distributed_run):
    import torch

    from apiaudit.runner.draft import load_draft

    _workspace, config, _summary = distributed_run
    draft = load_draft(Path(_manifest(config.run_dir, "train")["counts"]["checkpoint"]))
    sample = torch.load(config.run_dir / "extract" / "samples" / "data_0.pt", weights_only=True)
    hidden = torch.cat(sample["hidden_states"][:-1], dim=-1)[None]
    with torch.no_grad():
        draft_tokens = draft(hidden_states=hidden, input_ids=sample["input_ids"][None], ttt_steps=2)
    assert len(draft_tokens) == 2 and all(int(t.max()) < 64 for t in draft_tokens)


def test_interrupted_training_refuses_another_world_size_and_resumes_on_the_same(distributed_run):
    workspace, config, _summary = distributed_run
    train_dir = config.run_dir / "train"
    checkpoints = train_dir / "checkpoints"
    # An interruption after the first epoch: no manifest, epoch 0's checkpoint on disk.
    (train_dir / "manifest.json").unlink()
    for entry in (checkpoints / "1").iterdir():
        entry.unlink()
    (checkpoints / "1").rmdir()

    one = load_config(_config(workspace, config.model.path, processes=1), available_gpus=0)
    with pytest.raises(InputError, match=r"resumes only with world size 2, not 1"):
        run_pipeline(one, only=("train",), preflight=False)
    assert (checkpoints / "0" / "model.safetensors").is_file(), "the refusal must keep the finished epoch"

    two = load_config(_config(workspace, config.model.path, processes=2), available_gpus=0)
    summary = run_pipeline(two, only=("train",), preflight=False)
    assert summary.outcome("train").status == "ran"
    log = (train_dir / "stage.log").read_text()
    assert "resume=True" in log and "Resuming training on 1 epoch" in log
    assert (checkpoints / "1" / "model.safetensors").is_file()


def _attempt(gpus: int = 1, processes: int = 1, lr: float = 1e-4) -> dict:
    return {"stage": "train", "config": {"train": {"gpus": gpus, "processes": processes, "lr": lr}, "model": "m"},
            "inputs": {}, "versions": {}}


@pytest.mark.parametrize(
    ("device", "previous", "expected", "refused"),
    [
        ("cpu", _attempt(processes=2), _attempt(processes=1), True),
        ("cuda", _attempt(gpus=4), _attempt(gpus=2), True),
        ("cuda", _attempt(gpus=1), _attempt(gpus=2), True),
        ("cpu", _attempt(processes=2), _attempt(processes=1, lr=1e-3), False),  # another run: starts over
        ("cpu", _attempt(processes=1), _attempt(processes=2), False),  # one CPU process never resumes
        ("cpu", _attempt(processes=2), _attempt(processes=2), False),
    ],
)
def test_which_restarts_are_refused(tmp_path, device, previous, expected, refused):
    from apiaudit.runner.train import refuse_changed_world_size

    (tmp_path / "checkpoints" / "0").mkdir(parents=True)
    (tmp_path / "params.json").write_text(json.dumps({"device": device}))
    if refused:
        with pytest.raises(InputError, match=r"resumes only with world size"):
            refuse_changed_world_size(tmp_path, previous, expected)
    else:
        refuse_changed_world_size(tmp_path, previous, expected)
    refuse_changed_world_size(tmp_path, None, expected)  # nothing interrupted: nothing to refuse
