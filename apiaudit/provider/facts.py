"""A Griffe extension recording the facts signature binding needs and Griffe does not keep.

- per class: the names annotated in the class body, in order (dataclass-like fields), and
  every `self.NAME` assigned in any method (Griffe only records those in `__init__`);
- per function: the names and `extra=` literals its body uses (a dataclass_transform
  decorator's runtime behaviour: pydantic or not, extras forbidden or not);
- per module: a lazy `__getattr__` and the string map it serves (`{"Name": ".mod:Name"}`).
"""

from __future__ import annotations

import ast
from typing import Any

import griffe

KEY = "apiaudit"


def facts(obj: Any) -> dict:
    return obj.extra.get(KEY, {}) if hasattr(obj, "extra") else {}


class FactsExtension(griffe.Extension):
    def on_class_instance(self, *, node: ast.AST, cls: griffe.Class, **kwargs: Any) -> None:
        if not isinstance(node, ast.ClassDef):
            return
        body_fields: list[str] = []
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                body_fields.append(stmt.target.id)
        assigned: set[str] = set()
        dynamic = False
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.args.args:
                me = stmt.args.args[0].arg
                names, dyn = _self_assignments(stmt, me)
                assigned |= names
                dynamic = dynamic or dyn
        slots: set[str] = set()
        for stmt in node.body:
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__slots__" for t in stmt.targets):
                if isinstance(stmt.value, (ast.Tuple, ast.List, ast.Set)):
                    slots |= {e.value for e in stmt.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        cls.extra[KEY] = {
            "body_fields": body_fields,
            "self_assigned": sorted(assigned | slots),
            "dynamic_attrs": dynamic,
        }

    def on_function_instance(self, *, node: ast.AST, func: griffe.Function, **kwargs: Any) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and only_raises_not_implemented(node):
            func.extra.setdefault(KEY, {})["not_implemented"] = True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not node.decorator_list:
            return
        names: set[str] = set()
        extra_literals: set[str] = set()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                names.add(sub.id)
            elif isinstance(sub, ast.keyword) and sub.arg == "extra":
                if isinstance(sub.value, ast.Constant) and isinstance(sub.value.value, str):
                    extra_literals.add(sub.value.value)
        func.extra.setdefault(KEY, {}).update({"body_names": sorted(names), "extra_literals": sorted(extra_literals)})

    def on_module_instance(self, *, node: ast.AST, mod: griffe.Module, **kwargs: Any) -> None:
        if not isinstance(node, ast.Module):
            return
        typing_only = _typing_only_names(node.body)
        if typing_only:
            mod.extra.setdefault(KEY, {})["typing_only"] = sorted(typing_only)
        dynamic = dynamic_namespace(node)
        if dynamic:
            mod.extra.setdefault(KEY, {})["dynamic_namespace"] = dynamic
        if installs_modules(node):
            mod.extra.setdefault(KEY, {})["installs_modules"] = True
        getattr_defs = [n for n in _top_level(node.body) if isinstance(n, ast.FunctionDef) and n.name == "__getattr__"]
        if not getattr_defs:
            return
        used = {n.id for g in getattr_defs for n in ast.walk(g) if isinstance(n, ast.Name)}
        lazy: dict[str, str] = {}
        for stmt in _top_level(node.body):
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and isinstance(stmt.value, ast.Dict):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if not any(isinstance(t, ast.Name) and t.id in used for t in targets):
                    continue
                for k, v in zip(stmt.value.keys, stmt.value.values):
                    if isinstance(k, ast.Constant) and isinstance(k.value, str):
                        if isinstance(v, ast.Constant) and isinstance(v.value, str):
                            lazy[k.value] = v.value
        closed = all(_only_serves_map(g) for g in getattr_defs)
        mod.extra.setdefault(KEY, {}).update({"has_getattr": True, "lazy_map": lazy, "lazy_map_closed": closed})


def import_time_nodes(module: ast.Module):
    """Every node that runs when the module is imported: module-level statements (inside
    if/for/try/with too) and the bodies of module-level functions called at module level.
    Code in other functions and methods runs only if called, so it binds nothing for sure."""
    functions = {
        stmt.name: stmt for stmt in module.body if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    called: set[str] = set()
    stack: list[ast.AST] = [s for s in module.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions and node.func.id not in called:
            called.add(node.func.id)
            stack.extend(functions[node.func.id].body)
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                stack.append(child)


def dynamic_namespace(module: ast.Module) -> str | None:
    """How the module binds names no static reader sees, if it does: the first such statement.

    `globals()[k] = v`, `globals().update(...)`, `vars()[k] = v`, `setattr(sys.modules[...], ...)`
    and `sys.modules[k] = v` shims, also through a name (`g = globals(); g[k] = v`), wherever
    they run at import time (see import_time_nodes).
    """
    nodes = sorted(import_time_nodes(module), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
    namespaces = _namespace_aliases(nodes)

    def is_namespace(node: ast.AST) -> bool:
        return _is_namespace_call(node) or (isinstance(node, ast.Name) and node.id in namespaces)

    for sub in nodes:
        targets: list[ast.AST] = []
        if isinstance(sub, ast.Assign):
            targets = list(sub.targets)
        elif isinstance(sub, (ast.AnnAssign, ast.AugAssign)):
            targets = [sub.target]
        for target in targets:
            if isinstance(target, ast.Subscript) and (is_namespace(target.value) or _is_sys_modules(target.value)):
                return f"line {sub.lineno}: {ast.unparse(target)} = ..."
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute):
            if sub.func.attr in ("update", "setdefault", "__setitem__") and (
                is_namespace(sub.func.value) or _is_sys_modules(sub.func.value)
            ):
                return f"line {sub.lineno}: {ast.unparse(sub.func)}(...)"
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "setattr" and sub.args:
            first = sub.args[0]
            if (isinstance(first, ast.Subscript) and _is_sys_modules(first.value)) or (
                isinstance(first, ast.Name) and first.id in namespaces
            ):
                return f"line {sub.lineno}: setattr({ast.unparse(first)}, ...)"
    return None


def _namespace_aliases(nodes) -> set[str]:
    """Names bound to the module namespace: `g = globals()`, `m = sys.modules[__name__]`."""
    aliases: set[str] = set()
    for sub in nodes:
        if isinstance(sub, ast.Assign) and (
            _is_namespace_call(sub.value) or (isinstance(sub.value, ast.Subscript) and _is_sys_modules(sub.value.value))
        ):
            aliases |= {t.id for t in sub.targets if isinstance(t, ast.Name)}
    return aliases


def installs_modules(module: ast.Module) -> bool:
    """`sys.modules[...] = ...` at import time: the module may create importable submodules."""
    return any(
        isinstance(sub, ast.Assign) and any(isinstance(t, ast.Subscript) and _is_sys_modules(t.value) for t in sub.targets)
        for sub in import_time_nodes(module)
    )


def _is_namespace_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("globals", "vars", "locals") and (
        node.func.id != "vars" or not node.args
    ) and node.func.id != "locals"


def _is_sys_modules(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "modules" and isinstance(node.value, ast.Name) and node.value.id == "sys"


def only_raises_not_implemented(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A placeholder: the body (after a docstring) is a single `raise NotImplementedError...`."""
    body = list(func.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def _top_level(body: list[ast.stmt]):
    """Module statements, looking inside if/else and try blocks (TYPE_CHECKING splits)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _top_level(stmt.body)
            yield from _top_level(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            yield from _top_level(stmt.body)
            for h in stmt.handlers:
                yield from _top_level(h.body)
            yield from _top_level(stmt.orelse)


def _self_assignments(func: ast.AST, me: str) -> tuple[set[str], bool]:
    names: set[str] = set()
    dynamic = False
    for sub in ast.walk(func):
        targets: list[ast.AST] = []
        if isinstance(sub, ast.Assign):
            targets = list(sub.targets)
        elif isinstance(sub, (ast.AnnAssign, ast.AugAssign)):
            targets = [sub.target]
        elif isinstance(sub, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
            targets = [sub.target] if isinstance(sub, (ast.For, ast.AsyncFor)) else [i.optional_vars for i in sub.items if i.optional_vars]
        elif isinstance(sub, ast.NamedExpr):
            targets = [sub.target]
        elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "setattr":
            if sub.args and isinstance(sub.args[0], ast.Name) and sub.args[0].id == me:
                if len(sub.args) > 1 and isinstance(sub.args[1], ast.Constant) and isinstance(sub.args[1].value, str):
                    names.add(sub.args[1].value)
                else:
                    dynamic = True
        elif isinstance(sub, ast.Attribute) and sub.attr == "__dict__" and isinstance(sub.value, ast.Name) and sub.value.id == me:
            dynamic = True
        for t in targets:
            for leaf in _flatten(t):
                if isinstance(leaf, ast.Attribute) and isinstance(leaf.value, ast.Name) and leaf.value.id == me:
                    names.add(leaf.attr)
    return names, dynamic


def _flatten(target: ast.AST):
    if isinstance(target, (ast.Tuple, ast.List)):
        for e in target.elts:
            yield from _flatten(e)
    elif isinstance(target, ast.Starred):
        yield from _flatten(target.value)
    else:
        yield target


def _is_type_checking(test: ast.AST) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _bound_names(stmts) -> set[str]:
    names: set[str] = set()
    for stmt in stmts:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in stmt.names if a.name != "*"}
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            names |= {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None and isinstance(stmt.target, ast.Name):
            names.add(stmt.target.id)
        elif isinstance(stmt, ast.If):
            if _is_type_checking(stmt.test):
                names |= _bound_names(stmt.orelse)
            else:
                names |= _bound_names(stmt.body) | _bound_names(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            names |= _bound_names(stmt.body) | _bound_names(stmt.orelse) | _bound_names(stmt.finalbody)
            for h in stmt.handlers:
                names |= _bound_names(h.body)
    return names


def _typing_only_names(body) -> set[str]:
    """Names a module binds only under `if TYPE_CHECKING:` (absent when the module runs)."""
    typing_names: set[str] = set()
    for stmt in body:
        if isinstance(stmt, ast.If) and _is_type_checking(stmt.test):
            typing_names |= _bound_names(stmt.body)
    return typing_names - _bound_names(body)


def _only_serves_map(func: ast.FunctionDef) -> bool:
    """A module __getattr__ that serves its map and otherwise raises AttributeError."""
    last = func.body[-1] if func.body else None
    if _raises_attribute_error(last):
        return True
    if isinstance(last, ast.If) and last.orelse and _raises_attribute_error(last.orelse[-1]):
        return True
    return False


def _raises_attribute_error(stmt) -> bool:
    if not isinstance(stmt, ast.Raise) or stmt.exc is None:
        return False
    exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
    return isinstance(exc, ast.Name) and exc.id == "AttributeError"
