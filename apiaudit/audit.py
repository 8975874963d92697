"""The core scan: sources -> provider index -> consumer call sites -> checks -> findings -> policy.

`scan()` is the one entry point the CLI, the preflight gate, the runner and the
matrix share; it readies the release with `engine.prepare` and checks each consumer file
with `engine.check_file` (the seam `explain` uses too).
"""

from __future__ import annotations

import contextlib

import re
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from apiaudit import sources
from apiaudit.cache import replay, scans
from apiaudit.errors import ArgumentError, InputError, ProviderUnusedError
from apiaudit.findings import ENGINE_RULES, CodeOrigin, Finding, Report
from apiaudit.infra.callers import python_api
from apiaudit.infra.progress import LockedProgress, NullProgress, Progress
from apiaudit.policy import (
    ConsumerFiles,
    Settings,
    apply_policy,
    excluded,
    load_settings,
)
from apiaudit.recipes.files import rules_digest
from apiaudit.report.json_format import report_from_dict, report_to_dict
from apiaudit.sources.base import CodeTree

if TYPE_CHECKING:
    from apiaudit.model import ModelFacts
    from apiaudit.recipes import RuleBook

# The engine (consumer stage, checks, index) is imported on a whole-scan cache miss only: a
# warm scan answered from `scan_cache` never loads it.


@python_api
def scan(
    consumers: Sequence[str] | None = None,
    provider: str | None = None,
    *,
    cache_dir: Path | None = None,
    rules_dirs: Sequence[Path] = (),
    progress: Progress | None = None,
    use_index_cache: bool = True,
    settings: Settings | None = None,
    baseline: Path | None = None,
    use_baseline: bool = True,
    against: str | None = None,
    offline: bool | None = None,
    model: ModelFacts | None = None,
    provider_version: str | None = None,
    python_version: tuple[int, ...] | None = None,
    with_deps: bool | None = None,
    launch_provider: str | None = None,
) -> Report:
    """Audit each consumer against the provider. Raises InputError for bad input.

    `settings` is the project's policy (default: the config file found from the working
    directory upwards, see apiaudit.policy.config); explicit arguments win over it.
    `baseline` replaces the settings' baseline file and `use_baseline=False` ignores any
    (as --write-baseline needs). `against` (NAME==VERSION of the provider in use today)
    makes the report an upgrade delta: only what moving to `provider` introduces.
    `offline` refuses to fetch any release that is not cached. `model` (from
    ``--model``/``--architecture``, see `apiaudit.model.load_model`) is the model the job loads:
    an architecture the provider's registry does not register is an InputError, and
    model-facing rules (``remote-code-required``) run only with it. `provider_version` states
    the provider's version when its source cannot tell (a bare checkout); `python_version` is
    the Python the audited code is assumed to run on (`sys.version_info` guards), by default the
    running interpreter's. `with_deps`: also audit the consumer's declared dependencies that
    import the provider (`apiaudit.sources.dependencies`); by default (None) only for a released
    or installed consumer that imports nothing of the provider itself.
    `launch_provider` is the release the job files' provider command lines
    start when it is not `provider` (job scripts audited against the library they call start
    the stack's server); by default the provider itself, when its rules describe its command line.
    """
    settings = settings if settings is not None else load_settings()
    if baseline is not None:
        settings = settings.with_cli(baseline=baseline)
    consumers = list(consumers) if consumers else list(settings.consumers) or None
    provider = provider or settings.provider
    rules_dirs = list(rules_dirs) or list(settings.rules)
    cache_dir = cache_dir or settings.cache_dir
    offline = settings.offline if offline is None else offline
    if provider is None and consumers:
        # Job scripts call the library the rules name as the provider's consumer (speculators),
        # not the provider itself: without --provider they are checked against that library,
        # exactly as `preflight` checks them, and everything else against the rules' provider.
        scripts = [c for c in consumers if is_job_script_spec(c)]
        if scripts:
            others = [c for c in consumers if c not in scripts]
            # The scripts' provider command lines start the stack's server: checked against it.
            launch = default_launch_provider(rules_dirs)
            # Job files with no Python (a shell, YAML or TOML job) reach the provider only through the
            # command lines they run (`vllm serve ...`): no library is needed, only the release
            # those lines start, so they are checked against it alone.
            launch_only = [c for c in scripts if launch is not None and is_launch_only_spec(c)]
            library = [c for c in scripts if c not in launch_only]
            layers: list[tuple[list[str], str | None, str | None]] = []
            if library:
                layers.append((library, default_script_provider(rules_dirs), launch))
            if launch_only and launch is not None:
                _check_launch_release(launch_only, launch)
                layers.append((launch_only, launch, None))
            if others:
                layers.append((others, None, None))
            reports = [
                scan(
                    layer_consumers, layer_provider, cache_dir=cache_dir, rules_dirs=rules_dirs, progress=progress,
                    use_index_cache=use_index_cache, settings=settings, use_baseline=use_baseline, against=against,
                    offline=offline, model=model, provider_version=provider_version, python_version=python_version,
                    with_deps=with_deps,
                    launch_provider=layer_launch,
                )  # fmt: skip
                for layer_consumers, layer_provider, layer_launch in layers
            ]
            return reports[0] if len(reports) == 1 else merge_reports(reports)
    check_inputs(consumers, provider, against, rules_dirs)
    if against is not None:
        from apiaudit.policy.delta import upgrade_delta

        new, current = (
            scan(
                consumers, spec, cache_dir=cache_dir, rules_dirs=rules_dirs, progress=progress,
                use_index_cache=use_index_cache, settings=settings, use_baseline=use_baseline, offline=offline,
                model=model, provider_version=provider_version, python_version=python_version, with_deps=with_deps,
                launch_provider=launch_provider,
            )  # fmt: skip
            for spec in (provider, against)
        )
        return upgrade_delta(new, current)
    # --offline: a cached release an older apiaudit extracted is used as it is, never fetched again
    with sources.fetching_refused() if offline else contextlib.nullcontext():
        report, files, known_rules = _scan_once(
            consumers, provider, cache_dir, rules_dirs, progress, use_index_cache, settings, offline, model,
            provider_version, python_version, with_deps, launch_provider if launch_provider != provider else None,
        )
    report = with_display_roots(report, settings.project_root)
    return apply_policy(report, settings, files, use_baseline=use_baseline, known_rules=known_rules)


