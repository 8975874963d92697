"""Progress for long work: a no-op for library calls, rich bars on a terminal."""

from __future__ import annotations

import sys
from typing import Protocol


class Progress(Protocol):
    def step(self, message: str) -> None: ...
    def start(self, description: str, total: int) -> None: ...
    def advance(self, label: str = "") -> None: ...
    def close(self) -> None: ...


class NullProgress:
    def step(self, message: str) -> None:
        pass

    def start(self, description: str, total: int) -> None:
        pass

    def advance(self, label: str = "") -> None:
        pass

    def close(self) -> None:
        pass


class RichProgress:
    """Bars on stderr, so stdout stays clean for JSON and diffs."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as Bars

        self._bars = Bars(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(file=sys.stderr),
            transient=True,
        )
        self._bars.start()
        self._task = None

    def step(self, message: str) -> None:
        self._bars.console.log(message)

    def start(self, description: str, total: int) -> None:
        if self._task is not None:
            self._bars.remove_task(self._task)
        self._task = self._bars.add_task(description, total=total)

    def advance(self, label: str = "") -> None:
        if self._task is not None:
            self._bars.advance(self._task)

    def close(self) -> None:
        self._bars.stop()


def for_terminal(enabled: bool | None = None) -> Progress:
    if enabled is None:
        enabled = sys.stderr.isatty()
    return RichProgress() if enabled else NullProgress()
