"""The engine's one seam: a provider release made ready once (`prepare` -> `ScanSetup`), then
each consumer file checked against it (`check_file`).

`scan` (and through it `preflight`, `fix` and `matrix`) and `explain`'s probes all go
through these two calls: every per-file rule (the engine's binding, import, attribute and RPC
checks with the recipes that explain them, text [[pattern]]s, deprecations, remote code, and the
launch audit of the provider command lines in job files) runs here from the file as the
consumer stage parsed it. Nothing here parses or reads a consumer
file again: what a rule needs from the source was recorded on the `ConsumerFile` while it was
parsed (`pattern_hits`, `auto_calls`, `lines`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from pathlib import Path

from apiaudit.checks import (
    BoundCall,
    CheckContext,
    HostRules,
    check_engine_rules,
    dedupe,
)
from apiaudit.checks.chains import evaluate_chain
from apiaudit.checks.conditions import record_injections
from apiaudit.checks.contracts import prefetch_provider_calls
from apiaudit.checks.deprecations import RULE as DEPRECATED_USE
from apiaudit.checks.deprecations import Forecaster, find_deprecations
from apiaudit.checks.launch import RULES as LAUNCH_RULES
from apiaudit.checks.launch import LaunchTarget, PluginUse, launch_findings
from apiaudit.checks.pattern_findings import findings_of_hits, proven_hits
from apiaudit.checks.recipe_advice import apply_recipes
from apiaudit.checks.remote_code import remote_code_findings
from apiaudit.consumer.records import ConsumerFile, ConsumerOptions, EntryPoint
from apiaudit.findings import Finding
from apiaudit.infra.frozen import record
from apiaudit.model import ModelFacts
from apiaudit.provider.cache import open_index
from apiaudit.provider.index import ProviderIndex
from apiaudit.provider.records import CallInfo
from apiaudit.provider.shared import read_shared
from apiaudit.provider.registry import ModelTypes
from apiaudit.recipes import RuleBook
from apiaudit.recipes.records import RemoteCodeRule
from apiaudit.sources.base import CodeTree
from apiaudit.sources.cache import CachedRelease


@record
class ScanSetup:
    """One provider release made ready to check consumers against: what every scan, preflight,
    fix, matrix row and explain probe shares."""

    provider: CodeTree
    book: RuleBook  # the rules that apply to this release
    index: ProviderIndex  # the checks ask it through the `checks.context.Index` protocol
    model_types: ModelTypes
    options: ConsumerOptions  # how the consumer stage reads code for this release
    hosts: HostRules
    deprecations: Forecaster  # what this release marks deprecated, memoised across files
    remote_code: tuple[RemoteCodeRule, ...] = ()  # [[remote_code]] rules (a scan with --model)
    # The release the job files' provider command lines start (this one, or the stack's
    # provider for job scripts audited against the library they call); None: no [[launch]] rule.
    launch: LaunchTarget | None = None


def prepare(
    provider_tree: CodeTree,
    rulebook: RuleBook,
    *,
    cache_dir: Path | None = None,
    python_version: tuple[int, ...] | None = None,
    remote_code_rules: Sequence[RemoteCodeRule] = (),
    launch: LaunchTarget | None = None,
) -> ScanSetup:
    """The index (from the cache under `cache_dir`, when given), the rules' hooks and the consumer
    options for one provider release; `rulebook` is already filtered to its version. `launch`: the
    release provider command lines are checked against, when not this one (`launch_target`)."""
    index = open_index(provider_tree, cache_dir)
    if launch is None and rulebook.launches:
        launch = launch_target(provider_tree, rulebook, lambda: index)
    model_types = ModelTypes(index, rulebook).install()  # attribute types read through factories
    version = tuple(python_version or sys.version_info[:3]) + (0, 0)
    remote_code = tuple(remote_code_rules)
    options = ConsumerOptions(
        provider_packages=provider_tree.packages,
        rpc_methods=tuple((r.method, r.name_arg, r.name_keyword) for r in rulebook.rpcs),
        injection_keywords=tuple(i.keyword for i in rulebook.injections),
        provider_version=provider_tree.version,
        provider_distribution=provider_tree.name,
        python_version=(version[0], version[1], version[2]),
        patterns=tuple(p for p in rulebook.patterns if not p.on_symbol),
        remote_code=remote_code,
        launch_commands=tuple((r.name, c) for r in launch.launches for c in r.commands) if launch else (),
        launch_parsers=tuple(p for r in launch.launches for p in r.parsers) if launch else (),
        plugin_calls=tuple(
            (p.register, p.module_arg, p.class_arg) for p in rulebook.plugins
            if p.register and p.module_arg is not None and p.class_arg is not None
        ),
        plugin_keys=tuple((p.module_key, p.class_key) for p in rulebook.plugins if p.module_key and p.class_key),
        hook_prefixes=tuple((e.hook_prefix, e.hook_rename or "") for e in rulebook.entry_points if e.hookspecs and e.hook_prefix),
    )  # fmt: skip
    hosts = HostRules(
        rpc_hosts={r.method: r.hosts for r in rulebook.rpcs},
        injection_hosts={i.keyword: i.hosts for i in rulebook.injections},
        symbol_patterns=tuple(p for p in rulebook.patterns if p.on_symbol),
        plugins=rulebook.plugins,
        entry_points=rulebook.entry_points,
        call_dispatch={d.base: d.method for d in rulebook.call_dispatches},
        substitutions=tuple((s.base, s.method) for s in rulebook.substitutions),
    )
    deprecations = Forecaster(index, provider_tree.packages)
    return ScanSetup(provider_tree, rulebook, index, model_types, options, hosts, deprecations, remote_code, launch)


def launch_target(provider_tree: CodeTree, rulebook: RuleBook, open_index: Callable[[], ProviderIndex]) -> LaunchTarget:
    """The release `provider_tree` as launch lines see it: its [[launch]] rules, its index opened
    by `open_index` on the first line checked."""
    return LaunchTarget(provider_tree.name, provider_tree.version, rulebook.launches, rulebook.launch_registries, open_index)


def consumer_context(
    setup: ScanSetup,
    consumer: str,
    files: tuple[ConsumerFile, ...],
    *,
    model: ModelFacts | None = None,
    entry_points: tuple[EntryPoint, ...] = (),
    workers: int = 1,
) -> CheckContext:
    """What checking one consumer's files shares (its classes, injections and bound functions
    across files, the memo of decided guards), for `check_file(..., consumer=)`. `consumer`
    names it in findings; `model` is the model the job loads (None: every registered one);
    `entry_points`: those its distribution declares (the provider loads some by group);
    `workers`: processes the reading of the release for the provider's calls may be shared among."""
    ctx = CheckContext(consumer, setup.index, files, setup.hosts, setup.model_types, model, evaluate_chain=evaluate_chain)
    ctx.entry_points = entry_points
    if setup.provider.kind == "release" and setup.provider.version:  # its other releases are at hand (`checks.hooks`)
        ctx.release = CachedRelease(setup.provider.name, setup.provider.version, setup.provider.root)
    record_injections(ctx)
    prefetch_provider_calls(ctx, workers=workers)
    return ctx


