"""Dotted names -> symbols: modules and their members, followed through re-exports,
`TYPE_CHECKING` imports, star imports, a module `__getattr__`'s lazy maps, and what static
reading cannot see (compiled modules, stubs over `.py` files, names bound at run time:
`Unknown`, never `Missing`). A class's members are the class layer's (`mro.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from apiaudit.provider import names
from apiaudit.provider.index.lazy import extension, facts, griffe
from apiaudit.provider.index.memo import IndexMemo
from apiaudit.provider.records import Found, Missing, Resolution, Symbol, SymbolKind, Unknown

# What every module object has, whatever its source binds.
MODULE_ATTRIBUTES = frozenset(
    {"__dict__", "__name__", "__doc__", "__file__", "__spec__", "__loader__", "__package__", "__path__", "__builtins__", "__cached__"}
)

# Griffe's object kinds by their values ("module", "class", ...): no Griffe import to build it.
GRIFFE_KIND = {
    "module": SymbolKind.MODULE,
    "class": SymbolKind.CLASS,
    "function": SymbolKind.FUNCTION,
    "attribute": SymbolKind.ATTRIBUTE,
}


class Resolver(IndexMemo):
    """Resolution of dotted names, and the Griffe objects behind them."""

    def __init__(self, root: Path, packages: tuple[str, ...]):
        super().__init__(root, packages)
        self._objects: dict[str, Any] = {}  # dotted path -> the Griffe object found there
        self._runtime: dict[str, names.RuntimeBindings | None] = {}

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
        return Symbol(path=obj.path, kind=GRIFFE_KIND.get(obj.kind.value, SymbolKind.ATTRIBUTE), location=self.location(obj))

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
        rank = {None: 0, extension.FALLBACK: 1, extension.PLACEHOLDER: 2}
        unknown: Unknown | None = None
        for source in sorted(stars, key=lambda source: rank[fallbacks.get(source)]):
            if not self.loader.owns(source):
                unknown = Unknown(f"{module.path}.{name}", f"star import from {source}, outside the provider")
                continue
            res = self._resolve(f"{source}.{name}", seen)
            if isinstance(res, Found) and fallbacks.get(source) == extension.PLACEHOLDER:
                return unknown or Unknown(
                    f"{module.path}.{name}",
                    f"only a placeholder binds it ({res.symbol.path}, star-imported when an optional dependency is missing); the real class is not found",
                )
            if isinstance(res, Found):
                return res
            if isinstance(res, Unknown):
                unknown = res
        return unknown

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

    def class_member(self, class_path: str, name: str, *, instance: bool) -> Resolution:
        """`Class.name`, which a dotted name steps through: answered by the class layer (`mro.py`)."""
        raise NotImplementedError


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