def with_display_roots(report: Report, project_root: Path) -> Report:
    """The report with each path consumer's `display_root` set: where its import root lies in the
    project (the config file's folder, else the working directory), so that every format and
    `fix` diff names a file as the repository does (`src/mypkg/engine.py`, not `mypkg/engine.py`).
    A release or an installed distribution keeps its import-root paths; so does a tree outside
    the project (no path from the project root names it). The one place this is decided."""
    return replace(report, consumers=tuple(replace(c, display_root=_display_root(c, project_root)) for c in report.consumers))


def _display_root(origin: CodeOrigin, project_root: Path) -> str:
    if origin.kind != "path":
        return ""
    try:
        inside = Path(origin.root).resolve().relative_to(project_root.resolve()).as_posix()
    except ValueError:
        return ""
    return "" if inside == "." else inside + "/"


@python_api
def audit_launch(
    argv: Sequence[str],
    provider: str | CodeTree,
    *,
    rules_dirs: Sequence[Path] = (),
    cache_dir: Path | None = None,
    provider_version: str | None = None,
) -> tuple[Finding, ...]:
    """The launch audit of one command line about to be run (``["prov", "serve", model, ...]``)
    against the provider release it starts (a spec such as ``prov==2.0`` or ``prov`` for the
    installed one, or a resolved `CodeTree`): the same findings a job script holding the line
    gets from `scan` (docs/rules.md, launch-*), sites on one line of ``shlex.join(argv)``. Nothing
    is started or imported. InputError for a provider whose rules describe no command line, or
    an argv that starts none."""
    from apiaudit.engine import check_launch, launch_target
    from apiaudit.provider.cache import open_index, save_index

    cache_dir = Path(cache_dir) if cache_dir else sources.default_cache_dir()
    tree = provider if isinstance(provider, CodeTree) else _provider_tree(provider, cache_dir, NullProgress(), provider_version, check_entry=True)
    book = _full_rulebook(rules_dirs, tree).applicable(tree.version)
    if not book.launches:
        raise InputError(f"no rules describe {tree.name}'s command line (a [[launch]] rule in rules/*.toml)")
    target = launch_target(tree, book, lambda: open_index(tree, cache_dir))
    found = check_launch(target, argv).findings
    if target.opened is not None:
        save_index(target.opened, tree, cache_dir)
    return found


