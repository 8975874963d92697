"""What every stage is handed, and what it hands back."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from apiaudit.runner.config import RunConfig
from apiaudit.runner.progress import RunReporter

LOG_NAME = "stage.log"


class StageFailed(Exception):
    """A stage started but could not finish (its log in the run directory says why)."""


@dataclass
class StageContext:
    config: RunConfig
    stage: str
    reporter: RunReporter
    # True when an interrupted run of this stage started with the same config and inputs:
    # finished work (sample files, epochs) is kept.
    resume: bool
    log: logging.Logger
    # The server line: what audits the server's command line before it starts
    # (apiaudit.runner.server.LaunchAuditor; None: no launch audit), and whether its
    # blocking findings are overridden (`--force`).
    launch_auditor: Any = None
    force: bool = False

    @property
    def run_dir(self) -> Path:
        return self.config.run_dir

    @property
    def stage_dir(self) -> Path:
        return stage_dir(self.config, self.stage)

    def upstream(self, stage: str) -> Path:
        return stage_dir(self.config, stage)

    @property
    def cache_dir(self) -> Path:
        return self.config.run_dir / ".cache"


@dataclass
class StageResult:
    outputs: list[Path]
    counts: dict[str, Any] = field(default_factory=dict)
    summary: str = ""


def stage_dir(config: RunConfig, stage: str) -> Path:
    return config.run_dir / stage


# Where the train stage's trainer (either line's) checkpoints: checkpoints/EPOCH/.
CHECKPOINTS_DIR = "checkpoints"


def final_checkpoint(train_dir: Path, epochs: int) -> Path:
    return train_dir / CHECKPOINTS_DIR / str(epochs - 1)


def resolve_device(requested: str) -> str:
    """'auto' -> cuda when torch sees a GPU, else cpu."""
    if requested != "auto":
        return requested
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


@contextmanager
def stage_logging(path: Path, stage: str) -> Iterator[logging.Logger]:
    """Send the stage's own log and the libraries' logs (logging and loguru) to `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.setLevel(logging.INFO)
    root = logging.getLogger()
    previous_level = root.level
    root.addHandler(handler)
    if root.level > logging.INFO or root.level == logging.NOTSET:
        root.setLevel(logging.INFO)
    # Library loggers write to the file; the console shows only the runner's own lines.
    console_handlers = [h for h in root.handlers if h is not handler and type(h) is logging.StreamHandler]
    for console in console_handlers:
        console.setLevel(max(console.level, logging.WARNING))
    loguru_sink = _add_loguru_sink(path)
    log = logging.getLogger(f"apiaudit.runner.{stage}")
    try:
        yield log
    finally:
        _remove_loguru_sink(loguru_sink)
        root.removeHandler(handler)
        root.setLevel(previous_level)
        handler.close()


def _add_loguru_sink(path: Path):
    try:
        from loguru import logger
    except ImportError:
        return None
    return logger.add(str(path), level="INFO", enqueue=False)


def _remove_loguru_sink(sink_id) -> None:
    if sink_id is None:
        return
    from loguru import logger

    logger.remove(sink_id)