@record
class FileCheck:
    """What `check_file` found in one consumer file.

    `findings`: every finding of the rules asked for, in the engine's order (report order is the
    caller's sort). `calls`: every provider callable the checks bound while checking the file,
    each with the consumer item (its `Site`) being checked, so a caller can tell which provider
    definition a finding's call resolved to in this release and with which signature.
    """

    findings: tuple[Finding, ...]
    calls: tuple[BoundCall, ...] = ()
    # The plugins the file's provider command lines name (a KV connector's class): what the
    # plugin-contract checks take (apiaudit.checks.launch.PluginUse).
    plugins: tuple[PluginUse, ...] = ()

    def calls_on_line(self, line: int) -> tuple[CallInfo, ...]:
        """What the calls checked on `line` (an item starting there) resolved to, in order."""
        return tuple(c.info for c in self.calls if c.site is not None and c.site.line == line)


def check_file(
    setup: ScanSetup,
    file: ConsumerFile,
    only: Collection[str] | None = None,
    *,
    consumer: CheckContext | None = None,
) -> FileCheck:
    """Every per-file rule on one consumer file (as `consumer.collect` read it for
    `setup.options`), against the release `setup` readied.

    `only`: the rule ids wanted (None: all); families that cannot yield one of them are not run.
    `consumer`: the context of the consumer the file belongs to (`consumer_context`); without
    it the file is checked as a consumer of its own, named by its top-level module.
    """
    ctx = consumer or consumer_context(setup, file.module.split(".")[0] or file.path, (file,))
    text_patterns = {p.id for p in setup.options.patterns}
    remote_ids = {r.id for r in setup.remote_code}

    def wanted(*rules: str) -> bool:
        return only is None or any(r in only for r in rules)

    engine_rules = only is None or any(r not in text_patterns | remote_ids | {DEPRECATED_USE} | LAUNCH_RULES for r in only)
    findings: list[Finding] = []
    calls: tuple[BoundCall, ...] = ()
    if engine_rules:
        start = len(ctx.bound)
        findings.extend(apply_recipes(setup.book, dedupe(check_engine_rules(ctx, file))))
        calls = tuple(ctx.bound[start:])
        del ctx.bound[start:]  # handed on here; a scan of many files keeps none
    if file.error is None:
        if file.pattern_hits and wanted(*(h.pattern for h in file.pattern_hits)):
            proven = proven_hits(file.pattern_hits, setup.book.patterns, calls,
                                 lambda cls, base: base in ctx.index.mro_paths(cls))
            findings.extend(findings_of_hits(file.pattern_hits, file.lines, file.path, setup.book.patterns,
                                             consumer=ctx.consumer, proven=proven))
        if file.uses and wanted(DEPRECATED_USE):
            findings.extend(find_deprecations(setup.deprecations, file, ctx.consumer))
        if file.auto_calls and wanted(*remote_ids):
            findings.extend(remote_code_findings(ctx.consumer, file, ctx.model, setup.remote_code))
    plugins: tuple[PluginUse, ...] = ()
    if file.launch_lines and setup.launch is not None and wanted(*LAUNCH_RULES, "cannot-judge"):
        launched = launch_findings(setup.launch, file, ctx.consumer, ctx.cli_flags)
        findings.extend(launched.findings)
        plugins = tuple(launched.plugins)
    if only is not None:
        findings = [f for f in findings if f.rule in only]
    if file.unreachable:
        # A module nothing reachable imports may never run (docs/rules.md): its findings hold
        # only if something outside the consumer imports it.
        findings = [
            replace(f, conditional=True, unreachable=True, reason="; ".join(filter(None, (file.unreachable, f.reason))))
            for f in findings
        ]
    if file.runs_when and findings:
        findings = _on_condition(setup, file, findings)
    if file.dead_named and findings:
        findings = _named_only_in_dead_code(ctx, file, findings)
    return FileCheck(tuple(findings), calls, plugins)


