"""Where the sweep's tasks run: one interface, one module per kind of executor.

`impact` and `atlas` hand an executor a list of picklable task records (`impact.tasks`) and a
module-level function; it answers each task's picklable result as it completes, with the task's
position, so that the caller puts the results back in task order: whichever executor ran them,
the report is the same (same cells, findings, ids and order).

- `local.py`: this machine's process pool, the one the matrix scans in (`--workers N`).
- `dask.py`: a Dask distributed scheduler (`--executor dask://HOST:PORT`, `tcp://HOST:PORT`),
  the optional `distributed` extra, imported only when asked for.

The executors live in `impact` because the sweep over downstreams is impact's: they run scans
(`audit`) in pools the matrix already has, which an earlier stage (`infra`) could not import.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator, Protocol, Sequence, TypeVar

from apiaudit.errors import ArgumentError

Task = TypeVar("Task")
Result = TypeVar("Result")

LOCAL = "local"
_DASK_SCHEMES = ("dask://", "tcp://")


class Executor(Protocol):
    @property
    def shares_files(self) -> bool:
        """Whether every worker reads this machine's files (the cache directory, path specs):
        else a task names no cache and each worker fetches into its own."""
        ...

    @property
    def workers(self) -> int:
        """How many tasks run at once."""
        ...

    @property
    def inline(self) -> bool:
        """The tasks run in this process, one at a time: each may split its work over the CPUs."""
        ...

    def map(self, fn: Callable[[Task], Result], tasks: Sequence[Task]) -> Iterator[tuple[int, Result]]:
        """`fn(task)` for every task, answered as each completes: (its position in `tasks`, its result)."""
        ...


def in_task_order(executor: Executor, fn: Callable[[Task], Result], tasks: Sequence[Task],
                  done: Callable[[int, Result], None] | None = None) -> list[Result]:  # fmt: skip
    """Every task's result in the order of `tasks`, whatever order they completed in; `done` is
    told of each as it completes (progress)."""
    results: dict[int, Result] = {}
    for position, result in executor.map(fn, tasks):
        results[position] = result
        if done is not None:
            done(position, result)
    return [results[i] for i in range(len(tasks))]


@contextlib.contextmanager
def open_executor(address: str | None = None, *, workers: int | None = None, connect_timeout_s: float = 10.0) -> Iterator[Executor]:
    """The executor `--executor ADDRESS` names: `local` (the default) with `workers` processes
    (None: the CPU cores, at most 4, as the matrix scans), or a Dask scheduler's address.
    ArgumentError (one line, exit 2) for an address of no known kind, a scheduler that cannot
    be reached, or the Dask executor without its extra."""
    chosen = (address or LOCAL).strip()
    if workers is not None and workers < 1:
        raise ArgumentError(f"--workers {workers}: give at least 1")
    if chosen == LOCAL:
        from apiaudit.impact.executors.local import LocalExecutor

        with LocalExecutor.started(workers) as local:
            yield local
        return
    if chosen.startswith(_DASK_SCHEMES):
        if workers is not None:
            raise ArgumentError(f"--workers is for --executor local: the Dask scheduler at {chosen} has its own workers")
        from apiaudit.impact.executors.dask import DaskExecutor

        with DaskExecutor.connected(chosen, connect_timeout_s=connect_timeout_s) as remote:
            yield remote
        return
    raise ArgumentError(f"--executor {chosen}: give local, or a Dask scheduler as dask://HOST:PORT or tcp://HOST:PORT")
