"""Date each finding: the first provider release where it appears, found by bisecting releases.

The predicate is cheap: rather than a whole scan per probed release, only the finding's
own file is re-checked, for the finding's rule only, through the engine's seam
(`engine.prepare` for the release, `engine.check_file(..., only={rule})`), as a scan of
that release would check it. The consumer's code is the same in every probe, so a finding
is "present" in a release when the re-check yields the same rule on the same line for the
same parameter or attribute. Which provider callable the finding's call resolved to, and
its signature, come from the same check (`FileCheck.calls_on_line`); a class's or module's
members from the `Index` protocol (`members`). Findings bisect in lock step, so each
round fetches the releases all of them need at once, in parallel.
"""

from __future__ import annotations

import contextlib
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

from packaging.version import InvalidVersion, Version

from apiaudit import sources
from apiaudit.audit import scan
from apiaudit.checks.context import CheckContext, Index
from apiaudit.consumer import collect
from apiaudit.consumer.records import ConsumerFile, ConsumerOptions
from apiaudit.engine import FileCheck, ScanSetup, check_file, consumer_context, prepare
from apiaudit.errors import InputError
from apiaudit.evidence import AttributeFacts, ImportFacts, ModelAttributeFacts, attribute_of
from apiaudit.findings import Finding, Report, Severity
from apiaudit.infra.progress import NullProgress, Progress
from apiaudit.infra.frozen import record
from apiaudit.matrix.ranges import declared_requirements
from apiaudit.model import ModelFacts
from apiaudit.provider.cache import save_index
from apiaudit.provider.records import CallInfo, Found, ParamKind, Signature
from apiaudit.recipes import RuleBook, load_rulebook
from apiaudit.recipes.changes import ChangeKind
from apiaudit.sources.base import CodeTree

# Kinds of change, as explain reports them (docs/matrix.md lists them): the rules' own
# vocabulary, so a dated rename or move is the recipe that fixes it.
REMOVED_PARAMETER = ChangeKind.REMOVED_PARAMETER
ADDED_PARAMETER = ChangeKind.ADDED_PARAMETER
DEFAULT_REMOVED = ChangeKind.DEFAULT_REMOVED
RENAMED_PARAMETER = ChangeKind.RENAMED_PARAMETER
MADE_POSITIONAL_ONLY = ChangeKind.MADE_POSITIONAL_ONLY
POSITIONAL_REMOVED = ChangeKind.POSITIONAL_REDUCED
MOVED = ChangeKind.MOVED_SYMBOL
REMOVED = ChangeKind.REMOVED
RENAMED_ATTRIBUTE = ChangeKind.RENAMED_ATTRIBUTE
RULE_RANGE = ChangeKind.RULE_RANGE
MODEL_CLASSES_ADDED = ChangeKind.MODEL_CLASSES_ADDED
OTHER = ChangeKind.OTHER


@record
class Change:
    """What changed in the provider between two neighbouring releases, for one finding."""

    kind: ChangeKind
    before: str | None  # the callee as it was in the last release without the finding
    after: str | None  # ... and in the first release with it
    old_name: str | None = None  # renames: the old parameter/attribute name, moves: the old path
    new_name: str | None = None  # renames: the new name, moves: the new dotted path
    symbol: str | None = None  # the callee (renamed-parameter) or owner class (renamed-attribute)
    note: str = ""


@record
class Explanation:
    finding: Finding
    introduced_in: str | None  # first release with the finding; None when not dated
    last_without: str | None  # the release just before it
    change: Change | None = None
    probes: tuple[str, ...] = ()  # releases checked while bisecting, in order
    why_undated: str | None = None  # e.g. "already present in 0.11.0, the baseline"


@record
class ExplainResult:
    report: Report
    provider: str
    baseline: str
    baseline_reason: str  # "--since", "declared by speculators (vllm==0.11.0)"
    releases: tuple[str, ...]  # the releases bisected over, baseline .. scanned, oldest first
    explanations: tuple[Explanation, ...]
    fetched: tuple[str, ...] = ()  # releases this run had to fetch
    duration_s: float = 0.0


