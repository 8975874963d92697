"""Stage 4, train: the EAGLE-3 draft model with speculators' trainer.

One process trains in this process; a world of several (`train.gpus` GPUs, NCCL, or
`train.processes` CPU processes, gloo) trains through `torchrun` (torch.distributed),
each rank running `apiaudit.runner.train_worker`, where speculators' own distributed
setup and FSDP wrapping take over.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Literal

from apiaudit.errors import InputError
from apiaudit.infra.atomic import atomic_write
from apiaudit.infra.words import counted
from apiaudit.runner.config import RunConfig, world_size_of
from apiaudit.runner.context import (
    CHECKPOINTS_DIR,
    StageContext,
    StageFailed,
    StageResult,
    final_checkpoint,
    resolve_device,
)
from apiaudit.runner.extract import SAMPLES_DIR
from apiaudit.runner.vocab import D2T_FILE, T2D_FILE

PARAMS_FILE = "params.json"
STEP_MARK = "apiaudit-step "
# Inside the launch's private folder: links to the apiaudit and speculators this process
# runs, and the import path the launcher and workers get (a JSON list).
IMPORTS_DIR = "imports"
IMPORT_PATH_FILE = "sys_path.json"

DistributedBackend = Literal["nccl", "gloo"]
# `python -I` puts neither the working directory nor PYTHONPATH nor the user site on sys.path;
# each bootstrap then puts the runner's own import path (IMPORT_PATH_FILE, its first argument)
# in front, so the launcher and every rank import what the runner imports and nothing else.
_CARRY_PATH = "import json, sys; p = sys.argv.pop(1); sys.path[:0] = [e for e in json.load(open(p)) if e not in sys.path]; "
LAUNCHER_BOOTSTRAP = _CARRY_PATH + "from torch.distributed.run import main; main()"
WORKER_BOOTSTRAP = _CARRY_PATH + "from apiaudit.runner.train_worker import main; raise SystemExit(main(sys.argv[1:]))"


def distributed_backend(device: str) -> DistributedBackend:
    """The process-group backend for a device: NCCL between GPUs, gloo between CPU processes."""
    return "nccl" if device == "cuda" else "gloo"


def train_config(config: RunConfig) -> dict:
    if config.server_line:
        from apiaudit.runner.server_train import server_train_config

        return server_train_config(config)
    train = config.section("train")
    # The server line's trainer environment and flags; this trainer runs in the runner.
    train.pop("python")
    train.pop("trainer_flags")
    return {"train": train, "model": str(config.model.path)}


def run_train(ctx: StageContext) -> StageResult:
    if ctx.config.server_line:
        from apiaudit.runner.server_train import run_server_train

        return run_server_train(ctx)
    config = ctx.config
    train = config.train
    device = resolve_device(train.device)
    world_size = train.world_size
    backend = distributed_backend(device)
    checkpoints = ctx.stage_dir / CHECKPOINTS_DIR
    # speculators' checkpointer resumes from the last finished epoch. Its single-process
    # checkpointer loads onto an accelerator only, so on one CPU an interrupted training
    # starts over; its distributed one loads full state dicts on the CPU and broadcasts them.
    resume = ctx.resume and (device == "cuda" or world_size > 1) and checkpoints.is_dir()
    if not resume and checkpoints.exists():
        shutil.rmtree(checkpoints)
    params = {
        **train_config(config)["train"],
        "model_path": str(config.model.path),
        "samples_dir": str(ctx.upstream("extract") / SAMPLES_DIR),
        "d2t_path": str(ctx.upstream("vocab") / D2T_FILE),
        "t2d_path": str(ctx.upstream("vocab") / T2D_FILE),
        "save_path": str(checkpoints),
        "device": device,
        "world_size": world_size,
        "backend": backend,
        "resume": resume,
        "draft_vocab_size": config.vocab.draft_vocab_size,
    }
    params_path = ctx.stage_dir / PARAMS_FILE
    atomic_write(params_path, json.dumps(params, indent=2, sort_keys=True) + "\n")

    from apiaudit.runner.train_worker import count_steps

    steps = count_steps(params)
    ctx.reporter.stage_started("train", steps, "steps")
    ctx.log.info("training on %s, world size %d%s, %d steps, resume=%s", device, world_size,
                 f" ({backend})" if world_size > 1 else "", steps, resume)
    if world_size > 1:
        _train_with_torchrun(ctx, params_path, world_size)
    else:
        from apiaudit.runner.train_worker import train_draft

        train_draft(params, on_step=lambda _metrics: ctx.reporter.advance(1))

    final = final_checkpoint(ctx.stage_dir, train.epochs)
    if not (final / "config.json").is_file():
        raise StageFailed(f"training finished without a checkpoint in {final}; see {ctx.stage_dir / 'stage.log'}")
    return StageResult(
        outputs=sorted(p for p in final.iterdir() if p.is_file()),
        counts={"epochs": train.epochs, "steps": steps, "checkpoint": str(final), "world_size": world_size,
                "backend": backend if world_size > 1 else "none"},
        summary=f"{counted(train.epochs, 'epoch')}, {counted(steps, 'step')} -> {final}",
    )


def refuse_changed_world_size(stage_dir: Path, previous: dict | None, expected: dict) -> None:
    """An interrupted training resumes only with the world size it started with.

    speculators' checkpoints hold full state dicts, but the packing sampler shards batches by
    rank and the schedule counts steps per rank, so a resumed run on another count would not
    be the run that was interrupted. Starting over takes deleting the checkpoints.
    `previous` and `expected` are the stage's attempt records (config under "config").
    """
    checkpoints = stage_dir / CHECKPOINTS_DIR
    if previous is None or not checkpoints.is_dir() or not any(checkpoints.iterdir()):
        return
    old, new = world_size_of(previous["config"]["train"]), world_size_of(expected["config"]["train"])
    if old == new or not _could_resume(stage_dir, old):
        return
    if _without_world_size(previous) == _without_world_size(expected):
        raise InputError(
            f"stage train: the interrupted training in {stage_dir} ran with world size {old} and has finished "
            f"epochs in {checkpoints}; it resumes only with world size {old}, not {new}: set the GPU count "
            f"(train.gpus / train.processes) back, or delete {checkpoints} to start over"
        )


def _could_resume(stage_dir: Path, world_size: int) -> bool:
    """Whether the interrupted run would have resumed on its own count (one CPU process never does)."""
    try:
        device = json.loads((stage_dir / PARAMS_FILE).read_text(encoding="utf-8")).get("device")
    except (OSError, ValueError, AttributeError):
        device = None
    return world_size > 1 or device == "cuda"


def _without_world_size(attempt: dict) -> dict:
    config = dict(attempt["config"])
    config["train"] = {k: v for k, v in config["train"].items() if k not in ("gpus", "processes")}
    return {**attempt, "config": config}


def worker_command(world_size: int, params_path: Path, import_path: Path) -> list[str]:
    """torchrun (`torch.distributed.run`) with one worker per rank, each under `python -I`."""
    isolated = [sys.executable, "-I", "-c"]
    return [
        *isolated, LAUNCHER_BOOTSTRAP, str(import_path), "--standalone", f"--nproc_per_node={world_size}",
        # --no-python: torchrun runs this command as it is (its own is `python -u -m MODULE`,
        # which puts the working directory on sys.path).
        "--no-python", sys.executable, "-u", "-I", "-c", WORKER_BOOTSTRAP, str(import_path), str(params_path.resolve()),
    ]


def carried_import_path(folder: Path, parent_path: list[str], cwd: Path) -> list[str]:
    """The import path the launch gets: links to this process's apiaudit and speculators first,
    then this process's own sys.path entries, less anything relative or in the working directory.
    """
    import apiaudit
    from apiaudit.runner.imports import speculators_package_dir

    imports = folder / IMPORTS_DIR
    imports.mkdir()
    (imports / "apiaudit").symlink_to(Path(apiaudit.__file__).resolve().parent, target_is_directory=True)
    speculators = speculators_package_dir()
    if speculators is not None:
        (imports / "speculators").symlink_to(speculators, target_is_directory=True)
    carried = [str(imports)]
    here = cwd.resolve()
    for entry in parent_path:
        if not entry or not Path(entry).is_absolute():
            continue
        resolved = Path(entry).resolve()
        if resolved == here or here in resolved.parents:
            continue
        if str(resolved) not in carried:
            carried.append(str(resolved))
    return carried


def _train_with_torchrun(ctx: StageContext, params_path: Path, world_size: int) -> None:
    """torchrun starts one worker per rank; rank 0's output feeds the log and the bar.

    The launcher and its workers start in a private, empty folder with `python -I`, so no
    module from the user's working directory (or PYTHONPATH) can be picked up.
    """
    with tempfile.TemporaryDirectory(prefix="apiaudit-torchrun-") as private:
        import_path = Path(private) / IMPORT_PATH_FILE
        carried = carried_import_path(Path(private), sys.path, Path.cwd())
        atomic_write(import_path, json.dumps(carried, indent=2) + "\n")
        command = worker_command(world_size, params_path, import_path)
        ctx.log.info("import path of the launch: %s", carried)
        ctx.log.info("launching in %s: %s", private, " ".join(command))
        process = subprocess.Popen(command, cwd=private, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, bufsize=1)
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith(STEP_MARK):
                ctx.reporter.advance(1)
            ctx.log.info("torchrun: %s", line.rstrip())
        if process.wait() != 0:
            raise StageFailed(
                f"distributed training failed (torchrun exit {process.returncode}); see {ctx.stage_dir / 'stage.log'}"
            )
