"""Light inference: the provider class an annotation, an attribute or a function's return
names, what `instance.name` holds from what the class's code annotates or assigns, and the
class a path names through plain re-exports and aliases (read from the text where it tells).
"""

from __future__ import annotations

import ast
import os
import textwrap
from pathlib import Path
from typing import Any, Callable

from apiaudit.provider import names
from apiaudit.provider.index.lazy import ex, facts, griffe, returned_callees
from apiaudit.provider.index.mro import Hierarchy
from apiaudit.provider.records import AssignedValue, Found, Symbol, SymbolKind, ValueKind

SELF_TYPES = frozenset({"typing.Self", "typing_extensions.Self"})

# Griffe's parameter kinds by name: a splat takes no name; a positional one can be matched by place.
_SPLATS = frozenset({"var_positional", "var_keyword"})
_POSITIONAL = frozenset({"positional_only", "positional_or_keyword"})


class Inference(Hierarchy):
    """Types and values of attributes, parameters and returns."""

    def __init__(self, root: Path, packages: tuple[str, ...]):
        super().__init__(root, packages)
        # Rule data may say what a provider function's call returns (a registry factory with a
        # literal argument); `call_results_key` names that data in memo keys so a cache entry
        # answered under other rules is never reused.
        self.call_results: Callable[[AssignedValue], Symbol | None] | None = None
        self.call_results_key = ""
        self._classes_of: dict[str, frozenset[str]] = {}  # module -> its top-level classes, from its text

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

    def attribute_type(self, class_path: str, name: str) -> Symbol | None:
        """The provider class an attribute's annotation names (fields, properties), if exactly one."""
        key = ("attr-type", class_path, name) + ((self.call_results_key,) if self.call_results_key else ())
        return self._cached(key, lambda: self._attribute_type(class_path, name))

    def _attribute_type(self, class_path: str, name: str) -> Symbol | None:
        defined = self._first_definition(class_path, name)
        if defined is None:
            return self._inferred_instance(class_path, name)
        klass, member = defined
        if isinstance(member, griffe.Attribute):
            return self.annotation_class(member.annotation, klass) or self._inferred_instance(class_path, name)
        if isinstance(member, griffe.Function) and "property" in member.labels:
            return self.annotation_class(member.returns, klass)
        return None

    def overridden_parameter(self, class_path: str, method: str, param: str, position: int) -> tuple[bool, Symbol | None]:
        """(whether the class's MRO defines `method`, the provider class its first definition
        annotates the parameter with): by the parameter's name, else by its position where the
        definition's parameter there is positional. What the provider passes an override."""
        key = ("overridden-param", class_path, method, param, position)
        return self._cached(key, lambda: self._overridden_parameter(class_path, method, param, position))

    def _overridden_parameter(self, class_path: str, method: str, param: str, position: int) -> tuple[bool, Symbol | None]:
        defined = self._first_definition(class_path, method)
        if defined is None:
            return False, None
        member = defined[1]
        if not isinstance(member, griffe.Function) or member.labels & {"property", "staticmethod", "classmethod"}:
            return True, None
        params = list(member.parameters)
        named = [p for p in params if p.name == param and p.kind.name not in _SPLATS]
        if not named and 0 < position < len(params) and params[position].kind.name in _POSITIONAL:
            named = [params[position]]
        return True, (self.annotation_class(named[0].annotation, member) if named else None)

    def _inferred_instance(self, class_path: str, name: str) -> Symbol | None:
        value = self.attribute_value(class_path, name)
        if value is None:
            return None
        if value.kind is ValueKind.INSTANCE:
            return value.symbol
        return self.call_results(value) if self.call_results is not None else None

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

    def assigned_classes(self, class_path: str, name: str) -> tuple[str, ...]:
        """Every class the provider's own code builds into `instance.name`, where it builds more than
        one: the classes of each ``self.name = Cls(...)`` (annotated or not) of the class that
        assigns it, a helper's every ``return Cls(...)`` (one level, its own imports read: a runner
        built as `V2(...)` in one branch and `V1(...)` in another). An annotation then names one
        of several: what the object is depends on the configuration. Empty where the code builds
        one class, or where one way cannot be read (the annotation is all there is)."""
        return self._cached(("assigned-classes", class_path, name), lambda: self._assigned_classes(class_path, name))

    def _assigned_classes(self, class_path: str, name: str) -> tuple[str, ...]:
        for klass in self.mro(class_path):
            if not isinstance(klass, griffe.Class):
                continue
            calls = facts(klass).get("assigned_calls", {}).get(name)
            if not calls:
                if name in klass.members or name in facts(klass).get("self_assigned", ()):
                    return ()
                continue
            found: dict[str, None] = {}
            for callee, _lists in calls:
                built = self._built_by(klass, callee)
                if built is None:
                    return ()
                found.update(dict.fromkeys(built))
            return tuple(found) if len(found) > 1 else ()
        return ()

    def _built_by(self, klass: griffe.Class, callee: str) -> tuple[str, ...] | None:
        """The classes a call assigned to an attribute builds: a class itself, or a helper
        ``self._make(...)`` whose returns each call a class; None where one way is not read."""
        if callee.startswith("self.") and callee.count(".") == 1:
            res = self.class_member(klass.path, callee.split(".", 1)[1], instance=False)
            obj = self.object_at(res.symbol.path) if isinstance(res, Found) else None
            if not isinstance(obj, griffe.Function):
                return None
            node = self._definition_node(obj)
            if node is None:
                return None
            local = _local_imports(node, obj.module.path, obj.module.is_init_module)
            classes: dict[str, None] = {}
            for returned in returned_callees(node):
                head, _, rest = returned.partition(".")
                paths: list[str | None] = [f"{p}.{rest}" if rest else p for p in local.get(head, ())] or [self._name_path(obj, returned)]
                for path in paths:
                    value = self._value_of_path(path, ())
                    if value is None or value.kind is not ValueKind.INSTANCE or value.symbol is None:
                        return None
                    classes[value.symbol.path] = None
            return tuple(classes) or None
        if callee.split(".", 1)[0] in ("self", "cls", "super"):
            return None
        value = self._value_of_path(self._name_path(klass, callee), ())
        if value is None or value.kind is not ValueKind.INSTANCE or value.symbol is None:
            return None
        return (value.symbol.path,)

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
        node = self._definition_node(func)
        return returned_callees(node) if node is not None else []

    def _definition_node(self, func: griffe.Function) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """A function's `def`, parsed from its source lines on demand (Griffe keeps no tree);
        None without a single source file and position, or when the lines do not parse."""
        node = self._statement_of(func)
        return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None

    def _statement_of(self, obj: griffe.Function | griffe.Class) -> ast.stmt | None:
        """The statement defining a function or class, parsed from its source lines on demand."""
        if not isinstance(obj.filepath, Path) or obj.lineno is None:
            return None  # a namespace package's several paths, or no source position
        try:
            lines = Path(obj.filepath).read_text("utf-8", errors="replace").splitlines(keepends=True)
            return ast.parse(textwrap.dedent("".join(lines[obj.lineno - 1 : obj.endlineno]))).body[0]
        except (OSError, SyntaxError, TypeError, IndexError, ValueError):
            return None

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

    def _returns_value(self, func: griffe.Function) -> AssignedValue | None:
        found = self.annotation_class(func.returns, func)
        return AssignedValue(ValueKind.INSTANCE, found) if found else None

    def _class_named(self, scope: Any, annotation_text: str) -> Symbol | None:
        """A class an annotation's source text names (``Cls``, ``mod.Cls``, ``"Cls"``, ``Cls | None``)."""
        text = annotation_text.strip().strip("'\"")
        parts = [p.strip() for p in text.split("|") if p.strip() not in ("None", "")]
        if len(parts) != 1 or not all(c.isidentifier() for c in parts[0].split(".")):
            return None
        path = self._name_path(scope, parts[0])
        res = self.resolve(path) if path else None
        return res.symbol if isinstance(res, Found) and res.symbol.kind is SymbolKind.CLASS else None

    def module_attribute_type(self, path: str) -> Symbol | None:
        return self._cached(("module-attr-type", path), lambda: self._module_attribute_type(path))

    def _module_attribute_type(self, path: str) -> Symbol | None:
        obj = self.object_at(path)
        if isinstance(obj, griffe.Attribute):
            return self.annotation_class(obj.annotation, obj.parent)
        return None

    def parameter_class(self, function_path: str, param: str) -> Symbol | None:
        """The provider class a function's parameter is annotated with (a hook specification's:
        what the provider passes a hook implementation by that name)."""
        return self._cached(("param-class", function_path, param), lambda: self._parameter_class(function_path, param))

    def _parameter_class(self, function_path: str, param: str) -> Symbol | None:
        func = self.object_at(function_path)
        if not isinstance(func, griffe.Function):
            return None
        named = [p for p in func.parameters if p.name == param and p.kind.name not in _SPLATS]
        return self.annotation_class(named[0].annotation, func) if named else None

    def parameter_never_none(self, function_path: str, param: str) -> bool:
        """Whether the provider function declares its parameter never None: annotated with one
        class and no None (not `X | None`, `Optional[X]`, a union, a name that is no class), with
        no default of None. What its callers pass there, by the provider's own declaration."""
        return self._cached(("param-never-none", function_path, param), lambda: self._parameter_never_none(function_path, param))

    def _parameter_never_none(self, function_path: str, param: str) -> bool:
        func = self.object_at(function_path)
        if not isinstance(func, griffe.Function):
            return False
        named = [p for p in func.parameters if p.name == param and p.kind.name not in _SPLATS]
        if len(named) != 1 or named[0].annotation is None:
            return False
        parameter = named[0]
        if parameter.default is not None and str(parameter.default) == "None":
            return False
        members = ex.union_members(parameter.annotation)
        return len(members) == 1 and members[0] is not None and self.annotation_class(parameter.annotation, func) is not None

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

    def return_items(self, path: str) -> tuple[str, ...]:
        """For a provider function annotated `-> tuple[A, B, ...]` (a fixed length), what each
        item is: the builtin class an item's annotation names (`dict[str, X]` -> "dict"), else ""
        (a provider class, a union, anything else: not tracked). Empty: no such annotation."""
        return self._cached(("return-items", path), lambda: self._return_items(path))

    def _return_items(self, path: str) -> tuple[str, ...]:
        func = self.object_at(path)
        if not isinstance(func, griffe.Function) or func.returns is None:
            return ()
        members = ex.union_members(func.returns)
        if len(members) != 1 or not isinstance(members[0], griffe.ExprSubscript):
            return ()
        if (ex.canonical(members[0].left) or "").rpartition(".")[2] not in ("tuple", "Tuple"):
            return ()
        inner = members[0].slice
        elements = list(inner.elements) if isinstance(inner, griffe.ExprTuple) else [inner]
        if any(str(e) == "..." for e in elements):
            return ()
        return tuple(_builtin_named(e) for e in elements)

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


