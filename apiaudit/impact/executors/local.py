"""The local executor: this machine's process pool, the one the matrix scans in
(`matrix.fetching.scan_pool`: spawned workers that leave Ctrl-C to this process, ended at once
when the sweep stops early).

A warm sweep answers each task from the whole-scan cache in tens of milliseconds, less than a
worker takes to start (a spawned interpreter importing the engine: about half a second of CPU
each). So the tasks run here, in this process, while they are that quick; the first one that
has used `WARM_LIMIT_S` of CPU (or waited `WAIT_LIMIT_S`, as on a download) starts the pool,
which takes every task after it at once while this process finishes that one. CPU, not wall
time: on a busy machine a warm task can take half a second of wall time and still be warm. A
cold sweep so loses nothing to the wait but a fraction of a second, and a warm one starts no
worker (as a matrix whose releases are all cached scans in-process).
One worker runs every task in this process, one after another, as a plain `scan` would.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import threading
import time
from concurrent.futures import Executor as FuturesExecutor
from concurrent.futures import Future, as_completed
from typing import Callable, Iterator, Sequence, TypeVar

from apiaudit.infra.workers import usable_cpus

Task = TypeVar("Task")
Result = TypeVar("Result")

# CPU seconds: more than a warm task uses (a whole scan read from the cache), less than a cold one.
WARM_LIMIT_S = 0.5
# Wall seconds: a task waiting this long (a release downloading) is not warm either.
WAIT_LIMIT_S = 5.0
_POLL_S = 0.05


class LocalExecutor:
    shares_files = True

    def __init__(self, workers: int, stack: contextlib.ExitStack | None) -> None:
        self.workers = workers
        self._stack = stack  # where the pool is entered, once needed (None: one worker, no pool)
        self._pool: FuturesExecutor | None = None

    @property
    def inline(self) -> bool:
        """Every task runs in this process, one at a time (one worker)."""
        return self._stack is None

    @classmethod
    @contextlib.contextmanager
    def started(cls, workers: int | None = None) -> Iterator[LocalExecutor]:
        """`workers` processes (None: the CPU cores, at most 4, as the matrix's scans); the pool
        itself starts on the first task that is not quick."""
        count = workers if workers is not None else usable_cpus(4)
        if count <= 1:
            yield cls(1, None)
            return
        with contextlib.ExitStack() as stack:
            yield cls(count, stack)

    @property
    def pooled(self) -> bool:
        """Whether the pool was started (a task was not quick)."""
        return self._pool is not None

    def _started_pool(self) -> FuturesExecutor:
        if self._pool is None:
            from apiaudit.matrix.fetching import scan_pool

            assert self._stack is not None
            # Spawn, never fork: this process has threads running (this one, progress, fetches).
            self._pool = self._stack.enter_context(scan_pool(self.workers, multiprocessing.get_context("spawn")))
        return self._pool

    def map(self, fn: Callable[[Task], Result], tasks: Sequence[Task]) -> Iterator[tuple[int, Result]]:
        if self._stack is None:
            for position, task in enumerate(tasks):
                yield position, fn(task)
            return
        handed: dict[Future, int] = {}

        def hand_over(first: int) -> None:
            if first >= len(tasks):
                return  # the last task: nothing left to start a pool for
            pool = self._started_pool()
            for position in range(first, len(tasks)):
                handed[pool.submit(fn, tasks[position])] = position

        for position, task in enumerate(tasks):
            if self._pool is not None:  # started by an earlier sweep: every task goes to it
                hand_over(position)
                break
            done = threading.Event()
            watcher = threading.Thread(target=_watch, args=(_thread_cpu_clock(), done, hand_over, position + 1), daemon=True)
            watcher.start()
            try:
                result = fn(task)
            finally:
                done.set()
                watcher.join()  # a hand-over under way finishes first: then `handed` is whole
            yield position, result
            if handed or self._pool is not None:
                break
        for future in as_completed(handed):
            yield handed[future], future.result()


def _thread_cpu_clock() -> Callable[[], float]:
    """The calling thread's CPU seconds so far, readable from another thread (wall time where the
    platform has no per-thread CPU clock)."""
    try:
        clock = time.pthread_getcpuclockid(threading.get_ident())
        time.clock_gettime(clock)
    except (AttributeError, OSError):
        return time.monotonic
    return lambda: time.clock_gettime(clock)


def _watch(cpu: Callable[[], float], done: threading.Event, hand_over: Callable[[int], None], first: int) -> None:
    """Hand the tasks from `first` on to the pool once the running task is not warm: it has used
    `WARM_LIMIT_S` of CPU or waited `WAIT_LIMIT_S` (unless it ends first)."""
    cpu_start, wall_start = cpu(), time.monotonic()
    while not done.is_set():
        if cpu() - cpu_start >= WARM_LIMIT_S or time.monotonic() - wall_start >= WAIT_LIMIT_S:
            hand_over(first)
            return
        done.wait(_POLL_S)
