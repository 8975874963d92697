"""A large consumer's cold work shared between this process and forked copies of it.

Reading and checking one consumer file depends only on what every file shares (the options,
the consumer-wide tables, the provider index, the checks' context), all of it built before
the split: a forked copy inherits it as it stands, with nothing imported or run anew, does its
share of the files and hands back plain values through a pipe (never a file another process
could write). This process does the first share itself; results come back in file order, so
findings are the same whatever the split. A copy that fails (killed, out of memory) costs
only time: its share is done here.

Only where `fork` is safe for pure-Python work: on Linux, in a process with no other thread
(a thread holding a lock at the fork would leave the copy waiting on it forever: `matrix`
fetches in threads, and its scans are never split). Elsewhere, with one CPU, or with
`--jobs 1` / `APIAUDIT_JOBS=1`, everything runs here.
"""

from __future__ import annotations

import gc
import os
import pickle
import select
import signal
import struct
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from typing import TypeVar

Item = TypeVar("Item")
Piece = TypeVar("Piece")

MAX_WORKERS = 4  # past this, the copies' duplicated provider loading outweighs the split
MIN_SHARE = 100  # files per process below which a split costs more than it saves


_chosen: int | None = None  # --jobs


def set_jobs(jobs: int | None) -> None:
    """The number of processes `--jobs` asks for (None: the default)."""
    global _chosen
    _chosen = jobs


def worker_count() -> int:
    """How many processes a split uses: `--jobs`, else `APIAUDIT_JOBS`, else the CPUs this
    process may use (at most 4)."""
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return 1
    if _chosen is not None:
        return max(1, _chosen)
    text = os.environ.get("APIAUDIT_JOBS", "").strip()
    if text.isdigit() and int(text) >= 1:
        return int(text)
    return usable_cpus(MAX_WORKERS)


