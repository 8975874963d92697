"""The consumer's own patching helpers: a function that puts a wrapper of a given function where
an object's attribute was, so that a call of the helper is a replacement like `Cls.m = f`.

The shape (read from the helper's source, never run)::

    def replace_func(obj, name, func=None):
        orig = getattr(obj, name)
        def decorator(func):
            def wrapper(*args, **kwargs):
                return func(orig, *args, **kwargs)
            setattr(obj, name, wrapper)
            return wrapper
        if func is None:
            return decorator
        ...  # the same wrapper of the `func` argument, set with setattr

`setattr(P, Q, W)` with P and Q parameters of the helper and W a function it defines that passes
its own `*args` (and `**kwargs`) on to a function F after `lead` arguments of its own (the
original, here). F is a parameter of the helper (a call `replace_func(X, "m", f)` installs f) or
the parameter of a function the helper returns (`@replace_func(X, "m")` installs the decorated
function). Set on a class, the wrapper is a method: what the provider passes after `self`
reaches F after its `lead` arguments and `self`.

And the consumer's patch classes: a class whose method copies the class's own members onto
another object (`copies_members`) patches that object with each subclass's members::

    class Patch:
        @classmethod
        def apply(cls):
            for name, attr in cls.__dict__.items():   # or vars(cls).items(), getmembers(cls)
                setattr(cls._target, name, attr)

    class ConfigPatch(Patch[Config]): ...             # what it defines, Config has once applied
"""

from __future__ import annotations

import ast

from apiaudit.infra.astutil import own_statements
from apiaudit.infra.frozen import record


@record(slots=True)
class PatchHelper:
    """Where a call of a patching helper says what is patched: the positions of the object and
    of the attribute's name among the helper's parameters; the position of the function it
    installs (None: it takes none, only as a decorator); whether a call of it returns a
    decorator that installs the decorated function; and how many arguments the installed
    function receives before the wrapper's own."""

    obj: int
    name: int
    func: int | None
    decorates: bool
    lead: int


def patch_helper(node: ast.FunctionDef | ast.AsyncFunctionDef) -> PatchHelper | None:
    """The helper `node` is, or None when it sets no wrapper of a given function (the common case)."""
    params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
    if len(params) < 2:
        return None
    returned = _returned_names(node.body)
    found: list[tuple[int, int, int | None, int]] = []  # (obj, name, func or None for a decorator, lead)
    # The helper's own body, and the body of each function it defines and returns (a decorator):
    # a `setattr` there of a wrapper defined in the same body; the function the wrapper calls
    # is a parameter of the helper, or of the decorator.
    homes = [node] + [d for d in _defined_in(node.body) if d.name in returned]
    for home in homes:
        wrappers = {d.name: d for d in _defined_in(home.body)}
        for call in _own_calls(home):
            if not (isinstance(call.func, ast.Name) and call.func.id == "setattr" and len(call.args) == 3):
                continue
            obj, name, value = call.args
            if not (isinstance(obj, ast.Name) and isinstance(name, ast.Name) and isinstance(value, ast.Name)):
                continue
            if obj.id not in params or name.id not in params or value.id not in wrappers:
                continue
            forwarded = _forwarded(wrappers[value.id])
            if forwarded is None:
                continue
            target, lead = forwarded
            if home is node and target in params:
                found.append((params.index(obj.id), params.index(name.id), params.index(target), lead))
            elif home is not node and [a.arg for a in home.args.args] == [target]:
                found.append((params.index(obj.id), params.index(name.id), None, lead))
    if not found:
        return None
    at_obj, at_name, _, lead = found[0]
    same = [f for f in found if (f[0], f[1], f[3]) == (at_obj, at_name, lead)]
    func = next((f[2] for f in same if f[2] is not None), None)
    return PatchHelper(at_obj, at_name, func, any(f[2] is None for f in same), lead)


def copies_members(node: ast.ClassDef) -> bool:
    """Whether a method of the class loops over a class's own members (`X.__dict__.items()`,
    `vars(X).items()`, `getmembers(X)`) and sets each on an object by the loop's name
    (`setattr(T, name, ...)`): the patch-class shape, which copies a subclass onto its target."""
    for method in node.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for loop in ast.walk(method):
            if not isinstance(loop, (ast.For, ast.AsyncFor)) or not _iterates_members(loop.iter):
                continue
            target = loop.target.elts[0] if isinstance(loop.target, ast.Tuple) and loop.target.elts else loop.target
            if not isinstance(target, ast.Name):
                continue
            for call in ast.walk(loop):
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Name)
                    and call.func.id == "setattr"
                    and len(call.args) == 3
                    and isinstance(call.args[1], ast.Name)
                    and call.args[1].id == target.id
                ):
                    return True
    return False


def _iterates_members(expr: ast.expr) -> bool:
    """`X.__dict__.items()`, `vars(X).items()`, `X.__dict__`, `vars(X)`, `getmembers(X)`."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "items" and not expr.args:
        expr = expr.func.value
    if isinstance(expr, ast.Attribute):
        return expr.attr == "__dict__"
    if isinstance(expr, ast.Call) and expr.args:
        func = expr.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        return name in ("vars", "getmembers")
    return False


def _defined_in(body: list[ast.stmt]) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions a body defines, under its `if`/`try` blocks too (not inside other functions)."""
    return [stmt for stmt in own_statements(body) if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _own_calls(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Call]:
    """The calls a function's own body makes (not those of the functions it defines)."""
    out: list[ast.Call] = []
    stack: list[ast.AST] = list(function.body)
    while stack:
        item = stack.pop()
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(item, ast.Call):
            out.append(item)
        stack.extend(ast.iter_child_nodes(item))
    return out


def _forwarded(wrapper: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, int] | None:
    """(F, lead) when the wrapper's body calls `F(a1, .., a_lead, *args, **kwargs)` with its own
    `*args` last among the positionals (and its `**kwargs`, if it has one)."""
    args = wrapper.args
    if args.vararg is None or args.args or args.posonlyargs:
        return None
    star, starstar = args.vararg.arg, args.kwarg.arg if args.kwarg is not None else None
    for call in ast.walk(wrapper):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.args):
            continue
        last = call.args[-1]
        if not (isinstance(last, ast.Starred) and isinstance(last.value, ast.Name) and last.value.id == star):
            continue
        if any(isinstance(a, ast.Starred) for a in call.args[:-1]):
            continue
        passed = [k for k in call.keywords if k.arg is None]
        if starstar is not None and not any(isinstance(k.value, ast.Name) and k.value.id == starstar for k in passed):
            continue
        return call.func.id, len(call.args) - 1
    return None


def _returned_names(body: list[ast.stmt]) -> set[str]:
    """Names `return NAME` gives back in a body (not in the functions it defines)."""
    return {stmt.value.id for stmt in own_statements(body) if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Name)}
