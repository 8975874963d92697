"""Stage 4 on the server line: speculators 0.7+'s own trainer, in the trainer's environment.

The trainer runs as a child under `[train] python` (default: the runner's interpreter), so
its speculators, torch and transformers may be other releases than the runner's: the
server's and the trainer's pins need not agree. It reads what the server line's extract
stage wrote (speculators' offline layout) and the vocab stage's mapping, and checkpoints
into `train/checkpoints/EPOCH/` (speculators' checkpointer, which also resumes).
"""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path
from typing import Any

from apiaudit.errors import InputError
from apiaudit.runner.config import RunConfig
from apiaudit.runner.context import CHECKPOINTS_DIR, StageContext, StageFailed, StageResult, final_checkpoint

TRAINER_SINCE = (0, 7)
TRAINER_LOG = "trainer.log"
EPOCH_DONE = "Training epoch "
ENTRY = Path(__file__).resolve().parents[1] / "trainer_env" / "speculators_train.py"
# speculators 0.7 ships its trainer outside the wheel: the entry imports this in its place.
ENTRY_0_7 = ENTRY.with_name("speculators_train_0_7.py")
# The first release whose wheel has the trainer (`speculators.train.cli`).
TRAINER_IN_WHEEL_SINCE = (0, 8)
# Flags after this marker are passed only where the trainer's parser has them: a later release
# dropped them (speculators 0.9's trainer has no --noise-std), and an unknown flag stops argparse.
IF_KNOWN = "--if-known"
_PROBE = (
    "import importlib.metadata as m, importlib.util as u, json, sys\n"
    "def v(n):\n"
    "    try: return m.version(n)\n"
    "    except m.PackageNotFoundError: return 'absent'\n"
    "s = u.find_spec('speculators')\n"
    "print(json.dumps({'python': sys.executable, 'speculators': v('speculators'), 'torch': v('torch'),"
    " 'transformers': v('transformers'), 'package': list(s.submodule_search_locations)[0] if s else None}))\n"
)


def trainer_python(config: RunConfig) -> str:
    import sys

    return config.train.python or sys.executable


@functools.lru_cache(maxsize=8)
def probe_interpreter(python: str) -> dict[str, Any]:
    import tempfile

    # Not `python -I`: a trainer environment may be an interpreter plus PYTHONPATH (a wrapper
    # script); an empty working directory keeps the runner's folder off its path instead.
    try:
        with tempfile.TemporaryDirectory(prefix="apiaudit-probe-") as empty:
            done = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=120, cwd=empty)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"train.python: cannot run {python}: {exc}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise InputError(f"train.python: {python} failed to report its libraries: {last}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def trainer_environment(config: RunConfig) -> dict[str, Any]:
    """The trainer's interpreter and library versions (speculators, torch, transformers), and where its speculators is."""
    return dict(probe_interpreter(trainer_python(config)))


def release_of(version: str) -> tuple[int, ...]:
    from apiaudit.runner.server_extract import release_tuple

    return release_tuple(version)


def trainer_scripts(version: str) -> tuple[str, ...]:
    """The scripts that run in a trainer with this speculators (what the preflight audits)."""
    if release_of(version) >= TRAINER_IN_WHEEL_SINCE:
        return (str(ENTRY),)
    return (str(ENTRY), str(ENTRY_0_7))


def server_train_config(config: RunConfig) -> dict:
    environment = trainer_environment(config)
    return {
        "train": config.section("train"),
        "model": str(config.model.path),
        # What trains is part of what the checkpoint depends on: another speculators retrains.
        "trainer": {k: environment[k] for k in ("speculators", "torch", "transformers")},
    }


