"""The local executor: this machine's process pool, the one the matrix scans in
(`matrix.fetching.scan_pool`: spawned workers that leave Ctrl-C to this process, ended at once
when the sweep stops early). One worker runs the tasks in this process, one after another, as
a plain `scan` would (each free to split a consumer's files over the CPUs)."""

from __future__ import annotations

import contextlib
import multiprocessing
from concurrent.futures import Executor as FuturesExecutor
from concurrent.futures import as_completed
from typing import Callable, Iterator, Sequence, TypeVar

from apiaudit.infra.workers import usable_cpus

Task = TypeVar("Task")
Result = TypeVar("Result")


class LocalExecutor:
    shares_files = True

    def __init__(self, workers: int, pool: FuturesExecutor | None) -> None:
        self.workers = workers
        self._pool = pool

    @property
    def inline(self) -> bool:
        """The tasks run in this process, one at a time."""
        return self._pool is None

    @classmethod
    @contextlib.contextmanager
    def started(cls, workers: int | None = None) -> Iterator[LocalExecutor]:
        """`workers` processes (None: the CPU cores, at most 4, as the matrix's scans)."""
        count = workers if workers is not None else usable_cpus(4)
        if count <= 1:
            yield cls(1, None)
            return
        from apiaudit.matrix.fetching import scan_pool

        # Spawn, never fork: the caller may have threads running (progress, fetches).
        with scan_pool(count, multiprocessing.get_context("spawn")) as pool:
            yield cls(count, pool)

    def map(self, fn: Callable[[Task], Result], tasks: Sequence[Task]) -> Iterator[tuple[int, Result]]:
        if self._pool is None:
            for position, task in enumerate(tasks):
                yield position, fn(task)
            return
        futures = {self._pool.submit(fn, task): position for position, task in enumerate(tasks)}
        for future in as_completed(futures):
            yield futures[future], future.result()