# --- one release, ready to re-check single sites ----------------------------------------


@dataclass
class _Release:
    """A probed release as scan sees it: its `ScanSetup`, each audited tree's files read with its
    options (version guards folded on it) and that tree's check context, by the key findings
    name their consumer with (the consumer, and any dependency the scan followed)."""

    version: str
    setup: ScanSetup
    files: dict[str, dict[str, ConsumerFile]]
    consumers: dict[str, CheckContext]
    memo: dict[tuple[str, str, str], FileCheck] = field(default_factory=dict)

    @property
    def tree(self) -> CodeTree:
        return self.setup.provider

    @property
    def index(self) -> Index:
        return self.setup.index

    @property
    def book(self) -> RuleBook:
        return self.setup.book


class _Releases:
    """Each probed release's tree, index and rule book, loaded once and shared by every finding."""

    def __init__(self, name: str, consumers: dict[str, CodeTree], cache_dir: Path, rules_dirs: Sequence[Path],
                 progress: Progress, model: ModelFacts | None = None):  # fmt: skip
        self.name = name
        self.consumers = consumers  # by the key findings name their consumer with
        self.cache_dir = cache_dir
        self.rules_dirs = [Path(d) for d in rules_dirs]
        self.progress = progress
        self.model = model
        self.loaded: dict[str, _Release] = {}
        self.fetched: list[str] = []
        self._files: dict[tuple[str, ConsumerOptions], tuple[ConsumerFile, ...]] = {}

    def fetch_all(self, versions: Sequence[str], jobs: int = 4) -> None:
        missing = [v for v in dict.fromkeys(versions) if v not in self.loaded]
        if not missing:
            return

        def fetch(version: str) -> CodeTree:
            tree = sources.resolve(f"{self.name}=={version}", cache_dir=self.cache_dir, progress=self.progress)
            if tree.fetched:
                self.fetched.append(version)
            return tree

        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(missing)))) as pool:
            trees = list(pool.map(fetch, missing))
        for version, tree in zip(missing, trees):
            self.loaded[version] = self._load(version, tree)

    def get(self, version: str) -> _Release:
        self.fetch_all([version])
        return self.loaded[version]

    def _load(self, version: str, tree: CodeTree) -> _Release:
        book = load_rulebook(self.rules_dirs, self.name).applicable(version)
        setup = prepare(tree, book, cache_dir=self.cache_dir)
        return load_release(version, setup, self.consumers, self.cache_dir, model=self.model, files=self._files)

    def save(self) -> None:
        for release in self.loaded.values():
            save_index(release.setup.index, release.tree, self.cache_dir)


def load_release(
    version: str, setup: ScanSetup, consumers: dict[str, CodeTree], cache_dir: Path | None, *,
    model: ModelFacts | None = None, files: dict[tuple[str, ConsumerOptions], tuple[ConsumerFile, ...]] | None = None,
) -> _Release:
    """A provider release as scan sees it (`setup`, from `engine.prepare`), ready to re-check the
    consumers' sites: each consumer (by the key its findings name it with) read with the release's
    options (its version guards folded on it) and its check context. `files` keeps the readings by
    consumer and options, shared by releases that read them alike. `impact` loads the two sides of
    a provider change with it, one `setup` per side shared by every downstream."""
    files = {} if files is None else files
    by_consumer: dict[str, dict[str, ConsumerFile]] = {}
    contexts: dict[str, CheckContext] = {}
    for key, consumer in consumers.items():
        if (key, setup.options) not in files:
            files[(key, setup.options)] = collect(consumer, setup.options, cache_dir=cache_dir)
        read = files[(key, setup.options)]
        by_consumer[key] = {f.path: f for f in read}
        contexts[key] = consumer_context(setup, key, read, model=model)
    return _Release(version, setup, by_consumer, contexts)


