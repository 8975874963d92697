"""A Griffe extension recording the facts signature binding needs and Griffe does not keep.

- per class: the names annotated in the class body, in order (dataclass-like fields), and
  every `self.NAME` assigned in any method (Griffe only records those in `__init__`);
- per function: the names and `extra=` literals its body uses (a dataclass_transform
  decorator's runtime behaviour: pydantic or not, extras forbidden or not);
- per module: what its `__getattr__` serves (module_getattr.py: the names, their targets where
  they can be named, whether every other name raises AttributeError);
- per function and class, what its own source says about its deprecation (`deprecation_marks`:
  read here, from the tree Griffe parsed, so no provider file is parsed twice);
- per class, for light inference of what an attribute holds: each `self.NAME = callee(...)`
  (callee as source text, with the keyword arguments that are lists of string literals) and
  each `self.NAME: T` annotation in any method, gathered in the same walk as the names.
  (A helper's `return callee(...)` is read from its source only when a query needs it:
  `returned_callees`.)
"""

from __future__ import annotations

import ast
import bisect
import re
from typing import Any, TypeAlias, TypeGuard

import griffe

from apiaudit.infra.astutil import absolute_import, descendants, dotted_text, lone_carriage_return, statements_breadth_first
from apiaudit.provider import deprecation_marks, module_getattr

KEY = "apiaudit"


def facts(obj: Any) -> dict:
    return obj.extra.get(KEY, {}) if hasattr(obj, "extra") else {}


_Agent: TypeAlias = "griffe.Visitor | griffe.Inspector | None"


