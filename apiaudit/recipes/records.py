"""Declarative provider knowledge loaded from rules/*.toml: frozen values, no behaviour beyond filtering.

A `RuleBook` holds everything apiaudit knows about one provider that its signatures
cannot tell: how to fix a mismatch (`Recipe`), drift that only shows in call
patterns (`Pattern`), which calls are string RPCs (`RpcRule`), which keywords
inject consumer classes into provider classes (`InjectionRule`), and which objects are
the model the job loads (`RegistryRule`, `SlotRule`, `FactoryRule`), and what the provider's
command line is (`LaunchRule`, `LaunchRegistryRule`: how its server is started, where its flags
are defined, which names it registers). `RemoteCodeRule`s are model-facing: they apply whichever
provider is audited.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Literal, get_args

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from apiaudit.evidence import ImportFacts
from apiaudit.findings import Finding, RuleInfo, Severity
from apiaudit.infra.frozen import record
from apiaudit.recipes.changes import (  # noqa: F401 - CHANGE_KINDS and IN_SCOPE_PLACEHOLDER re-exported
    CHANGE_KINDS,
    IN_SCOPE_PLACEHOLDER,
    AddedParameter,
    Change,
    ChangeKind,
    MovedSymbol,
)

PatternKind = Literal["call-not-followed-by", "result-subscripted", "method-called", "call-without-keyword"]
# Kinds matched on calls of a provider symbol resolved through imports (the checks stage), not on source text.
SYMBOL_PATTERN_KINDS: tuple[PatternKind, ...] = ("call-without-keyword",)
SubscriptKind = Literal["any", "int-literal"]
PATTERN_KINDS: tuple[PatternKind, ...] = get_args(PatternKind)
SUBSCRIPT_KINDS: tuple[SubscriptKind, ...] = get_args(SubscriptKind)



@record
class Recipe:
    """How one provider change is fixed at a call site.

    `symbol` is the dotted path where the callee is defined (for a moved symbol: the OLD
    import path); `change` is one of the classes in `apiaudit.recipes.changes`, which owns
    what the change means (which finding it explains, its advice, its edit, its TOML form).
    """

    id: str
    symbol: str
    versions: str
    change: Change
    rationale: str
    source: str = ""  # "file.toml" it came from, for messages

    @property
    def kind(self) -> ChangeKind:
        return self.change.kind

    @property
    def scope_names(self) -> tuple[str, ...]:
        """Names whose value must be found in the call's scope ({in_scope:NAME})."""
        value = self.change.value if isinstance(self.change, AddedParameter) else ""
        return tuple(IN_SCOPE_PLACEHOLDER.findall(value))

    def matches_symbol(self, callee: str | None) -> bool:
        """True when `callee` (as a Finding reports it) is this recipe's symbol.

        A class and its constructor are the same callee: ``pkg.Cls`` matches ``pkg.Cls.__init__``.
        """
        if not callee:
            return False
        strip = lambda s: s[: -len(".__init__")] if s.endswith(".__init__") else s  # noqa: E731
        return strip(callee) == strip(self.symbol)

    def explains(self, finding: Finding) -> bool:
        """Does this recipe explain (and fix) `finding`?"""
        if isinstance(self.change, MovedSymbol):
            return self.change.explains(finding, self.symbol in imported_paths(finding))
        return self.change.explains(finding, self.matches_symbol(finding.callee))


def imported_paths(finding: Finding) -> set[str]:
    """Dotted paths a missing import could stand for: module.name, or the callee as reported."""
    paths = set()
    facts = finding.facts if isinstance(finding.facts, ImportFacts) else None
    name = (facts.name if facts else None) or finding.param or (finding.callee.rsplit(".", 1)[-1] if finding.callee else None)
    module = facts.module if facts else None
    if name and module:
        paths.add(f"{module}.{name}")
    if finding.callee:
        paths.add(finding.callee)
    return paths