def _scan_once(
    consumers, provider, cache_dir, rules_dirs, progress, use_index_cache, settings: Settings, offline: bool,
    model: ModelFacts | None, provider_version: str | None, python_version: tuple[int, ...] | None,
    with_deps: bool | None = None,
    launch_provider: str | None = None,
):
    started = time.perf_counter()
    progress = progress or NullProgress()
    cache_dir = Path(cache_dir) if cache_dir else sources.default_cache_dir()
    if provider is None or not consumers:
        defaults = _defaults(rules_dirs)
        provider = provider or defaults[0]
        consumers = list(consumers or defaults[1])
        if not consumers:
            raise ArgumentError(f"no consumer given and the rules for {provider} name no default: pass --consumer")

    if offline:
        from apiaudit.policy.offline import require_cached

        require_cached([provider, *consumers], cache_dir)
    # First as a warm scan needs them: cached releases located by their markers, not listed.
    # Nothing is read from them unless the results cache misses, and then they are resolved
    # again, each checked whole.
    provider_tree = _provider_tree(provider, cache_dir, progress, provider_version, check_entry=False)
    # The rules are read before any consumer is fetched: a broken rule file or a rule id the
    # settings name that no rule has is reported first.
    rules, full_book = _rules(rules_dirs, provider_tree, cache_dir if use_index_cache else None)
    settings.check_rule_ids(set(rules.known_rules))
    trees = [sources.resolve(spec, cache_dir=cache_dir, progress=progress, check_entry=False) for spec in consumers]
    dependencies, notices = _dependencies(trees, provider_tree, with_deps, cache_dir, progress, offline)
    if dependencies:
        consumers = [*consumers, *(d.spec for d in dependencies)]
        trees += [sources.resolve(d.spec, cache_dir=cache_dir, progress=progress, check_entry=False) for d in dependencies]
    coupled = {d.consumer for d in dependencies}  # consumers audited through their dependencies
    # Each dependency's origin says who requires it (matrix and explain name it, read its range).
    via = [None] * (len(trees) - len(dependencies)) + list(dependencies)
    labels, chosen, read = _consumer_files(trees, settings)
    # The release job files' command lines start, when not the provider: located, not read.
    launch_tree, launch_unavailable = _launch_tree(launch_provider, cache_dir, progress)
    launch_key = _launch_key(launch_provider, launch_tree, launch_unavailable)
    results_key = (
        _results_key(provider_tree, rules.digest, model, python_version, trees, read, cache_dir, launch_key)
        if use_index_cache else None
    )  # fmt: skip
    if results_key is not None:
        cached = scans.lookup(cache_dir, results_key, provider_tree)
        if cached is not None:
            try:
                report = report_from_dict(cached)
            except InputError:
                report = None  # an entry this engine cannot read back: scanned afresh
            if report is not None:
                _note_scan(provider, consumers, cache_dir, rules_dirs, settings, model, provider_version, python_version,
                           results_key, provider_tree, trees, read)  # fmt: skip
                return replace(report, duration_s=round(time.perf_counter() - started, 3)), read, rules.known_rules
    located = (provider_tree, trees)
    provider_tree = _provider_tree(provider, cache_dir, progress, provider_version, check_entry=True)
    trees = [sources.resolve(spec, cache_dir=cache_dir, progress=progress) for spec in consumers]
    if (provider_tree, trees) != located:  # an entry found broken was fetched again
        labels, chosen, read = _consumer_files(trees, settings)
        if results_key is not None:
            results_key = _results_key(provider_tree, rules.digest, model, python_version, trees, read, cache_dir, launch_key)
    from apiaudit.consumer import collect
    from apiaudit.consumer.reach import entry_points, reached_across
    from apiaudit.engine import check_files, consumer_context, prepare, warm_index
    from apiaudit.infra.workers import worker_count
    from apiaudit.provider.cache import save_index
    from apiaudit.provider.registry import check_architecture
    from apiaudit.recipes.loader import load_remote_code_rules

    full_book = full_book or _full_rulebook(rules_dirs, provider_tree)
    book = full_book.applicable(provider_tree.version)
    remote_code_rules = load_remote_code_rules(list(map(Path, rules_dirs))) if model is not None else ()
    launch = (
        _other_launch_target(launch_provider, launch_tree, launch_unavailable, rules_dirs, cache_dir if use_index_cache else None)
        if launch_provider is not None else None
    )  # fmt: skip
    setup = prepare(
        provider_tree, book, cache_dir=cache_dir if use_index_cache else None, python_version=python_version,
        remote_code_rules=remote_code_rules, launch=launch,
    )  # fmt: skip
    index, options = setup.index, setup.options
    if model is not None:
        check_architecture(setup.model_types, model, provider_tree.name, provider_tree.version, cache_dir)
    assumed_python = ".".join(map(str, options.python_version))

    findings: list[Finding] = []
    origins = []
    files_scanned = calls_checked = 0
    workers = worker_count()  # a large consumer's cold work is shared among processes
    collected = []
    for tree, label, paths, dependency in zip(trees, labels, chosen, via):
        origin = replace(tree.origin(), label=label if label != tree.name else None)
        if dependency is not None:
            origin = replace(origin, required_by=dependency.consumer, requirement=dependency.requirement)
        origins.append(origin)
        progress.start(f"reading {tree.name}", len(paths))
        collected.append(collect(
            tree, options, on_file=progress.advance, files=paths, cache_dir=cache_dir if use_index_cache else None,
            workers=workers, on_read=lambda file: warm_index(setup, file),
        ))  # fmt: skip
    if len(collected) > 1:
        # A module nothing in its package imports still runs when a job script given beside it does.
        collected = reached_across(trees, collected)
    for tree, label, files in zip(trees, labels, collected):
        progress.start(f"checking {tree.name} against {provider_tree.name}", len(files))
        context = consumer_context(setup, label, files, model=model, entry_points=entry_points(tree), workers=workers)
        findings.extend(check_files(setup, files, context, workers=workers, on_file=progress.advance))
        files_scanned += len(files)
        uses = sum(len(f.imports) + len(f.uses) + len(f.rpc_calls) + len(f.launch_lines) for f in files)
        # With --model, model-facing rules check the consumer whatever the provider is.
        if not uses and not any(f.error for f in files) and not remote_code_rules and tree.origin().name_version not in coupled:
            # Green on nothing checked would be a lie: a typo'd --provider, or the wrong consumer.
            raise ProviderUnusedError(
                f"{tree.name} never uses {provider_tree.name} (packages {', '.join(provider_tree.packages)}), "
                "nor does any dependency it declares: nothing to check; is --provider right?"
            )
        calls_checked += uses
    if use_index_cache:
        save_index(index, provider_tree, cache_dir)
        if launch is not None and launch.opened is not None and launch_tree is not None:
            save_index(launch.opened, launch_tree, cache_dir)
    report = Report(
        consumers=tuple(origins),
        provider=provider_tree.origin(),
        findings=tuple(sorted(findings, key=lambda f: f.sort_key)),
        files_scanned=files_scanned,
        calls_checked=calls_checked,
        duration_s=round(time.perf_counter() - started, 3),
        rules_version=book.fingerprint or None,
        notices=tuple(notices),
        extras=_model_extras(model) + (
            # What guards were judged against: say it, since both change which lines run.
            ("provider_version", provider_tree.version or "unknown (version guards undecided)"),
            ("python_version", assumed_python + ("" if python_version else " (this interpreter; --python-version to change)")),
        ),
    )
    if results_key is not None:
        scans.store(cache_dir, results_key, provider_tree, dict(index.loader.touched), report_to_dict(report))
        _note_scan(provider, consumers, cache_dir, rules_dirs, settings, model, provider_version, python_version,
                   results_key, provider_tree, trees, read)  # fmt: skip
    return report, read, rules.known_rules


