"""Progress for long work: bars on a terminal, one plain line per notice elsewhere (CI logs).

A library call gets `NullProgress` (silent). The CLI picks with `for_terminal`: rich bars on a
TTY; on anything else (a CI log, a pipe) each notice (`step`) is one `apiaudit: ...` line on
stderr and bars are not drawn. Whoever opens a progress closes it; stages only draw into it.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Protocol, TextIO


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


class PlainProgress(NullProgress):
    """Notices as single lines on stderr; no bars (they would flood a log)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream

    def step(self, message: str) -> None:
        stream = self._stream or sys.stderr
        print(f"apiaudit: {message}", file=stream, flush=True)


class RichProgress:
    """Bars on stderr, so stdout stays clean for JSON and diffs."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            SpinnerColumn,
            TaskID,
            TextColumn,
            TimeElapsedColumn,
        )
        from rich.progress import Progress as Bars

        self._bars = Bars(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(file=sys.stderr),
            transient=True,
            # Drawn when the work advances, not by a thread of its own: a large scan forks
            # copies of this process (`apiaudit.infra.workers`), which is only safe with no other thread.
            auto_refresh=False,
        )
        self._drawn = 0.0
        self._task: TaskID | None = None
        self._closed = False
        self._started = False  # the terminal is touched (its cursor hidden) only once there is work to show

    def _begin(self) -> None:
        if not self._started:
            self._started = True
            self._bars.start()

    def step(self, message: str) -> None:
        if self._closed:
            print(f"apiaudit: {message}", file=sys.stderr, flush=True)
            return
        self._begin()
        # print, not log: a notice is a sentence for a person, not a timestamped log record.
        self._bars.console.print(f"apiaudit: {message}", markup=False, highlight=False)

    def start(self, description: str, total: int) -> None:
        if self._closed:
            return
        self._begin()
        if self._task is not None:
            self._bars.remove_task(self._task)
        self._task = self._bars.add_task(description, total=total)
        self._draw(force=True)

    def advance(self, label: str = "") -> None:
        if self._task is not None and not self._closed:
            self._bars.advance(self._task)
            self._draw()

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._drawn >= 0.1:  # ten frames a second at most
            self._drawn = now
            self._bars.refresh()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._started:
                self._bars.stop()


class LockedProgress:
    """One progress shared by threads (fetches run concurrently): each call is drawn whole."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._lock = threading.Lock()

    def step(self, message: str) -> None:
        with self._lock:
            self._progress.step(message)

    def start(self, description: str, total: int) -> None:
        with self._lock:
            self._progress.start(description, total)

    def advance(self, label: str = "") -> None:
        with self._lock:
            self._progress.advance(label)

    def close(self) -> None:
        with self._lock:
            self._progress.close()


def for_terminal(enabled: bool | None = None, *, quiet: bool = False) -> Progress:
    """Bars when stderr is a terminal (or `enabled`); plain notice lines otherwise.

    `enabled=False` (--no-progress) draws no bars but still says, in one line each, what
    long work is under way (a first fetch of a release, a rebuilt cache). `quiet` (--quiet)
    says nothing at all.
    """
    if quiet:
        return NullProgress()
    if enabled is None:
        enabled = sys.stderr.isatty()
    return RichProgress() if enabled else PlainProgress()
