"""The compatibility matrix: one consumer scanned against every provider release in a range.

Releases are fetched in worker processes (`fetching.py` says why) and scanned in a small
process pool as each fetch lands. Both share
one cache directory: the release cache publishes entries atomically and the provider
index cache is keyed per release, so concurrent runs only ever cost duplicate work.
"""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import field
from pathlib import Path
from typing import Literal, Sequence

from apiaudit import sources
from apiaudit.audit import scan
from apiaudit.errors import InputError
from apiaudit.findings import CodeOrigin, Report, Severity
from apiaudit.infra.progress import LockedProgress, NullProgress, Progress
from apiaudit.infra.frozen import record
from apiaudit.infra.workers import usable_cpus
from apiaudit.matrix.fetching import fetch, fetch_in_worker, fetch_pool, scan_pool
from apiaudit.matrix.ranges import (
    DeclaredRequirement,
    ProviderRange,
    as_requirement,
    declared_requirements,
    parse_provider_range,
    select_releases,
)
from apiaudit.model import ModelFacts
from apiaudit.sources import cache as release_cache
from apiaudit.sources.release import validate_once
from apiaudit.sources.release import verifies_wheels as release_default_verify


@record
class MatrixRow:
    """One provider release: what the scan found, or why it could not run."""

    version: str
    errors: int = 0
    warnings: int = 0
    cannot_judge: int = 0
    rules: tuple[str, ...] = ()  # rule ids of errors and warnings, sorted, each once
    # The followed dependencies (`CodeOrigin.required_by`) those errors and warnings are in, "name version"
    dependencies: tuple[str, ...] = ()
    fetched: bool = False  # True when this run downloaded the wheel (False: it was cached)
    failure: str | None = None  # the one-line reason the release could not be scanned
    report: Report | None = field(default=None, compare=False, repr=False)

    @property
    def scanned(self) -> bool:
        return self.failure is None

    @property
    def compatible(self) -> bool:
        """No error-severity finding: warnings and cannot-judge do not break compatibility."""
        return self.failure is None and self.errors == 0


@record
class Disagreement:
    consumer: str
    version: str
    declared: bool  # the consumer's requirement allows this release
    compatible: bool  # the scan found no error against it


@record
class MatrixResult:
    consumers: tuple[CodeOrigin, ...]
    provider: ProviderRange
    rows: tuple[MatrixRow, ...]
    declared: tuple[DeclaredRequirement, ...]
    include_prereleases: bool = False
    duration_s: float = 0.0
    # The declared dependencies audited with the consumers because they import the provider (the
    # consumers do not): their declared ranges count as the consumers' own do.
    dependencies: tuple[CodeOrigin, ...] = ()

    @property
    def parties(self) -> tuple[CodeOrigin, ...]:
        """Everything audited whose declared range on the provider counts: consumers, then dependencies."""
        return self.consumers + self.dependencies

    @property
    def scanned_versions(self) -> tuple[str, ...]:
        return tuple(r.version for r in self.rows if r.scanned)

    @property
    def compatible_versions(self) -> tuple[str, ...]:
        return tuple(r.version for r in self.rows if r.compatible)

    @property
    def compatible_range(self) -> tuple[str, bool]:
        """(requirement text over the scanned releases, contiguous?); ("", True) when none is compatible."""
        return as_requirement(self.compatible_versions, self.scanned_versions)

    def declared_for(self, consumer: str) -> tuple[DeclaredRequirement, ...]:
        return tuple(d for d in self.declared if d.consumer == consumer)

    def declared_allows(self, consumer: str, version: str) -> bool | None:
        """Whether any of the consumer's declared requirements allows `version`; None: it declares none."""
        declared = self.declared_for(consumer)
        if not declared:
            return None
        return any(d.allows(version) for d in declared)

    @property
    def disagreements(self) -> tuple[Disagreement, ...]:
        out = []
        for origin in self.parties:
            for row in self.rows:
                if not row.scanned:
                    continue
                allowed = self.declared_allows(origin.name, row.version)
                if allowed is not None and allowed != row.compatible:
                    out.append(Disagreement(origin.name, row.version, allowed, row.compatible))
        return tuple(out)

    def exit_code(self) -> int:
        """0 when some release is compatible and every declared range agrees with the scans, else 1."""
        return 0 if self.compatible_versions and not self.disagreements else 1