def trainer_flags(config: RunConfig, ctx: StageContext, save_path: Path) -> list[str]:
    """`speculators train` flags for the data the extract stage wrote and the vocab stage's mapping."""
    from apiaudit.runner.server import hidden_state_layer_ids
    from apiaudit.runner.server_extract import DATA_DIR, HIDDEN_STATES_DIR
    from apiaudit.runner.vocab import D2T_FILE, T2D_FILE

    train = config.train
    extract, vocab = ctx.upstream("extract"), ctx.upstream("vocab")
    return [
        "--verifier-name-or-path", str(config.model.path),
        "--data-path", str(extract / DATA_DIR),
        "--hidden-states-path", str(extract / HIDDEN_STATES_DIR),
        "--on-missing", "raise",
        "--save-path", str(save_path),
        "--d2t-path", str(vocab / D2T_FILE),
        "--t2d-path", str(vocab / T2D_FILE),
        "--draft-vocab-size", str(config.vocab.draft_vocab_size),
        # The draft reads the auxiliary layers by vLLM's ids, as the server extracted them.
        "--target-layer-ids", *[str(i) for i in hidden_state_layer_ids(config)[:-1]],
        "--num-layers", str(train.num_layers),
        "--epochs", str(train.epochs),
        "--lr", repr(train.lr),
        "--total-seq-len", str(train.total_seq_len),
        "--ttt-steps", str(train.ttt_steps),
        "--ttt-step-loss-decay", repr(train.ttt_step_loss_decay),
        "--train-data-ratio", repr(round(1.0 - train.val_ratio, 6)),
        "--num-workers", str(train.num_workers),
        "--scheduler-type", train.scheduler,
        "--seed", str(train.seed),
        "--hidden-states-dtype", train.hidden_states_dtype,
        "--norm-before-residual" if train.norm_before_residual else "--no-norm-before-residual",
        "--log-dir", str(ctx.stage_dir / "logs"),
        *train.trainer_flags,
        # Noise augmentation: speculators 0.7-0.8's trainer has it, 0.9's does not.
        IF_KNOWN, "--noise-std", repr(train.noise_std),
    ]


def trainer_argv(config: RunConfig, ctx: StageContext, save_path: Path) -> list[str]:
    python = trainer_python(config)
    flags = trainer_flags(config, ctx, save_path)
    if config.train.world_size > 1:
        return [python, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={config.train.world_size}",
                str(ENTRY), *flags]
    return [python, str(ENTRY), *flags]


def run_server_train(ctx: StageContext) -> StageResult:
    import shutil

    from apiaudit.runner.server import ManagedProcess

    config = ctx.config
    environment = trainer_environment(config)
    version = environment["speculators"]
    if release_of(version) < TRAINER_SINCE:
        raise InputError(
            f"the server line trains with speculators 0.7+ (its trainer reads the data vLLM's server writes); "
            f"{environment['python']} has speculators {version}: set train.python to an environment with speculators 0.7+"
        )
    checkpoints = ctx.stage_dir / CHECKPOINTS_DIR
    # speculators' trainer resumes from its last checkpoint; a changed config starts over.
    if not ctx.resume and checkpoints.exists():
        shutil.rmtree(checkpoints)
    argv = trainer_argv(config, ctx, checkpoints)
    ctx.log.info("trainer: speculators %s, torch %s, transformers %s (%s)", version, environment["torch"],
                 environment["transformers"], environment["python"])
    ctx.log.info("launching: %s", " ".join(argv))
    ctx.reporter.stage_started("train", config.train.epochs, "epochs")
    log_path = ctx.stage_dir / TRAINER_LOG
    with ManagedProcess(argv, log_path, grace_s=60.0, cwd=ctx.stage_dir, pipe=True) as trainer:
        for line in trainer.lines():
            ctx.log.info("trainer: %s", line)
            if EPOCH_DONE in line and "completed" in line and "Validation" not in line:
                ctx.reporter.advance(1)
        code = trainer.wait()
    if code != 0:
        raise StageFailed(f"speculators' trainer exited with code {code}; see {ctx.stage_dir / 'stage.log'}")
    final = final_checkpoint(ctx.stage_dir, config.train.epochs)
    if not (final / "config.json").is_file():
        raise StageFailed(f"training finished without a checkpoint in {final}; see {ctx.stage_dir / 'stage.log'}")
    return StageResult(
        outputs=sorted(p for p in final.iterdir() if p.is_file() and not p.is_symlink()),
        counts={"epochs": config.train.epochs, "checkpoint": str(final), "world_size": config.train.world_size,
                "trainer": {"argv": argv, **environment}},
        summary=f"{config.train.epochs} epoch{'s' if config.train.epochs != 1 else ''} with speculators {version} -> {final}",
    )