@record
class Pattern:
    """Drift that signatures cannot show, found by matching calls in the consumer.

    kinds (all matched inside one function body, receivers compared as source text):
      call-not-followed-by: ``R.method(...)`` with no later ``R.then(...)`` (same receiver
        unless `same_receiver` is false);
      result-subscripted: the result of ``R.method(...)`` is subscripted, directly or
        through the name it was assigned to (`subscript` = "int-literal" counts only ``[0]``-style);
      method-called: any ``R.method(...)``;
      call-without-keyword: a call of the provider `symbol` (resolved through the consumer's
        imports, as the binding checks resolve callees) that does not pass `keyword`; a call
        that unpacks ``**kwargs`` is not matched (it may pass it).
    `when_keyword` restricts the call to those passing that keyword; `min_args` to those
    with at least that many positional arguments. `recipe` names a recipe that fixes it.
    `receiver_class` (text kinds): a provider class the receiver must be for the hit to be a
    proof; a hit whose call the checks bound to a method of a class derived from it takes
    `severity` (what happens when the line runs), any other hit is a warning, since text alone
    cannot tell the provider's object from the consumer's own (docs/rules.md, "An error is a proof").
    """

    id: str
    severity: Severity
    versions: str
    kind: PatternKind
    method: str | None
    message: str
    advice: str | None = None
    then: str | None = None
    same_receiver: bool = True
    when_keyword: str | None = None
    subscript: SubscriptKind = "any"
    min_args: int | None = None
    recipe: str | None = None
    symbol: str | None = None  # call-without-keyword: the provider callable's dotted path
    keyword: str | None = None  # call-without-keyword: the keyword the call must pass
    receiver_class: str | None = None  # text kinds: the class a receiver must be shown to be for `severity`
    source: str = ""

    @property
    def on_symbol(self) -> bool:
        """Matched by the checks stage on resolved callees, not by `match_patterns` on text."""
        return self.kind in SYMBOL_PATTERN_KINDS

    def rule_info(self) -> RuleInfo:
        return RuleInfo(self.id, self.severity, self.message)


@record
class RpcRule:
    """Calls of `method` name, as a string, a method that runs on each of `hosts`."""

    method: str
    hosts: tuple[str, ...]
    name_arg: int | None = None
    name_keyword: str | None = None
    source: str = ""


@record
class InjectionRule:
    """A consumer class named (as a dotted string) by `keyword` is mixed into each of `hosts`."""

    keyword: str
    hosts: tuple[str, ...]
    source: str = ""


@record
class RegistryRule:
    """The provider's architecture -> class map: dict literals in `module` named `maps`.

    Each entry is ``"Arch": ("module", "Class")`` with the module relative to `package`;
    ``**other`` splats of other dict literals in the same module are followed. A registry with
    `target` false lists models a job never loads as its target (speculative-decoding drafts):
    its architectures are left out of every other registry's union of candidates when no
    model names one.
    """

    name: str
    module: str
    maps: tuple[str, ...]
    package: str
    source: str = ""
    target: bool = True


@record
class SlotRule:
    """`owner.attribute` (on instances of `owner` or its subclasses) holds an instance of the
    class `registry` maps the model's architecture to."""

    owner: str
    attribute: str
    registry: str
    source: str = ""


@record
class FactoryRule:
    """Calls of `function` return an instance of the registry class for their
    `architectures_keyword=[...]` literal, else for the model config's nested
    `nested_config` architectures (``text_config.architectures``), else the model's own."""

    function: str
    registry: str
    architectures_keyword: str = "architectures"
    nested_config: str | None = "text_config"
    source: str = ""


@record
class RemoteCodeRule:
    """``Auto.method(path)`` without ``keyword=True`` fails when the model's config files map
    that Auto class to custom code (`auto_map_keys`: Auto class -> its auto_map key;
    `files`: which model files' auto_map count)."""

    id: str
    severity: Severity
    module: str  # the library the Auto classes are imported from
    method: str
    keyword: str
    auto_map_keys: tuple[tuple[str, str], ...]
    files: tuple[str, ...]
    message: str
    advice: str | None = None
    source: str = ""

    def auto_map_key(self, auto_class: str) -> str | None:
        return next((key for name, key in self.auto_map_keys if name == auto_class), None)

    def rule_info(self) -> RuleInfo:
        return RuleInfo(self.id, self.severity, self.message)