def _recheck_site(release: _Release, finding: Finding) -> FileCheck:
    """What the engine finds of the finding's rule in the finding's file, against this release only."""
    key = (finding.consumer, finding.path, finding.rule)
    if key not in release.memo:
        file = release.files.get(finding.consumer, {}).get(finding.path)
        context = release.consumers.get(finding.consumer)
        found = check_file(release.setup, file, only={finding.rule}, consumer=context) if file and context else FileCheck(())
        release.memo[key] = found
    return release.memo[key]


def _same(a: Finding, b: Finding) -> bool:
    if (a.rule, a.path, a.line, a.param) != (b.rule, b.path, b.line, b.param):
        return False
    if a.rule == "attribute-missing":
        return attribute_of(a.facts) == attribute_of(b.facts)
    if a.rule == "import-missing":
        return a.callee == b.callee
    return True


def present_in(release: _Release, finding: Finding) -> bool:
    return any(f.line == finding.line and _same(finding, f) for f in _recheck_site(release, finding).findings)


# --- explaining a report --------------------------------------------------------------------


def explain(
    consumer: str,
    provider: str,
    *,
    since: str | None = None,
    cache_dir: Path | None = None,
    rules_dirs: Sequence[Path] = (),
    include_prereleases: bool = False,
    min_severity: Severity = Severity.WARNING,
    progress: Progress | None = None,
    available: Sequence[str] | None = None,
    model: ModelFacts | None = None,
) -> ExplainResult:
    """Scan `consumer` against `provider` (NAME==VERSION), then date every finding by bisection.

    The bisection runs between `since` (a release where the finding is absent;
    default: the oldest release the consumer's own requirement allows) and the
    scanned release. `available` replaces the package index's list of releases.
    """
    started = time.perf_counter()
    progress = progress or NullProgress()
    cache_dir = Path(cache_dir) if cache_dir else sources.default_cache_dir()
    if not provider or "==" not in provider:
        raise InputError(f"explain needs one provider release, NAME==VERSION (e.g. vllm==0.16.0), not {provider!r}")
    if since:  # checked before anything is fetched (scan checks the consumer and provider)
        since_version, scanned_version = _since_version(since), provider.split("==", 1)[1].strip()
        with contextlib.suppress(InvalidVersion):  # a malformed provider version: scan's line says so
            if since_version >= Version(scanned_version):
                raise InputError(f"--since {since} is not older than the scanned release {scanned_version}")
    report = scan([consumer], provider, cache_dir=cache_dir, rules_dirs=rules_dirs, progress=progress, model=model)
    name, scanned = report.provider.name, report.provider.version or ""
    consumer_tree = sources.resolve(consumer, cache_dir=cache_dir)
    # The dependencies the scan followed (the consumer imports nothing of the provider, they do):
    # their findings are re-checked in their own files, and their declared range counts.
    trees = {report.consumers[0].key if report.consumers else consumer_tree.name: consumer_tree}
    for origin in report.consumers[1:]:
        if origin.required_by is not None:
            trees[origin.key] = sources.resolve(origin.spec, cache_dir=cache_dir)

    listed = list(available) if available is not None else sources.release_versions(
        name, include_prereleases=include_prereleases
    )
    releases = [v for v in listed if include_prereleases or not Version(v).is_prerelease]
    if scanned not in releases:
        releases = sorted({*releases, scanned}, key=Version)
    baseline, reason = _baseline(since, list(trees.values()), name, releases, scanned)
    window = [v for v in releases if Version(baseline) <= Version(v) <= Version(scanned)]

    wanted = [
        f for f in report.findings if f.rule != "cannot-judge" and f.severity.at_least(min_severity)
    ]
    loader = _Releases(name, trees, cache_dir, rules_dirs, progress, model)
    explanations = _bisect_all(wanted, window, loader, progress)
    loader.save()
    return ExplainResult(
        report=report,
        provider=name,
        baseline=baseline,
        baseline_reason=reason,
        releases=tuple(window),
        explanations=tuple(explanations),
        fetched=tuple(loader.fetched),
        duration_s=round(time.perf_counter() - started, 3),
    )


