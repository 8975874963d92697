"""`impact OLD NEW`: every downstream scanned against NEW with OLD as the release in use today.

Each downstream is one task (`tasks.py`: `audit.scan(..., against=OLD)`, the upgrade delta
`scan --against` makes, with scan's caches: a warm re-run reads whole scans from the results
cache), run on an executor (`executors/`: the local process pool, or a cluster's workers), so
that one downstream that cannot be read is said, not fatal; one that never uses the provider is
said as that (outcome "unused"), not as unreadable. The introduced findings are then
tied to their provider change here (`cause.py`), OLD and NEW prepared once for all downstreams.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Sequence

from apiaudit import sources
from apiaudit.audit import rulebook_for
from apiaudit.errors import InputError
from apiaudit.findings import Report
from apiaudit.impact import tied as tied_memo
from apiaudit.impact.cause import Sides, site_of, tie_findings
from apiaudit.impact.downstream import downstreams, spec_label
from apiaudit.impact.executors import Executor, in_task_order, open_executor
from apiaudit.impact.results import Break, DownstreamResult, ImpactResult, Outcome
from apiaudit.impact.tasks import TaskOutcome, run_task, sweep_task
from apiaudit.infra.progress import NullProgress, Progress
from apiaudit.policy.config import DownstreamEntry, Settings
from apiaudit.sources.base import CodeTree


def run_impact(
    old: str,
    new: str,
    *,
    downstream_files: Sequence[Path] = (),
    settings: Settings | None = None,
    rules_dirs: Sequence[Path] = (),
    cache_dir: Path | None = None,
    progress: Progress | None = None,
    executor: Executor | None = None,
) -> ImpactResult:
    """Which downstreams moving the provider from `old` to `new` breaks, and through which change.

    `old`/`new` are provider specs as scan's `--provider` takes them (NAME==VERSION, a source
    checkout, an installed distribution); a bad one is an InputError before any downstream is read.
    `settings` gives the cache, rules and `[tool.apiaudit.impact]`; the downstreams' findings are
    judged by no project policy (they are the downstreams' code, not this project's). The scans
    run on `executor` (`impact.executors`; None: this machine's process pool), one task each."""
    started = time.perf_counter()
    settings = settings if settings is not None else Settings()
    progress = progress or NullProgress()
    rules_dirs = list(rules_dirs) or list(settings.rules)
    cache_dir = Path(cache_dir or settings.cache_dir or sources.default_cache_dir())
    if settings.offline:
        from apiaudit.policy.offline import require_cached

        require_cached([old, new], cache_dir)  # --offline: a release not cached is one line, before any work
    with sources.fetching_refused() if settings.offline else contextlib.nullcontext():
        old_tree, new_tree = (_provider(spec, cache_dir, progress) for spec in (old, new))
    entries = downstreams([new_tree.name, *new_tree.packages], files=downstream_files, settings=settings, rules_dirs=rules_dirs)
    with contextlib.nullcontext(executor) if executor is not None else open_executor() as chosen:
        tasks = [
            sweep_task(chosen, entry.spec, new, against=old, with_deps=entry.with_deps, cache_dir=cache_dir,
                       rules_dirs=rules_dirs, settings=settings)  # fmt: skip
            for entry in entries
        ]
        progress.start(f"checking {len(tasks)} downstream(s) of {new_tree.name}", len(tasks))
        outcomes = in_task_order(chosen, run_task, tasks, done=lambda i, _: progress.advance(spec_label(entries[i].spec)))
    sides = _LazySides(old_tree, new_tree, rules_dirs, cache_dir)
    memo = _TieMemo(old_tree, new_tree, rules_dirs, cache_dir)
    results = [_one(entry, outcome, sides, memo, cache_dir) for entry, outcome in zip(entries, outcomes)]
    sides.save()
    return ImpactResult(
        old=old_tree.origin(), new=new_tree.origin(), downstreams=tuple(results),
        duration_s=round(time.perf_counter() - started, 3), provider_name=_imported_as(new_tree),
    )  # fmt: skip


def _provider(spec: str, cache_dir: Path, progress: Progress) -> CodeTree:
    tree = sources.resolve(spec, cache_dir=cache_dir, progress=progress)
    if not tree.packages:
        raise InputError(f"{spec} holds no Python package to audit against")
    return tree


def _imported_as(tree: CodeTree) -> str:
    """The provider as its downstreams import it: a release's or distribution's name, a checkout's
    packages (its folder, `head/`, names nothing a downstream imports)."""
    if tree.kind != "path" or tree.name in tree.packages:
        return tree.name
    return ", ".join(tree.packages)


def _one(entry: DownstreamEntry, outcome: TaskOutcome, sides: _LazySides, memo: _TieMemo, cache_dir: Path) -> DownstreamResult:
    """A downstream's result from its scan's: its breaks tied to their provider change here, where
    OLD and NEW are prepared once for every downstream (and not at all where the ties are kept).
    One that never uses the provider has no report, so nothing is tied or kept for it."""
    report = outcome.report
    if report is None:
        if outcome.unused:
            return DownstreamResult(entry.spec, spec_label(entry.spec), "unused")
        return DownstreamResult(entry.spec, spec_label(entry.spec), "unreadable", error=outcome.failure or "the scan did not run")
    origin = report.consumers[0] if report.consumers else None
    label = origin.name_version if origin is not None else entry.spec
    breaks = memo.kept(report, label) if _has_breaks(report) else ()
    if breaks is None:
        try:
            trees = _consumer_trees(report, entry.spec, cache_dir)
        except InputError as exc:
            return DownstreamResult(entry.spec, spec_label(entry.spec), "unreadable", error=str(exc))
        breaks = tie_findings(report, trees, sides.get(), label) if trees else ()
        memo.keep(report, label, breaks)
    delta = report.delta
    return DownstreamResult(
        entry.spec, label, _outcome(breaks), breaks, fixed=len(delta.fixed) if delta else 0,
        unchanged=delta.unchanged if delta else 0, origin=origin,
    )  # fmt: skip


def _has_breaks(report: Report) -> bool:
    return any(f.rule != "cannot-judge" for f in report.findings)


def _outcome(breaks: tuple[Break, ...]) -> Outcome:
    if any(b.blocking for b in breaks):
        return "breaks"
    return "conditional" if breaks else "clean"


def _consumer_trees(report: Report, spec: str, cache_dir: Path) -> dict[str, CodeTree]:
    """Each consumer of the report as a tree again: the downstream from its own spec, the
    dependencies audited with it (releases or installed distributions) from their origins."""
    trees = {}
    for i, origin in enumerate(report.consumers):
        if i == 0:
            again = spec
        elif origin.kind == "release":
            again = f"{origin.name}=={origin.version}"
        elif origin.kind == "installed":
            again = origin.name
        else:
            continue  # a path found as a dependency: its findings keep their callee as the change
        trees[origin.key] = sources.resolve(again, cache_dir=cache_dir)
    return trees


class _TieMemo:
    """The changes tied to a downstream's findings, kept in the cache (`tied.py`) by what tying read."""

    def __init__(self, old: CodeTree, new: CodeTree, rules_dirs: Sequence[Path], cache_dir: Path):
        from apiaudit.cache.scans import engine_fingerprint
        from apiaudit.recipes.files import rules_digest

        self.cache_dir = cache_dir
        self.parts = (engine_fingerprint(cache_dir), rules_digest(list(rules_dirs)), repr(old.origin()), repr(new.origin()))

    def _name(self, report: Report, label: str) -> tuple[str | None, list]:
        tied = [f for f in report.findings if f.rule != "cannot-judge"]
        return tied_memo.key(*self.parts, label, report, tied), tied

    def kept(self, report: Report, label: str) -> tuple[Break, ...] | None:
        name, tied = self._name(report, label)
        changes = tied_memo.lookup(self.cache_dir, name, len(tied)) if name else None
        if changes is None:
            return None
        origins = {o.key: o for o in report.consumers}
        return tuple(Break(label, f, c, site_of(f, origins.get(f.consumer))) for f, c in zip(tied, changes))

    def keep(self, report: Report, label: str, breaks: Sequence[Break]) -> None:
        name, tied = self._name(report, label)
        if name and [b.finding for b in breaks] == tied:
            tied_memo.store(self.cache_dir, name, [b.change for b in breaks])


class _LazySides:
    """OLD and NEW prepared (index, rules, options) on the first downstream with a break only."""

    def __init__(self, old: CodeTree, new: CodeTree, rules_dirs: Sequence[Path], cache_dir: Path):
        self.trees = (old, new)
        self.rules_dirs = list(rules_dirs)
        self.cache_dir = cache_dir
        self.sides: Sides | None = None

    def get(self) -> Sides:
        if self.sides is None:
            from apiaudit.engine import prepare

            old, new = (prepare(t, rulebook_for(self.rules_dirs, t), cache_dir=self.cache_dir) for t in self.trees)
            self.sides = Sides(old, new, self.cache_dir)
        return self.sides

    def save(self) -> None:
        if self.sides is None:
            return
        from apiaudit.provider.cache import save_index

        for setup in (self.sides.old_setup, self.sides.new_setup):
            save_index(setup.index, setup.provider, self.cache_dir)
