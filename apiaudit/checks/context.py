"""What every check reads: the index, the consumer's files, rule data, and a finding builder."""

from __future__ import annotations

from dataclasses import field
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Callable, Protocol

from apiaudit.consumer.records import AttributeStore, ClassFacts, ConsumerFile, DefinedFunction, Site, Use
from apiaudit.evidence import Facts, RecipeFacts
from apiaudit.findings import ENGINE_RULES, Finding, Severity
from apiaudit.infra.frozen import record
from apiaudit.provider.index import MroEntry
from apiaudit.provider.records import (
    CallInfo,
    FieldShape,
    Forward,
    Missing,
    ReachedVia,
    Resolution,
    Symbol,
    ProviderCall,
    ProviderReference,
    SelfUse,
    ProviderAssignment,
    ProviderStore,
    UnresolvedBase,
)

if TYPE_CHECKING:
    from pathlib import Path

    from apiaudit.sources.cache import CachedRelease


class PackageOwner(Protocol):
    def owns(self, dotted: str) -> bool: ...
    def source_files(self) -> Iterator[tuple[str, str]]: ...  # (dotted module, text) of every file
    def module_file(self, dotted: str) -> Path | None: ...
    def read_text(self, path: Path) -> str | None: ...


class Index(Protocol):
    """What the checks ask of a provider release (`provider.index.ProviderIndex` answers it)."""

    @property
    def loader(self) -> PackageOwner: ...

    def resolve(self, dotted: str) -> Resolution: ...
    def module_exists(self, dotted: str) -> bool: ...
    def constant(self, dotted: str) -> str | None: ...
    def class_member(self, class_path: str, name: str, *, instance: bool) -> Resolution: ...
    def call(self, path: str, *, via: ReachedVia) -> CallInfo: ...
    def field_shape(self, path: str) -> FieldShape | None: ...
    def mro(self, class_path: str) -> tuple[MroEntry, ...]: ...
    def mro_paths(self, class_path: str) -> tuple[str | UnresolvedBase, ...]: ...
    def mro_unknowns(self, class_path: str) -> list[str]: ...
    def computing_class(self, class_path: str) -> str | None: ...
    def subclasses_defining(self, class_path: str, name: str) -> tuple[str, ...]: ...
    def attribute_type(self, class_path: str, name: str) -> Symbol | None: ...
    def assigned_classes(self, class_path: str, name: str) -> tuple[str, ...]: ...
    def overridden_parameter(self, class_path: str, method: str, param: str, position: int) -> tuple[bool, Symbol | None]: ...
    def module_attribute_type(self, path: str) -> Symbol | None: ...
    def parameter_class(self, function_path: str, param: str) -> Symbol | None: ...
    def moved_to(self, missing: Missing) -> tuple[str, ...]: ...
    def find_definitions(self, name: str) -> tuple[str, ...]: ...
    def find_modules(self, leaf: str) -> tuple[str, ...]: ...
    def forwards(self, path: str) -> tuple[Forward, ...]: ...
    def next_constructor(self, bases: tuple[str, ...], after: str) -> str | None: ...
    def members(self, owner: str) -> tuple[Symbol, ...]: ...
    def calls_of(self, methods: Iterable[str], *, workers: int = 1) -> dict[str, tuple[ProviderCall, ...]]: ...
    def construction_calls(self, factory: str, class_variable: str) -> tuple[ProviderCall, ...]: ...
    def references_of(self, methods: Iterable[str]) -> dict[str, tuple[ProviderReference, ...]]: ...
    def attribute_stores(self, names: Iterable[str]) -> dict[str, tuple[ProviderStore, ...]]: ...
    def self_uses(self, names: Iterable[str]) -> dict[str, tuple[SelfUse, ...]]: ...
    def attribute_values(self, name: str, near: str | None = None) -> tuple[ProviderAssignment, ...]: ...
    def mixin_reads(self, class_path: str) -> tuple[str, str] | None: ...
    def import_guard(self, module: str) -> str | None: ...
    def instance_calls(self, classes: Iterable[str]) -> tuple[ProviderCall, ...]: ...
    def abstract_members(self, class_path: str) -> tuple[str, ...]: ...
    def class_named(self, path: str) -> Symbol | None: ...
    def return_items(self, path: str) -> tuple[str, ...]: ...