def check_inputs(consumers: Sequence[str] | None, provider: str | None, against: str | None, rules_dirs: Sequence[Path],
                 settings: Settings | None = None) -> None:  # fmt: skip
    """Every consumer and provider `scan` will read (the settings', else the rules' defaults for
    those not given), checked before anything is fetched: a typo or a consumer not installed is
    one line, never the price of a download first."""
    if settings is not None:  # as `scan` reads them
        consumers, provider = consumers or list(settings.consumers) or None, provider or settings.provider
        rules_dirs = list(rules_dirs) or list(settings.rules)
    if provider is None or not consumers:
        default_provider, default_consumers = _defaults(rules_dirs)
        provider, consumers = provider or default_provider, consumers or default_consumers
    for spec in [*(consumers or ()), provider, *([against] if against else [])]:
        sources.check(spec)


def _dependencies(
    trees: list[CodeTree], provider_tree: CodeTree, with_deps: bool | None, cache_dir: Path, progress: Progress, offline: bool
):
    """The declared dependencies that import the provider, of each released or installed consumer
    that imports none of it itself (or of every one, `with_deps=True`), and what to say about them.
    Offline, only releases already cached are read and no release list is asked for."""
    from apiaudit.policy.offline import require_cached
    from apiaudit.sources.dependencies import imports_provider, provider_dependencies

    def resolve(spec: str) -> CodeTree:
        if offline:
            require_cached([spec], cache_dir)
        return sources.resolve(spec, cache_dir=cache_dir, progress=shared)

    def versions(name: str) -> list[str]:
        if offline:
            raise InputError("offline: no release list is asked for")
        return sources.release_versions(name, cache_dir=cache_dir)

    found: list = []
    notices: list[str] = []
    if with_deps is False:
        return found, notices
    shared = LockedProgress(progress)  # the requirements are fetched in threads
    for tree in trees:
        if tree.kind == "path" and not with_deps:
            continue  # a checkout's dependencies are the environment's: audit them by name
        if not with_deps and imports_provider(tree, provider_tree, cache_dir):
            continue
        deps, more = provider_dependencies(
            tree, provider_tree, cache_dir=cache_dir, resolve=resolve, versions=versions, progress=shared
        )  # fmt: skip
        notices += more
        for dep in deps:
            if all(d.spec != dep.spec for d in found):
                found.append(dep)
            itself = f"imports nothing from {provider_tree.name} itself; it " if not with_deps else ""
            notices.append(
                f"{' '.join(filter(None, (dep.name, dep.version)))} audited too: {dep.consumer} {itself}"
                f"requires {dep.requirement}, which imports {provider_tree.name}"
            )
    return found, notices


