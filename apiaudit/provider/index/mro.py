"""Classes: C3 MROs across modules (provider classes, external dotted paths, bases nobody
resolves), the members along them, and a class's own member lookup (its metaclass's, a stub's
omissions, attributes computed at run time).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeAlias

from apiaudit.provider.index.lazy import ex, facts, griffe
from apiaudit.provider.index.resolve import GRIFFE_KIND, Resolver
from apiaudit.provider.records import Found, Missing, Resolution, Symbol, SymbolKind, Unknown, UnresolvedBase

# One class of an MRO: a provider class, an external class's dotted path, or a base nobody resolves.
MroEntry: TypeAlias = "griffe.Class | str | UnresolvedBase"

# External bases that add no constructor parameters and only these attributes.
TRANSPARENT_BASES: dict[str, frozenset[str]] = {
    "object": frozenset(),
    "builtins.object": frozenset(),
    "abc.ABC": frozenset(),
    "typing.Generic": frozenset(),
    "typing.Protocol": frozenset(),
    "typing_extensions.Protocol": frozenset(),
    "typing.NamedTuple": frozenset({"_replace", "_asdict", "_fields", "_field_defaults", "_make", "count", "index"}),
    "typing_extensions.NamedTuple": frozenset({"_replace", "_asdict", "_fields", "_field_defaults", "_make", "count", "index"}),
}
# External bases whose public members are known, all of them (a public name not here is not
# theirs; a private one may be: it is not listed). torch.nn.Module's, over torch 2.x: what a
# model class of a torch-based provider has from its base. Its `__getattr__` serves only the
# parameters, buffers and submodules registered on the instance, which provider code assigns
# (`self.x = ...`, `self.register_buffer("x", ...)`: the extension records both).
_TORCH_MODULE = frozenset({
    "T_destination", "add_module", "apply", "bfloat16", "buffers", "call_super_init", "children", "compile", "cpu",
    "cuda", "double", "dump_patches", "eval", "extra_repr", "float", "forward", "get_buffer", "get_extra_state",
    "get_parameter", "get_submodule", "half", "ipu", "load_state_dict", "modules", "mtia", "named_buffers",
    "named_children", "named_modules", "named_parameters", "parameters", "register_backward_hook", "register_buffer",
    "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
    "register_full_backward_pre_hook", "register_load_state_dict_post_hook", "register_load_state_dict_pre_hook",
    "register_module", "register_parameter", "register_state_dict_post_hook", "register_state_dict_pre_hook",
    "requires_grad_", "set_extra_state", "set_submodule", "share_memory", "state_dict", "to", "to_empty", "train",
    "training", "type", "xpu", "zero_grad",
})  # fmt: skip
KNOWN_EXTERNAL_MEMBERS: dict[str, frozenset[str]] = {
    "torch.nn.Module": _TORCH_MODULE,
    "torch.nn.modules.Module": _TORCH_MODULE,
    "torch.nn.modules.module.Module": _TORCH_MODULE,
}
# Metaclasses that add no attributes a class-level lookup could find.
PLAIN_METACLASSES = frozenset({"type", "builtins.type", "abc.ABCMeta"})


class Hierarchy(Resolver):
    """MROs and class members."""

    def __init__(self, root: Path, packages: tuple[str, ...]):
        super().__init__(root, packages)
        self._mro_asked: set[str] = set()  # classes whose MRO is being made

    def mro(self, class_path: str) -> tuple[MroEntry, ...]:
        """Griffe classes for provider classes, dotted strings for external ones, UnresolvedBase for the rest."""
        if class_path in self._mro_asked:
            # asked again while its bases are being resolved (a base whose resolution needs this
            # class's members): unknown here, and not kept
            return (UnresolvedBase(f"{class_path} (its own bases lead back to it)"),)
        self._mro_asked.add(class_path)
        try:
            return self._cached(("mro-objects", class_path), lambda: tuple(self._mro(class_path, ())))
        finally:
            self._mro_asked.discard(class_path)

    def _mro(self, class_path: str, stack: tuple[str, ...]) -> list[MroEntry]:
        cls = self.object_at(class_path)
        if not isinstance(cls, griffe.Class) or class_path in stack:
            return [class_path]
        seqs: list[list[MroEntry]] = []
        for base in cls.bases:
            base_path = ex.canonical(base)
            if base_path is not None and base_path.startswith(f"{cls.path}."):
                # a base named like one of the class's own members (`class D(dict)` defining a
                # `dict` method): Python reads it where the class statement stands, before the class exists
                written = ex.written(base)
                base_path = (self._name_path(cls.parent, written) or written) if written else None
            if base_path is None:
                seqs.append([UnresolvedBase(str(base))])
                continue
            res = self.resolve(base_path)
            if isinstance(res, Found) and res.symbol.kind is SymbolKind.CLASS:
                seqs.append(self._mro(res.symbol.path, stack + (class_path,)))
            elif isinstance(res, Found) and res.symbol.kind is SymbolKind.EXTERNAL:
                seqs.append([res.symbol.path])
            else:
                seqs.append([UnresolvedBase(base_path)])
        return [cls] + c3_merge(seqs + [[s[0] for s in seqs]] if seqs else [])

    def members(self, owner: str) -> tuple[Symbol, ...]:
        """Every member of a provider class along its MRO (the first definition of a name wins),
        or of a module, as `owner.name` symbols with the member's kind and location."""
        return self._cached(("members", owner), lambda: self._members(owner))

    def _members(self, owner: str) -> tuple[Symbol, ...]:
        res = self.resolve(owner)
        if isinstance(res, Found) and res.symbol.kind is SymbolKind.MODULE:
            module = self.object_at(owner)
            scopes = [module] if module is not None else []
        else:
            scopes = [k for k in self.mro(owner) if isinstance(k, griffe.Class)]
        found: dict[str, Symbol] = {}
        for scope in scopes:
            for name, member in (getattr(scope, "members", None) or {}).items():
                if name not in found:
                    found[name] = Symbol(f"{owner}.{name}", self._member_kind(member), self.location(member))
        return tuple(found.values())

    @staticmethod
    def _member_kind(member: Any) -> SymbolKind:
        try:
            kind = member.kind  # an alias answers its target's kind
        except Exception:  # noqa: BLE001 - a cyclic or broken alias
            return SymbolKind.EXTERNAL
        if kind.value == "alias":  # its target lies outside what the index loaded
            return SymbolKind.EXTERNAL
        return GRIFFE_KIND.get(kind.value, SymbolKind.ATTRIBUTE)

    def mro_paths(self, class_path: str) -> tuple[str | UnresolvedBase, ...]:
        """The MRO as plain values (dotted paths, unresolved bases): cached, unlike `mro`'s live classes."""
        return self._cached(
            ("mro-paths", class_path),
            lambda: tuple(k if isinstance(k, (str, UnresolvedBase)) else k.path for k in self.mro(class_path)),
        )

    def mro_unknowns(self, class_path: str) -> list[str]:
        """Bases along the MRO whose members the index cannot see."""
        return list(self._cached(("mro-unknowns", class_path), lambda: tuple(self._mro_unknowns(class_path))))

    def _mro_unknowns(self, class_path: str) -> list[str]:
        out = []
        for k in self.mro(class_path):
            if isinstance(k, UnresolvedBase):
                out.append(k.text)
            elif isinstance(k, str) and k not in TRANSPARENT_BASES:
                out.append(k)
        return out

    def class_member(self, class_path: str, name: str, *, instance: bool) -> Resolution:
        return self._cached(("member", class_path, name, instance), lambda: self._class_member(class_path, name, instance))

    def _class_member(self, class_path: str, name: str, instance: bool) -> Resolution:
        mro = self.mro(class_path)
        owner = self.resolve(class_path)
        owner_sym = owner.symbol if isinstance(owner, Found) else None
        for klass in mro:
            if isinstance(klass, griffe.Class):
                member = klass.members.get(name)
                if member is not None:
                    if isinstance(member, griffe.Alias):
                        return self._resolve(member.target_path, ())
                    self._objects[member.path] = member
                    return Found(self._symbol(member))
                if instance and name in facts(klass).get("self_assigned", []):
                    return Found(Symbol(f"{klass.path}.{name}", SymbolKind.ATTRIBUTE, self.location(klass)))
            elif klass in TRANSPARENT_BASES and name in TRANSPARENT_BASES[klass]:
                return Found(Symbol(f"{klass}.{name}", SymbolKind.EXTERNAL))
        if name.startswith("__") and name.endswith("__"):
            return Found(Symbol(f"object.{name}", SymbolKind.EXTERNAL))
        if not instance:
            from_meta = self._metaclass_member(mro, name)
            if from_meta is not None:
                return from_meta
        computing = self.computing_class(class_path)
        if computing is not None:
            return Unknown(f"{class_path}.{name}", f"{computing} computes attributes dynamically")
        unknown = self.mro_unknowns(class_path)
        if unknown:
            return Unknown(f"{class_path}.{name}", f"base {unknown[0]} lies outside the provider")
        return self._undeclared_class_member(class_path, name) or Missing(f"{class_path}.{name}", owner_sym)

    def computing_class(self, class_path: str) -> str | None:
        """The first provider class along the MRO that sets attributes by computed names
        (`setattr(self, name, v)`, `self.__dict__`) or answers them (`__getattr__`,
        `__getattribute__`): what its instances hold is not all in its text. None: none does."""
        return self._cached(("computing-class", class_path), lambda: self._computing_class(class_path))

    def _computing_class(self, class_path: str) -> str | None:
        for klass in self.mro(class_path):
            if isinstance(klass, griffe.Class):
                if facts(klass).get("dynamic_attrs") or "__getattr__" in klass.members or "__getattribute__" in klass.members:
                    return klass.path
        return None

    def _metaclass_member(self, mro: tuple[Any, ...], name: str) -> Resolution | None:
        """`Class.NAME` also finds the metaclass's members (a property on the metaclass, say)."""
        for klass in mro:
            if not isinstance(klass, griffe.Class):
                continue
            meta = ex.canonical(klass.keywords.get("metaclass")) if getattr(klass, "keywords", None) else None
            if not meta:
                continue
            if meta in PLAIN_METACLASSES:
                return None
            res = self.resolve(meta)
            if isinstance(res, Found) and res.symbol.kind is SymbolKind.CLASS:
                found = self.class_member(res.symbol.path, name, instance=True)
                return found if not isinstance(found, Missing) else None
            return Unknown(f"{klass.path}.{name}", f"metaclass {meta} of {klass.path} lies outside the provider")
        return None

    def _undeclared_class_member(self, class_path: str, name: str) -> Unknown | None:
        """A class read from a stub whose .py runs instead: a member the stub omits may exist."""
        for klass in self.mro(class_path):
            if isinstance(klass, griffe.Class) and self.loader.runtime_file(klass.module.path) is not None:
                return Unknown(f"{class_path}.{name}", f"{klass.path} is read from a stub; its .py may define {name}")
        return None

    def _first_definition(self, class_path: str, name: str) -> tuple[griffe.Class, Any] | None:
        """The first provider class along the MRO whose own body defines `name` (an import of it
        there does not count), with that definition; None when none does."""
        for klass in self.mro(class_path):
            if isinstance(klass, griffe.Class):
                member = klass.members.get(name)
                if member is not None and not member.is_alias:
                    return klass, member
        return None

    def abstract_members(self, class_path: str) -> tuple[str, ...]:
        """Names along the MRO whose first definition is abstract (`@abstractmethod`): what a
        concrete subclass must define."""
        return self._cached(("abstract", class_path), lambda: self._abstract_members(class_path))

    def _abstract_members(self, class_path: str) -> tuple[str, ...]:
        seen: set[str] = set()
        abstract: list[str] = []
        for klass in self.mro(class_path):
            if not isinstance(klass, griffe.Class):
                continue
            for name, member in klass.members.items():
                if name in seen or member.is_alias:
                    continue
                seen.add(name)
                if isinstance(member, griffe.Function) and "abstractmethod" in member.labels:
                    abstract.append(name)
        return tuple(abstract)


def c3_merge(seqs: list[list[MroEntry]]) -> list[MroEntry]:
    seqs = [list(s) for s in seqs if s]
    out: list[MroEntry] = []
    while seqs:
        for seq in seqs:
            head = seq[0]
            if not any(head in s[1:] for s in seqs):
                break
        else:
            # Inconsistent hierarchy: fall back to depth-first order, still complete.
            for s in seqs:
                for item in s:
                    if item not in out:
                        out.append(item)
            return out
        out.append(head)
        seqs = [[x for x in s if x is not head and x != head] if s and (s[0] is head or s[0] == head) else s for s in seqs]
        seqs = [s for s in seqs if s]
    return out
