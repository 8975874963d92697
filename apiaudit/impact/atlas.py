"""The ecosystem atlas: every downstream of the list against every provider release of a range.

Each cell is one scan of the downstream against the release (a task: `tasks.py`, with scan's
caches; the releases listed once), run on an executor (`executors/`: the local process pool, the
matrix's, or a cluster's workers); each cell says what that release does to that downstream:
clean, breaks (N proven errors), conditional only, does not use the provider (the downstream
imports nothing of it: nothing to check, which is not a failure to read), or cannot read. The
first release that breaks a downstream after one that did not is its first broken release.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections import Counter
from pathlib import Path
from typing import Literal, Sequence

from apiaudit import sources
from apiaudit.errors import InputError
from apiaudit.findings import Report, Severity
from apiaudit.impact.downstream import downstreams, spec_label
from apiaudit.impact.executors import Executor, in_task_order, open_executor
from apiaudit.impact.tasks import TaskOutcome, run_task, sweep_task
from apiaudit.infra.frozen import record
from apiaudit.infra.progress import NullProgress, Progress
from apiaudit.policy.config import Settings
from apiaudit.report.base import finding_id

# "unused": the downstream never uses the provider (scan's ProviderUnusedError): as clean, nothing
# of this release can break it, but nothing was checked either; told apart from "unreadable".
CellOutcome = Literal["clean", "breaks", "conditional", "unused", "unreadable"]


@record
class CellFinding:
    """One finding a cell opens on: enough to find it and to say it."""

    id: str
    rule: str
    severity: str
    site: str  # path:line in the downstream
    message: str
    blocking: bool


@record
class AtlasCell:
    release: str
    outcome: CellOutcome
    errors: int = 0  # proven errors (what makes it break)
    findings: tuple[CellFinding, ...] = ()
    failure: str | None = None


@record
class AtlasRow:
    spec: str
    label: str
    cells: tuple[AtlasCell, ...]
    first_broken: str | None = None  # the first release that breaks it after one that did not
    failure: str | None = None  # the downstream itself could not be read (every cell unreadable)


@record
class Atlas:
    provider: str  # the range, as given
    releases: tuple[str, ...]
    rows: tuple[AtlasRow, ...]
    duration_s: float = 0.0

    @property
    def counts(self) -> Counter[str]:
        return Counter(c.outcome for r in self.rows for c in r.cells)

    @property
    def provider_name(self) -> str:
        """The provider's name, without the range ("vllm" of "vllm>=0.16,<=0.20")."""
        named = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", self.provider)
        return named[1] if named else self.provider


def run_atlas(
    provider: str,
    *,
    downstream_files: Sequence[Path] = (),
    settings: Settings | None = None,
    rules_dirs: Sequence[Path] = (),
    cache_dir: Path | None = None,
    progress: Progress | None = None,
    available: Sequence[str] | None = None,
    executor: Executor | None = None,
) -> Atlas:
    """The grid for `provider` (a range such as ``vllm>=0.16,<=0.20``). `available` replaces the
    package index's list of releases (oldest first). Each cell is one task (`tasks.py`) run on
    `executor` (`impact.executors`; None: this machine's process pool). InputError for a bad
    range or list."""
    from apiaudit.matrix.ranges import parse_provider_range, select_releases

    started = time.perf_counter()
    settings = settings if settings is not None else Settings()
    progress = progress or NullProgress()
    rules_dirs = list(rules_dirs) or list(settings.rules)
    cache_dir = Path(cache_dir or settings.cache_dir or sources.default_cache_dir())
    wanted = parse_provider_range(provider)
    entries = downstreams([wanted.name], files=downstream_files, settings=settings, rules_dirs=rules_dirs)
    listed = list(available) if available is not None else sources.release_versions(wanted.name, cache_dir=cache_dir)
    releases = select_releases(listed, wanted, include_prereleases=False)
    refused = {entry.spec: _refused(entry.spec) for entry in entries}  # bad specs: one line each, no task
    readable = [entry for entry in entries if refused[entry.spec] is None]
    with contextlib.nullcontext(executor) if executor is not None else open_executor() as chosen:
        # Downstream by downstream: the tasks running at once read different releases (each
        # fetched and indexed by one of them), not one release many times over.
        tasks = [
            sweep_task(chosen, entry.spec, f"{wanted.name}=={version}", cache_dir=cache_dir, rules_dirs=rules_dirs, settings=settings)
            for entry in readable
            for version in releases
        ]
        progress.start(f"atlas: {len(readable)} downstream(s) x {len(releases)} {wanted.name} release(s)", len(tasks))
        outcomes = in_task_order(chosen, run_task, tasks, done=lambda i, _: progress.advance(tasks[i].provider))
    per_row = iter(outcomes)
    rows = []
    for entry in entries:
        failure = refused[entry.spec]
        row = [next(per_row) for _ in releases] if failure is None else []
        rows.append(_row(entry.spec, releases, row, failure))
    return Atlas(provider, tuple(releases), tuple(rows), round(time.perf_counter() - started, 3))