def _note_scan(provider, consumers, cache_dir, rules_dirs, settings, model, provider_version, python_version, key, provider_tree, trees, read) -> None:
    """Tell a recording `apiaudit.cache.replay` what this scan's answer came from."""
    if not replay.recording():
        return

    def key_now() -> str | None:
        from apiaudit.policy.offline import require_cached

        require_cached([provider, *consumers], cache_dir)  # never fetch again: a release gone since is an error here
        tree = _provider_tree(provider, cache_dir, NullProgress(), provider_version, check_entry=False)
        now = [sources.resolve(spec, cache_dir=cache_dir, check_entry=False) for spec in consumers]
        digest = rules_digest(list(map(Path, rules_dirs)))
        return _results_key(tree, digest, model, python_version, now, _consumer_files(now, settings)[2], cache_dir)

    replay.note_scan(
        cache_dir=cache_dir, key=key, provider=provider, provider_tree=provider_tree, consumers=consumers, trees=trees,
        read=read, rules_dirs=rules_dirs, baseline=settings.baseline, key_now=key_now,
        ignores_until=[i.until.isoformat() for i in settings.ignores if i.until is not None],
    )  # fmt: skip


def _provider_tree(
    provider: str, cache_dir: Path, progress: Progress, provider_version: str | None, *, check_entry: bool
) -> CodeTree:
    tree = sources.resolve(provider, cache_dir=cache_dir, progress=progress, check_entry=check_entry)
    if provider_version is not None:
        tree = replace(tree, version=_checked_version(provider_version))
    if not tree.packages:
        raise InputError(f"{provider} holds no Python package to audit against")
    return tree