def _named_only_in_dead_code(ctx: CheckContext, file: ConsumerFile, findings: list[Finding]) -> list[Finding]:
    """A function the consumer names only in code the release never runs (docs/rules.md, "Code that
    runs, and code that does not"): its body's findings are conditional, saying where it is named
    and why that never runs. Public or not, it stays audited: a user may still call it. `collect`
    left on the file only those no other file, entry point or document names (consumer/reach.py)."""
    out = []
    for f in findings:
        fn = next((d for d in file.dead_named if d.body[0] <= f.line <= d.body[1]), None)
        if fn is not None:
            why = (
                f"`{fn.name}` is named in {ctx.consumer} only where this release never runs (line {fn.named_at}, {fn.why}): "
                "its body runs only if something outside calls it"
            )
            f = replace(f, conditional=True, reason="; ".join(filter(None, (why, f.reason))))
        out.append(f)
    return out


def _on_condition(setup: ScanSetup, file: ConsumerFile, findings: list[Finding]) -> list[Finding]:
    """A module reached only through a name given on a condition (docs/rules.md, "Modules nothing
    runs"): its findings are conditional, saying which, unless an import map serves it in place
    of a provider module this release has (the provider imports its own modules: it runs)."""
    whys = []
    for why in file.runs_when:
        stands_for = why.named.stands_for
        if stands_for and setup.index.module_exists(stands_for):
            return findings
        whys.append(why.text(missing=bool(stands_for)))
    reason = " or ".join(dict.fromkeys(whys))
    return [replace(f, conditional=True, reason="; ".join(filter(None, (reason, f.reason)))) for f in findings]