class FactsExtension(griffe.Extension):
    def __init__(self) -> None:
        super().__init__()
        # The module being visited (Griffe visits one at a time, the module before its members):
        # its name, its import bindings and whether its text names a deprecation category.
        self._module: tuple[str, dict[str, str], bool] = ("", {}, True)
        # The lines of the module being visited that name `setattr`, `__dict__` or a named
        # registration (None without its source: every method is then walked).
        self._dynamic_lines: list[int] | None = None
        # Its text, and the offsets its lines start at (made on the first question about them).
        self._code: str | None = None
        self._line_starts: list[int] | None = None

    def _record_marks(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, obj: griffe.Object) -> None:
        module, imports, may_warn = self._module
        if node.decorator_list or may_warn:
            marks = deprecation_marks.marks_of(node, imports, module, may_warn)
            if marks:
                obj.extra.setdefault(KEY, {})["deprecation"] = marks

    # Griffe's hooks are called with the agent too; static analysis only ever sees a Visitor.
    def on_class_instance(self, *, node: ast.AST | griffe.ObjectNode, cls: griffe.Class, agent: _Agent = None, **kwargs: Any) -> None:
        if not isinstance(node, ast.ClassDef):
            return
        self._record_marks(node, cls)
        body_fields: list[str] = []
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                body_fields.append(stmt.target.id)
        assigned: set[str] = set()
        dynamic = False
        assigned_calls: dict[str, list] = {}
        self_annotations: dict[str, str] = {}
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.args.args:
                me = stmt.args.args[0].arg
                # Expressions are walked only in a method whose lines name a way to set an
                # attribute by name (most methods name none: the walk would cost more than Griffe's).
                expressions = self._dynamic_lines is None or _any_within(self._dynamic_lines, stmt.lineno, stmt.end_lineno)
                names, dyn = _self_assignments(stmt, me, assigned_calls, self_annotations, expressions)
                assigned |= names
                dynamic = dynamic or dyn
        slots: set[str] = set()
        for stmt in node.body:
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__slots__" for t in stmt.targets):
                if isinstance(stmt.value, (ast.Tuple, ast.List, ast.Set)):
                    slots |= {e.value for e in stmt.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        cls.extra.setdefault(KEY, {}).update({
            "body_fields": body_fields,
            "self_assigned": sorted(assigned | slots),
            "dynamic_attrs": dynamic,
            "assigned_calls": assigned_calls,
            "self_annotations": self_annotations,
        })

    def on_function_instance(self, *, node: ast.AST | griffe.ObjectNode, func: griffe.Function, agent: _Agent = None, **kwargs: Any) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.args.kwarg is not None and self._may_splat(node, node.args.kwarg.arg):
                _record_forwarding(node, func)
            self._record_marks(node, func)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and only_raises_not_implemented(node):
            func.extra.setdefault(KEY, {})["not_implemented"] = True
        # What the body names is read for a function decorated `@dataclass_transform(...)` only
        # (shapes/transform.py), and that decorator is always called.
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not any(isinstance(d, ast.Call) for d in node.decorator_list):
            return
        names: set[str] = set()
        extra_literals: set[str] = set()
        for sub in descendants(node):
            if isinstance(sub, ast.Name):
                names.add(sub.id)
            elif isinstance(sub, ast.keyword) and sub.arg == "extra":
                if isinstance(sub.value, ast.Constant) and isinstance(sub.value.value, str):
                    extra_literals.add(sub.value.value)
        func.extra.setdefault(KEY, {}).update({"body_names": sorted(names), "extra_literals": sorted(extra_literals)})

    def _may_splat(self, node: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
        """Whether a function's text spells `**name` more than once (its signature does once):
        only then can it pass its `**kwargs` on. True without the module's text."""
        code = self._code
        if code is None or node.end_lineno is None:
            return True
        if self._line_starts is None:
            self._line_starts = [0, *(found.end() for found in re.finditer("\n", code))]
        starts = self._line_starts
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        text = code[starts[first - 1] : starts[node.end_lineno] if node.end_lineno < len(starts) else len(code)]
        return len(re.findall(rf"\*\*\s*{re.escape(name)}\b", text)) > 1

    def on_attribute_node(self, *, node: ast.AST | griffe.ObjectNode, agent: _Agent = None, **kwargs: Any) -> None:
        """Bind every name of a tuple or list target (`(A, B) = X.values()`, `a, *rest = f()`,
        `[a, b] = ...`) in a module or class body: Griffe skips such an assignment whole, so a
        name bound only there (and every re-export of it) would read as missing."""
        current = getattr(agent, "current", None)
        if not isinstance(node, ast.Assign) or current is None or current.kind not in (griffe.Kind.MODULE, griffe.Kind.CLASS):
            return
        for target in node.targets:
            if not isinstance(target, (ast.Tuple, ast.List)):
                continue
            for name in _flatten(target):
                if isinstance(name, ast.Name) and name.id not in current.members:
                    bound = griffe.Attribute(name.id, lineno=node.lineno, endlineno=node.end_lineno)
                    bound.labels |= {"module-attribute"} if current.kind is griffe.Kind.MODULE else {"class-attribute", "instance-attribute"}
                    current.set_member(name.id, bound)

    def on_module_instance(self, *, node: ast.AST | griffe.ObjectNode, mod: griffe.Module, agent: _Agent = None, **kwargs: Any) -> None:
        if not isinstance(node, ast.Module):
            return
        code = getattr(agent, "code", None)
        # The text, unless a lone "\r" ends a line there: that does for the parser, not for the
        # line numbers read from the text (then every method is walked, every function read).
        self._code = None if code is None or lone_carriage_return(code) else code
        self._line_starts = None
        self._dynamic_lines = None if self._code is None else _lines_naming(self._code, _DYNAMIC_WORDS)
        self._module = (
            mod.path,
            deprecation_marks.module_imports(node, mod.path, mod.is_init_module),
            deprecation_marks.may_warn(getattr(agent, "code", None)),
        )
        typing_only = _typing_only_names(node.body)
        if typing_only:
            mod.extra.setdefault(KEY, {})["typing_only"] = sorted(typing_only)
        at_import = list(import_time_nodes(node))  # read once for both questions
        dynamic = dynamic_namespace(node, at_import, mod.path)
        if dynamic:
            mod.extra.setdefault(KEY, {})["dynamic_namespace"] = dynamic
        else:
            filled = fills_namespace(node, getattr(agent, "code", None))
            if filled:
                mod.extra.setdefault(KEY, {})["fills_namespace"] = filled
        installed = installed_submodules(at_import, mod.path)
        if installed:
            mod.extra.setdefault(KEY, {})["installed_submodules"] = installed
        if installs_modules(node, at_import):
            mod.extra.setdefault(KEY, {})["installs_modules"] = True
        if replaces_itself(at_import):
            mod.extra.setdefault(KEY, {})["replaces_itself"] = True
        fallbacks = fallback_star_imports(node, mod.path if mod.is_init_module else mod.path.rpartition(".")[0])
        if fallbacks:
            mod.extra.setdefault(KEY, {})["fallback_stars"] = fallbacks
        package = mod.path if mod.is_init_module else mod.path.rpartition(".")[0]
        service = module_getattr.read(node, mod.path, package)
        if service is None:
            return
        mod.extra.setdefault(KEY, {}).update({
            "has_getattr": True,
            # names served with a target to follow (a lazy import, a deprecation shim's import)
            "lazy_map": {name: target for name, target in service.targets if target},
            # names served whose value cannot be named (`return env_vars[name]()`)
            "getattr_names": sorted(name for name, target in service.targets if not target),
            "lazy_map_closed": service.closed,
            "getattr_partial": service.partial,
            # names served with a DeprecationWarning (a shim kept for a moved name): the message
            "getattr_deprecated": dict(service.deprecated),
        })


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


def dynamic_namespace(module: ast.Module, at_import: list[ast.AST] | None = None, path: str | None = None) -> str | None:
    """How the module binds names no static reader sees, if it does: the first such statement.

    `globals()[k] = v`, `globals().update(...)`, `vars()[k] = v`, `setattr(sys.modules[...], ...)`
    and `sys.modules[k] = v` shims, also through a name (`g = globals(); g[k] = v`), wherever
    they run at import time (see import_time_nodes). With the module's dotted `path`, a
    `sys.modules["a.b"] = v` whose literal key is neither the module itself nor one of its
    submodules binds nothing here (it makes `a.b` importable: `installs_modules`), and one that
    names a submodule binds that one name (`installed_submodules`).
    """
    found = import_time_nodes(module) if at_import is None else at_import
    nodes = sorted(found, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
    namespaces = _namespace_aliases(nodes)

    def is_namespace(node: ast.AST) -> bool:
        return _is_namespace_call(node) or (isinstance(node, ast.Name) and node.id in namespaces)

    for sub in nodes:
        targets = _assigned_targets(sub)
        for target in targets:
            if isinstance(target, ast.Subscript) and _is_sys_modules(target.value) and path is not None:
                key = _literal_key(target)
                if key is not None and key != path:
                    continue  # another module, or one submodule of this one: not this namespace
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


def _assigned_targets(node: ast.AST) -> list[ast.AST]:
    """What an assignment statement stores into (none for any other node)."""
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return [node.target]
    return []


# `globals()` subscripted, its method called or bound to a name; `sys.modules[__name__]`
_MAY_FILL = re.compile(r"globals\(\)\)*\s*[\[.]|=\s*\(*\s*globals\(\)|sys\.modules\[__name__\]")


def fills_namespace(module: ast.Module, source: str | None = None) -> str | None:
    """The first statement of a function that binds the module's own names by a computed key
    (`globals()[key] = sys.modules[name]` in a registry's `import_prefix`, as sqlalchemy's
    `util.preloaded` fills itself; `globals().update(...)`; `setattr(sys.modules[__name__], ...)`):
    names that exist once that function has run. (In a function `vars()` is its locals, and
    `sys.modules[k] = m` installs another module: neither binds this module's names.)"""
    if source is not None and not (("globals()" in source or "sys.modules[__name__]" in source) and _MAY_FILL.search(source)):
        return None  # globals() only passed on (`LazyLoader("m", globals(), ...)`) binds nothing here
    nodes = sorted(ast.walk(module), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
    mapping: set[str] = set()  # names bound to globals()
    module_obj: set[str] = set()  # names bound to sys.modules[__name__]
    for sub in nodes:
        if isinstance(sub, ast.Assign):
            names = {t.id for t in sub.targets if isinstance(t, ast.Name)}
            if _is_globals(sub.value):
                mapping |= names
            elif _is_this_module(sub.value):
                module_obj |= names

    def is_mapping(node: ast.AST) -> bool:
        return _is_globals(node) or (isinstance(node, ast.Name) and node.id in mapping)

    for sub in nodes:
        targets = _assigned_targets(sub)
        for target in targets:
            if isinstance(target, ast.Subscript) and is_mapping(target.value):
                return f"line {target.lineno}: {ast.unparse(target)} = ..."
        if (
            isinstance(sub, ast.Call)
            and isinstance(sub.func, ast.Attribute)
            and sub.func.attr in ("update", "setdefault", "__setitem__")
            and is_mapping(sub.func.value)
        ):
            return f"line {sub.lineno}: {ast.unparse(sub.func)}(...)"
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "setattr" and sub.args:
            first = sub.args[0]
            if _is_this_module(first) or (isinstance(first, ast.Name) and first.id in module_obj):
                return f"line {sub.lineno}: setattr({ast.unparse(first)}, ...)"
    return None


def _is_globals(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "globals" and not node.args


def _is_this_module(node: ast.AST) -> bool:
    """`sys.modules[__name__]`."""
    return isinstance(node, ast.Subscript) and _is_sys_modules(node.value) and isinstance(node.slice, ast.Name) and node.slice.id == "__name__"


def _namespace_aliases(nodes) -> set[str]:
    """Names bound to the module namespace: `g = globals()`, `m = sys.modules[__name__]`."""
    aliases: set[str] = set()
    for sub in nodes:
        if isinstance(sub, ast.Assign) and (
            _is_namespace_call(sub.value) or (isinstance(sub.value, ast.Subscript) and _is_sys_modules(sub.value.value))
        ):
            aliases |= {t.id for t in sub.targets if isinstance(t, ast.Name)}
    return aliases


def installs_modules(module: ast.Module, at_import: list[ast.AST] | None = None) -> bool:
    """`sys.modules[...] = ...` at import time: the module may create importable submodules."""
    return any(
        isinstance(sub, ast.Assign) and any(isinstance(t, ast.Subscript) and _is_sys_modules(t.value) for t in sub.targets)
        for sub in (import_time_nodes(module) if at_import is None else at_import)
    )


def installed_submodules(at_import: list[ast.AST], path: str) -> dict[str, int]:
    """Submodule name -> line of each `sys.modules["<path>.name"] = v` at import time: `import
    <path>.name` then finds that object, which is a member the module may come to hold."""
    found: dict[str, int] = {}
    for sub in at_import:
        if isinstance(sub, ast.Assign):
            for target in sub.targets:
                key = _literal_key(target) if isinstance(target, ast.Subscript) and _is_sys_modules(target.value) else None
                if key is not None and key.rpartition(".")[0] == path:
                    found.setdefault(key.rpartition(".")[2], sub.lineno)
    return found


def _literal_key(target: ast.Subscript) -> str | None:
    key = target.slice
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None


def replaces_itself(at_import: list[ast.AST]) -> bool:
    """`sys.modules[__name__] = <object>` at import time: a lazy module (transformers' `_LazyModule`)
    serves the module's names from then on; what it serves is declared under `if TYPE_CHECKING:`."""
    return any(
        isinstance(sub, ast.Assign)
        and any(
            isinstance(t, ast.Subscript) and _is_sys_modules(t.value) and isinstance(t.slice, ast.Name) and t.slice.id == "__name__"
            for t in sub.targets
        )
        for sub in at_import
    )


# How a star import in an `except` handler stands in for what the `try` would have bound.
FALLBACK = "fallback"  # another implementation, when the first one's import fails
PLACEHOLDER = "placeholder"  # dummies, when an availability check raised on purpose: not the real names


def fallback_star_imports(module: ast.Module, package: str) -> dict[str, str]:
    """The modules star-imported in an `except` handler at module level (inside if/try too), each
    FALLBACK, or PLACEHOLDER where the `try` raises the caught exception itself (`if not
    is_torch_available(): raise OptionalDependencyNotAvailable()`): the handler then binds
    placeholders for a missing optional dependency. A consumer that uses the class needs the
    dependency, so the names the `try` and its `else:` bind are the real ones."""
    found: dict[str, str] = {}
    pending: list[tuple[ast.stmt, str | None]] = [(stmt, None) for stmt in module.body]
    while pending:
        stmt, role = pending.pop(0)
        if isinstance(stmt, ast.ImportFrom) and role is not None and any(a.name == "*" for a in stmt.names):
            source = absolute_import(package, stmt.module, stmt.level)
            if found.get(source) != PLACEHOLDER:
                found[source] = role
        elif isinstance(stmt, ast.If):
            pending[:0] = [(s, role) for s in stmt.body + stmt.orelse]
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":  # `try/except*` (3.11+)
            raised = _raised_names(getattr(stmt, "body", []))
            inner: list[tuple[ast.stmt, str | None]] = [(s, role) for s in getattr(stmt, "body", [])]
            for handler in getattr(stmt, "handlers", []):
                caught = _caught_names(handler.type)
                kind = PLACEHOLDER if caught & raised else FALLBACK
                inner += [(s, kind) for s in handler.body]
            inner += [(s, role) for s in getattr(stmt, "orelse", []) + getattr(stmt, "finalbody", [])]
            pending[:0] = inner
    return found


def _raised_names(body: list[ast.stmt]) -> set[str]:
    """The exceptions a block raises itself, by name (`raise E()`, `raise E`), outside functions."""
    names: set[str] = set()
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            name = dotted_text(exc)
            if name:
                names.add(name.rpartition(".")[2])
        stack.extend(ast.iter_child_nodes(node))
    return names


def _caught_names(node: ast.expr | None) -> set[str]:
    if node is None:
        return {"BaseException"}
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    return {name.rpartition(".")[2] for item in items if (name := dotted_text(item))}


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


def _self_assignments(func: ast.AST, me: str, calls: dict[str, list] | None = None,
                      annotations: dict[str, str] | None = None, expressions: bool = True) -> tuple[set[str], bool]:
    """Names assigned on `me` (and whether attributes are computed); fills `calls`/`annotations`
    with what each single-target ``me.NAME = callee(...)`` / ``me.NAME: T`` assigns.

    Statements are visited in `ast.walk`'s order (which assignment comes first decides an
    annotation). `expressions`: also look inside expressions for `setattr(me, ...)` and
    `me.__dict__` (False where the method's lines name neither, nor a named registration)."""
    names: set[str] = set()
    dynamic = False
    for sub in statements_breadth_first(func):
        targets: list[ast.AST] = []
        if isinstance(sub, ast.Assign):
            targets = list(sub.targets)
            if calls is not None and len(targets) == 1 and _is_self_attribute(targets[0], me):
                _record_value(calls, targets[0].attr, sub.value)
        elif isinstance(sub, (ast.AnnAssign, ast.AugAssign)):
            targets = [sub.target]
            if isinstance(sub, ast.AnnAssign) and calls is not None and _is_self_attribute(sub.target, me):
                if annotations is not None:
                    annotations.setdefault(sub.target.attr, ast.unparse(sub.annotation))
                if sub.value is not None:
                    _record_value(calls, sub.target.attr, sub.value)
        elif isinstance(sub, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
            targets = [sub.target] if isinstance(sub, (ast.For, ast.AsyncFor)) else [i.optional_vars for i in sub.items if i.optional_vars]
        for t in targets:
            for leaf in _flatten(t):
                if isinstance(leaf, ast.Attribute) and isinstance(leaf.value, ast.Name) and leaf.value.id == me:
                    names.add(leaf.attr)
    if expressions:
        read: dict[str, int] | None = None
        # (A walrus binds only plain names: no `me.NAME` is ever assigned inside an expression.)
        for sub in descendants(func):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "setattr":
                if sub.args and isinstance(sub.args[0], ast.Name) and sub.args[0].id == me:
                    if len(sub.args) > 1 and isinstance(sub.args[1], ast.Constant) and isinstance(sub.args[1].value, str):
                        names.add(sub.args[1].value)
                    elif len(sub.args) > 1 and isinstance(sub.args[1], ast.Name):
                        read = _names_read_first(func, me) if read is None else read
                        if read.get(sub.args[1].id, sub.lineno) >= sub.lineno:
                            dynamic = True
                        # else it rebinds a member `getattr(me, name)` read before (that raises
                        # unless the member is there): no name is added
                    else:
                        dynamic = True
            elif isinstance(sub, ast.Attribute) and sub.attr == "__dict__" and isinstance(sub.value, ast.Name) and sub.value.id == me:
                dynamic = True
            elif isinstance(sub, ast.Call) and _is_self_attribute(sub.func, me) and sub.func.attr in _NAMED_REGISTRATIONS:
                if sub.args and isinstance(sub.args[0], ast.Constant) and isinstance(sub.args[0].value, str):
                    names.add(sub.args[0].value)
                else:
                    dynamic = True
    return names, dynamic


def _names_read_first(func: ast.AST, me: str) -> dict[str, int]:
    """Variables `getattr(me, NAME)` reads (no default, so it raises where the member is missing;
    not inside a `try`, which may catch that), with the first line: a `setattr(me, NAME, v)` after
    it rebinds a member that exists (`config = getattr(self, name)` ... `setattr(self, name, new)`)."""
    lines: dict[str, int] = {}
    stack: list[ast.AST] = [func]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Try, ast.Lambda)) or type(node).__name__ == "TryStar":
            continue
        if (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and len(node.args) == 2 and not node.keywords
            and isinstance(node.args[0], ast.Name) and node.args[0].id == me and isinstance(node.args[1], ast.Name)
        ):  # fmt: skip
            name = node.args[1].id
            lines[name] = min(lines.get(name, node.lineno), node.lineno)
        stack.extend(ast.iter_child_nodes(node))
    return lines


# torch.nn.Module's ways to give an instance an attribute by name (its __getattr__ serves them).
_NAMED_REGISTRATIONS = frozenset({"register_buffer", "register_parameter", "add_module", "register_module"})
_DYNAMIC_WORDS = re.compile("|".join(["setattr", "__dict__", *sorted(_NAMED_REGISTRATIONS)]))


def _lines_naming(code: str, words: re.Pattern) -> list[int]:
    """The (1-based, ascending) numbers of the lines where `words` match."""
    lines: list[int] = []
    line, position = 1, 0
    for found in words.finditer(code):
        line += code.count("\n", position, found.start())
        position = found.start()
        if not lines or lines[-1] != line:
            lines.append(line)
    return lines


def _any_within(lines: list[int], first: int, last: int | None) -> bool:
    at = bisect.bisect_left(lines, first)
    return at < len(lines) and (last is None or lines[at] <= last)


def _string_lists(call: ast.Call) -> list:
    """[[keyword, [str, ...]], ...] for keywords whose value is a list/tuple of string literals."""
    out = []
    for kw in call.keywords:
        if kw.arg and isinstance(kw.value, (ast.List, ast.Tuple)):
            items = kw.value.elts
            strings = [e.value for e in items if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if len(strings) == len(items):
                out.append([kw.arg, strings])
    return out


def _is_self_attribute(node: ast.AST, me: str) -> TypeGuard[ast.Attribute]:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == me


def _record_value(calls: dict[str, list], name: str, value: ast.AST) -> None:
    callee = dotted_text(value.func) if isinstance(value, ast.Call) else None
    # Anything but a call of a plain or dotted name (a parameter, an expression) is recorded
    # as "" so the attribute's value is not inferred from its other assignments alone.
    calls.setdefault(name, []).append([callee, _string_lists(value)] if callee and isinstance(value, ast.Call) else ["", []])


def returned_callees(func: ast.AST) -> list[str]:
    """Callees of `return callee(...)` in a function (not its nested ones); "" for any other value."""
    out: list[str] = []
    stack = list(ast.iter_child_nodes(func))
    while stack:
        sub = stack.pop()
        if not isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(sub))
        if isinstance(sub, ast.Return) and sub.value is not None:
            callee = dotted_text(sub.value.func) if isinstance(sub.value, ast.Call) else None
            out.append(callee or "")
    return out


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


# ------------------------------------------------------------- **kwargs forwarding
def _record_forwarding(node: ast.FunctionDef | ast.AsyncFunctionDef, func: griffe.Function) -> None:
    """A function taking `**kwargs` that passes them on: `Other(**kwargs)`, `super().__init__(**kwargs)`,
    `self.x = Other(*args, **kwargs)`. Records each callee as written ("Other", "mod.Other",
    "super().__init__") with the keywords passed beside the splat (the target gets those too)."""
    if node.args.kwarg is None:
        return
    name = node.args.kwarg.arg
    forwards: list[tuple[str, tuple[str, ...]]] = []
    for sub in ast.walk(node):
        if not isinstance(sub, ast.Call):
            continue
        splats = [k for k in sub.keywords if k.arg is None]
        if not any(isinstance(k.value, ast.Name) and k.value.id == name for k in splats):
            continue
        callee = _callee_text(sub.func)
        if callee is None:
            continue
        explicit = tuple(sorted(k.arg for k in sub.keywords if k.arg is not None))
        forwards.append((callee, explicit))
    if forwards:
        func.extra.setdefault(KEY, {})["forwards"] = forwards
        removed = sorted({key for sub in ast.walk(node) for key in _removed_keys(sub, name)})
        if removed:
            func.extra[KEY]["forwards_removed"] = removed


def _removed_keys(node: ast.AST, name: str) -> tuple[str, ...]:
    """Keys a statement takes out of the `**kwargs` dict `name` (`kwargs.pop("swap_space", None)`,
    `del kwargs["x"]`): anywhere in the function, since a shim that drops a removed keyword with a
    warning may do it under a test; such a key may never reach the callee the dict is passed to."""
    if (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "pop"
        and isinstance(node.func.value, ast.Name) and node.func.value.id == name
        and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
    ):  # fmt: skip
        return (node.args[0].value,)
    if isinstance(node, ast.Delete):
        return tuple(
            t.slice.value for t in node.targets
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == name
            and isinstance(t.slice, ast.Constant) and isinstance(t.slice.value, str)
        )  # fmt: skip
    return ()


def _callee_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Call):
        inner = node.value
        if isinstance(inner.func, ast.Name) and inner.func.id == "super" and not inner.args:
            return f"super().{node.attr}"
        return None
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        if node.id in ("self", "cls"):
            return None  # a method of the same object: not followed
        return ".".join(reversed(parts))
    return None