def _consumer_files(
    trees: list[CodeTree], settings: Settings
) -> tuple[list[str], list[list[Path]], list[ConsumerFiles]]:
    """Each consumer's label, the files the scan reads (after excludes), and those files for the policy."""
    labels = consumer_labels(trees)
    chosen = [[p for p in tree.files() if not excluded(_relative(p, tree.root), settings.exclude)] for tree in trees]
    read = [
        ConsumerFiles(label, Path(tree.root), tuple(_relative(p, tree.root) for p in paths))
        for tree, label, paths in zip(trees, labels, chosen)
    ]
    return labels, chosen, read


def _rules(rules_dirs: Sequence[Path], provider_tree: CodeTree, cache_dir: Path | None) -> tuple[scans.RulesSummary, RuleBook | None]:
    """What the scan must know of the rules up front, and the rule book when it had to be loaded.

    With a cache, an unchanged set of rule files (by their bytes) is answered without parsing them."""
    digest = rules_digest(list(map(Path, rules_dirs)))
    names = tuple(dict.fromkeys((provider_tree.name, *provider_tree.packages)))
    if cache_dir is not None:
        cached = scans.cached_rules(cache_dir, digest, names)
        if cached is not None:
            return cached, None
    book = _full_rulebook(rules_dirs, provider_tree)
    summary = scans.RulesSummary(digest, frozenset(ENGINE_RULES) | frozenset(book.rule_infos()))
    if cache_dir is not None:
        scans.store_rules(cache_dir, names, summary)
    return summary, book


def _launch_tree(spec: str | None, cache_dir: Path, progress: Progress) -> tuple[CodeTree | None, str | None]:
    """The release launch lines start when it is not the provider (located only: nothing of it is
    read unless a line is found), or why it cannot be found (said on each line then)."""
    if spec is None:
        return None, None
    try:
        return _provider_tree(spec, cache_dir, progress, None, check_entry=False), None
    except InputError as exc:
        return None, str(exc)


def _launch_key(spec: str | None, tree: CodeTree | None, unavailable: str | None) -> str:
    """What the whole-scan cache key must know of the launch release."""
    if spec is None:
        return ""
    if tree is None:
        return f"{spec}: {unavailable}"
    return repr((tree.name, tree.version, str(tree.root), tree.kind, scans.release_content(tree)))