def _local_imports(node: ast.AST, module: str, is_package: bool) -> dict[str, tuple[str, ...]]:
    """Names a function imports for itself -> the dotted paths they stand for (one name imported
    in two branches stands for both)."""
    package = module if is_package else module.rpartition(".")[0]
    found: dict[str, dict[str, None]] = {}
    for sub in ast.walk(node):
        if isinstance(sub, ast.ImportFrom):
            base = sub.module or ""
            if sub.level:
                parts = package.split(".")[: len(package.split(".")) - (sub.level - 1)] if package else []
                base = ".".join([*parts, *([sub.module] if sub.module else [])])
            for alias in sub.names:
                if alias.name != "*":
                    found.setdefault(alias.asname or alias.name, {})[f"{base}.{alias.name}"] = None
        elif isinstance(sub, ast.Import):
            for alias in sub.names:
                if alias.asname:
                    found.setdefault(alias.asname, {})[alias.name] = None
    return {name: tuple(paths) for name, paths in found.items()}


# Builtin classes an annotation names, typing's aliases included (`Dict[str, X]`).
_BUILTIN_ALIASES = {
    "dict": "dict", "Dict": "dict", "list": "list", "List": "list", "tuple": "tuple", "Tuple": "tuple",
    "set": "set", "Set": "set", "frozenset": "frozenset", "FrozenSet": "frozenset",
    "str": "str", "bytes": "bytes", "int": "int", "float": "float", "bool": "bool",
}


def _builtin_named(annotation: Any) -> str:
    """The builtin class an annotation names exactly (not in a union), else ""."""
    members = ex.union_members(annotation)
    if len(members) != 1 or members[0] is None:
        return ""
    path = ex.canonical(members[0]) or ""
    module, _, name = path.rpartition(".")
    if module not in ("", "builtins", "typing") or (module == "typing" and name[:1].islower()):
        return ""
    return _BUILTIN_ALIASES.get(name, "")
