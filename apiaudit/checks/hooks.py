"""Hooks the provider stopped calling (`hook-not-called`, a warning).

A consumer class derived from provider classes defines a method the provider calls on other
releases (a KV connector's block-pool hook, a cache policy's `mark_evictable`). On a release
where no provider class in its MRO declares the method and nothing in the release names it,
the method overrides nothing and never runs: the plugin loads, and the feature it adds is
silently absent. Nothing raises, so no other rule sees it.

Candidates are the class's own public methods (no leading underscore) that

- no provider class in the MRO declares on the audited release (a certain `Missing`: an
  external base, which could declare anything, makes no candidate),
- the consumer's own code never calls or names (`contracts.consumer_names`): a public helper
  the plugin calls itself is live whatever the provider does,
- the release never names (`ProviderIndex.references_of`: every call, typed or not, every
  `obj.name` read, the name passed to a call), nor holds as a string literal anywhere (a table
  of hook names it dispatches by).

That alone would flag every public helper of a plugin class. The evidence that the method is a
hook of the provider is the provider's own: the releases of the same distribution already in
the local release cache (`sources.cache.releases_beside`; nothing is fetched) where one of the
classes of this MRO declares a method of that name in its body (the class's module on this
release, read there and parsed with `ast`, once a module; never Griffe, never imported). With no other release
at hand (a provider read from a path), or none declaring it, nothing is reported. The releases
in the cache are an input of the scan: the whole-scan cache key lists them
(`cache.scans.scan_key`), so a release fetched later re-judges the pair.
"""

from __future__ import annotations

import ast
from pathlib import Path

from apiaudit.checks.context import CheckContext
from apiaudit.checks.contracts import consumer_names, provider_mro_of
from apiaudit.consumer import parse_quietly
from apiaudit.consumer.records import ClassFacts, ConsumerFile, DefinedFunction
from apiaudit.findings import Finding
from apiaudit.provider.records import Missing
from apiaudit.sources.cache import CachedRelease, releases_beside

RULE = "hook-not-called"

# Releases named in a finding; the rest are counted.
_RELEASES_SHOWN = 4


def hook_findings(ctx: CheckContext, file: ConsumerFile) -> list[Finding]:
    """One warning per method of `file`'s classes that is a hook of the provider on other
    releases and that the audited release neither declares nor calls."""
    hooks: list[tuple[ClassFacts, DefinedFunction, str, dict[str, list[CachedRelease]]]] = []
    for facts in file.classes:
        methods = ctx.methods_by_class.get(facts.dotted, {})
        if not any(_public(name, f) for name, f in methods.items()):
            continue
        heads, provider_mro = provider_mro_of(ctx, facts)
        if not heads:
            continue
        for name, function in methods.items():
            if not _public(name, function) or not declared_nowhere(ctx, heads, name):
                continue
            releases = _other_releases(ctx)
            if not releases:
                return []  # nothing can say it is a hook: not judged
            if consumer_names(ctx, name):
                continue
            declared = _declared_elsewhere(ctx, releases, provider_mro, name)
            if declared:
                hooks.append((facts, function, name, declared))
    if not hooks:
        return []
    # one pass over the release for every name left (the costliest questions, asked last)
    named = ctx.index.references_of(name for _, _, name, _ in hooks)
    left = {name for _, _, name, _ in hooks if not named[name]}
    left -= quoted_names(ctx, left)
    return [_finding(ctx, file, facts, function, name, declared) for facts, function, name, declared in hooks if name in left]


def quoted_names(ctx: CheckContext, names: set[str]) -> set[str]:
    """The names the release's text holds as a string literal anywhere (`"name"`, `'name'`): a
    table of hook names the provider dispatches by (`for hook in HOOKS: getattr(obj, hook)()`)
    is a call `references_of` cannot see."""
    found: set[str] = set()
    for _module, text in ctx.index.loader.source_files() if names else ():
        found.update(n for n in names - found if f'"{n}"' in text or f"'{n}'" in text)
        if found == names:
            break
    return found