def _other_launch_target(spec: str, tree: CodeTree | None, unavailable: str | None, rules_dirs: Sequence[Path],
                         cache_dir: Path | None):  # fmt: skip
    """The launch release for a scan against another provider: its rules read now, its index
    opened on the first launch line."""
    from apiaudit.engine import launch_target
    from apiaudit.provider.cache import open_index

    if tree is None:
        # Its rules still say what its command lines look like: each line found says why it is not judged.
        def unreadable():
            raise InputError(unavailable or f"{spec} cannot be found")

        from apiaudit.sources.local import looks_like_path

        name = Path(spec).name if looks_like_path(spec) else re.split(r"[\s=<>!~\[;@]", spec.strip(), maxsplit=1)[0] or spec
        stand_in = CodeTree(name, None, Path("."), (name,))
        return launch_target(stand_in, _full_rulebook(rules_dirs, stand_in), unreadable)
    book = _full_rulebook(rules_dirs, tree).applicable(tree.version)
    return launch_target(tree, book, lambda: open_index(tree, cache_dir))


def _results_key(provider_tree, rule_files_digest, model, python_version, trees, read, cache_dir: Path, launch: str = "") -> str | None:
    """The whole-scan cache key (`apiaudit.cache.scans`); None when a consumer file cannot be read."""
    consumers = []
    for tree, files in zip(trees, read):
        digests = scans.file_digests(files.root, files.paths)
        if digests is None:
            return None
        consumers.append(scans.ConsumerInput(tree.name, tree.version, str(files.root.resolve()), files.label, digests, tree.kind))
    return scans.scan_key(
        provider_tree, rule_files_digest, repr(model), tuple(python_version or sys.version_info[:3]), tuple(consumers), cache_dir,
        launch=launch,
    )


def _relative(path: Path, root: Path) -> str:
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return Path(path).as_posix()


def consumer_labels(trees: Sequence[sources.CodeTree]) -> list[str]:
    """One name per consumer: its own, or `name==version` / `name (root)` where names repeat."""
    names = [t.name for t in trees]
    labels = []
    for tree in trees:
        if names.count(tree.name) == 1:
            labels.append(tree.name)
        elif tree.version and sum(1 for t in trees if t.name == tree.name and t.version == tree.version) == 1:
            labels.append(f"{tree.name}=={tree.version}")
        else:
            labels.append(f"{tree.name} ({tree.root})")
    return labels


def _model_extras(model: ModelFacts | None) -> tuple[tuple[str, str], ...]:
    if model is None:
        return ()
    extras = [("model", model.label), ("model_architectures", ",".join(model.architectures))]
    if model.text_architectures:
        extras.append(("model_text_architectures", ",".join(model.text_architectures)))
    return tuple(extras)


def _checked_version(text: str) -> str:
    from packaging.version import InvalidVersion, Version

    try:
        Version(text)
    except InvalidVersion:
        raise ArgumentError(f"--provider-version {text!r} is not a version (e.g. 0.9.2)") from None
    return text


def default_provider(rules_dirs: Sequence[Path] = ()) -> str:
    """The provider the rules name (what a scan without --provider audits against)."""
    return _defaults(rules_dirs)[0]


def _defaults(rules_dirs: Sequence[Path]) -> tuple[str, list[str]]:
    """With no arguments: the provider and consumers the rule files name (data, not code)."""
    from apiaudit.recipes.loader import default_target

    target = default_target(list(map(Path, rules_dirs)))
    if target is None:
        raise ArgumentError("no --provider given and no rules file names a default: pass --provider and --consumer")
    return target[0], list(target[1])


def rulebook_for(rules_dirs: Sequence[Path], provider_tree) -> RuleBook:
    """The rules for this provider (by distribution or package name), filtered to its version."""
    return _full_rulebook(rules_dirs, provider_tree).applicable(provider_tree.version)


