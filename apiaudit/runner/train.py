"""Stage 4, train: the EAGLE-3 draft model with speculators' trainer.

One device trains in this process; several GPUs train through `torchrun`
(torch.distributed), each rank running `apiaudit.runner.train_worker`, where
speculators' own `maybe_setup_distributed` and FSDP wrapping take over.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from apiaudit.runner.config import RunConfig
from apiaudit.runner.context import StageContext, StageFailed, StageResult, resolve_device
from apiaudit.runner.extract import SAMPLES_DIR
from apiaudit.runner.vocab import D2T_FILE, T2D_FILE

CHECKPOINTS_DIR = "checkpoints"
PARAMS_FILE = "params.json"
STEP_MARK = "apiaudit-step "


def train_config(config: RunConfig) -> dict:
    return {"train": config.section("train"), "model": str(config.model.path)}


def final_checkpoint(stage_dir: Path, epochs: int) -> Path:
    return stage_dir / CHECKPOINTS_DIR / str(epochs - 1)


def run_train(ctx: StageContext) -> StageResult:
    config = ctx.config
    train = config.train
    device = resolve_device(train.device)
    checkpoints = ctx.stage_dir / CHECKPOINTS_DIR
    # speculators' checkpointer resumes from the last finished epoch, but loads onto an
    # accelerator only; on the CPU an interrupted training starts over.
    resume = ctx.resume and device == "cuda" and checkpoints.is_dir()
    if not resume and checkpoints.exists():
        shutil.rmtree(checkpoints)
    params = {
        **config.section("train"),
        "model_path": str(config.model.path),
        "samples_dir": str(ctx.upstream("extract") / SAMPLES_DIR),
        "d2t_path": str(ctx.upstream("vocab") / D2T_FILE),
        "t2d_path": str(ctx.upstream("vocab") / T2D_FILE),
        "save_path": str(checkpoints),
        "device": device,
        "resume": resume,
        "draft_vocab_size": config.vocab.draft_vocab_size,
    }
    params_path = ctx.stage_dir / PARAMS_FILE
    params_path.write_text(json.dumps(params, indent=2, sort_keys=True) + "\n", encoding="utf-8")

    from apiaudit.runner.train_worker import count_steps

    steps = count_steps(params)
    ctx.reporter.stage_started("train", steps, "steps")
    ctx.log.info("training on %s (%d GPU%s), %d steps, resume=%s", device, train.gpus,
                 "" if train.gpus == 1 else "s", steps, resume)
    if train.gpus > 1:
        _train_with_torchrun(ctx, params_path, train.gpus)
    else:
        from apiaudit.runner.train_worker import train_draft

        train_draft(params, on_step=lambda _metrics: ctx.reporter.advance(1))

    final = final_checkpoint(ctx.stage_dir, train.epochs)
    if not (final / "config.json").is_file():
        raise StageFailed(f"training finished without a checkpoint in {final}; see {ctx.stage_dir / 'stage.log'}")
    return StageResult(
        outputs=sorted(p for p in final.iterdir() if p.is_file()),
        counts={"epochs": train.epochs, "steps": steps, "checkpoint": str(final)},
        summary=f"{train.epochs} epoch{'s' if train.epochs != 1 else ''}, {steps} steps -> {final}",
    )


def _train_with_torchrun(ctx: StageContext, params_path: Path, gpus: int) -> None:
    """Several GPUs: torchrun starts one worker per GPU; rank 0's output feeds the log and the bar."""
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={gpus}",
        "-m", "apiaudit.runner.train_worker", str(params_path),
    ]
    ctx.log.info("launching: %s", " ".join(command))
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith(STEP_MARK):
            ctx.reporter.advance(1)
        ctx.log.info("torchrun: %s", line.rstrip())
    if process.wait() != 0:
        raise StageFailed(
            f"distributed training failed (torchrun exit {process.returncode}); see {ctx.stage_dir / 'stage.log'}"
        )