@record
class BoundCall:
    """A provider callable the checks bound a consumer call against: `site` is the consumer
    item (use, import, RPC) being checked, `info` what the call resolved to in this release
    (the callee as defined, its signatures)."""

    site: Site | None  # None: bound while deciding a guard outside any item
    info: CallInfo


@record
class HostRules:
    """Rule data the checks need: where string RPCs run, and which keywords inject classes where."""

    rpc_hosts: dict = field(default_factory=dict)  # rpc method name -> tuple of provider class paths
    injection_hosts: dict = field(default_factory=dict)  # keyword -> tuple of provider class paths
    # [[pattern]]s matched on resolved callees (Pattern.on_symbol): call-without-keyword
    symbol_patterns: tuple = ()
    # [[plugin]]s: provider bases whose consumer subclasses the provider's own factory builds
    plugins: tuple = ()
    # [[entry_point]]s: entry-point groups the provider loads and calls what they name
    entry_points: tuple = ()
    # [[call_dispatch]]s: external base -> the method calling an instance runs (`forward`)
    call_dispatch: dict = field(default_factory=dict)
    # [[substitution]]s: (base, method) of the registrations that make the provider build a
    # consumer class in place of its own
    substitutions: tuple = ()


SOURCE_MAX_LINES = 8


def source_text(lines: tuple[str, ...], site: Site) -> str | None:
    """The consumer's text of the site: every line of a multi-line call (dedented, at most
    SOURCE_MAX_LINES), so the offending keyword on a later line is visible too."""
    if not 0 < site.line <= len(lines):
        return None
    last = min(site.end_line or site.line, len(lines), site.line + SOURCE_MAX_LINES - 1)
    chunk = [lines[site.line - 1].strip()]
    rest = list(lines[site.line : last])
    if rest:
        indent = min((len(x) - len(x.lstrip()) for x in rest if x.strip()), default=0)
        chunk += [x[indent:].rstrip() for x in rest]
    if (site.end_line or site.line) > last:
        chunk.append("…")
    return "\n".join(chunk)


# (context, use) -> the value the use's chain evaluates to
ChainEvaluator = Callable[["CheckContext", Use], object]