def _refused(spec: str) -> str | None:
    """Why a downstream spec cannot be read, said before any release is scanned for it (as `scan` would)."""
    try:
        sources.check(spec)
    except InputError as exc:
        return str(exc)
    return None


def _row(spec: str, releases: Sequence[str], outcomes: Sequence[TaskOutcome], failure: str | None) -> AtlasRow:
    """One downstream's row. When no release could be scanned, all for one reason, the reason is
    the downstream's own (it cannot be read), as a matrix of it says. A downstream that never uses
    the provider is no such failure: its cells say so, each."""
    failures = {o.failure for o in outcomes if o.report is None}
    if failure is None and outcomes and all(o.report is None and not o.unused for o in outcomes) and len(failures) == 1:
        failure = next(iter(failures)) or "no release could be scanned"
    if failure is not None:
        cells = tuple(AtlasCell(v, "unreadable", failure=failure) for v in releases)
        return AtlasRow(spec, spec_label(spec), cells, failure=failure)
    reports = [o.report for o in outcomes if o.report is not None and o.report.consumers]
    label = reports[0].consumers[0].name_version if reports else spec_label(spec)
    cells = tuple(_cell_of(version, o) for version, o in zip(releases, outcomes))
    return AtlasRow(spec, label, cells, first_broken(cells))


def _cell_of(release: str, outcome: TaskOutcome) -> AtlasCell:
    if outcome.report is not None:
        return _cell(release, outcome.report)
    if outcome.unused:
        return AtlasCell(release, "unused")
    return AtlasCell(release, "unreadable", failure=outcome.failure)


def _cell(release: str, report: Report) -> AtlasCell:
    seen: Counter = Counter()
    origins = {o.key: o for o in report.consumers}
    blocking = set(report.blocking())
    found = []
    for f in report.findings:
        if f.rule == "cannot-judge" or not f.severity.at_least(Severity.WARNING):
            continue
        origin = origins.get(f.consumer)
        site = f"{origin.shown(f.path) if origin else f.path}:{f.line}"
        found.append(CellFinding(finding_id(f, seen), f.rule, f.severity.value, site, f.message, f in blocking))
    outcome: CellOutcome = "breaks" if blocking else "conditional" if found else "clean"
    return AtlasCell(release, outcome, len(blocking), tuple(found))


def first_broken(cells: Sequence[AtlasCell]) -> str | None:
    """The first release that breaks the downstream after a release that did not (readable and not
    broken; one it does not use counts as clean); a downstream broken from the first release read
    on has none."""
    worked = False
    for cell in cells:
        if cell.outcome == "breaks" and worked:
            return cell.release
        if cell.outcome in ("clean", "conditional", "unused"):
            worked = True
    return None