def run_matrix(
    consumers: Sequence[str],
    provider: str,
    *,
    cache_dir: Path | None = None,
    rules_dirs: Sequence[Path] = (),
    include_prereleases: bool = False,
    fetch_jobs: int = 4,
    scan_jobs: int | None = None,
    progress: Progress | None = None,
    available: Sequence[str] | None = None,
    model: ModelFacts | None = None,
    refresh: bool = False,
    verify_wheels: bool | None = None,
) -> MatrixResult:
    """Scan `consumers` against each release of `provider` (a range like ``vllm>=0.11,<=0.17``).

    `available` replaces the package index's list of releases (oldest first), for
    callers that already know it; otherwise a listing a few minutes old is reused from the
    cache unless `refresh`. Each release entry is validated once (`validate_once`); when every
    release and its index are cached, the scans run in this process (no worker to start). With `model`, each release is scanned for that model: a
    release whose registry does not register its architecture is a failed row. `verify_wheels`
    downloads each wheel whole instead of reading its .py files by range requests. Raises InputError for bad input, an empty range,
    a range the index has no release in, or an unreachable index.
    """
    with validate_once():
        return _run_matrix(consumers, provider, cache_dir, rules_dirs, include_prereleases, fetch_jobs, scan_jobs,
                           progress, available, model, refresh, verify_wheels)  # fmt: skip


def _run_matrix(consumers, provider, cache_dir, rules_dirs, include_prereleases, fetch_jobs, scan_jobs, progress,
                available, model, refresh, verify_wheels=None) -> MatrixResult:  # fmt: skip
    started = time.perf_counter()
    if not consumers:
        raise InputError("give the consumer to check, e.g. --consumer speculators==0.4.0")
    progress = progress or NullProgress()
    cache_dir = Path(cache_dir) if cache_dir else sources.default_cache_dir()
    provider_range = parse_provider_range(provider)
    for spec in consumers:  # a bad --consumer is one line before the index is asked anything
        sources.check(spec)
    listed = list(available) if available is not None else sources.release_versions(
        provider_range.name, include_prereleases=include_prereleases, cache_dir=cache_dir, refresh=refresh
    )
    versions = select_releases(listed, provider_range, include_prereleases=include_prereleases)

    # The consumers first: a bad --consumer is one line before any provider wheel is fetched.
    consumer_trees = [
        sources.resolve(spec, cache_dir=cache_dir, progress=progress, verify_wheels=verify_wheels) for spec in consumers
    ]
    declared = tuple(d for tree in consumer_trees for d in declared_requirements(tree, provider_range.name))
    consumer_specs = [_stable_spec(spec, tree) for spec, tree in zip(consumers, consumer_trees)]

    rows = _fetch_and_scan(
        consumer_specs, provider_range.name, versions, cache_dir, list(rules_dirs), progress,
        fetch_jobs=fetch_jobs, scan_jobs=scan_jobs, model=model, verify_wheels=verify_wheels,
    )  # fmt: skip
    failures = {r.failure for r in rows}
    if all(not r.scanned for r in rows) and len(failures) == 1:
        raise InputError(next(iter(failures)) or "no release could be scanned")
    dependencies = _followed_dependencies(rows)
    for origin in dependencies:
        # Already cached by the scans that followed it: nothing is fetched here.
        tree = sources.resolve(origin.spec, cache_dir=cache_dir, verify_wheels=verify_wheels)
        declared += declared_requirements(tree, provider_range.name)
    return MatrixResult(
        consumers=tuple(t.origin() for t in consumer_trees),
        provider=provider_range,
        rows=tuple(rows),
        declared=declared,
        include_prereleases=include_prereleases,
        duration_s=round(time.perf_counter() - started, 3),
        dependencies=dependencies,
    )


def _followed_dependencies(rows: Sequence[MatrixRow]) -> tuple[CodeOrigin, ...]:
    """The dependencies any release's scan followed (the same ones for every release, as a rule)."""
    found: dict[tuple[str, str | None], CodeOrigin] = {}
    for row in rows:
        for origin in row.report.consumers if row.report is not None else ():
            if origin.required_by is not None:
                found.setdefault((origin.name, origin.version), origin)
    return tuple(found.values())



def _stable_spec(spec: str, tree: sources.CodeTree) -> str:
    # A worker process must read the very tree resolved here, not re-resolve a name differently.
    if tree.kind == "release":
        return f"{tree.name}=={tree.version}"
    return spec


def _all_cached(name: str, versions: list[str], cache_dir: Path) -> bool:
    """Whether every release and its provider index are cached: then nothing is worth a worker."""
    from apiaudit.provider.cache import has_entry

    for version in versions:
        if release_cache.marker_stamp(release_cache.entry_dir(cache_dir, name, version)) is None:
            return False
        try:
            tree = sources.resolve(f"{name}=={version}", cache_dir=cache_dir)  # validated here, once
        except InputError:
            return False
        if not has_entry(tree, cache_dir):
            return False
    return True