def usable_cpus(at_most: int) -> int:
    """The CPUs this process may run on, at most `at_most` (at least 1)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, at_most))


def shares(
    items: Sequence[Item], workers: int, weight: Callable[[Item], float] | None = None, *, first: float = 1.0
) -> list[Sequence[Item]]:
    """`items` in contiguous shares of about equal `weight` (default: one each), one per
    process worth starting; the first (this process's) weighs `first` times a copy's (a copy
    also pickles what it hands back)."""
    count = max(1, min(workers, len(items) // MIN_SHARE))
    if count == 1:
        return [items]
    weights = [max(weight(item), 1e-9) if weight else 1.0 for item in items]
    portions = [first] + [1.0] * (count - 1)
    total, bounds, running = sum(weights), [0], 0.0
    targets = [total * sum(portions[: k + 1]) / sum(portions) for k in range(count - 1)]
    for i, w in enumerate(weights):
        running += w
        if len(bounds) <= len(targets) and running >= targets[len(bounds) - 1]:
            bounds.append(i + 1)
    bounds.append(len(items))
    return [items[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


def run_split(
    parts: Sequence[Sequence[Item]],
    work: Callable[[Sequence[Item], Callable[[Piece], None]], None],
    on_piece: Callable[[Piece], None] | None = None,
) -> list[list[Piece]]:
    """`work(part, send)` for every part: the first here, each other in a forked copy. Every piece
    a process sends comes back in its part's list, in the order sent; `on_piece` sees each one
    as it arrives (progress). A copy's pieces travel in batches while it works and are taken in
    while this process does its own part, so little is left to take in at the end."""
    report = on_piece or (lambda piece: None)
    if len(parts) <= 1 or threading.active_count() > 1:
        return [_here(part, work, report) for part in (parts or [[]])]
    copies: list[_Copy] = []
    try:
        for part in parts[1:]:
            copies.append(_fork(part, work, copies))
        own: list[Piece] = []

        def send(piece: Piece) -> None:
            own.append(piece)
            report(piece)
            _take_in(copies, report, timeout=0)

        work(parts[0], send)
        while any(copy.fd >= 0 for copy in copies):
            _take_in(copies, report, timeout=None)
        results = [own]
        for copy, part in zip(copies, parts[1:]):
            _, status = os.waitpid(copy.pid, 0)
            copy.running = False
            # A copy that failed, or whose pieces did not all come back: its part is done here.
            results.append(copy.pieces if status == 0 and copy.ended and not copy.broken else _here(part, work, report))
        return results
    finally:
        for copy in copies:
            if copy.fd >= 0:
                os.close(copy.fd)
                copy.fd = -1
            if copy.running:  # interrupted: the copy's work is not wanted any more
                try:
                    os.kill(copy.pid, signal.SIGKILL)
                    os.waitpid(copy.pid, 0)
                except (ChildProcessError, ProcessLookupError, OSError):
                    pass


_FRAME = struct.Struct("<cQ")  # kind (b"P": a batch of pieces, b"E": the end), payload length
_BATCH_PIECES = 32
_BATCH_SECONDS = 0.25


class _Copy:
    """A forked copy as this process sees it: its pipe, what it sent so far, how it ended."""

    def __init__(self, pid: int, fd: int):
        self.pid, self.fd = pid, fd
        self.running = True
        self.buffer = bytearray()
        self.pieces: list = []
        self.ended = False
        self.broken = False


def _here(part, work, report) -> list:
    pieces: list = []

    def send(piece) -> None:
        pieces.append(piece)
        report(piece)

    work(part, send)
    return pieces


def _fork(part, work, earlier: list[_Copy]) -> _Copy:
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: "fork() of a multi-threaded process" (none here)
        pid = os.fork()
    if pid == 0:  # the copy: do the part, hand it back, and leave without running any exit handler
        status = 1
        try:
            os.close(read_fd)
            for other in earlier:
                if other.fd >= 0:
                    os.close(other.fd)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            # A short-lived copy that leaves by _exit: the collector's passes would only touch (and
            # so copy) every page of the heap it shares with this process, to free next to nothing.
            gc.disable()
            batch: list = []
            flushed = [time.monotonic()]

            def flush() -> None:
                if batch:
                    _write_frame(write_fd, b"P", pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL))
                    batch.clear()
                flushed[0] = time.monotonic()

            def send(piece) -> None:
                batch.append(piece)
                if len(batch) >= _BATCH_PIECES or time.monotonic() - flushed[0] >= _BATCH_SECONDS:
                    flush()

            work(part, send)
            flush()
            _write_frame(write_fd, b"E", b"")
            status = 0
        except BaseException:  # noqa: BLE001 - any failure: the parent does this part itself
            status = 1
        finally:
            os._exit(status)
    os.close(write_fd)
    return _Copy(pid, read_fd)


def _write_frame(fd: int, kind: bytes, payload: bytes) -> None:
    view = memoryview(_FRAME.pack(kind, len(payload)) + payload)
    while view:
        view = view[os.write(fd, view) :]


def _take_in(copies: list[_Copy], report: Callable, timeout: float | None) -> None:
    """Read what the copies have sent (waiting up to `timeout`; None: until one sends)."""
    open_fds = [c.fd for c in copies if c.fd >= 0]
    if not open_fds:
        return
    ready, _, _ = select.select(open_fds, [], [], timeout)
    for copy in copies:
        if copy.fd not in ready:
            continue
        try:
            chunk = os.read(copy.fd, 1 << 20)
        except OSError:
            chunk = b""
        if not chunk:
            os.close(copy.fd)
            copy.fd = -1
            continue
        copy.buffer += chunk
        while len(copy.buffer) >= _FRAME.size:
            kind, size = _FRAME.unpack_from(copy.buffer)
            if len(copy.buffer) < _FRAME.size + size:
                break
            payload = bytes(copy.buffer[_FRAME.size : _FRAME.size + size])
            del copy.buffer[: _FRAME.size + size]
            if kind == b"E":
                copy.ended = True
                continue
            try:
                # Our own copy's values, through a pipe only the two processes hold (no file, no cache).
                batch = pickle.loads(payload)
            except Exception:  # noqa: BLE001 - a damaged hand-back: the part is done here instead
                copy.broken = True
                continue
            copy.pieces.extend(batch)
            for piece in batch:
                report(piece)


__all__ = ["MAX_WORKERS", "run_split", "set_jobs", "shares", "usable_cpus", "worker_count"]
