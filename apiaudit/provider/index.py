"""The provider index: dotted names -> symbols, members, call signatures, result types.

Every public query is memoised on plain values and answers with frozen values from
`model.py`, so a warm run can answer from the cache without visiting a single module.
"""

from __future__ import annotations

import ast
import os
import textwrap
from pathlib import Path
from collections.abc import Iterable
from typing import Any, Callable, Literal, TypeAlias

from apiaudit.infra.lazyimport import lazy_module
from apiaudit.provider import names
from apiaudit.provider.loader import ModuleLoader

TYPE_CHECKING = False
if TYPE_CHECKING:
    import griffe

    from apiaudit.provider import expressions as ex
    from apiaudit.provider import extension as _extension
    from apiaudit.provider import shapes
else:
    # A warm scan answers from the index cache: Griffe and what is built on it are imported
    # on the first question the cache does not answer.
    griffe = lazy_module("griffe")
    ex = lazy_module("apiaudit.provider.expressions")
    shapes = lazy_module("apiaudit.provider.shapes")
    _extension = lazy_module("apiaudit.provider.extension")


def facts(obj: Any) -> dict[str, Any]:
    return _extension.facts(obj)


def returned_callees(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    return _extension.returned_callees(node)
from apiaudit.provider.records import (
    AssignedValue,
    CallInfo,
    Forward,
    Found,
    Membership,
    Missing,
    Narrowing,
    NarrowKind,
    Param,
    ParamKind,
    ProviderCall,
    ProviderReference,
    ReachedVia,
    Resolution,
    Signature,
    Symbol,
    SymbolKind,
    Unknown,
    UnresolvedBase,
    ValueKind,
)

# One class of an MRO: a provider class, an external class's dotted path, or a base nobody resolves.
MroEntry: TypeAlias = "griffe.Class | str | UnresolvedBase"

# How a method binds its first parameter, and the builtin descriptor classes that decide it
# (a decorator class deriving from one binds as it does).
MethodDescriptor: TypeAlias = Literal["classmethod", "staticmethod"]
_DESCRIPTOR_BASES: dict[str, MethodDescriptor] = {
    "classmethod": "classmethod",
    "builtins.classmethod": "classmethod",
    "staticmethod": "staticmethod",
    "builtins.staticmethod": "staticmethod",
}

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
# Externals whose __init__ the class shapes synthesize (their attributes stay unknown).
SHAPED_BASES = frozenset({"pydantic.BaseModel", "pydantic.main.BaseModel", "msgspec.Struct"})
# What every module object has, whatever its source binds.
MODULE_ATTRIBUTES = frozenset(
    {"__dict__", "__name__", "__doc__", "__file__", "__spec__", "__loader__", "__package__", "__path__", "__builtins__", "__cached__"}
)
# Metaclasses that add no attributes a class-level lookup could find.
PLAIN_METACLASSES = frozenset({"type", "builtins.type", "abc.ABCMeta"})
SELF_TYPES = frozenset({"typing.Self", "typing_extensions.Self"})
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

# Griffe's object kinds by their values ("module", "class", ...): no Griffe import to build it.
_GRIFFE_KIND = {
    "module": SymbolKind.MODULE,
    "class": SymbolKind.CLASS,
    "function": SymbolKind.FUNCTION,
    "attribute": SymbolKind.ATTRIBUTE,
}


# Griffe's parameter kinds by name: a splat takes no name; a positional one can be matched by place.
_SPLATS = frozenset({"var_positional", "var_keyword"})
_POSITIONAL = frozenset({"positional_only", "positional_or_keyword"})

_MISSING = object()
# Memo answers that hold live Griffe objects: never stored, never handed to another process.
LIVE_OBJECT_ANSWERS = ("mro-objects",)
# Answers a process builds again rather than receive from another: the map of every top-level
# name of the release (`definitions`) costs more to send and read back than to make.
REBUILT_NOT_SENT = ("definitions",)


class ProviderIndex:
    def __init__(self, root: Path, packages: tuple[str, ...]):
        self.loader = ModuleLoader(root, packages)
        self.memo: dict[tuple, Any] = {}
        self._objects: dict[str, Any] = {}
        self.warm = False  # answered from a cache entry
        # Rule data may say what a provider function's call returns (a registry factory with a
        # literal argument); `call_results_key` names that data in memo keys so a cache entry
        # answered under other rules is never reused.
        self.call_results: Callable[[AssignedValue], Symbol | None] | None = None
        self.call_results_key = ""
        self._definitions: dict[str, tuple[str, ...]] | None = None
        self._classes_of: dict[str, frozenset[str]] = {}  # module -> its top-level classes, from its text
        self._mro_asked: set[str] = set()  # classes whose MRO is being made
        self._runtime: dict[str, names.RuntimeBindings | None] = {}

    # ----------------------------------------------------------------- memo
    def _cached(self, key: tuple, compute):
        value = self.memo.get(key, _MISSING)  # one lookup: a warm scan asks this ~100,000 times
        if value is not _MISSING:
            return value
        value = compute()
        self.memo[key] = value
        return value

    def answered(self) -> frozenset[tuple]:
        """The questions answered so far (`answers_since` tells what was learned after)."""
        return frozenset(dict.keys(self.memo))

    def answers_since(self, answered: frozenset[tuple]) -> tuple[dict[tuple, Any], dict[str, str]]:
        """(plain answers, provider files read) learned since `answered`, for another process's index."""
        answers = {
            k: v for k, v in dict.items(self.memo) if k not in answered and k[0] not in LIVE_OBJECT_ANSWERS and k[0] not in REBUILT_NOT_SENT
        }
        return answers, dict(self.loader.touched)

    def adopt(self, answers: dict[tuple, Any], touched: dict[str, str]) -> None:
        """What another process's index of the same release learned (`answers_since`)."""
        for key, value in answers.items():
            if not dict.__contains__(self.memo, key):
                dict.__setitem__(self.memo, key, value)  # a lazy memo's hook is not run
        for relative, digest in touched.items():
            self.loader.touched.setdefault(relative, digest)

    # ------------------------------------------------------------- locating
    def location(self, obj: Any) -> str | None:
        try:
            path = obj.filepath
            if isinstance(path, list):
                return None
            rel = self.loader.relative(path)
            return f"{rel}:{obj.lineno}" if obj.lineno else rel
        except Exception:  # noqa: BLE001
            return None

    def _symbol(self, obj: Any) -> Symbol:
        return Symbol(path=obj.path, kind=_GRIFFE_KIND.get(obj.kind.value, SymbolKind.ATTRIBUTE), location=self.location(obj))

    # ------------------------------------------------------------ resolving
    def resolve(self, dotted: str) -> Resolution:
        return self._cached(("resolve", dotted), lambda: self._resolve(dotted, ()))

    def object_at(self, dotted: str) -> Any:
        """The Griffe object behind a resolved path (for shape plug-ins); None when unknown."""
        resolution = self.resolve(dotted)
        if not isinstance(resolution, Found) or resolution.symbol.kind is SymbolKind.EXTERNAL:
            return None
        return self._objects.get(resolution.symbol.path) or self._find_object(resolution.symbol.path)

    def _find_object(self, path: str) -> Any:
        parts = path.split(".")
        for i in range(len(parts), 0, -1):
            module = self.loader.load(".".join(parts[:i]))
            if module is None:
                continue
            obj: Any = module
            for name in parts[i:]:
                obj = obj.members.get(name) if hasattr(obj, "members") else None
                if obj is None or obj.is_alias:
                    return None
            self._objects[path] = obj
            return obj
        return None

    def _resolve(self, dotted: str, seen: tuple[str, ...]) -> Resolution:
        if dotted in seen or len(seen) > 30:
            return Unknown(dotted, "import cycle while following re-exports")
        seen = seen + (dotted,)
        if not self.loader.owns(dotted):
            return Found(Symbol(dotted, SymbolKind.EXTERNAL))
        compiled = self._compiled_resolution(dotted)
        if compiled is not None:
            return compiled
        parts = dotted.split(".")
        # The longest prefix that is a module file; the rest are members.
        for i in range(len(parts), 0, -1):
            modname = ".".join(parts[:i])
            module = self.loader.load(modname)
            if module is not None:
                break
            if self.loader.is_package_dir(modname) and i == len(parts):
                return Found(Symbol(modname, SymbolKind.MODULE, None))
        else:
            return Missing(dotted, None, parts[-1] if len(parts) > 1 else None)
        if module is None:
            return Missing(dotted, None)
        if module.path == dotted:
            self._objects[dotted] = module
            return Found(self._symbol(module))
        obj: Any = module
        for step, name in enumerate(parts[i:], start=i + 1):
            res = self._member_of(obj, name, seen)
            if not isinstance(res, Found):
                if isinstance(res, Missing):
                    moved = name if res.owner and res.owner.kind is SymbolKind.MODULE else None
                    return Missing(dotted, res.owner, moved, res.doubt)
                return res
            sym = res.symbol
            if sym.kind is SymbolKind.EXTERNAL:
                rest = parts[parts.index(name) + 1 :] if name in parts else []
                return Found(Symbol(".".join([sym.path] + rest), SymbolKind.EXTERNAL))
            obj = self._objects.get(sym.path) or self._find_object(sym.path)
            if obj is None and step == len(parts) and sym.kind is SymbolKind.ATTRIBUTE:
                return res  # a name a module __getattr__ serves, of a value nothing declares
            if obj is None:
                # A module reached through an alias: continue from it.
                module = self.loader.load(sym.path)
                if module is None:
                    return Unknown(dotted, f"cannot read {sym.path}")
                obj = module
        return Found(self._symbol(obj))

    def _member_of(self, obj: Any, name: str, seen: tuple[str, ...]) -> Resolution:
        """`name` looked up on a module or class object (static, no MRO for modules)."""
        if isinstance(obj, griffe.Module):
            return self._module_member(obj, name, seen)
        if isinstance(obj, griffe.Class):
            return self.class_member(obj.path, name, instance=False)
        return Unknown(f"{obj.path}.{name}", f"{obj.path} is not a module or class")

    def _module_member(self, module: griffe.Module, name: str, seen: tuple[str, ...]) -> Resolution:
        owner = self._symbol(module)
        member = module.members.get(name)
        module_facts = facts(module)
        if member is not None and name in module_facts.get("typing_only", ()) and not module_facts.get("replaces_itself"):
            # Bound only under `if TYPE_CHECKING:`: absent at run time, unless a lazy module takes
            # the module's place (`sys.modules[__name__] = ...`), which serves what that block declares,
            # or the module binds its names by a computed key (`globals()[key] = ...`): then the
            # block says what those names are.
            if module_facts.get("dynamic_namespace") or module_facts.get("fills_namespace"):
                return self._typing_declared(module, member, seen)
            member = None
        if member is not None:
            if isinstance(member, griffe.Alias):
                target = member.target_path
                if target == f"{module.path}.{name}":
                    # `from . import sub` inside a package's __init__: the submodule itself.
                    sub = self.loader.load(target)
                    return Found(self._symbol(sub)) if sub is not None else Missing(target, owner)
                return self._resolve(target, seen)
            self._objects[member.path] = member
            return Found(self._symbol(member))
        submodule = self.loader.load(f"{module.path}.{name}")
        if submodule is not None:
            self._objects[submodule.path] = submodule
            return Found(self._symbol(submodule))
        if self.loader.is_package_dir(f"{module.path}.{name}"):
            return Found(Symbol(f"{module.path}.{name}", SymbolKind.MODULE))
        served = self._served_by_getattr(module, name, seen)
        if served is not None:
            return served
        star = self._star_member(module, name, seen)
        if star is not None:
            return star
        if module_facts.get("has_getattr") and not module_facts.get("lazy_map_closed"):
            return Unknown(f"{module.path}.{name}", f"{module.path} defines a module __getattr__")
        if name in MODULE_ATTRIBUTES:
            return Found(Symbol(f"types.ModuleType.{name}", SymbolKind.EXTERNAL))
        undeclared = self._undeclared_module_member(module, name)
        if undeclared is not None:
            return undeclared
        partial = module_facts.get("getattr_partial")
        if module_facts.get("has_getattr") and partial:
            # The names __getattr__ serves were not all read: absent from those read is likely
            # missing, not proven missing.
            return Missing(f"{module.path}.{name}", owner, doubt=f"{module.path} defines a module __getattr__ and {partial}")
        return Missing(f"{module.path}.{name}", owner)

    def _typing_declared(self, module: griffe.Module, member: Any, seen: tuple[str, ...]) -> Resolution:
        """A name as the module's `if TYPE_CHECKING:` block declares it: an import's target, the
        import an assignment copies (`sql_dml = _sql_dml`, `_sql_dml` imported there), or the
        declaration itself."""
        if isinstance(member, griffe.Alias):
            return self._resolve(member.target_path, seen)
        text = str(member.value) if isinstance(member, griffe.Attribute) and member.value is not None else ""
        if text and all(part.isidentifier() for part in text.split(".")):
            head, _, rest = text.partition(".")
            source = module.members.get(head)
            if isinstance(source, griffe.Alias):
                return self._resolve(f"{source.target_path}.{rest}" if rest else source.target_path, seen)
        self._objects[member.path] = member
        return Found(self._symbol(member))

    def _served_by_getattr(self, module: griffe.Module, name: str, seen: tuple[str, ...]) -> Resolution | None:
        """`name` answered by the module's `__getattr__` (module_getattr.py): its target where
        the function names one (a lazy import, a deprecation shim's import), else the name as the
        module declares it under `if TYPE_CHECKING:` (its annotation), else an attribute of
        unknown value. None: __getattr__ does not serve it (as far as it was read)."""
        module_facts = facts(module)
        lazy = module_facts.get("lazy_map", {})
        if name in lazy:
            lazy_path = _lazy_target(module, lazy[name])
            if lazy_path:
                return self._resolve(lazy_path, seen)
        declared: Any = module.members.get(name)
        typing_declared = declared is not None and name in module_facts.get("typing_only", ())
        if name in module_facts.get("getattr_names", ()) or (typing_declared and module_facts.get("getattr_partial")):
            # A partly read map: a name the module declares for type checkers is taken as served.
            if typing_declared and declared.is_alias:
                return self._resolve(declared.target_path, seen)  # `if TYPE_CHECKING: from .m import X`
            if typing_declared:
                self._objects[declared.path] = declared
                return Found(self._symbol(declared))
            # Declared through a star import (`if TYPE_CHECKING: from .types import *`, as
            # pydantic's lazy package does for every name its map serves): that declaration.
            star = self._star_member(module, name, seen)
            if isinstance(star, Found):
                return star
            getattr_def = module.members.get("__getattr__")
            location = self._symbol(getattr_def).location if getattr_def is not None and not getattr_def.is_alias else None
            return Found(Symbol(f"{module.path}.{name}", SymbolKind.ATTRIBUTE, location))
        return None

    def _star_member(self, module: griffe.Module, name: str, seen: tuple[str, ...]) -> Resolution | None:
        """`name` through the module's star imports: those the module runs first, then the ones an
        `except` handler runs as a fallback; a name only placeholders for a missing optional
        dependency bind (dummy classes) is Unknown, never the dummy (None: no star import binds it)."""
        fallbacks = facts(module).get("fallback_stars", {})
        stars = [alias.target_path for key, alias in module.members.items() if "*" in key and isinstance(alias, griffe.Alias)]
        rank = {None: 0, _extension.FALLBACK: 1, _extension.PLACEHOLDER: 2}
        unknown: Unknown | None = None
        for source in sorted(stars, key=lambda source: rank[fallbacks.get(source)]):
            if not self.loader.owns(source):
                unknown = Unknown(f"{module.path}.{name}", f"star import from {source}, outside the provider")
                continue
            res = self._resolve(f"{source}.{name}", seen)
            if isinstance(res, Found) and fallbacks.get(source) == _extension.PLACEHOLDER:
                return unknown or Unknown(
                    f"{module.path}.{name}",
                    f"only a placeholder binds it ({res.symbol.path}, star-imported when an optional dependency is missing); the real class is not found",
                )
            if isinstance(res, Found):
                return res
            if isinstance(res, Unknown):
                unknown = res
        return unknown

    # ------------------------------------------- what static reading cannot see
    def _compiled_resolution(self, dotted: str) -> Resolution | None:
        """Names on a compiled extension module (stub or not) are Unknown; the module itself exists."""
        compiled_at = self.loader.compiled_prefix(dotted)
        if compiled_at is None:
            return None
        if compiled_at != dotted:
            return Unknown(dotted, f"{compiled_at} is a compiled extension module: what it defines cannot be read")
        if self.loader.module_file(dotted) is None:
            return Found(Symbol(dotted, SymbolKind.MODULE))
        return None  # its stub, read as the module's interface

    def _runtime_bindings(self, dotted: str) -> names.RuntimeBindings | None:
        """Names the `.py` behind `dotted`'s stub binds (None when there is no such `.py`)."""
        if dotted not in self._runtime:
            runtime = self.loader.runtime_file(dotted)
            self._runtime[dotted] = None if runtime is None else names.runtime_bindings(self.loader.read_text(runtime))
        return self._runtime[dotted]

    def _undeclared_module_member(self, module: griffe.Module, name: str) -> Unknown | None:
        """A name the module may bind where a static reader cannot see it: Unknown, not Missing."""
        path = f"{module.path}.{name}"
        dynamic = facts(module).get("dynamic_namespace") or facts(module).get("fills_namespace")
        if dynamic:
            return Unknown(path, f"{module.path} binds names at run time ({dynamic})")
        installed = facts(module).get("installed_submodules", {})
        if name in installed:
            return Unknown(path, f"{module.path} puts {path} in sys.modules (line {installed[name]}); `import {path}` may make it a member")
        runtime = self._runtime_bindings(module.path)
        if runtime is not None:
            if name in runtime.names:
                return Unknown(path, f"{module.path}'s stub does not declare {name}, but its .py binds it")
            if runtime.opaque:
                return Unknown(path, f"{module.path}'s .py may bind {name} (star import or run-time namespace)")
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

    def module_exists(self, dotted: str) -> bool:
        """Is there a module file (or namespace directory) to import? `import a.b` never asks a.__getattr__."""
        return self._cached(
            ("module-exists", dotted),
            lambda: self.loader.module_file(dotted) is not None
            or self.loader.is_package_dir(dotted)
            or self.loader.compiled_prefix(dotted) is not None
            or self._installed_by_shim(dotted),
        )

    def constant(self, dotted: str) -> str | None:
        """The literal a module-level name holds on this release (its repr), followed through
        `from m import X` re-exports; None when it is not a literal the release alone decides
        (`VERSION = (5, 0, 3, "final", 0)`, a build-written `__version_tuple__ = (0, 12, 0)`)."""
        return self._cached(("constant", dotted), lambda: self._constant(dotted, names.MAX_CONSTANT_HOPS))

    def _constant(self, dotted: str, hops: int) -> str | None:
        module, _, name = dotted.rpartition(".")
        path = self.loader.module_file(module) if module and self.loader.owns(module) else None
        if path is None or hops <= 0:
            return None
        package = module if path.stem == "__init__" else module.rpartition(".")[0]
        found = names.module_constant(self.loader.read_text(path), name, package)
        if found is None:
            return None
        kind, value = found
        return value if kind == "literal" else self._constant(value, hops - 1)

    def _installed_by_shim(self, dotted: str) -> bool:
        """A parent package that assigns `sys.modules[...]` may install `dotted` at import time."""
        parts = dotted.split(".")
        for i in range(len(parts) - 1, 0, -1):
            parent = self.loader.load(".".join(parts[:i]))
            if parent is not None and facts(parent).get("installs_modules"):
                return True
        return False

    # ------------------------------------------------------------------ MRO
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
        return [cls] + _c3_merge(seqs + [[s[0] for s in seqs]] if seqs else [])

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
        return _GRIFFE_KIND.get(kind.value, SymbolKind.ATTRIBUTE)

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

    # -------------------------------------------------------------- members
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
        for klass in mro:
            if isinstance(klass, griffe.Class):
                if facts(klass).get("dynamic_attrs") or "__getattr__" in klass.members or "__getattribute__" in klass.members:
                    return Unknown(f"{class_path}.{name}", f"{klass.path} computes attributes dynamically")
        unknown = self.mro_unknowns(class_path)
        if unknown:
            return Unknown(f"{class_path}.{name}", f"base {unknown[0]} lies outside the provider")
        return self._undeclared_class_member(class_path, name) or Missing(f"{class_path}.{name}", owner_sym)

    # ---------------------------------------------------------------- calls
    def call(self, path: str, *, via: ReachedVia) -> CallInfo:
        """How a call to `path` binds. `via`: 'module' (plain name), 'class' (Class.attr), 'instance' (obj.attr)."""
        return self._cached(("call", path, via), lambda: self._call(path, via))

    def _call(self, path: str, via: ReachedVia) -> CallInfo:
        res = self.resolve(path)
        if not isinstance(res, Found):
            sym = Symbol(path, SymbolKind.ATTRIBUTE)
            return CallInfo(sym, (), unknown=getattr(res, "reason", "not found"))
        sym = res.symbol
        if sym.kind is SymbolKind.EXTERNAL:
            return CallInfo(sym, (), unknown=f"{sym.path} lies outside the provider")
        obj = self.object_at(sym.path)
        if sym.kind is SymbolKind.CLASS:
            return self._constructor(sym, obj)
        if sym.kind is SymbolKind.FUNCTION and isinstance(obj, griffe.Function):
            return self._function_call(sym, obj, via)
        if sym.kind is SymbolKind.ATTRIBUTE and isinstance(obj, griffe.Attribute):
            made = self._made_by_call(sym, obj)
            if made is not None:
                return made
            # `Alias = SomeClass` at module or class level: follow the assigned name.
            target = ex.canonical(obj.value) if obj.value is not None and "property" not in obj.labels else None
            if target and target != sym.path:
                slot = self._method_slot(sym, obj, target, via)
                if slot is not None:
                    return slot
                # `set_trace = SomeClass.set_trace`: a method taken from its class binds as
                # `SomeClass.set_trace(...)` does (a classmethod's `cls` is already bound).
                aliased = self.object_at(target)
                via_target: ReachedVia = "class" if isinstance(getattr(aliased, "parent", None), griffe.Class) else "module"
                return self.call(target, via=via_target)
        return CallInfo(sym, (), unknown=f"{sym.path} is not a function or class the index can bind")

    def _made_by_call(self, sym: Symbol, obj: griffe.Attribute) -> CallInfo | None:
        """`name = factory(...)`: what the call returns is not the factory, so its signature is unknown."""
        if not isinstance(obj.value, griffe.ExprCall):
            return None
        factory = ex.canonical(obj.value.function) or str(obj.value.function)
        return CallInfo(sym, (), unknown=f"{sym.name} is made by calling {factory}(...): its signature is not written down")

    def _method_slot(self, sym: Symbol, obj: griffe.Attribute, target: str, via: ReachedVia) -> CallInfo | None:
        """`forward = _forward_unimplemented` in a class body: the function becomes a method.

        Bound like one (self dropped through an instance); a placeholder that only raises
        NotImplementedError is a slot subclasses fill, so its own signature proves nothing.
        """
        if not isinstance(obj.parent, griffe.Class):
            return None
        func = self.object_at(target)
        if not isinstance(func, griffe.Function):
            return None
        if facts(func).get("not_implemented"):
            return CallInfo(sym, (), unknown=f"{sym.path} is a placeholder ({func.name} raises NotImplementedError): subclasses override it")
        if isinstance(func.parent, griffe.Class):
            return None  # `alias = other_method`: already bound as a method
        target_sym = self._symbol(func)
        drop = via == "instance" and "staticmethod" not in func.labels
        return self._function_call(target_sym, func, via, drop_first=drop)

    def _function_call(self, sym: Symbol, func: griffe.Function, via: ReachedVia, drop_first: bool | None = None) -> CallInfo:
        drop = _drops_first(func, via, self._descriptor(func)) if drop_first is None else drop_first
        impl = self._signature(func, drop)
        overloads = tuple(self._signature(o, drop, origin="@overload") for o in (func.overloads or []))
        returns = self.annotation_class(func.returns, func)
        if overloads:
            # Declared only through @overload (a stub): the overloads are all there is to bind.
            fallback = None if facts(func).get("overloads_only") else impl
            return CallInfo(sym, overloads, fallback=fallback, returns=returns)
        return CallInfo(sym, (impl,), returns=returns)

    def _descriptor(self, func: griffe.Function) -> MethodDescriptor | None:
        """How a method is bound: `@classmethod`/`@staticmethod`, or a decorator that is a provider
        class deriving from one of them (Django's `class classonlymethod(classmethod)`: its
        `@classonlymethod def as_view(cls, ...)` binds `cls` like any classmethod)."""
        for kind in ("classmethod", "staticmethod"):
            if kind in func.labels:
                return kind
        if not isinstance(func.parent, griffe.Class):
            return None
        for decorator in func.decorators or ():
            path = decorator.callable_path
            res = self.resolve(path) if path else None
            if not (isinstance(res, Found) and res.symbol.kind is SymbolKind.CLASS):
                continue
            for base in self.mro_paths(res.symbol.path)[1:]:
                if base in _DESCRIPTOR_BASES:
                    return _DESCRIPTOR_BASES[base]
        return None

    def _signature(self, func: griffe.Function, drop_first: bool, origin: str | None = None) -> Signature:
        params = []
        for i, p in enumerate(func.parameters):
            if drop_first and i == 0 and p.kind in (griffe.ParameterKind.positional_only, griffe.ParameterKind.positional_or_keyword):
                continue
            kind = _PARAM_KIND[p.kind.name]
            has_default = p.default is not None and kind not in (ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD)
            params.append(Param(p.name, kind, has_default, ex.text(p.annotation), ex.text(p.default) if has_default else None))
        return Signature(tuple(params), origin=origin or f"def {func.name}", location=self.location(func))

    def _constructor(self, sym: Symbol, cls: Any) -> CallInfo:
        if not isinstance(cls, griffe.Class):
            return CallInfo(sym, (), unknown=f"cannot read class {sym.path}")
        meta = ex.canonical(cls.keywords.get("metaclass")) if getattr(cls, "keywords", None) else None
        if meta:
            meta_obj = self.object_at(meta)
            if meta_obj is None or (isinstance(meta_obj, griffe.Class) and "__call__" in meta_obj.members):
                if not self._shape(cls):
                    return CallInfo(sym, (), returns=sym, unknown=f"metaclass {meta} may change how {sym.name} is called")
        for klass in self.mro(sym.path):
            if isinstance(klass, UnresolvedBase):
                return CallInfo(sym, (), returns=sym, unknown=f"base {klass.text} lies outside the provider")
            if isinstance(klass, str):
                if klass in SHAPED_BASES:
                    break
                if klass in TRANSPARENT_BASES:
                    continue
                return CallInfo(sym, (), returns=sym, unknown=f"base {klass} lies outside the provider")
            own_init = klass.members.get("__init__")
            own_new = klass.members.get("__new__")
            if isinstance(own_init, griffe.Function):
                return self._constructor_call(sym, own_init)
            shape = self._shape(klass)
            if shape is not None:
                location = self.location(klass)
                ctx = _ClassCtx(klass, list(self.mro(klass.path)), self)
                return CallInfo(sym, (shapes.synthesize(shape, ctx, location),), returns=sym)
            if isinstance(own_new, griffe.Function):
                return self._constructor_call(sym, own_new)
        shape = self._shape(cls)
        if shape is not None:
            ctx = _ClassCtx(cls, list(self.mro(cls.path)), self)
            return CallInfo(sym, (shapes.synthesize(shape, ctx, self.location(cls)),), returns=sym)
        return CallInfo(sym, (Signature((), origin="object.__init__", location=self.location(cls)),), returns=sym)

    def _constructor_call(self, sym: Symbol, method: griffe.Function) -> CallInfo:
        """`__init__`/`__new__` with `@overload`s binds like any overloaded function (self dropped)."""
        impl = self._signature(method, True)
        if not method.overloads:
            return CallInfo(sym, (impl,), returns=sym)
        overloads = tuple(self._signature(o, True, origin="@overload") for o in method.overloads)
        fallback = None if facts(method).get("overloads_only") else impl
        return CallInfo(sym, overloads, fallback=fallback, returns=sym)

    def _shape(self, klass: griffe.Class):
        return shapes.detect(_ClassCtx(klass, list(self.mro(klass.path)), self))

    # ---------------------------------------------------------------- types
    def attribute_type(self, class_path: str, name: str) -> Symbol | None:
        """The provider class an attribute's annotation names (fields, properties), if exactly one."""
        key = ("attr-type", class_path, name) + ((self.call_results_key,) if self.call_results_key else ())
        return self._cached(key, lambda: self._attribute_type(class_path, name))

    def _attribute_type(self, class_path: str, name: str) -> Symbol | None:
        for klass in self.mro(class_path):
            if not isinstance(klass, griffe.Class):
                continue
            member = klass.members.get(name)
            if member is None or member.is_alias:
                continue
            if isinstance(member, griffe.Attribute):
                return self.annotation_class(member.annotation, klass) or self._inferred_instance(class_path, name)
            if isinstance(member, griffe.Function) and "property" in member.labels:
                return self.annotation_class(member.returns, klass)
            return None
        return self._inferred_instance(class_path, name)

    def overridden_parameter(self, class_path: str, method: str, param: str, position: int) -> tuple[bool, Symbol | None]:
        """(whether the class's MRO defines `method`, the provider class its first definition
        annotates the parameter with): by the parameter's name, else by its position where the
        definition's parameter there is positional. What the provider passes an override."""
        key = ("overridden-param", class_path, method, param, position)
        return self._cached(key, lambda: self._overridden_parameter(class_path, method, param, position))

    def _overridden_parameter(self, class_path: str, method: str, param: str, position: int) -> tuple[bool, Symbol | None]:
        for klass in self.mro(class_path):
            if not isinstance(klass, griffe.Class):
                continue
            member = klass.members.get(method)
            if member is None or member.is_alias:
                continue
            if not isinstance(member, griffe.Function) or member.labels & {"property", "staticmethod", "classmethod"}:
                return True, None
            params = list(member.parameters)
            named = [p for p in params if p.name == param and p.kind.name not in _SPLATS]
            if not named and 0 < position < len(params) and params[position].kind.name in _POSITIONAL:
                named = [params[position]]
            return True, (self.annotation_class(named[0].annotation, member) if named else None)
        return False, None

    def _inferred_instance(self, class_path: str, name: str) -> Symbol | None:
        value = self.attribute_value(class_path, name)
        if value is None:
            return None
        if value.kind is ValueKind.INSTANCE:
            return value.symbol
        return self.call_results(value) if self.call_results is not None else None

    # ------------------------------------------------------ light inference
    def attribute_value(self, class_path: str, name: str) -> AssignedValue | None:
        """What `instance.name` holds, from what the class's code annotates or assigns.

        An annotation (class body or ``self.name: T`` in a method) wins; otherwise every
        ``self.name = ...`` in the defining class must agree: ``Cls(...)``, a helper
        ``self._make(...)`` whose body returns ``Cls(...)`` (one level), ``self.cls_attr(...)``
        with ``cls_attr = Cls`` in the class body, a function annotated ``-> Cls``, or a call
        of another provider function (`CALL_RESULT`, for factory rules to read).
        """
        return self._cached(("attr-value", class_path, name), lambda: self._attribute_value(class_path, name))

    def _attribute_value(self, class_path: str, name: str) -> AssignedValue | None:
        for klass in self.mro(class_path):
            if not isinstance(klass, griffe.Class):
                continue
            member = klass.members.get(name)
            if member is not None and not member.is_alias:
                if isinstance(member, griffe.Attribute) and member.annotation is not None:
                    found = self.annotation_class(member.annotation, klass)
                    return AssignedValue(ValueKind.INSTANCE, found) if found else None
                if isinstance(member, griffe.Function) and "property" in member.labels:
                    found = self.annotation_class(member.returns, klass)
                    return AssignedValue(ValueKind.INSTANCE, found) if found else None
            klass_facts = facts(klass)
            annotated = klass_facts.get("self_annotations", {}).get(name)
            if annotated is not None:
                found = self._class_named(klass, annotated)
                return AssignedValue(ValueKind.INSTANCE, found) if found else None
            calls = klass_facts.get("assigned_calls", {}).get(name)
            if calls:
                values = {self._call_value(klass, callee, lists) for callee, lists in calls}
                return values.pop() if len(values) == 1 else None
            if member is not None or name in klass_facts.get("self_assigned", ()):
                return None  # defined here by something the inference does not read
        return None

    def _call_value(self, klass: griffe.Class, callee: str, lists: list) -> AssignedValue | None:
        list_keywords = tuple((k, tuple(v)) for k, v in lists)
        if not callee:
            return None
        if callee.startswith("self.") and callee.count(".") == 1:
            res = self.class_member(klass.path, callee.split(".", 1)[1], instance=False)
            obj = self.object_at(res.symbol.path) if isinstance(res, Found) else None
            if isinstance(obj, griffe.Function):
                # One level of helper: every `return X(...)` in its body names the same class.
                returned = {self._value_of_path(self._name_path(obj, c), ()) if c else None for c in self._return_calls(obj)}
                if len(returned) == 1:
                    return returned.pop()
                return self._returns_value(obj)
            if isinstance(obj, griffe.Attribute) and obj.value is not None:
                # `cls_attr = Cls` in the class body, called through self.
                return self._value_of_path(ex.canonical(obj.value), list_keywords)
            return None
        if callee.split(".", 1)[0] in ("self", "cls", "super"):
            return None
        return self._value_of_path(self._name_path(klass, callee), list_keywords)

    def _return_calls(self, func: griffe.Function) -> list[str]:
        """What a helper's `return callee(...)` statements call, read from its source lines on demand."""
        if not isinstance(func.filepath, Path) or func.lineno is None:
            return []  # a namespace package's several paths, or no source position
        try:
            lines = Path(func.filepath).read_text("utf-8", errors="replace").splitlines(keepends=True)
            node = ast.parse(textwrap.dedent("".join(lines[func.lineno - 1 : func.endlineno]))).body[0]
        except (OSError, SyntaxError, TypeError, IndexError, ValueError):
            return []
        return returned_callees(node) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else []

    def _value_of_path(self, path: str | None, list_keywords: tuple) -> AssignedValue | None:
        if not path:
            return None
        res = self.resolve(path)
        if not isinstance(res, Found):
            return None
        if res.symbol.kind is SymbolKind.CLASS:
            return AssignedValue(ValueKind.INSTANCE, res.symbol)
        if res.symbol.kind is SymbolKind.FUNCTION:
            func = self.object_at(res.symbol.path)
            annotated = self._returns_value(func) if isinstance(func, griffe.Function) else None
            return annotated or AssignedValue(ValueKind.CALL_RESULT, res.symbol, list_keywords)
        return None

    def defines_class(self, path: str) -> bool:
        """Whether `path` is a `class` statement at the top level of its module, read from the
        release's text (no module visited): such a path names that class and nothing else."""
        module, _, name = path.rpartition(".")
        return bool(module) and name in self._top_level_classes(module)

    def _top_level_classes(self, module: str) -> frozenset[str]:
        """The module's top-level classes as the definitions map holds them (its `.py` files
        only, read as `loader.source_files` reads them), from the module's own text: building
        the map reads every file of the release."""
        found = self._classes_of.get(module)
        if found is None:
            names_found: set[str] = set()
            if self.loader.owns(module):
                base = os.path.join(self.loader.root, *module.split("."))
                for candidate in (f"{base}.py", os.path.join(base, "__init__.py")):
                    try:
                        data = self.loader.read_module_bytes(candidate)
                    except OSError:
                        continue
                    names_found |= names.top_level_classes(data.decode("utf-8", errors="replace"))
            found = self._classes_of[module] = frozenset(names_found)
        return found

    def reexported_class(self, path: str) -> str | None:
        """The class statement `path` names through plain re-exports (`pkg.Cls` where
        `pkg/__init__.py` does `from .layer import Cls`), read from the modules' text, a few
        hops; None where the text cannot tell (then `class_named` asks Griffe, which visits every
        module on the way: a large one costs more than the rest of a lookup)."""
        return self._cached(("reexported-class", path), lambda: self._reexported_class(path, 3))

    def _reexported_class(self, path: str, hops: int) -> str | None:
        if self.defines_class(path):
            return path
        module, _, name = path.rpartition(".")
        file = self.loader.module_file(module) if module and hops else None
        if file is None or file.suffix != ".py":
            return None  # a stub's names are what it declares: Griffe reads them
        target = self._plain_reexports(module, file).get(name)
        return self._reexported_class(target, hops - 1) if target else None

    def _plain_reexports(self, module: str, file: Path) -> dict[str, str]:
        """`names.plain_reexports` of a module, its text read and parsed once."""

        def read() -> dict[str, str]:
            text = self.loader.read_text(file)
            return names.plain_reexports(text, module, file.name == "__init__.py") if text is not None else {}

        return self._cached(("plain-reexports", module), read)

    def class_named(self, path: str) -> Symbol | None:
        """The provider class `path` names: a class, or a module-level alias of one
        (`KVConnectorBase = KVConnectorBase_V1`), followed a few hops."""
        return self._cached(("class-named", path), lambda: self._class_named_path(path, 3))

    def _class_named_path(self, path: str, hops: int) -> Symbol | None:
        res = self.resolve(path)
        if not isinstance(res, Found):
            return None
        if res.symbol.kind is SymbolKind.CLASS:
            return res.symbol
        obj = self.object_at(res.symbol.path)
        if hops and isinstance(obj, griffe.Attribute) and obj.value is not None:
            text = str(obj.value)
            if all(part.isidentifier() for part in text.split(".")):
                target = self._name_path(obj.parent, text)
                return self._class_named_path(target, hops - 1) if target else None
        return None

    def return_class(self, path: str) -> Symbol | None:
        """The class a provider function's return annotation names, if exactly one."""
        return self._cached(("return-class", path), lambda: self._return_class(path))

    def _return_class(self, path: str) -> Symbol | None:
        func = self.object_at(path)
        if not isinstance(func, griffe.Function) or func.returns is None:
            return None
        found = self.annotation_class(func.returns, func)
        if found is None:
            members = [m for m in ex.union_members(func.returns) if m is not None]
            named = ex.canonical(members[0]) if len(members) == 1 else None
            found = self.class_named(named) if named else None
        return found

    def calls_of(self, methods: Iterable[str], *, workers: int = 1) -> dict[str, tuple[ProviderCall, ...]]:
        """method name -> the provider's own calls of it on receivers of known classes
        (`provider/callsites.py`), looked up for the names not answered yet in one pass (shared
        among `workers` processes)."""
        from apiaudit.provider.callsites import find_calls

        return self._per_name("provider-calls", methods, lambda index, names: find_calls(index, names, workers=workers))

    def references_of(self, methods: Iterable[str]) -> dict[str, tuple[ProviderReference, ...]]:
        """method name -> every place the release names it, its object typed or not
        (`provider/callsites.py`): how an instance may come to run the method."""
        from apiaudit.provider.callsites import find_references

        return self._per_name("provider-references", methods, find_references)

    def _per_name(self, kind: str, names: Iterable[str], find: Callable[[ProviderIndex, list[str]], dict]) -> dict:
        """name -> `find`'s answer for it, memoised by (kind, name); the names not answered yet
        are found in one pass over the release."""
        wanted = sorted(set(names))
        missing = [n for n in wanted if (kind, n) not in self.memo]
        if missing:
            for name, answer in find(self, missing).items():
                self.memo[(kind, name)] = answer
        return {n: self.memo[(kind, n)] for n in wanted}

    def instance_calls(self, classes: Iterable[str]) -> tuple[ProviderCall, ...]:
        """The provider's calls of objects held in attributes typed as one of `classes`
        (`self.model(...)`; `provider/callsites.py`)."""
        from apiaudit.provider.callsites import find_instance_calls

        key = tuple(sorted(set(classes)))
        return self._cached(("instance-calls", key), lambda: find_instance_calls(self, key))

    def import_guard(self, module: str) -> str | None:
        """The guard every import of the provider module `module` sits behind, if one does
        (`provider/liveness.py`)."""
        from apiaudit.provider.liveness import import_guard

        return self._cached(("import-guard", module), lambda: import_guard(self, module))

    def construction_calls(self, factory: str, class_variable: str) -> tuple[ProviderCall, ...]:
        """How the provider function `factory` calls the class held in its local `class_variable`."""
        from apiaudit.provider.callsites import construction_calls

        return self._cached(("constructs", factory, class_variable), lambda: construction_calls(self, factory, class_variable))

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

    def _returns_value(self, func: griffe.Function) -> AssignedValue | None:
        found = self.annotation_class(func.returns, func)
        return AssignedValue(ValueKind.INSTANCE, found) if found else None

    def _name_path(self, scope: Any, dotted: str) -> str | None:
        """The provider path a dotted name in `scope`'s module means (its imports, its own names)."""
        head, _, rest = dotted.partition(".")
        module = scope
        while module is not None and not isinstance(module, griffe.Module):
            module = module.parent
        if module is None:
            return None
        try:
            base = module.resolve(head)
        except Exception:  # noqa: BLE001 - Griffe raises several kinds on names it cannot place
            return None
        return f"{base}.{rest}" if rest else base

    def _class_named(self, scope: Any, annotation_text: str) -> Symbol | None:
        """A class an annotation's source text names (``Cls``, ``mod.Cls``, ``"Cls"``, ``Cls | None``)."""
        text = annotation_text.strip().strip("'\"")
        parts = [p.strip() for p in text.split("|") if p.strip() not in ("None", "")]
        if len(parts) != 1 or not all(c.isidentifier() for c in parts[0].split(".")):
            return None
        path = self._name_path(scope, parts[0])
        res = self.resolve(path) if path else None
        return res.symbol if isinstance(res, Found) and res.symbol.kind is SymbolKind.CLASS else None

    # ------------------------------------------------------------ protocols
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

    def getattr_deprecation(self, dotted: str) -> str | None:
        """The deprecation message a module `__getattr__` gives when it serves `dotted` (a shim
        kept for a name that moved), or None."""
        return self._cached(("getattr-deprecation", dotted), lambda: self._getattr_deprecation(dotted))

    def _getattr_deprecation(self, dotted: str) -> str | None:
        module_path, _, name = dotted.rpartition(".")
        if not module_path or not self.loader.owns(module_path):
            return None
        module = self.loader.load(module_path)
        if module is None or name in module.members:
            return None
        message = facts(module).get("getattr_deprecated", {}).get(name)
        return message if isinstance(message, str) else None

    def module_attribute_type(self, path: str) -> Symbol | None:
        return self._cached(("module-attr-type", path), lambda: self._module_attribute_type(path))

    def _module_attribute_type(self, path: str) -> Symbol | None:
        obj = self.object_at(path)
        if isinstance(obj, griffe.Attribute):
            return self.annotation_class(obj.annotation, obj.parent)
        return None

    def annotation_class(self, annotation: Any, context: Any) -> Symbol | None:
        if annotation is None:
            return None
        members = [m for m in ex.union_members(annotation) if m is not None]
        if len(members) != 1:
            return None
        path = ex.canonical(members[0])
        if not path:
            return None
        if path in SELF_TYPES:
            owner = context if isinstance(context, griffe.Class) else getattr(context, "parent", None)
            return self._symbol(owner) if isinstance(owner, griffe.Class) else None
        res = self.resolve(path)
        if isinstance(res, Found) and res.symbol.kind is SymbolKind.CLASS:
            return res.symbol
        return None

    # ------------------------------------------------- where names are defined
    def moved_to(self, missing: Missing) -> tuple[str, ...]:
        """Where else in this release the missing name is defined at top level (a name that moved)."""
        if missing.moved_name is None:
            return ()
        return tuple(m for m in self.find_definitions(missing.moved_name) if m != missing.path)

    def find_definitions(self, name: str) -> tuple[str, ...]:
        """Modules of this release that define `name` at top level, from one map built in one pass."""
        return self._cached(("defs", name), lambda: tuple(self.definitions().get(name, ())[:5]))

    def find_modules(self, leaf: str) -> tuple[str, ...]:
        """Modules of this release whose last dotted part is `leaf` (a module that moved)."""
        return self._cached(("module-defs", leaf), lambda: tuple(self.definitions().get(f"<module>{leaf}", ())[:5]))

    def definitions(self) -> dict[str, tuple[str, ...]]:
        if self._definitions is None:
            table = self.memo.get(("definitions",))
            if table is None:
                table = names.definitions_table(self.loader.source_files())
                self.memo[("definitions",)] = table
            self._definitions = dict(table)
        return self._definitions

    def subclasses_defining(self, class_path: str, name: str) -> tuple[str, ...]:
        """Provider classes derived from `class_path` whose instances have `name` where the class
        itself has not (at most a few, the nearest first): what an object annotated with
        `class_path` may really be. Candidates come from one line scan of every module's `class`
        statements (cached with the index); each is confirmed by its MRO."""
        return self._cached(("subclasses-defining", class_path, name), lambda: self._subclasses_defining(class_path, name))

    def _subclasses_defining(self, class_path: str, name: str, limit: int = 3, budget: int = 200) -> tuple[str, ...]:
        table = self.memo.get(("class-bases",))
        if table is None:
            table = names.class_bases_table(self.loader.source_files())
            self.memo[("class-bases",)] = table
        by_base = dict(table)
        found: list[str] = []
        queue, seen = [class_path.rpartition(".")[2]], {class_path}
        while queue and len(seen) <= budget and len(found) < limit:
            for candidate in by_base.get(queue.pop(0), ()):
                if candidate in seen:
                    continue
                seen.add(candidate)
                queue.append(candidate.rpartition(".")[2])
                if class_path not in self.mro_paths(candidate):
                    continue  # a class of the same name elsewhere
                member = self.class_member(candidate, name, instance=True)
                if isinstance(member, (Found, Unknown)):
                    found.append(candidate)
                    if len(found) >= limit:
                        break
        return tuple(found)

    # ------------------------------------------------------ **kwargs forwarding
    def forwards(self, path: str) -> tuple[Forward, ...]:
        """Where a callable passes its `**kwargs` on (a `super().__init__` call is left to the
        instance's MRO: `next_constructor`)."""
        return self._cached(("forwards", path), lambda: self._forwards(path))

    def _forwards(self, path: str) -> tuple[Forward, ...]:
        res = self.resolve(path)
        if not isinstance(res, Found):
            return ()
        sym = res.symbol
        if sym.kind is SymbolKind.CLASS:
            init = self.class_member(sym.path, "__init__", instance=True)
            if not isinstance(init, Found) or init.symbol.kind is not SymbolKind.FUNCTION:
                return ()
            sym = init.symbol
        func = self.object_at(sym.path)
        if not isinstance(func, griffe.Function):
            return ()
        out: list[Forward] = []
        for callee, explicit in facts(func).get("forwards", ()):
            if callee.startswith("super()."):
                if callee == "super().__init__" and isinstance(func.parent, griffe.Class):
                    out.append(Forward(func.parent.path, tuple(explicit), via_super=True))
                continue
            target = self._forward_target(func, callee)
            if target:
                out.append(Forward(target, tuple(explicit)))
        return tuple(out)

    def next_constructor(self, bases: tuple[str, ...], after: str) -> str | None:
        """The class whose `__init__` a `super().__init__(...)` made in `after`'s method reaches, on
        an instance of a class deriving from `bases` in that order (a provider class's own
        instance: `bases=(cls,)`). Python follows the instance's MRO, not `after`'s: in
        `class P(A, B)` A's call reaches B, and a mixin without `__init__` is passed over. None
        when it cannot be told: a base outside the provider (not a transparent one) or one
        nobody resolves comes first, or `after` is not in the MRO."""
        return self._cached(("next-init", bases, after), lambda: self._next_constructor(bases, after))

    def _next_constructor(self, bases: tuple[str, ...], after: str) -> str | None:
        if len(bases) == 1:
            mro = list(self.mro(bases[0]))
        else:
            heads: list[list[MroEntry]] = [list(self.mro(b)) for b in bases]
            mro = _c3_merge(heads + [[h[0] for h in heads]])
        paths = [k.path if isinstance(k, griffe.Class) else k for k in mro]
        if after not in paths:
            return None
        for klass in mro[paths.index(after) + 1 :]:
            if isinstance(klass, griffe.Class):
                own = klass.members.get("__init__")
                if own is not None:
                    return klass.path if isinstance(own, griffe.Function) else None
                if self._shape(klass) is not None:
                    return klass.path  # a synthesized __init__ (dataclass, model...)
                continue  # a mixin without __init__: the call goes on along the MRO
            if isinstance(klass, str) and klass in TRANSPARENT_BASES:
                continue
            return None
        return None

    def _forward_target(self, func: griffe.Function, callee: str) -> str | None:
        owner = func.parent
        head, _, rest = callee.partition(".")
        scope = owner.parent if isinstance(owner, griffe.Class) else owner
        try:
            base = scope.resolve(head) if scope is not None else None
        except Exception:  # noqa: BLE001 - a name Griffe cannot resolve: not followed
            return None
        if not base:
            return None
        target = f"{base}.{rest}" if rest else base
        res = self.resolve(target)
        if isinstance(res, Found) and res.symbol.kind in (SymbolKind.CLASS, SymbolKind.FUNCTION):
            return res.symbol.path
        return None


class _ClassCtx:
    def __init__(self, cls: griffe.Class, mro: list, index: ProviderIndex):
        self.cls = cls
        self.mro = mro
        self._index = index

    def resolve_object(self, dotted: str) -> Any:
        return self._index.object_at(dotted)

    def mro_of(self, class_path: str) -> list:
        return list(self._index.mro(class_path))


# Griffe's parameter kinds by member name (a table built without importing Griffe).
_PARAM_KIND = {
    "positional_only": ParamKind.POSITIONAL_ONLY,
    "positional_or_keyword": ParamKind.POSITIONAL_OR_KEYWORD,
    "var_positional": ParamKind.VAR_POSITIONAL,
    "keyword_only": ParamKind.KEYWORD_ONLY,
    "var_keyword": ParamKind.VAR_KEYWORD,
}


def _drops_first(func: griffe.Function, via: ReachedVia, descriptor: MethodDescriptor | None) -> bool:
    if not isinstance(func.parent, griffe.Class):
        return False
    if descriptor == "staticmethod":
        return False
    if descriptor == "classmethod":
        return via in ("class", "instance")
    if func.name == "__new__":
        return True
    return via == "instance"


def _lazy_target(module: griffe.Module, spec: str) -> str | None:
    """'.engine.arg_utils:EngineArgs' or 'pkg.mod.Name' -> an absolute dotted path."""
    package = module.path if module.is_init_module else module.path.rsplit(".", 1)[0]
    mod, _, attr = spec.partition(":")
    if mod.startswith("."):
        depth = len(mod) - len(mod.lstrip("."))
        base = package.split(".")
        base = base[: len(base) - (depth - 1)] if depth > 1 else base
        mod = ".".join(base + ([mod.lstrip(".")] if mod.lstrip(".") else []))
    if not attr:
        return mod or None
    return f"{mod}.{attr}"


def _c3_merge(seqs: list[list[MroEntry]]) -> list[MroEntry]:
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