@record
class LaunchCommand:
    """One way a job starts the provider's server: the console `script` (``prov``) or
    ``python -m <module>``, then `subcommand` (``serve``; None: the module is the server)."""

    module: str
    script: str | None = None
    subcommand: str | None = None

    @property
    def text(self) -> str:
        """How the command is written, for messages: ``prov serve`` or ``python -m pkg.mod``."""
        head = self.script if self.script else f"python -m {self.module}"
        return f"{head} {self.subcommand}" if self.subcommand else head


@record
class LaunchRule:
    """What the provider's server command line is, as data ([[launch]]): how it is started
    (`commands`), which functions build its argument parser (`parsers`: the first the release
    defines is read, statically), and the parser's own spellings.

    `field_kwargs`: a function that, called on a config dataclass, returns one dict of argparse
    keywords per field (a bool field becomes a ``--x``/``--no-x`` pair, a field typed as a
    config dataclass takes that class as JSON); `args_classes`: dataclasses whose fields name the
    config class a JSON flag takes when the flag's own keywords do not tell; `json_flags`: the
    last resort, flag -> config class. `plugin_hooks`: names of calls that hand the parser to
    out-of-tree plugins (their flags cannot be read). `underscores`: ``--max_model_len`` is
    ``--max-model-len``; `dotted_keys`: ``--flag.key value`` sets one key of a JSON flag;
    `short_options`: a short option glued to its value (``-O3``) standing for a long flag.
    """

    name: str
    commands: tuple[LaunchCommand, ...]
    parsers: tuple[str, ...]
    field_kwargs: str | None = None
    args_classes: tuple[str, ...] = ()
    plugin_hooks: tuple[str, ...] = ()
    json_flags: tuple[tuple[str, str], ...] = ()
    underscores: bool = False
    dotted_keys: bool = False
    short_options: tuple[tuple[str, str], ...] = ()
    source: str = ""


@record
class LaunchRegistryRule:
    """Names a config key takes that the release registers by call ([[launch_registry]]): the
    value of `key` in a JSON flag typed `config` must be the first argument of a `call` made at
    module level in `module` (``Factory.call("Name", "module", "Class")``), unless the same JSON
    also sets `plugin_key` (then the name is a class of the module that key names: a plugin).
    `module_arg`/`class_arg` say where the registered class is, for the plugin contract."""

    config: str
    key: str
    module: str
    call: str
    what: str
    name_arg: int = 0
    module_arg: int | None = None
    class_arg: int | None = None
    plugin_key: str | None = None
    source: str = ""


def _version_matches(versions: str, provider_version: str | None) -> bool:
    if provider_version is None:
        return True
    try:
        version = Version(provider_version)
    except InvalidVersion:
        return True  # a local path or an odd version string: we cannot tell, so every rule applies
    return SpecifierSet(versions).contains(version, prereleases=True)


@record
class PluginRule:
    """The provider builds instances of consumer subclasses of `base` itself, in `factory`:
    each call there of the local name `class_variable` (the class it looked up by a registered
    name, a dotted path in a config value or an entry point) is what their `__init__` receives.
    Several such calls are alternatives the factory chooses between; one must bind.

    How a consumer names the class the factory builds (each makes the named class live and
    checked as a plugin, whatever its bases): a call `register` (its last name) with the module at
    `module_arg` and the class at `class_arg`, as string literals; or a dict (a Python literal, or
    the JSON a launch line passes) setting `module_key` to the module and `class_key` to the class.
    `register_on`, the class whose `register` it is: a call of that name on another provider class
    (another factory's registration) names nothing for this one."""

    base: str
    factory: str
    class_variable: str
    register: str | None = None
    register_on: str | None = None
    module_arg: int | None = None
    class_arg: int | None = None
    module_key: str | None = None
    class_key: str | None = None
    source: str = ""


