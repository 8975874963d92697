"""How the runner tells a person what it is doing: one bar or line per stage."""

from __future__ import annotations

import sys
import time
from typing import Any, Protocol, TextIO


class RunReporter(Protocol):
    def stage_started(self, stage: str, total: int | None, unit: str) -> None: ...

    def advance(self, count: int = 1) -> None: ...

    def stage_finished(self, stage: str, outcome: str) -> None: ...

    def note(self, message: str) -> None: ...


class QuietReporter:
    """Reports nothing (tests, library use)."""

    def stage_started(self, stage: str, total: int | None, unit: str) -> None:
        pass

    def advance(self, count: int = 1) -> None:
        pass

    def stage_finished(self, stage: str, outcome: str) -> None:
        pass

    def note(self, message: str) -> None:
        pass


class ConsoleReporter:
    """A rich progress bar on a terminal; on a log (CI, a job's output file) a line every few seconds."""

    def __init__(self, stream: TextIO | None = None, *, interval_s: float = 5.0) -> None:
        self.stream = stream or sys.stderr
        self.interactive = self.stream.isatty()
        self.interval_s = interval_s
        self._stage = ""
        self._total: int | None = None
        self._unit = ""
        self._done = 0
        self._last_line = 0.0
        self._progress: Any = None  # a rich Progress while a stage draws its bar
        self._task: Any = None

    def stage_started(self, stage: str, total: int | None, unit: str) -> None:
        self._stage, self._total, self._unit, self._done = stage, total, unit, 0
        self._last_line = time.monotonic()
        if self.interactive:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn(unit),
                TimeElapsedColumn(),
                console=Console(file=self.stream),
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task(f"{stage:8}", total=total)
        else:
            self._line(f"{stage}: started" + (f" ({total} {unit})" if total is not None else ""))

    def advance(self, count: int = 1) -> None:
        self._done += count
        if self._progress is not None:
            self._progress.advance(self._task, count)
            return
        if time.monotonic() - self._last_line >= self.interval_s:
            total = f"/{self._total}" if self._total is not None else ""
            self._line(f"{self._stage}: {self._done}{total} {self._unit}")

    def stage_finished(self, stage: str, outcome: str) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
        self._line(f"{stage:8} {outcome}")

    def note(self, message: str) -> None:
        self._line(message)

    def _line(self, text: str) -> None:
        self._last_line = time.monotonic()
        print(text, file=self.stream, flush=True)