def _baseline(since: str | None, trees: list[CodeTree], name: str, releases: list[str], scanned: str) -> tuple[str, str]:
    """Where the bisection starts: `since`, else the oldest release the consumer declares, else the
    oldest one a dependency the scan followed declares (`trees`: the consumer first)."""
    consumer = trees[0]
    if since:
        wanted = _since_version(since)
        match = next((v for v in releases if Version(v) == wanted), None)
        if match is None:
            raise InputError(f"{name} has no release {since} on the package index")
        if Version(match) >= Version(scanned):
            raise InputError(f"--since {since} is not older than the scanned release {scanned}")
        return match, "--since"
    for tree in trees:
        for declared in declared_requirements(tree, name):
            allowed = [v for v in releases if declared.allows(v) and Version(v) < Version(scanned)]
            if allowed:
                shown = f"{name}{declared.specifier}" + (f" under extra '{declared.extra}'" if declared.extra else "")
                if tree is consumer:
                    return allowed[0], f"the oldest release {consumer.name} declares ({shown})"
                return allowed[0], (f"the oldest release {tree.origin().name_version} declares ({shown}): "
                                    f"the dependency of {consumer.name} that imports {name}")  # fmt: skip
    also = "".join(f", nor does {t.origin().name_version} (the dependency of {consumer.name} that imports {name})" for t in trees[1:])
    raise InputError(
        f"{consumer.name} declares no {name} release older than {scanned} to start from{also}: "
        "pass --since VERSION, a release the consumer worked with"
    )



def _since_version(since: str) -> Version:
    try:
        return Version(since.split("==", 1)[-1])
    except ValueError:
        raise InputError(f"--since wants a release version such as 0.11.0, not {since!r}") from None


@dataclass
class _Search:
    finding: Finding
    low: int  # index of a release where the finding is absent
    high: int  # index of a release where it is present
    probes: list[str] = field(default_factory=list)
    undated: str | None = None