def _full_rulebook(rules_dirs: Sequence[Path], provider_tree) -> RuleBook:
    """The rules for this provider (by distribution or package name), every version's."""
    from apiaudit.recipes.loader import load_rulebook

    names = [provider_tree.name, *provider_tree.packages]
    book = None
    for name in dict.fromkeys(names):
        candidate = load_rulebook(list(map(Path, rules_dirs)), name)
        if candidate.files:
            book = candidate
            break
    return book or load_rulebook(list(map(Path, rules_dirs)), provider_tree.name)


# Job scripts and the stack drift apart independently: a scan given both checks each layer
# against its own provider (the gate plans the same layers).


def default_launch_provider(rules_dirs: Sequence[Path] = ()) -> str | None:
    """The provider whose server job scripts start: the one the rules name as the default."""
    from apiaudit.recipes.loader import default_target

    target = default_target(list(map(Path, rules_dirs)))
    return target[0] if target is not None else None


def default_script_provider(rules_dirs: Sequence[Path] = ()) -> str:
    from apiaudit.recipes.loader import default_target

    target = default_target(list(map(Path, rules_dirs)))
    if target is not None:
        return target[1][0]
    raise ArgumentError("no rules file names the library job scripts call: pass --script-provider")


def is_job_script_spec(spec: str) -> bool:
    """A consumer given as a .py file, a job file (shell, YAML, TOML) or a folder of loose
    scripts (no package of its own)."""
    from apiaudit.sources.local import looks_like_path, resolve_path

    if not looks_like_path(spec):
        return False
    tree = resolve_path(spec)
    return bool(tree.scripts or tree.job_files) and not tree.packages


def is_launch_only_spec(spec: str) -> bool:
    """A job file (shell, YAML, TOML) or a folder of them, with no Python of its own: what it
    couples to the provider is the command lines it runs."""
    from apiaudit.sources.local import looks_like_path, resolve_path

    if not looks_like_path(spec):
        return False
    tree = resolve_path(spec)
    return bool(tree.job_files) and not tree.scripts and not tree.packages


def _check_launch_release(jobs: Sequence[str], launch: str) -> None:
    """The release launch-only job files are checked against must be readable here; else one line
    says which --provider to give."""
    from apiaudit.errors import NotInstalledError

    try:
        sources.check(launch)
    except NotInstalledError:
        raise InputError(
            f"{', '.join(jobs)}: the command lines in {'it' if len(jobs) == 1 else 'them'} start {launch}, which is not installed in this Python "
            f"({sys.executable}): pass --provider {launch}==VERSION, the release the job runs"
        ) from None


def merge_reports(reports: Sequence[Report], *, duration_s: float | None = None) -> Report:
    """One report of several scans: every consumer and finding; the first scan's provider.

    Each finding names its own callee and provider location, so nothing is lost; the
    `layers` extra says which consumers were checked against which provider.
    """
    consumers: list[CodeOrigin] = []
    for report in reports:
        consumers.extend(c for c in report.consumers if c not in consumers)
    findings = sorted({f for r in reports for f in r.findings}, key=lambda f: f.sort_key)
    layers = "; ".join(
        f"{'+'.join(c.name for c in r.consumers)} -> {r.provider.name_version}" for r in reports
    )
    extras = dict(pair for r in reports for pair in r.extras)
    extras["layers"] = layers
    return replace(
        reports[0],
        consumers=tuple(consumers),
        findings=tuple(findings),
        files_scanned=sum(r.files_scanned for r in reports),
        calls_checked=sum(r.calls_checked for r in reports),
        duration_s=duration_s if duration_s is not None else sum(r.duration_s for r in reports),
        extras=tuple(sorted(extras.items())),
        suppressed=tuple(s for r in reports for s in r.suppressed),
        notices=tuple(dict.fromkeys(n for r in reports for n in r.notices)),
    )
