"""What the consumer stage extracts from source: uses of the provider, not yet judged.

A `Use` is a chain of steps from a root (a provider name as imported, or `self` in a
class that may be mixed into provider classes) through attribute loads, calls and
subscripts. The checks stage walks chains against the provider index; this stage never
looks at the provider.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Site:
    line: int
    column: int
    end_line: int | None = None
    end_column: int | None = None


@dataclass(frozen=True)
class Arg:
    kind: str  # "positional" | "keyword" | "star" | "starstar"
    name: str | None
    site: Site


@dataclass(frozen=True)
class CallShape:
    args: tuple[Arg, ...]

    @property
    def positional(self) -> int:
        return sum(1 for a in self.args if a.kind == "positional")

    @property
    def keywords(self) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if a.kind == "keyword")

    @property
    def has_star(self) -> bool:
        return any(a.kind == "star" for a in self.args)

    @property
    def has_starstar(self) -> bool:
        return any(a.kind == "starstar" for a in self.args)

    def keyword_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.keywords if a.name)


@dataclass(frozen=True)
class Step:
    kind: str  # "attr" | "call" | "instance" | "subscript" | "dynamic" (getattr with a computed name)
    name: str | None = None  # attribute name
    call: CallShape | None = None
    check: bool = True  # False: replayed from an earlier assignment, already judged there
    receiver: str | None = None  # source text of the receiver, for call steps on attributes


@dataclass(frozen=True)
class Root:
    kind: str  # "symbol" (provider dotted path) | "self" (consumer class) | "super" | "fself" (function bound as method)
    name: str  # dotted path: provider symbol, consumer class, or consumer function


@dataclass(frozen=True)
class Use:
    root: Root
    steps: tuple[Step, ...]
    site: Site
    function: str  # qualified name of the enclosing function, "<module>" at top level
    text: str  # the expression's source, shortened


@dataclass(frozen=True)
class ImportUse:
    module: str
    name: str | None
    site: Site
    guarded: str | None = None  # why a failure would not break the run: "try/except ImportError", "TYPE_CHECKING"


@dataclass(frozen=True)
class ClassFacts:
    dotted: str
    provider_bases: tuple[str, ...]  # dotted provider paths as imported
    consumer_bases: tuple[str, ...]
    own_members: frozenset[str]
    site: Site


@dataclass(frozen=True)
class Injection:
    keyword: str
    target: str | None  # dotted consumer class named by a string literal; None when not a literal
    site: Site


@dataclass(frozen=True)
class RpcCall:
    method: str
    name: str | None  # None when the RPC name is not a string literal
    site: Site
    function: str


@dataclass(frozen=True)
class MethodBinding:
    """`types.MethodType(func, obj)`: consumer function `func` runs with `obj` as self."""

    function: str
    target: tuple[Root, tuple[Step, ...]] | None  # the chain of obj, when the visitor can tell
    site: Site


@dataclass(frozen=True)
class ConsumerFile:
    path: str  # relative to the consumer root, posix
    module: str
    uses: tuple[Use, ...] = ()
    imports: tuple[ImportUse, ...] = ()
    classes: tuple[ClassFacts, ...] = ()
    injections: tuple[Injection, ...] = ()
    rpc_calls: tuple[RpcCall, ...] = ()
    method_bindings: tuple[MethodBinding, ...] = ()
    lines: tuple[str, ...] = ()
    error: str | None = None  # a parse error: nothing else was extracted
    error_site: Site | None = None


@dataclass(frozen=True)
class ConsumerOptions:
    """Facts the visitor needs from outside: which names are the provider's, and rule-data hooks."""

    provider_packages: tuple[str, ...]
    # consumer names that are provider objects re-exported: ("driver.compat.Params", "engine.params.Params")
    reexports: tuple[tuple[str, str], ...] = ()
    rpc_methods: tuple[tuple[str, int | None, str | None], ...] = ()  # (method, name_arg, name_keyword)
    injection_keywords: tuple[str, ...] = ()