class CheckContext:
    def __init__(self, consumer: str, index: Index, files: tuple[ConsumerFile, ...], hosts: HostRules,
                 model_types=None, model=None, *, evaluate_chain: ChainEvaluator):
        self.consumer = consumer
        # The chain walk (`checks.chains.evaluate_chain`), handed in so that deciding a guard,
        # which may evaluate a chain, needs no import of the walk that decides guards.
        self.evaluate_chain = evaluate_chain
        self.index = index
        # Every call the checks bound, in order, with the item being checked when they did
        # (`apiaudit.engine.check_file` hands them on: explain shows the callee and its change).
        self.site: Site | None = None
        self.bound: list[BoundCall] = []
        # Which classes a provider model object can be (`ModelTypes`), for the model given with
        # --model (`model`, ModelFacts) or, when None, for every architecture the registry lists.
        self.model_types = model_types
        self.model = model
        self.files = files
        self.hosts = hosts
        self.classes: dict[str, ClassFacts] = {c.dotted: c for f in files for c in f.classes}
        self.condition_memo: dict[tuple, bool | None] = {}
        # consumer file path -> its parsed tree, for the rare questions asked of the text at a
        # finding (where a consumer object is passed: `checks.flows`)
        self.trees: dict[str, object] = {}
        # a registrar method name -> the consumer classes whose instances are passed to it
        self.registered: dict[str, frozenset[str]] = {}
        # (consumer function, depth) -> whether it probes the provider (`checks.probes.probes_provider`)
        self.probes: dict[tuple[str, int], bool] = {}
        # consumer function -> how the probe comes out on the release (`checks.probes.outcome`)
        self.probe_outcomes: dict[str, object] = {}
        # consumer function or class -> the probes in front of every call of it (`checks.probes.behind_probes`)
        self.probe_gates: dict[str, object] = {}
        # (function, parameter, position) -> what the provider passes a replacement's parameter
        # (`checks.chains`; an InstanceValue or None)
        self.replaced_params: dict[tuple[str, str | None, int], object] = {}
        # a model slot's classes -> the provider classes along their MROs (checks.chains.slot_filler)
        self.slot_bases: dict[tuple[str, ...], frozenset[str]] = {}
        # consumer class -> provider classes it is mixed into, via injection keywords (filled by
        # `checks.conditions.record_injections`, which knows which injections are live)
        self.injected: dict[str, set[str]] = {}
        # consumer class -> (provider classes, the refusal): installed only after a statement
        # that refuses the release (a failing `assert` of a version test), so never there
        self.injected_behind: dict[str, tuple[set[str], str]] = {}
        self.unknown_injection = False
        # provider classes that may receive an injected class the engine cannot resolve
        self.unknown_injection_hosts: set[str] = set()
        self.bound_functions: dict[str, list] = {}
        for f in files:
            for b in f.method_bindings:
                self.bound_functions.setdefault(b.function, []).append(b)
        # attribute name -> (file path, store) where the consumer adds it to an object
        self.stores: dict[str, list[tuple[str, AttributeStore]]] = {}
        copiers = _member_copiers(files)
        for f in files:
            if f.unreachable is None:
                for store in f.attribute_stores:
                    if store.copied_by is None or store.copied_by in copiers:
                        self.stores.setdefault(store.name, []).append((f.path, store))
        self.calls_checked = 0
        # The entry points the consumer's distribution declares (`consumer.records.EntryPoint`).
        self.entry_points: tuple = ()
        self._cli_flags: frozenset[str] | None = None
        # consumer class -> the [[plugin]] rules whose factory it is named for (checks.contracts)
        self.named_plugins_memo: dict | None = None
        # provider class -> (the consumer class the provider builds in its place, where it is
        # registered so), by [[substitution]] registrations (`checks.flows.substituted`)
        self.substituted_memo: dict[str, tuple[str, str]] | None = None
        # consumer class -> where it is built: (class, method, self attribute) (`checks.flows.built_where`)
        self.built_memo: dict[str, tuple[tuple[str | None, str | None, str | None], ...] | None] = {}
        # consumer class -> whether only the provider builds it (`checks.flows.built_only_by_provider`)
        self.provider_built_memo: dict[str, bool] = {}
        # attribute name -> where the consumer may bind it (`checks.flows.stored_by_consumer`)
        self.consumer_stores_memo: dict[str, str | None] = {}
        # (class short name, method) -> whether the consumer reads `Cls.method` as a value (`checks.contracts`)
        self.original_read_memo: dict[tuple[str, str], bool] = {}
        self._methods_by_class: dict[str, dict[str, DefinedFunction]] | None = None
        self._functions: dict[str, DefinedFunction] | None = None
        self._derived: dict[str, list[str]] | None = None  # consumer class -> consumer classes naming it as a base
        # The audited release as the release cache holds it (None for a provider read from a
        # path): the releases beside it there are evidence, for `checks.hooks`, that a method the
        # audited release neither declares nor calls is a hook of the provider.
        self.release: CachedRelease | None = None
        self.hooks_memo: dict[tuple, object] = {}  # `checks.hooks`: what it read of those releases
        self.unreached_memo: dict[tuple, object] = {}  # `checks.unreached`: the consumer's words, registries read

    def call(self, path: str, *, via: ReachedVia) -> CallInfo:
        """The index's answer for calling `path`, recorded in `bound`."""
        info = self.index.call(path, via=via)
        self.bound.append(BoundCall(self.site, info))
        return info

    @property
    def cli_flags(self) -> frozenset[str]:
        """The flags the consumer's own CLI adds to the provider's parser (every file's)."""
        if self._cli_flags is None:
            self._cli_flags = frozenset(flag for f in self.files for flag in f.cli_flags)
        return self._cli_flags

    @property
    def methods_by_class(self) -> dict[str, dict[str, DefinedFunction]]:
        """consumer class -> its methods by name (built once, on first use)."""
        if self._methods_by_class is None:
            self._methods_by_class = {}
            for f in self.files:
                for function in f.functions:
                    if function.owner is not None:
                        self._methods_by_class.setdefault(function.owner, {})[function.dotted.rpartition(".")[2]] = function
        return self._methods_by_class

    @property
    def functions(self) -> dict[str, DefinedFunction]:
        """every consumer function and method by its dotted path (built once, on first use)."""
        if self._functions is None:
            self._functions = {function.dotted: function for f in self.files for function in f.functions}
        return self._functions

    def own_members(self, dotted: str, seen: frozenset[str] = frozenset()) -> frozenset[str]:
        facts = self.classes.get(dotted)
        if facts is None or dotted in seen:
            return frozenset()
        members = set(facts.own_members)
        for base in facts.consumer_bases:
            members |= self.own_members(base, seen | {dotted})
        return frozenset(members)

    def super_members(self, dotted: str) -> frozenset[str]:
        """Members `super()` inside `dotted` may reach on the consumer side: its consumer bases'.

        A consumer base defining the name can come first in the MRO; only names no consumer
        base defines certainly reach the provider class.
        """
        facts = self.classes.get(dotted)
        if facts is None:
            return frozenset()
        members: set[str] = set()
        for base in facts.consumer_bases:
            members |= self.own_members(base, frozenset({dotted}))
        return frozenset(members)

    def outside_bases(self, dotted: str, seen: frozenset[str] = frozenset()) -> tuple[str, ...]:
        """Bases of a consumer class (and of its consumer bases) from neither side: a name no
        consumer class statement defines (`torch.nn.Module`, another package's class) or one
        the walk could not read."""
        facts = self.classes.get(dotted)
        if facts is None or dotted in seen:
            return ()
        out = list(facts.unread_bases)
        for base in facts.consumer_bases:
            out.extend(self.outside_bases(base, seen | {dotted}) if base in self.classes else (base,))
        return tuple(dict.fromkeys(out))

    def subclasses_of(self, dotted: str) -> tuple[str, ...]:
        """Consumer classes deriving from a consumer class, at any depth (built once)."""
        if self._derived is None:
            self._derived = {}
            for facts in self.classes.values():
                for base in facts.consumer_bases:
                    self._derived.setdefault(base, []).append(facts.dotted)
        out: dict[str, None] = {}
        todo = list(self._derived.get(dotted, ()))
        while todo:
            sub = todo.pop()
            if sub not in out and sub != dotted:
                out[sub] = None
                todo.extend(self._derived.get(sub, ()))
        return tuple(out)

    def provider_classes_of(self, dotted: str, seen: frozenset[str] = frozenset()) -> tuple[str, ...]:
        """Provider classes a consumer class's instances are: its provider bases, or injection hosts."""
        facts = self.classes.get(dotted)
        if facts is None or dotted in seen:
            return ()
        out: list[str] = []
        for base in facts.provider_bases:
            res = self.index.resolve(base)
            out.append(res.symbol.path if hasattr(res, "symbol") else base)
        for base in facts.consumer_bases:
            out.extend(self.provider_classes_of(base, seen | {dotted}))
        out.extend(sorted(self.injected.get(dotted, ())))
        return tuple(dict.fromkeys(out))

    def finding(
        self,
        file: ConsumerFile,
        site: Site,
        rule: str,
        message: str,
        *,
        callee: str | None = None,
        param: str | None = None,
        severity: Severity | None = None,
        provider_location: str | None = None,
        signature: str | None = None,
        advice: str | None = None,
        facts: Facts | None = None,
        recipe: RecipeFacts | None = None,
        reason: str | None = None,
    ) -> Finding:
        sev = severity or (ENGINE_RULES[rule].severity if rule in ENGINE_RULES else Severity.WARNING)
        source = source_text(file.lines, site)
        if advice is None and rule in ENGINE_RULES:
            advice = ENGINE_RULES[rule].advice_for(param)
        return Finding(
            rule=rule,
            severity=sev,
            consumer=self.consumer,
            path=file.path,
            line=site.line,
            column=site.column,
            callee=callee,
            param=param,
            message=message,
            provider_location=provider_location,
            signature=signature,
            source=source,
            advice=advice,
            end_line=site.end_line,
            end_column=site.end_column,
            facts=facts,
            recipe=recipe,
            reason=reason,
        )


def _member_copiers(files) -> frozenset[str]:
    """The consumer classes that copy their subclasses' own members onto a target (a patch
    class's base, `ClassFacts.copies_members`), themselves or through a consumer base: only a
    `class P(Base[Target])` under one of these patches Target."""
    classes = {c.dotted: c for f in files for c in f.classes}
    found: dict[str, bool] = {}

    def copies(dotted: str) -> bool:
        if dotted not in found:
            found[dotted] = False  # a cycle of bases copies nothing
            facts = classes.get(dotted)
            found[dotted] = facts is not None and (facts.copies_members or any(copies(b) for b in facts.consumer_bases))
        return found[dotted]

    return frozenset(
        s.copied_by for f in files for s in f.attribute_stores if s.copied_by is not None and copies(s.copied_by)
    )
