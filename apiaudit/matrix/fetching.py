"""Where a matrix fetches and scans: worker processes, and how they end.

Fetching a release waits on the index and extracts in Python, so several releases to fetch
are fetched in worker processes (threads would share one interpreter); one is fetched in a
thread. A fetch worker is handed what this process learnt from pip (`LearntIndex`), so it
runs no pip to learn it again, and sends its progress lines back here. This module imports
only the release machinery: a fetch worker starts without the scan's modules.

Workers leave Ctrl-C to the matrix process, which ends them at once when it stops early and
removes the partial folders they leave.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

from apiaudit import sources
from apiaudit.errors import InputError
from apiaudit.sources import cache as release_cache
from apiaudit.sources.base import Reporter
from apiaudit.sources.release import LearntIndex, adopt_learnt_index, learn_index


def fetch(name: str, version: str, cache_dir: Path, reporter: Reporter | None, verify_wheels: bool | None = None) -> bool:
    """Make sure NAME==VERSION is in the release cache; True when this call downloaded it."""
    return sources.resolve(f"{name}=={version}", cache_dir=cache_dir, progress=reporter, verify_wheels=verify_wheels).fetched


class _QueuedSteps:
    """A fetch worker's progress lines, sent to the matrix process to show."""

    def __init__(self, queue) -> None:
        self._queue = queue

    def step(self, message: str) -> None:
        self._queue.put(message)


_WORKER_STEPS: _QueuedSteps | None = None


def _start_fetch_worker(queue, learnt: LearntIndex) -> None:
    global _WORKER_STEPS
    _WORKER_STEPS = _QueuedSteps(queue)
    adopt_learnt_index(learnt)
    start_worker()


def start_worker() -> None:
    """A worker leaves Ctrl-C to the matrix process, which ends it with SIGTERM: then its pips
    are stopped and it exits at once; the matrix removes the partial folder it leaves."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _worker_terminated)


def _worker_terminated(signum, frame) -> None:
    # At once, unwinding nothing (it may be anywhere, even exiting): its pips are stopped, and
    # the partial folder it leaves is removed by the matrix process (`remove_dead_partials`).
    from apiaudit.sources import release

    release.stop_running_pips()
    os._exit(143)


@contextlib.contextmanager
def _ended_on_failure(pool: ProcessPoolExecutor):
    """The pool, its workers ended at once when the matrix stops early (Ctrl-C, SIGTERM, an
    error): what they were doing is not wanted any more, and waiting for it could take minutes."""
    try:
        yield pool
    except BaseException:
        processes = list((getattr(pool, "_processes", None) or {}).values())
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(timeout=10)
        pool.shutdown(wait=True, cancel_futures=True)  # its queues closed: nothing left for the resource tracker
        raise


def fetch_in_worker(name: str, version: str, cache_dir: str, verify_wheels: bool | None) -> tuple[bool, str | None]:
    """`fetch` in a fetch worker: (fetched, None), or (False, the one line) for bad input (an
    InputError travels back as its text: some cannot be rebuilt from their pickled arguments)."""
    try:
        return fetch(name, version, Path(cache_dir), _WORKER_STEPS, verify_wheels), None
    except InputError as exc:
        return False, str(exc)


def _show_steps(queue, reporter: Reporter) -> None:
    while (message := queue.get()) is not None:
        reporter.step(message)


@contextlib.contextmanager
def fetch_pool(to_fetch: int, fetch_jobs: int, name: str, cache_dir: Path, context, reporter: Reporter,
                verify_wheels: bool | None):  # fmt: skip
    """Where releases are fetched: worker processes when more than one is to be fetched, else a thread."""
    if to_fetch <= 1 or fetch_jobs <= 1:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="apiaudit-fetch") as thread:
            yield thread, False
        return
    learnt = LearntIndex(settings=(), pages=()) if verify_wheels else learn_index(name, cache_dir)
    queue = context.SimpleQueue()
    shower = threading.Thread(target=_show_steps, args=(queue, reporter), name="apiaudit-fetch-steps", daemon=True)
    shower.start()
    try:
        with ProcessPoolExecutor(max_workers=min(fetch_jobs, to_fetch), mp_context=context,
                                 initializer=_start_fetch_worker, initargs=(queue, learnt)) as workers, \
                _ended_on_failure(workers):  # fmt: skip
            yield workers, True
    except BaseException:
        release_cache.remove_dead_partials(cache_dir)  # what the ended workers were building
        raise
    finally:
        queue.put(None)
        shower.join()


@contextlib.contextmanager
def scan_pool(jobs: int, context):
    if jobs <= 1:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="apiaudit-scan") as thread:
            yield thread
        return
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=start_worker) as workers, \
            _ended_on_failure(workers):  # fmt: skip
        yield workers