def check_launch(target: LaunchTarget, argv: Sequence[str], *, path: str = "<command>", consumer: str = "launch") -> FileCheck:
    """One provider command line, as the argv a caller is about to run (`["prov", "serve", model,
    "--flag", ...]`), audited against `target`'s release: the findings a job file holding it
    would get, their sites on one line of `shlex.join(argv)`. InputError when `argv` starts no
    server the release's [[launch]] rules describe."""
    import shlex

    from apiaudit.consumer.launch import match_command
    from apiaudit.consumer.records import LaunchArg, Site
    from apiaudit.errors import InputError

    words = [str(a) for a in argv]
    text = shlex.join(words)
    args, column = [], 0
    for word in words:
        quoted = shlex.quote(word)
        args.append(LaunchArg(word, Site(1, column)))
        column += len(quoted) + 1
    commands = tuple((r.name, c) for r in target.launches for c in r.commands)
    line = match_command(args, commands)
    if line is None:
        known = ", ".join(f"`{c.text}`" for _, c in commands) or "none"
        raise InputError(f"`{text}` starts no server the {target.name} rules describe (commands: {known})")
    file = ConsumerFile(path=path, module="", launch_lines=(line,), source=text)
    launched = launch_findings(target, file, consumer)
    return FileCheck(tuple(launched.findings), (), tuple(launched.plugins))


def warm_index(setup: ScanSetup, file: ConsumerFile) -> None:
    """Ask the index now what checking `file`'s imports and the roots of its uses will ask it.

    Answers do not depend on when they are asked; a large scan asks them in this process while
    copies of it read the other files, so that the copies that then check files (`check_files`,
    forked later) inherit the provider modules loaded instead of each loading them again."""
    index = setup.index
    try:
        for imp in file.imports:
            if index.module_exists(imp.module) and imp.name is not None:
                index.resolve(f"{imp.module}.{imp.name}")
        for use in file.uses:
            if use.root.kind == "symbol":
                index.resolve(use.root.name)
    except Exception:  # noqa: BLE001 - only a head start: a check that needs the answer asks again, and reports
        pass


def check_files(
    setup: ScanSetup,
    files: Sequence[ConsumerFile],
    consumer: CheckContext,
    *,
    workers: int = 1,
    on_file: Callable[[], None] | None = None,
) -> list[Finding]:
    """Every per-file rule on every file of one consumer, in file order: `check_file` for each,
    shared among `workers` processes (`apiaudit.infra.workers`) when there are enough files. What the
    other processes' indexes learned joins this one's (the index cache keeps it)."""
    checked = read_shared(
        setup.index,
        range(len(files)),
        lambda i: check_file(setup, files[i], consumer=consumer).findings,
        workers=workers,
        weight=lambda i: 1 + len(files[i].imports) + len(files[i].uses),
        on_result=(lambda _: on_file()) if on_file else None,
    )
    return [finding for findings in checked for finding in findings]


__all__ = [
    "FileCheck", "ScanSetup", "check_file", "check_files", "check_launch", "consumer_context", "launch_target", "prepare",
    "warm_index",
]  # fmt: skip