@record
class EntryPointRule:
    """The provider loads the objects a distribution declares in entry-point `group` ([[entry_point]])
    and either, in the provider function `caller`, calls each through the local name `variable`
    (those calls are what the consumer's function, or its class's `__init__`, receives), or
    registers the module named there as a hook implementation module (`hookspecs`): each of its
    functions named `hook_prefix...` that the module `hookspecs` specifies is called by keyword
    with the specification's parameter names. A decorator keyword `hook_rename="other"` says
    the function implements the hook `other`. `hook_registrar` names the method that registers
    an object as a plugin at run time (`config.pluginmanager.register(obj)`): the hook methods of
    a consumer class whose instance the consumer passes to it are hook implementations too."""

    group: str
    caller: str | None = None
    variable: str | None = None
    hookspecs: str | None = None
    hook_prefix: str = ""
    hook_rename: str | None = None
    hook_registrar: str | None = None
    source: str = ""


@record
class CallDispatchRule:
    """Calling an instance of a class derived from `base` (a base outside the provider) runs
    its `method`: `torch.nn.Module.__call__` runs `forward`, so the provider's `self.model(a, b)`
    is a call of the model's `forward` for what the consumer overrides or puts over it."""

    base: str
    method: str
    source: str = ""


@record
class SubstitutionRule:
    """A consumer class the provider builds in place of one of its own ([[substitution]]):
    `C.method(K)`, `@C.method` (with or without arguments) on class K, or a consumer function
    passing its parameters on so (`def reg(a, b): a.method(b)`, called `reg(C, K)`), where C
    derives from `base`: wherever the provider builds a C, it builds a K. A provider call made
    only from C's methods then runs on the plugin's K, not on C."""

    base: str
    method: str
    source: str = ""


@record
class RuleBook:
    provider: str
    default_consumers: tuple[str, ...] = ()
    recipes: tuple[Recipe, ...] = ()
    patterns: tuple[Pattern, ...] = ()
    rpcs: tuple[RpcRule, ...] = ()
    injections: tuple[InjectionRule, ...] = ()
    registries: tuple[RegistryRule, ...] = ()
    slots: tuple[SlotRule, ...] = ()
    factories: tuple[FactoryRule, ...] = ()
    plugins: tuple[PluginRule, ...] = ()
    entry_points: tuple[EntryPointRule, ...] = ()
    launches: tuple[LaunchRule, ...] = ()
    launch_registries: tuple[LaunchRegistryRule, ...] = ()
    call_dispatches: tuple[CallDispatchRule, ...] = ()
    substitutions: tuple[SubstitutionRule, ...] = ()
    files: tuple[Path, ...] = ()
    fingerprint: str = ""  # sha256 prefix over the rule files' bytes (Report.rules_version)

    def applicable(self, provider_version: str | None) -> RuleBook:
        """The recipes and patterns whose version range contains `provider_version`.

        None or an unparsable version (a provider read from a local path) keeps all of them.
        RPC, injection, registry, slot, factory, plugin and launch rules are not versioned and are always
        kept (a launch rule names every place its parser has lived; the release says which it has).
        """
        return replace(
            self,
            recipes=tuple(r for r in self.recipes if _version_matches(r.versions, provider_version)),
            patterns=tuple(p for p in self.patterns if _version_matches(p.versions, provider_version)),
        )

    def registry(self, name: str | None = None) -> RegistryRule | None:
        """The registry rule called `name` (None: the first)."""
        return next((r for r in self.registries if name is None or r.name == name), None)

    def recipe(self, recipe_id: str) -> Recipe | None:
        return next((r for r in self.recipes if r.id == recipe_id), None)

    def rule_infos(self) -> dict[str, RuleInfo]:
        """Rule ids this book adds to the engine's (one per pattern)."""
        return {p.id: p.rule_info() for p in self.patterns}