def _scan_one(consumers: list[str], provider_spec: str, cache_dir: str, rules_dirs: list[str],
              model: ModelFacts | None = None, in_pool: bool = False) -> Report:
    """One scan, run in a worker process (module-level so it pickles). In a pool of scans, each
    uses its own process only (the pool already shares the CPUs)."""
    if in_pool:
        from apiaudit.infra.workers import set_jobs

        set_jobs(1)
    return scan(consumers, provider_spec, cache_dir=Path(cache_dir), rules_dirs=[Path(d) for d in rules_dirs], model=model)


# What a pending job of the matrix does: make sure a release is cached (here: it answers whether
# it fetched), the same in a fetch worker (it answers that, or the line saying why it failed),
# or scan one.
_Stage = Literal["fetch", "fetch-in-worker", "scan"]


def _fetch_and_scan(
    consumers: list[str],
    name: str,
    versions: list[str],
    cache_dir: Path,
    rules_dirs: list[Path],
    progress: Progress,
    *,
    fetch_jobs: int,
    scan_jobs: int | None,
    model: ModelFacts | None = None,
    verify_wheels: bool | None = None,
) -> list[MatrixRow]:
    reporter = LockedProgress(progress)  # fetch threads report steps through it
    scan_jobs = scan_jobs or usable_cpus(4)  # scans at once: the CPU cores, at most 4
    progress.start(f"scanning {len(consumers)} consumer(s) against {len(versions)} {name} release(s)", len(versions))
    rows: dict[str, MatrixRow] = {}
    fetched: dict[str, bool] = {}
    if _all_cached(name, versions, cache_dir):
        # Warm: each scan answers from its caches in a fraction of a worker's start-up.
        for version in versions:
            try:
                report = _scan_one(consumers, f"{name}=={version}", str(cache_dir), [str(d) for d in rules_dirs], model)
            except InputError as exc:
                rows[version] = MatrixRow(version, failure=str(exc))
            else:
                rows[version] = _row(version, report, False)
            progress.advance(version)
        return [rows[v] for v in versions]
    # Threads are running while workers start: spawn, never fork a threaded process.
    context = multiprocessing.get_context("spawn")
    missing = [v for v in versions if release_cache.marker_stamp(release_cache.entry_dir(cache_dir, name, v)) is None]
    # A worker process does not share this process's `--verify-wheels` default: it is passed.
    verify_wheels = verify_wheels if verify_wheels is not None else release_default_verify()
    with ThreadPoolExecutor(max_workers=max(1, fetch_jobs), thread_name_prefix="apiaudit-check") as checkers, \
            fetch_pool(len(missing), fetch_jobs, name, cache_dir, context, reporter, verify_wheels) as (fetchers, apart), \
            scan_pool(scan_jobs, context) as scanners:  # fmt: skip
        # A cached release is only checked (here, in a thread); the others are fetched (in
        # worker processes when there are several).
        pending: dict[Future, tuple[_Stage, str]] = {}
        for v in versions:
            if v not in missing:
                pending[checkers.submit(fetch, name, v, cache_dir, reporter, verify_wheels)] = ("fetch", v)
            elif apart:
                pending[fetchers.submit(fetch_in_worker, name, v, str(cache_dir), verify_wheels)] = ("fetch-in-worker", v)
            else:
                pending[fetchers.submit(fetch, name, v, cache_dir, reporter, verify_wheels)] = ("fetch", v)
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                stage, version = pending.pop(future)
                try:
                    value = future.result()
                    if stage == "fetch-in-worker":
                        value, failure = value
                        if failure is not None:
                            raise InputError(failure)
                except InputError as exc:
                    rows[version] = MatrixRow(version, fetched=fetched.get(version, False), failure=str(exc))
                    progress.advance(version)
                    continue
                if stage in ("fetch", "fetch-in-worker"):
                    fetched[version] = bool(value)
                    job = scanners.submit(
                        _scan_one, consumers, f"{name}=={version}", str(cache_dir), [str(d) for d in rules_dirs], model, True
                    )
                    pending[job] = ("scan", version)
                else:
                    rows[version] = _row(version, value, fetched.get(version, False))
                    progress.advance(version)
    return [rows[v] for v in versions]


def _row(version: str, report: Report, fetched: bool) -> MatrixRow:
    judged = [f for f in report.findings if f.rule != "cannot-judge"]
    rules = sorted({f.rule for f in judged if f.severity.at_least(Severity.WARNING)})
    followed = {o.key: o.name_version for o in report.consumers if o.required_by is not None}
    dependencies = sorted({followed[f.consumer] for f in judged if f.severity.at_least(Severity.WARNING) and f.consumer in followed})
    return MatrixRow(
        version=version,
        errors=report.count(Severity.ERROR),
        warnings=report.count(Severity.WARNING),
        cannot_judge=report.cannot_judge,
        rules=tuple(rules),
        dependencies=tuple(dependencies),
        fetched=fetched,
        report=report,
    )