def _public(name: str, function: DefinedFunction) -> bool:
    """A method the provider may call by its name: no leading underscore (a dunder is Python's to
    call), and not a property (read, not called)."""
    return not name.startswith("_") and function.kind != "property"


def declared_nowhere(ctx: CheckContext, heads: list[str], name: str) -> bool:
    """Whether, certainly, no provider class the consumer class derives from has `name`."""
    for head in heads:
        found = ctx.index.class_member(head, name, instance=False)
        if not isinstance(found, Missing) or found.doubt is not None:
            return False
    return True


def _other_releases(ctx: CheckContext) -> tuple[CachedRelease, ...]:
    """The provider's other releases in the release cache beside the audited one (none for a
    provider read from a path)."""
    key = ("releases",)
    if key not in ctx.hooks_memo:
        ctx.hooks_memo[key] = releases_beside(ctx.release.root, ctx.release.name) if ctx.release else ()
    return ctx.hooks_memo[key]  # type: ignore[return-value]


def _declared_elsewhere(
    ctx: CheckContext, releases: tuple[CachedRelease, ...], provider_mro: list[str], name: str
) -> dict[str, list[CachedRelease]]:
    """provider class -> the other releases whose copy of its module declares `name`
    in the class's body, for the classes of `provider_mro` (their modules on the audited release)."""
    found: dict[str, list[CachedRelease]] = {}
    for class_path in provider_mro:
        symbol = ctx.index.class_named(class_path)
        if symbol is None or not symbol.location:
            continue
        relative = symbol.location.rpartition(":")[0]
        short = class_path.rpartition(".")[2]
        for release in releases:
            if name in _class_methods(ctx, release, relative, short):
                found.setdefault(class_path, []).append(release)
    return found


def _class_methods(ctx: CheckContext, release: CachedRelease, relative: str, short: str) -> frozenset[str]:
    """The names the top-level class `short` defines with `def` in its body, in the module
    `relative` of `release` (empty when the file or the class is not there, or it does not parse)."""
    key = ("module", str(release.root), relative)
    if key not in ctx.hooks_memo:
        # each module read and parsed once; only what its classes define is kept
        ctx.hooks_memo[key] = _methods_by_class(release.root / relative)
    return ctx.hooks_memo[key].get(short, frozenset())  # type: ignore[attr-defined]


def _methods_by_class(path: Path) -> dict[str, frozenset[str]]:
    try:
        tree = parse_quietly(path.read_text(encoding="utf-8"), str(path))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return {}
    return {
        node.name: frozenset(s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)))
        for node in tree.body
        if isinstance(node, ast.ClassDef)
    }


def _finding(
    ctx: CheckContext, file: ConsumerFile, facts: ClassFacts, function: DefinedFunction, name: str,
    declared: dict[str, list[CachedRelease]],
) -> Finding:
    owner, releases = next(iter(declared.items()))
    ordered = sorted(releases, key=lambda r: _version_key(r.version))
    shown = ", ".join(r.version for r in ordered[:_RELEASES_SHOWN])
    more = len(ordered) - _RELEASES_SHOWN
    where = f"{ordered[0].name} {shown}" + (f" and {more} more in the release cache" if more > 0 else "")
    verb = "declares" if len(ordered) == 1 else "declare"
    short = facts.dotted.rpartition(".")[2]
    return ctx.finding(
        file, function.site, RULE,
        f"{short}.{name} overrides nothing on {audited_release(ctx)} and nothing there calls it; {where} {verb} it on "
        f"{owner.rpartition('.')[2]}: the provider never runs it here, so what it does is silently lost",
        callee=f"{owner}.{name}", param=name,
    )  # fmt: skip


def audited_release(ctx: CheckContext) -> str:
    """The audited release as findings name it (`vllm 0.33.0`)."""
    return f"{ctx.release.name} {ctx.release.version}" if ctx.release else "this release"


def _version_key(version: str) -> tuple:
    """A release's place in order (`packaging`'s; a version it cannot read sorts first, as text)."""
    from packaging.version import InvalidVersion, Version

    try:
        return (1, Version(version), "")
    except InvalidVersion:
        return (0, None, version)