def _bisect_all(findings: list[Finding], window: list[str], loader: _Releases, progress: Progress) -> list[Explanation]:
    if not findings:
        return []
    baseline, scanned = window[0], window[-1]
    progress.start(f"dating {len(findings)} finding(s) between {loader.name} {baseline} and {scanned}", len(findings))
    loader.fetch_all([baseline, scanned])
    searches = []
    for finding in findings:
        search = _Search(finding, 0, len(window) - 1)
        if not present_in(loader.get(scanned), finding):
            search.undated = f"the re-check of its site does not reproduce it against {scanned}"
        elif present_in(loader.get(baseline), finding):
            search.undated = f"already present in {baseline}, where the search starts"
        searches.append(search)
    while True:
        open_searches = [s for s in searches if s.undated is None and s.high - s.low > 1]
        if not open_searches:
            break
        middles = {id(s): (s.low + s.high) // 2 for s in open_searches}
        loader.fetch_all([window[middles[id(s)]] for s in open_searches])
        for search in open_searches:
            middle = middles[id(search)]
            version = window[middle]
            search.probes.append(version)
            if present_in(loader.get(version), search.finding):
                search.high = middle
            else:
                search.low = middle
    out = []
    for search in searches:
        progress.advance(search.finding.path)
        if search.undated is not None:
            out.append(Explanation(search.finding, None, None, None, tuple(search.probes), search.undated))
            continue
        before, after = window[search.low], window[search.high]
        change = describe_change(search.finding, loader.get(before), loader.get(after))
        out.append(Explanation(search.finding, after, before, change, tuple(search.probes)))
    return out


# --- what changed -----------------------------------------------------------------------------


def describe_change(finding: Finding, before: _Release, after: _Release) -> Change:
    """Classify the provider change behind `finding` between two neighbouring releases."""
    if finding.rule == "import-missing":
        return _import_change(finding, before, after)
    if finding.rule == "attribute-missing":
        return _attribute_change(finding, before, after)
    if finding.rule == "model-attribute-missing":
        return _model_attribute_change(finding, before, after)
    if finding.rule in ("unexpected-keyword", "missing-required", "too-many-positional", "positional-only-by-keyword", "duplicate-argument"):
        return _signature_change(finding, before, after)
    pattern = next((p for p in after.book.patterns if p.id == finding.rule), None)
    if pattern is not None:
        return Change(RULE_RANGE, None, None, note=f"rule {pattern.id} applies to {before.tree.name}{pattern.versions}")
    return Change(OTHER, None, None)


def _callee_info(release: _Release, finding: Finding) -> CallInfo | None:
    """The call the engine bound on the finding's line in this release, matched by the callee's name."""
    name = (finding.callee or "").rsplit(".", 1)[-1]
    calls = _recheck_site(release, finding).calls_on_line(finding.line)
    named = [c for c in calls if c.callee.name == name or c.callee.path == finding.callee]
    return named[-1] if named else None


def _shown(info: CallInfo | None) -> Signature | None:
    if info is None or (not info.signatures and info.fallback is None):
        return None
    return info.fallback or info.signatures[0]


def _render(info: CallInfo | None) -> str | None:
    signature = _shown(info)
    if info is None or signature is None:
        return None
    where = f"  ({signature.location})" if signature.location else ""
    return signature.render(info.callee.name) + where


def _signature_change(finding: Finding, before: _Release, after: _Release) -> Change:
    old_info, new_info = _callee_info(before, finding), _callee_info(after, finding)
    old, new = _shown(old_info), _shown(new_info)
    shown_before, shown_after = _render(old_info), _render(new_info)
    symbol = new_info.callee.path if new_info else finding.callee
    if old is None or new is None:
        return Change(OTHER, shown_before, shown_after, symbol=symbol, note="the callee could not be bound in both releases")
    if old_info and new_info and old_info.callee.path != new_info.callee.path:
        moved = Change(MOVED, shown_before, shown_after, old_info.callee.path, new_info.callee.path, symbol)
    else:
        moved = None
    old_names = [p.name for p in old.params]
    new_names = [p.name for p in new.params]
    removed = [n for n in old_names if n not in new_names]
    added = [n for n in new_names if n not in old_names]
    param = finding.param
    rename = _rename(old_names, new_names, removed, added)
    if finding.rule == "unexpected-keyword" and param in removed:
        if rename and rename[0] == param:
            return Change(RENAMED_PARAMETER, shown_before, shown_after, param, rename[1], symbol)
        return Change(REMOVED_PARAMETER, shown_before, shown_after, param, None, symbol)
    if finding.rule == "missing-required" and param:
        if param in added:
            if rename and rename[1] == param:
                return Change(RENAMED_PARAMETER, shown_before, shown_after, rename[0], param, symbol)
            return Change(ADDED_PARAMETER, shown_before, shown_after, None, param, symbol)
        was = old.param(param)
        if was is not None and (was.has_default or was.kind in (ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD)):
            return Change(DEFAULT_REMOVED, shown_before, shown_after, None, param, symbol, note=f"default was {was.default}")
    if finding.rule == "positional-only-by-keyword" and param:
        return Change(MADE_POSITIONAL_ONLY, shown_before, shown_after, None, param, symbol)
    if finding.rule == "too-many-positional":
        return Change(POSITIONAL_REMOVED, shown_before, shown_after, ", ".join(removed) or None, None, symbol)
    return moved or Change(OTHER, shown_before, shown_after, symbol=symbol)


def _rename(old: list[str], new: list[str], removed: list[str], added: list[str]) -> tuple[str, str] | None:
    """One parameter removed and one added at the same position, nothing else changed: a rename."""
    if len(removed) != 1 or len(added) != 1 or len(old) != len(new):
        return None
    if old.index(removed[0]) != new.index(added[0]):
        return None
    if [n for n in old if n != removed[0]] != [n for n in new if n != added[0]]:
        return None
    return removed[0], added[0]


def _import_change(finding: Finding, before: _Release, after: _Release) -> Change:
    target = finding.callee or ""
    old = before.index.resolve(target)
    old_text = _symbol_text(old)
    facts = finding.facts if isinstance(finding.facts, ImportFacts) else None
    moved_to = list(facts.candidates) if facts and facts.candidates else ([facts.moved_to] if facts and facts.moved_to else [])
    if not moved_to and "." in target:
        moved_to = [m for m in after.index.find_definitions(target.rsplit(".", 1)[-1]) if m != target]
    if len(moved_to) == 1:
        new = after.index.resolve(moved_to[0])
        return Change(MOVED, old_text, _symbol_text(new) or moved_to[0], target, moved_to[0], target)
    note = f"now defined in {', '.join(moved_to)}" if moved_to else ""
    return Change(REMOVED, old_text, None, target, None, target, note=note)


def _symbol_text(resolution) -> str | None:
    if isinstance(resolution, Found):
        where = f"  ({resolution.symbol.location})" if resolution.symbol.location else ""
        return f"{resolution.symbol.path}{where}"
    return None


def _attribute_change(finding: Finding, before: _Release, after: _Release) -> Change:
    facts = finding.facts if isinstance(finding.facts, AttributeFacts) else None
    owner, attribute = (facts.owner, facts.attribute) if facts else ("", "")
    old_members = {m.name: m for m in before.index.members(owner)}
    new_members = {m.name: m for m in after.index.members(owner)}
    old_member = old_members.get(attribute)
    old_text = f"{owner}.{attribute}" + (f"  ({old_member.location})" if old_member is not None else "")
    moved_to = facts.moved_to if facts else None
    if moved_to:
        return Change(MOVED, old_text, moved_to, f"{owner}.{attribute}", moved_to, owner)
    # A rename: exactly one member appeared when this one went, of the same kind.
    appeared = [n for n in new_members if n not in old_members and not n.startswith("__")]
    same_kind = [n for n in appeared if old_member is None or new_members[n].kind is old_member.kind]
    if len(same_kind) == 1:
        new_name = same_kind[0]
        new_text = f"{owner}.{new_name}  ({new_members[new_name].location})"
        return Change(RENAMED_ATTRIBUTE, old_text, new_text, attribute, new_name, owner)
    note = f"members added in the same release: {', '.join(sorted(appeared))}" if appeared else ""
    return Change(REMOVED, old_text, None, attribute, None, owner, note=note)


def _model_attribute_change(finding: Finding, before: _Release, after: _Release) -> Change:
    """model-attribute-missing: either the attribute went from a class the model object can be
    (renamed, moved or removed there, said as for attribute-missing on that class), or classes
    that lack it became ones the object can be (the registry lists them from this release on)."""
    facts = finding.facts if isinstance(finding.facts, ModelAttributeFacts) else None
    if facts is None:
        return Change(OTHER, None, None)
    attribute = facts.attribute
    had_it = [c for c in facts.classes if any(m.name == attribute for m in before.index.members(c))]
    if had_it:
        on_class = replace(finding, facts=AttributeFacts(attribute, had_it[0]))
        return _attribute_change(on_class, before, after)
    registered_before = _registered_classes(before)
    added = [c for c in facts.classes if registered_before is not None and c not in registered_before]
    if added:
        shown = ", ".join(c.rpartition(".")[2] for c in added)
        return Change(
            MODEL_CLASSES_ADDED, None, None, attribute, None, added[0],
            note=f"{after.tree.name} {after.version} registers {shown}, which lack{'s' if len(added) == 1 else ''} '{attribute}'",
        )  # fmt: skip
    return Change(OTHER, None, None, attribute, None, facts.classes[0] if facts.classes else None)


def _registered_classes(release: _Release) -> frozenset[str] | None:
    """Every class a release's model registries list (None: its rules name no registry)."""
    types = release.setup.model_types
    registries = [types.registry(rule.name) for rule in release.book.registries]
    found = [r for r in registries if r is not None]
    return frozenset(c for r in found for c in r.class_paths()) if found else None
