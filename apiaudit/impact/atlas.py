"""The ecosystem atlas: every downstream of the list against every provider release of a range.

Each downstream is one `matrix` sweep (`matrix.sweep.run_matrix`: the same fetching, caches and
scans), over releases listed once; each cell says what that release does to that downstream:
clean, breaks (N proven errors), conditional only, or cannot read. The first release that breaks
a downstream after one that did not is its first broken release.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Literal, Sequence

from apiaudit import sources
from apiaudit.errors import InputError
from apiaudit.findings import Report, Severity
from apiaudit.impact.downstream import downstreams, spec_label
from apiaudit.infra.frozen import record
from apiaudit.infra.progress import NullProgress, Progress
from apiaudit.policy.config import Settings
from apiaudit.report.base import finding_id

CellOutcome = Literal["clean", "breaks", "conditional", "unreadable"]


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


def run_atlas(
    provider: str,
    *,
    downstream_files: Sequence[Path] = (),
    settings: Settings | None = None,
    rules_dirs: Sequence[Path] = (),
    cache_dir: Path | None = None,
    progress: Progress | None = None,
    available: Sequence[str] | None = None,
) -> Atlas:
    """The grid for `provider` (a range such as ``vllm>=0.16,<=0.20``). `available` replaces the
    package index's list of releases (oldest first). InputError for a bad range or list."""
    from apiaudit.matrix.ranges import parse_provider_range, select_releases
    from apiaudit.matrix.sweep import run_matrix

    started = time.perf_counter()
    settings = settings if settings is not None else Settings()
    progress = progress or NullProgress()
    rules_dirs = list(rules_dirs) or list(settings.rules)
    cache_dir = Path(cache_dir or settings.cache_dir or sources.default_cache_dir())
    wanted = parse_provider_range(provider)
    entries = downstreams([wanted.name], files=downstream_files, settings=settings, rules_dirs=rules_dirs)
    listed = list(available) if available is not None else sources.release_versions(wanted.name, cache_dir=cache_dir)
    releases = select_releases(listed, wanted, include_prereleases=False)
    rows = []
    for entry in entries:
        try:
            swept = run_matrix([entry.spec], provider, cache_dir=cache_dir, rules_dirs=rules_dirs, progress=progress, available=listed)
        except InputError as exc:
            cells = tuple(AtlasCell(v, "unreadable", failure=str(exc)) for v in releases)
            rows.append(AtlasRow(entry.spec, spec_label(entry.spec), cells, failure=str(exc)))
            continue
        label = swept.consumers[0].name_version if swept.consumers else spec_label(entry.spec)
        cells = tuple(
            AtlasCell(r.version, "unreadable", failure=r.failure) if r.report is None else _cell(r.version, r.report)
            for r in swept.rows
        )  # fmt: skip
        rows.append(AtlasRow(entry.spec, label, cells, first_broken(cells)))
    return Atlas(provider, tuple(releases), tuple(rows), round(time.perf_counter() - started, 3))


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
    broken); a downstream broken from the first release read on has none."""
    worked = False
    for cell in cells:
        if cell.outcome == "breaks" and worked:
            return cell.release
        if cell.outcome in ("clean", "conditional"):
            worked = True
    return None
