"""What a consumer name or expression holds, as far as reading the source can tell.

Values are small, frozen and hashable (they cross into the consumer cache). Two branches
meet in `join`: the same value is kept, anything that differs becomes less precise, never
more. Nothing here knows a provider; provider facts are decided later, by the checks.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal, Union

from apiaudit.consumer.records import (
    CaughtImport,
    Condition,
    ImportRef,
    Root,
    Site,
    Step,
)
from apiaudit.infra.frozen import record


@record
class Unknown:
    """Anything: every question about it stays unanswered (silence, never an error)."""


UNKNOWN = Unknown()


@record
class Const:
    """A literal (str, int, float, bool, None, or a tuple of those) or what folds from literals."""

    value: object


VersionForm = Literal["text", "version"]


@record
class ProviderVersion:
    """The audited provider's version: as text (`NAME.__version__`) or parsed (`Version(...)`)."""

    form: VersionForm


@record
class ParsedVersion:
    """`Version("0.9")` of a literal: compares like packaging's Version."""

    text: str


VersionPartName = Literal["release", "major", "minor", "micro", "base_version"]
VersionTextMethod = Literal["startswith", "endswith", "split", "strip", "lower"]


@record
class VersionPart:
    """`Version(provider).release` / `.major` / `.minor` / `.micro` of the audited release."""

    part: VersionPartName


@record
class VersionMethod:
    """A str method of the provider's version text (`NAME.__version__.startswith`), not yet called."""

    method: VersionTextMethod


@record
class ProviderDistribution:
    """`importlib.metadata.distribution("NAME")` / `pkg_resources.get_distribution("NAME")` of the provider."""


@record
class VersionDerived:
    """Something computed from the provider's version that the engine cannot fold (the version is unknown)."""


# What reads the audited release itself (a literal's `Version("0.9")` does not).
RELEASE_VALUES = (ProviderVersion, VersionPart, VersionMethod, ProviderDistribution, VersionDerived)


@record
class Chain:
    """A provider object reached from `root` through `steps` (the checks resolve it)."""

    root: Root
    steps: tuple[Step, ...] = ()


@record
class ConsumerRef:
    """A consumer module, class or function, by dotted path."""

    dotted: str


@record
class External:
    """A name from neither side (stdlib, third party), by dotted path: `packaging.version.Version`."""

    dotted: str


@record
class DictValue:
    """A dict whose keys in `keys` are known present; `open` when unknown keys may be there too."""

    keys: frozenset[str]
    open: bool = False


@record
class Unbound:
    """A name an `except` handler left unbound: using it is a NameError."""


UNBOUND = Unbound()


@record
class ImportChoice:
    """A name bound in `try: <imports>` and again (or not) in its `except` handler.

    `ok` is the value when every import of `imports` works, `fallback` when one fails with
    an exception `caught` catches. Attribute loads and calls distribute over both sides;
    the checks decide which side runs on the audited release.
    """

    ok: "Value"
    fallback: "Value"
    imports: tuple[ImportRef, ...]
    caught: CaughtImport
    origin: ImportRef  # the import that bound `ok` (named by import-failed-use)


HelperForm = Literal["expr", "body", "release", "require"]


@record
class Helper:
    """A small consumer function, folded at each call: a guard helper.

    Form `expr`: the body is one `return <expr>` and `expr` is that expression's source; form
    `body`: a few statements (`consumer/helpers.py` says which) and `expr` is their source;
    form `release`: a function not followed that reads the provider's version (`expr` empty):
    a guard calling it is undecided; form `require`: a requirement check, `if <test>: raise` (a
    few locals before), and `expr` is its statements: after a call to it, the caller's code runs
    only where no test holds (`helpers.raising_tests`).
    `env` holds the values of the names it reads, from the defining module (a helper it calls
    is named by a `ConsumerRef`, found again among the shared exports: data only, no cycles).
    """

    dotted: str  # the function itself, like a ConsumerRef
    params: tuple[str, ...]
    defaults: tuple[tuple[str, "Value"], ...]
    expr: str  # source of the returned expression (form expr) or of the statements (form body)
    env: tuple[tuple[str, "Value"], ...]
    type_guard: bool = False  # annotated -> TypeIs[X] / TypeGuard[X]
    narrows_to: "Value | None" = None  # the X of TypeIs[X], as a value (a Chain to a class)
    form: HelperForm = "expr"


@record
class TupleOf:
    """A tuple whose items are not all literals (`return found, version` in a folded helper)."""

    items: tuple["Value", ...]


@record
class ReturnedItems:
    """What a call of a consumer method returns where every `return` of its body is the same tuple
    display of names it bound by unpacking (`a, b, *rest = super().prepare(x)` ... `return a, b,
    *rest`): the display's items (Unknown where an item is not such a name) and, where the display
    ends with `*rest`, the chain of the slice that starred name took (its `subscript` step names
    it: `"2:"`). `via` is the method (`pkg.mod.Class.name`), which a consumer subclass may override."""

    items: tuple["Value", ...]
    rest: Chain | None
    via: str


@record
class ProviderSpec:
    """`importlib.util.find_spec("NAME")` of the provider's top-level package: found, never None."""


@record
class DistributionMap:
    """`importlib.metadata.packages_distributions()`: the provider's top-level package maps to its distribution."""


StrMethodName = Literal["replace", "startswith", "endswith", "split", "strip", "lstrip", "rstrip", "lower", "upper"]


@record
class StrMethod:
    """A str method of a literal (`name.replace("_", "-")`), not yet called; folded inside helpers."""

    text: str
    method: StrMethodName


