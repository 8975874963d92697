"""Protocol membership (`isinstance(x, P)`: nominal, or structural for runtime-checkable
protocols), the names provider code gives a class's instances, and the narrowing a
`TypeIs`/`TypeGuard` function does.
"""

from __future__ import annotations

import ast

from apiaudit.provider.index.inference import Inference
from apiaudit.provider.index.lazy import ex, facts, griffe
from apiaudit.provider.index.mro import TRANSPARENT_BASES
from apiaudit.provider.records import Found, Membership, Narrowing, NarrowKind, Symbol, SymbolKind, UnresolvedBase

NARROWING_TYPES = {
    "typing.TypeIs": NarrowKind.TYPE_IS,
    "typing_extensions.TypeIs": NarrowKind.TYPE_IS,
    "typing.TypeGuard": NarrowKind.TYPE_GUARD,
    "typing_extensions.TypeGuard": NarrowKind.TYPE_GUARD,
}
PROTOCOL_BASES = frozenset({"typing.Protocol", "typing_extensions.Protocol"})
RUNTIME_CHECKABLE = frozenset({
    "typing.runtime_checkable", "typing_extensions.runtime_checkable",
    "typing.runtime", "typing_extensions.runtime",
})  # fmt: skip


class ProtocolMembership(Inference):
    """Membership and narrowing."""

    def implements(self, class_path: str, protocol_path: str) -> Membership:
        """Does an instance of `class_path` pass ``isinstance(x, protocol_path)``?

        Nominal first: the protocol (or a subclass of it) in the class's MRO. Otherwise a
        `runtime_checkable` protocol is checked structurally, as Python's isinstance does:
        every protocol member present on the class. External bases (outside the provider)
        are taken not to define a provider protocol's members; a provider class computing
        attributes (`__getattr__`) or an unresolved base makes the answer Unknown.
        """
        return self._cached(("implements", class_path, protocol_path), lambda: self._implements(class_path, protocol_path))

    def _implements(self, class_path: str, protocol_path: str) -> Membership:
        res = self.resolve(protocol_path)
        if not isinstance(res, Found) or res.symbol.kind is not SymbolKind.CLASS:
            return Membership.UNKNOWN
        protocol_path = res.symbol.path
        mro = self.mro(class_path)
        if not mro or not isinstance(mro[0], griffe.Class):
            return Membership.UNKNOWN
        if any(isinstance(k, griffe.Class) and k.path == protocol_path for k in mro):
            return Membership.YES
        members = self.protocol_members(protocol_path)
        if members is None:
            # Not a runtime-checkable protocol: isinstance is nominal only.
            return Membership.UNKNOWN if any(isinstance(k, UnresolvedBase) for k in mro) else Membership.NO
        unknown = False
        for name in members:
            state = self._defines(mro, name)
            if state is Membership.NO:
                return Membership.NO
            unknown = unknown or state is Membership.UNKNOWN
        return Membership.UNKNOWN if unknown else Membership.YES

    def provider_defines(self, class_path: str, name: str) -> Membership:
        """Does provider code give instances of `class_path` the attribute `name` (a member or a
        `self.name` assignment along the MRO)? External bases are taken to add no provider-specific
        names (torch's `nn.Module.__getattr__` serves only what provider code assigns); Unknown for an
        unresolved base or a provider class computing attributes."""
        return self._cached(("provider-defines", class_path, name), lambda: self._defines(self.mro(class_path), name))

    def _defines(self, mro: tuple, name: str) -> Membership:
        for klass in mro:
            if isinstance(klass, griffe.Class):
                if name in klass.members or name in facts(klass).get("self_assigned", ()):
                    return Membership.YES
            elif isinstance(klass, UnresolvedBase):
                return Membership.UNKNOWN
        for klass in mro:
            if isinstance(klass, griffe.Class) and (
                facts(klass).get("dynamic_attrs") or "__getattr__" in klass.members or "__getattribute__" in klass.members
            ):
                return Membership.UNKNOWN
        return Membership.NO

    def mixin_reads(self, class_path: str) -> tuple[str, str] | None:
        """(class, name) where the class is a mixin by its own code: every class along its MRO is
        the provider's (no base from outside), none declares `__init__`, and a method of one of
        them reads `self.name` that no class along the MRO gives its instances (AccessMixin's
        `self.request`): its instances get members from the classes it is combined with. None
        otherwise."""
        return self._cached(("mixin-reads", class_path), lambda: self._mixin_reads(class_path))

    def _mixin_reads(self, class_path: str) -> tuple[str, str] | None:
        mro = self.mro(class_path)
        if not mro or not all(isinstance(k, griffe.Class) or (isinstance(k, str) and k in TRANSPARENT_BASES) for k in mro):
            return None
        classes = [k for k in mro if isinstance(k, griffe.Class)]
        if any("__init__" in k.members for k in classes):
            return None  # a constructor of its own: a whole object, not a part of one
        for klass in classes:
            for name in self._self_reads(klass):
                if self._defines(mro, name) is Membership.NO:
                    return klass.path, name
        return None

    def _self_reads(self, klass: griffe.Class) -> list[str]:
        """The names a class's methods read on `self` (not dunders), in order, parsed from its
        source lines on demand."""
        node = self._statement_of(klass)
        if not isinstance(node, ast.ClassDef):
            return []
        names: dict[str, None] = {}
        for method in node.body:
            if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and method.args.args:
                me = method.args.args[0].arg
                for sub in ast.walk(method):
                    if (
                        isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Load) and isinstance(sub.value, ast.Name)
                        and sub.value.id == me and not sub.attr.startswith("__")
                    ):  # fmt: skip
                        names[sub.attr] = None
        return list(names)

    def protocol_members(self, protocol_path: str) -> tuple[str, ...] | None:
        """The member names a `runtime_checkable` protocol requires (over its protocol bases); None if it is not one."""
        return self._cached(("protocol-members", protocol_path), lambda: self._protocol_members(protocol_path))

    def _protocol_members(self, protocol_path: str) -> tuple[str, ...] | None:
        cls = self.object_at(protocol_path)
        if not isinstance(cls, griffe.Class):
            return None
        decorators = {ex.canonical(d.value) for d in cls.decorators}
        if not decorators & RUNTIME_CHECKABLE:
            return None
        names: list[str] = []
        for klass in self.mro(protocol_path):
            if not isinstance(klass, griffe.Class):
                continue
            if not any((ex.canonical(b) or "") in PROTOCOL_BASES for b in klass.bases):
                continue  # a plain base of a protocol adds no protocol members
            for member_name in [*klass.members, *facts(klass).get("body_fields", [])]:
                if member_name not in names and not (member_name.startswith("__") and member_name.endswith("__")):
                    member = klass.members.get(member_name)
                    if member is not None and member.is_alias:
                        continue
                    names.append(member_name)
        return tuple(names)

    def is_protocol(self, class_path: str) -> bool:
        """Is the class itself a Protocol (it lists `Protocol` among its bases)? An object annotated
        with one is some other class that has its members: its own attributes cannot be judged."""
        return self._cached(("is-protocol", class_path), lambda: self._is_protocol(class_path))

    def _is_protocol(self, class_path: str) -> bool:
        cls = self.object_at(class_path)
        return isinstance(cls, griffe.Class) and any((ex.canonical(b) or "") in PROTOCOL_BASES for b in cls.bases)

    def narrowing(self, function_path: str) -> Narrowing | None:
        """A provider function annotated ``-> TypeIs[X]``/``-> TypeGuard[X]`` (any overload); None otherwise."""
        return self._cached(("narrowing", function_path), lambda: self._narrowing(function_path))

    def _narrowing(self, function_path: str) -> Narrowing | None:
        res = self.resolve(function_path)
        if not isinstance(res, Found) or res.symbol.kind is not SymbolKind.FUNCTION:
            return None
        func = self.object_at(res.symbol.path)
        if not isinstance(func, griffe.Function):
            return None
        kind = None
        targets: dict[str, Symbol] = {}
        for variant in [*(func.overloads or []), func]:
            for member in ex.union_members(variant.returns):
                if not isinstance(member, griffe.ExprSubscript):
                    continue
                head = ex.canonical(member.left)
                if head not in NARROWING_TYPES:
                    continue
                kind = kind or NARROWING_TYPES[head]
                inner = member.slice
                role = "instance"
                if isinstance(inner, griffe.ExprSubscript) and (ex.canonical(inner.left) or "") in ("type", "builtins.type", "typing.Type"):
                    role, inner = "class", inner.slice
                target = self.annotation_class(inner, variant)
                if target is not None:
                    targets.setdefault(role, target)
        if kind is None:
            return None
        params = [p for p in func.parameters if p.kind in (griffe.ParameterKind.positional_only, griffe.ParameterKind.positional_or_keyword)]
        return Narrowing(
            function=res.symbol, kind=kind, parameter=params[0].name if params else None,
            instance_target=targets.get("instance"), class_target=targets.get("class"),
        )  # fmt: skip
