"""The sweep's unit of work: one downstream scanned against one provider release.

`impact` and `atlas` are sets of independent scans; an executor (`executors/`) runs them here,
in a local process pool, or on a cluster's workers. So a task is data a worker can rebuild the
scan from: specs (strings), never trees, and the cache directory as a field (None: the worker's
own default cache, as on a remote machine, which fetches what it reads). Its answer is the
report or the one line saying why there is none, and which of two reasons that is (`NoReport`):
the scan could not run (bad input is an answer, not a crash: the other downstreams go on), or
the downstream never uses the provider (nothing to check: not a downstream that cannot be read).
All of it plain data: it comes back from a worker process or a Dask worker pickled.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal, Sequence

from apiaudit.errors import InputError, ProviderUnusedError
from apiaudit.findings import Report
from apiaudit.infra.frozen import record

if TYPE_CHECKING:
    from apiaudit.impact.executors import Executor
    from apiaudit.policy.config import Settings


@record
class ScanTask:
    """`scan [consumer] --provider provider [--against against]`, as a worker runs it."""

    consumer: str
    provider: str
    against: str | None = None  # impact: OLD, the release in use today (the report is the upgrade delta)
    with_deps: bool | None = None  # scan's `--with-deps` (None: its default)
    cache_dir: str | None = None  # None: the worker's default cache
    rules_dirs: tuple[str, ...] = ()
    offline: bool = False
    # The processes the scan may split a consumer's files over (None: scan's default). A task
    # sharing the machine with other tasks uses one: the pool already shares the CPUs.
    jobs: int | None = None
    # The project folder reports' paths start from (the config file's folder), as the caller's.
    project_file: str | None = None


# Why a task has no report: "unreadable", the downstream or the release could not be read (a
# release not on the index, a path that is gone, ...); "unused", the downstream never uses the
# provider, nor does any dependency it declares (scan's ProviderUnusedError).
NoReport = Literal["unreadable", "unused"]


@record
class TaskOutcome:
    report: Report | None = None
    failure: str | None = None  # the one line saying why there is no report (scan's message)
    no_report: NoReport | None = None  # which reason that is; None with a report

    @property
    def unused(self) -> bool:
        """The downstream never uses the provider: nothing to check, and nothing failed."""
        return self.report is None and self.no_report == "unused"


def sweep_task(executor: Executor, consumer: str, provider: str, *, cache_dir: Path, rules_dirs: Sequence[Path],
               settings: Settings, against: str | None = None, with_deps: bool | None = None) -> ScanTask:  # fmt: skip
    """The task scanning `consumer` against `provider` as `executor` runs it: paths absolute, this
    machine's cache only where its workers read this machine's files, one process a scan where
    tasks run side by side."""
    return ScanTask(
        for_workers(consumer), for_workers(provider), against=for_workers(against) if against is not None else None,
        with_deps=with_deps, cache_dir=str(cache_dir) if executor.shares_files else None,
        rules_dirs=tuple(str(Path(d).resolve()) for d in rules_dirs), offline=settings.offline,
        jobs=None if executor.inline else 1, project_file=str(settings.file) if settings.file else None,
    )  # fmt: skip


def run_task(task: ScanTask) -> TaskOutcome:
    """One scan (module level, so that it pickles by name). The downstreams' findings are judged
    by no project policy (select, exclude, baseline): only the cache, rules and offline apply."""
    from apiaudit.audit import scan
    from apiaudit.infra.workers import jobs_within
    from apiaudit.policy.config import Settings

    cache_dir = Path(task.cache_dir) if task.cache_dir is not None else None
    rules_dirs = tuple(Path(d) for d in task.rules_dirs)
    project = Path(task.project_file) if task.project_file is not None else None
    neutral = Settings(rules=rules_dirs, cache_dir=cache_dir, offline=task.offline, file=project)
    try:
        with jobs_within(task.jobs):
            report = scan(
                [task.consumer], task.provider, against=task.against, settings=neutral, cache_dir=cache_dir,
                rules_dirs=rules_dirs, use_baseline=False, with_deps=task.with_deps,
            )  # fmt: skip
    except ProviderUnusedError as exc:
        return TaskOutcome(failure=str(exc), no_report="unused")
    except InputError as exc:
        # As text: some InputErrors cannot be rebuilt from their pickled arguments.
        return TaskOutcome(failure=str(exc), no_report="unreadable")
    return TaskOutcome(report=report)


def for_workers(spec: str) -> str:
    """A spec as a worker reads it: a path made absolute (a worker's folder is not ours)."""
    import os

    from apiaudit.sources.local import looks_like_path

    return os.path.abspath(os.path.expanduser(spec)) if looks_like_path(spec) else spec
