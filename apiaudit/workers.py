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
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import TypeVar, cast

Item = TypeVar("Item")
Result = TypeVar("Result")

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
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_WORKERS))


def shares(items: Sequence[Item], workers: int, weight: Callable[[Item], float] | None = None) -> list[Sequence[Item]]:
    """`items` in contiguous shares of about equal `weight` (default: one each), one per
    process worth starting."""
    count = max(1, min(workers, len(items) // MIN_SHARE))
    if count == 1:
        return [items]
    weights = [max(weight(item), 1e-9) if weight else 1.0 for item in items]
    total, bounds, running = sum(weights), [0], 0.0
    for i, w in enumerate(weights):
        running += w
        if len(bounds) < count and running >= total * len(bounds) / count:
            bounds.append(i + 1)
    bounds.append(len(items))
    return [items[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


def run_split(
    parts: Sequence[Sequence[Item]],
    work: Callable[[Sequence[Item], Callable[[], None]], Result],
    tick: Callable[[], None] | None = None,
) -> list[Result]:
    """`work(part, tick)` for every part: the first here, each other in a forked copy; the
    results in part order. `tick` is called once per tick any process reports (progress)."""
    tick = tick or (lambda: None)
    if len(parts) <= 1 or threading.active_count() > 1:
        return [work(part, tick) for part in parts] if parts else [work([], tick)]
    children: list[tuple[int, int, int]] = []  # (pid, results fd, ticks fd)
    running: set[int] = set()
    try:
        for part in parts[1:]:
            children.append(_fork(part, work, children))
            running.add(children[-1][0])
        ticks = [fd for _, _, fd in children]

        def own_tick() -> None:
            tick()
            _drain(ticks, tick, timeout=0)

        results = [work(parts[0], own_tick)]
        for (pid, results_fd, ticks_fd), part in zip(children, parts[1:]):
            data = _read_all(results_fd, ticks, tick)
            _, status = os.waitpid(pid, 0)
            running.discard(pid)
            handed = _loaded(data) if status == 0 else _MISSING
            # A copy that failed, or whose values did not come back: its share is done here.
            results.append(work(part, tick) if handed is _MISSING else cast(Result, handed))
        return results
    finally:
        for pid, results_fd, ticks_fd in children:
            for fd in (results_fd, ticks_fd):
                try:
                    os.close(fd)
                except OSError:
                    pass
            if pid in running:  # interrupted: the copy's work is not wanted any more
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                except (ChildProcessError, ProcessLookupError, OSError):
                    pass


_MISSING: object = object()


def _fork(part, work, earlier: list[tuple[int, int, int]]) -> tuple[int, int, int]:
    results_read, results_write = os.pipe()
    ticks_read, ticks_write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: "fork() of a multi-threaded process" (a progress bar's thread; the copy never draws)
        pid = os.fork()
    if pid == 0:  # the copy: do the share, hand it back, and leave without running any exit handler
        status = 1
        try:
            os.close(results_read)
            os.close(ticks_read)
            for _, fd_a, fd_b in earlier:
                os.close(fd_a)
                os.close(fd_b)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            # A short-lived copy that leaves by _exit: the collector's passes would only touch (and
            # so copy) every page of the heap it shares with this process, to free next to nothing.
            gc.disable()
            result = work(part, lambda: _tick(ticks_write))
            data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
            view = memoryview(data)
            while view:
                view = view[os.write(results_write, view) :]
            status = 0
        except BaseException:  # noqa: BLE001 - any failure: the parent does this share itself
            status = 1
        finally:
            os._exit(status)
    os.close(results_write)
    os.close(ticks_write)
    return pid, results_read, ticks_read


def _tick(fd: int) -> None:
    try:
        os.write(fd, b".")
    except OSError:
        pass  # progress only


def _drain(fds: list[int], tick: Callable[[], None], timeout: float) -> None:
    """Report the ticks waiting on the copies' progress pipes."""
    open_fds = [fd for fd in fds if fd >= 0]
    if not open_fds:
        return
    ready, _, _ = select.select(open_fds, [], [], timeout)
    for fd in ready:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            fds[fds.index(fd)] = -1  # that copy is done
        for _ in range(len(chunk)):
            tick()


def _read_all(fd: int, ticks: list[int], tick: Callable[[], None]) -> bytes:
    """Everything a copy writes on its results pipe, reporting progress meanwhile."""
    chunks: list[bytes] = []
    while True:
        open_ticks = [t for t in ticks if t >= 0]
        ready, _, _ = select.select([fd, *open_ticks], [], [])
        if any(t in ready for t in open_ticks):
            _drain(ticks, tick, timeout=0)
        if fd in ready:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


def _loaded(data: bytes) -> object:
    # Our own copy's values, through a pipe only the two processes hold (no file, no cache).
    try:
        return pickle.loads(data) if data else _MISSING
    except Exception:  # noqa: BLE001 - a truncated hand-back: the share is done here instead
        return _MISSING


__all__ = ["MAX_WORKERS", "run_split", "set_jobs", "shares", "worker_count"]