@record
class OneOf:
    """Two or more provider chains a name may hold after branches meet (`base = a.x if ... else b.y`)."""

    options: tuple[Chain, ...]


@record
class Probe:
    """What a feature test evaluates to (`"x" in inspect.signature(f).parameters`, `hasattr(m, "x")`)
    when it is kept in a name (`HAS_X = ...`) or returned by a helper (`def has_arg(f, n): return
    n in inspect.signature(f).parameters`): true exactly where the conditions of `if_true` hold on
    the audited release, false where those of `if_false` do. The checks decide them, so a later
    `if HAS_X:` is the probe itself, not a test on run-time data."""

    if_true: tuple[Condition, ...]
    if_false: tuple[Condition, ...]


@record
class AttrOrNone:
    """`getattr(x, "name", None)` of a provider object, kept in a name: the attribute where x has
    one on the audited release, else None. A later `if held is not None:` (or `if held:`) is the
    probe `hasattr(x, "name")`, which the checks decide, not a test on run-time data."""

    condition: Condition  # HAS_ATTR on x and "name", expect True


@record
class SignatureOf:
    """`inspect.signature(f)` of a provider callable (`parameters`: its `.parameters`), kept in a
    name so that `"x" in sig.parameters` is the same probe as when written in one line."""

    target: Chain
    parameters: bool = False


@record
class ConstMap:
    """A dict every key and value of which folds to a literal: `{v: version.startswith(v) for v in
    ("0.10.", "0.11.")}` on the audited release, so that `table["0.10."]` folds too."""

    items: tuple[tuple[object, object], ...]


@record
class ConstItems:
    """A list or set display every item of which is a literal (`SUPPORTED = ["0.8.5", "0.9.0"]`):
    a membership test of the release's version text in it folds. Mutable, so a name holding it
    is forgotten once the code changes it or passes it on, as a `ConstMap` is."""

    items: tuple[object, ...]


MAX_OPTIONS = 8  # more ways than this and the name is Unknown


Value = Union[
    Unknown, Const, ProviderVersion, ParsedVersion, VersionPart, VersionMethod, VersionDerived, ProviderDistribution, Chain, ConsumerRef,
    External, DictValue, Unbound, ImportChoice, Helper, OneOf, TupleOf, ProviderSpec, DistributionMap, StrMethod, Probe,
    SignatureOf, AttrOrNone, ConstMap, ReturnedItems, ConstItems,
]


def step_over(base: Value, step: Step) -> Value:
    """`base` one step further (both sides of an import that may fail); anything else: unknown."""
    if isinstance(base, Chain):
        return Chain(base.root, base.steps + (step,))
    if isinstance(base, ImportChoice):
        return ImportChoice(step_over(base.ok, step), step_over(base.fallback, step), base.imports, base.caught, base.origin)
    return UNKNOWN


def has_chain(value: Value) -> bool:
    return isinstance(value, (Chain, ImportChoice))


def instance_of(value: Value) -> Value | None:
    """An instance of the provider class a chain of plain attributes names (an annotation)."""
    if not isinstance(value, Chain) or any(s.kind != "attr" for s in value.steps):
        return None
    steps = tuple(replace(s, check=False) for s in value.steps)
    return Chain(value.root, steps + (Step("instance", check=False),))


def symbol_path(value: Value | None) -> str | None:
    """The provider dotted path a chain of plain attributes names (`mod.Class`); None otherwise."""
    if isinstance(value, Chain) and value.root.kind == "symbol" and all(s.kind == "attr" and s.name for s in value.steps):
        return ".".join([value.root.name] + [s.name for s in value.steps if s.name is not None])
    return None


def join(a: Value | None, b: Value | None) -> Value:
    """What a name holds after two branches meet."""
    if a == b and a is not None:
        return a
    if a is None or b is None:
        return UNKNOWN
    if isinstance(a, DictValue) and isinstance(b, DictValue):
        return DictValue(a.keys & b.keys, a.open or b.open or a.keys != b.keys)
    if isinstance(a, TupleOf) and isinstance(b, TupleOf) and len(a.items) == len(b.items):
        return TupleOf(tuple(join(x, y) for x, y in zip(a.items, b.items)))
    if isinstance(a, ImportChoice) and isinstance(b, ImportChoice) and a.imports == b.imports:
        return ImportChoice(join(a.ok, b.ok), join(a.fallback, b.fallback), a.imports, a.caught, a.origin)
    if isinstance(a, Chain) and isinstance(b, Chain) and a.root == b.root and _unchecked(a.steps) == _unchecked(b.steps):
        return a
    if isinstance(a, (Chain, OneOf)) and isinstance(b, (Chain, OneOf)):
        options: dict[tuple, Chain] = {}
        for chain in (a.options if isinstance(a, OneOf) else (a,)) + (b.options if isinstance(b, OneOf) else (b,)):
            options.setdefault((chain.root, _unchecked(chain.steps)), chain)
        if len(options) <= MAX_OPTIONS:
            return OneOf(tuple(options.values())) if len(options) > 1 else next(iter(options.values()))
    return UNKNOWN


def _unchecked(steps: tuple[Step, ...]) -> tuple:
    return tuple((s.kind, s.name) for s in steps)


def site_key(site: Site) -> tuple[int, int]:
    return (site.line, site.column)


# Module exports (constants, guard helpers) are cached with each file's import bindings.
def _register_for_caches() -> None:
    import sys

    from apiaudit.cache import codec

    codec.register_module(sys.modules[__name__])


_register_for_caches()
