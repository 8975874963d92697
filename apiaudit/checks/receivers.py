"""What a chain's receiver can be, as the checks track it: a provider object itself, an instance
of one of several provider classes, or `self` of a function bound to an unknown object; and
which members a model class has. Read by the chain walk and by the guard decisions alike."""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from apiaudit.infra.frozen import record
from apiaudit.provider.records import Found, Missing, ReachedVia, Symbol, Unknown


@record
class SymbolValue:
    """A provider object itself; `via` says how it was reached (for method binding)."""

    symbol: Symbol
    via: ReachedVia = "module"
    owner: str | None = None  # the class it was looked up on (for attribute types)
    # A method of the model object, read where the consumer's own model classes may fill the slot
    # and define it: why a call of it that does not bind here is not proven to fail.
    filled_by: str | None = None
    # A method of the model object as other classes it can be define it: (one such class, the
    # method's dotted path), one per definition. A call this one does not take may be taken there.
    alternatives: tuple[tuple[str, str], ...] = ()
    # The alternatives are the other classes the provider's code builds into the attribute the
    # object was read from (not the model object's classes): how a finding names them.
    assigned: bool = False


@record
class ItemsValue:
    """What a provider function returns where its annotation is a tuple of fixed length
    (`-> tuple[dict[str, X], Tensor]`): each item's type as `BuiltinValue` names it, or "" (not
    tracked). Unpacked or indexed, an item is known."""

    items: tuple[str, ...]  # "dict", "list", ... for a builtin; "" for anything else


@record
class BuiltinValue:
    """An instance of a builtin class (`dict`, `list`, ...), from a provider annotation."""

    name: str
    via: str = ""  # the consumer method that returns it as it is (`pkg.mod.Class.name`), if one does


# Builtin classes whose instances have no `__dict__`: setting an attribute on one raises
# AttributeError ("'dict' object has no attribute 'x'").
NO_INSTANCE_DICT = frozenset({"dict", "list", "tuple", "set", "frozenset", "str", "bytes", "int", "float", "bool"})


@record
class UnknownBinding:
    """`self` of a function bound with types.MethodType to an object whose type cannot be known."""

    function: str  # the consumer function's dotted path


# "installed": `self` of a function the consumer puts on the class (a subclass's instance may run it).
DeclaredBy = Literal["consumer", "provider", "installed"]


@record
class InstanceValue:
    classes: tuple[str, ...]  # an instance of one of these provider classes
    own: frozenset[str] = frozenset()  # consumer-side members (a subclass or mixin)
    is_super: bool = False
    # A model object: one of `classes`, by the provider's registry (--model's class, or every
    # registered class without it). Members are checked on each class.
    registry: bool = False
    # class -> the architectures that lead to it (for findings that name them)
    origins: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # candidates whose class the index cannot read (external or unresolved): neither pass nor fail
    unjudged: tuple[str, ...] = ()
    # The class is what an annotation declares, not what built the object: at run time it may
    # be a subclass. "consumer": the consumer's own (a parameter's or variable's annotation, an
    # isinstance test: an object of any consumer class may be passed there); "provider": a
    # provider attribute's annotation or a function's return annotation (`-> RequestQueue`).
    declared: DeclaredBy | None = None
    # `self` of a consumer class: its bases (or those of a consumer class deriving from it) from
    # neither side, which may supply a member the provider classes lack.
    outside: tuple[str, ...] = ()

    def architectures(self, classes) -> tuple[str, ...]:
        found = dict(self.origins)
        return tuple(dict.fromkeys(a for c in classes for a in found.get(c, ())))

    def only(self, classes) -> "InstanceValue":
        keep = tuple(c for c in self.classes if c in classes)
        return replace(self, classes=keep, origins=tuple((c, a) for c, a in self.origins if c in keep))


def describe_classes(ctx, value: InstanceValue, classes=None, limit: int = 6) -> str:
    """`'A'`, or `3 classes (A, B, C)`, short names."""
    classes = tuple(value.classes if classes is None else classes)
    short = [c.rsplit(".", 1)[-1] for c in classes]
    # module.Class where two candidates share a class name (vLLM's several LlamaModels)
    shown = [".".join(c.rsplit(".", 2)[-2:]) if short.count(n) > 1 else n for c, n in zip(classes, short)]
    if len(shown) == 1:
        return f"'{shown[0]}'"
    head = ", ".join(shown[:limit]) + (f", … {len(shown) - limit} more" if len(shown) > limit else "")
    return f"{len(shown)} classes ({head})"


@record
class NotInProvider:
    """No provider code along a class's MRO gives its instances the attribute, but a base outside
    the provider (torch's `nn.Module`) may: missing is likely, not proven, so never an error by
    itself (docs/rules.md, "An error is a proof")."""

    missing: Missing
    base: str  # the first base outside the provider


def outside_supplies(value: InstanceValue, name: str) -> tuple[bool, str | None]:
    """(supplied, base): whether a base of `value.outside` surely has `name` (an external base
    whose members are all known lists it), else the first base that may still supply it. On a
    consumer's class even a known base may serve a name it does not list: torch's nn.Module
    serves what is registered on the instance, and consumer code anywhere may register it."""
    from apiaudit.provider.index import KNOWN_EXTERNAL_MEMBERS, TRANSPARENT_BASES

    if any(name in KNOWN_EXTERNAL_MEMBERS.get(b, ()) or name in TRANSPARENT_BASES.get(b, ()) for b in value.outside):
        return True, None
    return False, next((b for b in value.outside if b not in TRANSPARENT_BASES), None)


def unknown_outside(value: InstanceValue) -> str | None:
    """The first base of `value.outside` whose members are not known: it may override any member."""
    from apiaudit.provider.index import KNOWN_EXTERNAL_MEMBERS, TRANSPARENT_BASES

    return next((b for b in value.outside if b not in TRANSPARENT_BASES and b not in KNOWN_EXTERNAL_MEMBERS), None)


def model_member(ctx, class_path: str, name: str):
    """`class_member` on a model class: Found, Missing, Unknown, or NotInProvider where only a base
    outside the provider could supply `name`. An external base whose members are all known
    (torch's nn.Module, `KNOWN_EXTERNAL_MEMBERS`) supplies its own and proves the rest missing."""
    res = ctx.index.class_member(class_path, name, instance=True)
    if isinstance(res, Unknown):
        from apiaudit.provider.index import KNOWN_EXTERNAL_MEMBERS
        from apiaudit.provider.records import Membership, SymbolKind

        if ctx.index.provider_defines(class_path, name) is Membership.NO:
            owner = ctx.index.resolve(class_path)
            missing = Missing(f"{class_path}.{name}", owner.symbol if isinstance(owner, Found) else None)
            outside = ctx.index.mro_unknowns(class_path)
            for base in outside:
                if name in KNOWN_EXTERNAL_MEMBERS.get(base, ()):
                    return Found(Symbol(f"{base}.{name}", SymbolKind.EXTERNAL))
            unknown = [b for b in outside if b not in KNOWN_EXTERNAL_MEMBERS or name.startswith("_")]
            return NotInProvider(missing, unknown[0]) if unknown else missing
    return res
