"""The consumer side of the contract the provider calls: what a file defines that the provider
may call (its functions and methods, with the parameters a caller binds to and the arity of what
they return), and where it puts its functions over provider methods.

The provider calls an override, a plugin's `__init__` or a function put over one of its
methods with the arguments *its* call sites pass; the checks bind those calls to these
signatures (`apiaudit.checks.contracts`). Read on the same parse as the rest of the file, with
nothing resolved: which class a method overrides is the checks' question.
"""

from __future__ import annotations

import ast
import re

from apiaudit.consumer.records import (
    DefinedFunction,
    DefKind,
    DefParam,
    DefParamKind,
    Replacement,
    ReplacementVia,
    Site,
)
from apiaudit.infra.astutil import dotted_text, module_names

_DECORATOR_KINDS: dict[str, DefKind] = {"staticmethod": "staticmethod", "classmethod": "classmethod", "property": "property"}


def defined_functions(tree: ast.Module, module: str) -> tuple[DefinedFunction, ...]:
    """Every function and method the module defines at module or class level, in source order
    (a function nested in another is not reachable by the provider's name lookups)."""
    found: list[DefinedFunction] = []
    _walk(tree.body, module, None, found)
    return tuple(found)


def _walk(body: list[ast.stmt], prefix: str, owner: str | None, found: list[DefinedFunction]) -> None:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append(defined_function(node, f"{prefix}.{node.name}", owner))
        elif isinstance(node, ast.ClassDef):
            dotted = f"{prefix}.{node.name}"
            _walk(node.body, dotted, dotted, found)
        elif isinstance(node, (ast.If, ast.Try)):
            # definitions under a module-level guard (`if TYPE_CHECKING`, version checks, try/except)
            for block in _blocks(node):
                _walk(block, prefix, owner, found)


def _blocks(node: ast.If | ast.Try) -> list[list[ast.stmt]]:
    if isinstance(node, ast.If):
        return [node.body, node.orelse]
    return [node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody]


def defined_function(node: ast.FunctionDef | ast.AsyncFunctionDef, dotted: str, owner: str | None) -> DefinedFunction:
    """One function or method as its callers bind to it."""
    kind: DefKind = "method" if owner is not None else "function"
    abstract = False
    strings = tuple(
        (k.arg, k.value.value)
        for d in node.decorator_list if isinstance(d, ast.Call)
        for k in d.keywords if k.arg and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)
    )  # fmt: skip
    for decorator in node.decorator_list:
        name = _last_name(decorator)
        if name in _DECORATOR_KINDS and owner is not None:
            kind = _DECORATOR_KINDS[name]
        elif name in ("abstractmethod", "abstractproperty"):
            abstract = True
    site = Site(node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
    returns = _return_arities(node) if owner is not None else ()  # only a method's return is unpacked by its caller
    return DefinedFunction(dotted, owner, _params(node.args), kind, site, returns, abstract, strings)


def _last_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def _params(args: ast.arguments) -> tuple[DefParam, ...]:
    positional = [*args.posonlyargs, *args.args]
    first_default = len(positional) - len(args.defaults)
    params: list[DefParam] = []
    for i, arg in enumerate(positional):
        kind: DefParamKind = "positional-only" if i < len(args.posonlyargs) else "positional-or-keyword"
        params.append(DefParam(arg.arg, kind, i >= first_default))
    if args.vararg is not None:
        params.append(DefParam(args.vararg.arg, "var-positional"))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        params.append(DefParam(arg.arg, "keyword-only", default is not None))
    if args.kwarg is not None:
        params.append(DefParam(args.kwarg.arg, "var-keyword"))
    return tuple(params)


def _return_arities(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int | None, ...]:
    """The arity of each value-returning `return` of this function's own body (not of nested
    functions or classes): a tuple display's length, else None (not known statically).
    A `return` is a statement: only statement lists are walked, never expressions."""
    arities: list[int | None] = []
    blocks: list[list[ast.stmt]] = [node.body]
    while blocks:
        for statement in blocks.pop():
            if isinstance(statement, ast.Return):
                value = statement.value
                if value is None:
                    continue
                starred = isinstance(value, ast.Tuple) and any(isinstance(e, ast.Starred) for e in value.elts)
                arities.append(len(value.elts) if isinstance(value, ast.Tuple) and not starred else None)
            elif isinstance(statement, (ast.If, ast.For, ast.AsyncFor, ast.While)):
                blocks += [statement.body, statement.orelse]
            elif isinstance(statement, (ast.With, ast.AsyncWith)):
                blocks.append(statement.body)
            elif isinstance(statement, ast.Try) or type(statement).__name__ == "TryStar":
                tried: ast.Try = statement  # type: ignore[assignment]  # TryStar (3.11+) has the same fields
                blocks += [tried.body, tried.orelse, tried.finalbody, *(h.body for h in tried.handlers)]
            elif isinstance(statement, ast.Match):
                blocks += [case.body for case in statement.cases]
    return tuple(arities)


def replacements(tree: ast.Module, module: str, source: str) -> tuple[Replacement, ...]:
    """Every place the module puts one of its functions where a provider object's attribute
    was (`X.m = f`, `X.m = types.MethodType(f, Y)`, `setattr(X, "m", f)`, `patch.object(X, "m", f)`),
    anywhere in the file: patches are often installed inside functions."""
    functions = {n.name: f"{module}.{n.name}" for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if not functions or not any(name in source for name in ("MethodType", "setattr", "patch")) and not re.search(
        r"=\s*(?:" + "|".join(map(re.escape, functions)) + r")\s*$", source, re.M
    ):
        return ()  # most files install no patch: no second walk of their tree
    names = module_names(tree, module)
    names.update(_named_by_strings(tree, names))
    guards = _hasattr_guards(tree)
    found: list[Replacement] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            patched = _patched_by_name(node, functions)
            if patched is not None:
                found.append(patched)
                continue
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute):
            target = node.targets[0]
            assert isinstance(target, ast.Attribute)
            replacement = _replacing(node.value, functions)
            if replacement is not None:
                function, assigned = replacement
                guard = guards.get((id(node), target.attr))
                found.append(Replacement(target.attr, function, _dotted(target.value, names), assigned, assigned == "method-type", _site(node), guard=guard))
        elif isinstance(node, ast.Call) and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            called = dotted_text(node.func)
            if called == "setattr" and len(node.args) == 3:
                value: ast.expr | None = node.args[2]
                via: ReplacementVia = "setattr"
            elif called is not None and (called == "patch.object" or called.endswith(".patch.object")):
                value = node.args[2] if len(node.args) >= 3 else next((k.value for k in node.keywords if k.arg == "new"), None)
                via = "patch"
            else:
                continue
            replacement = _replacing(value, functions) if value is not None else None
            if replacement is not None:
                function, how = replacement
                bound = how == "method-type"
                guard = guards.get((id(node), node.args[1].value))
                found.append(Replacement(
                    node.args[1].value, function, _dotted(node.args[0], names), via if not bound else how, bound, _site(node), guard=guard,
                ))  # fmt: skip
    return tuple(sorted(found, key=lambda r: (r.site.line, r.site.column)))


def _patched_by_name(node: ast.Call, functions: dict[str, str]) -> Replacement | None:
    """`mock.patch("pkg.mod.Class.name", f)` / `patch("...", new=f)`: the object named by the
    string, its last part replaced by the module's function."""
    called = dotted_text(node.func) or ""
    if called.rpartition(".")[2] != "patch" or called.endswith("dict"):
        return None
    target = node.args[0].value  # type: ignore[attr-defined]  # a str constant (the caller checks)
    value = node.args[1] if len(node.args) >= 2 else next((k.value for k in node.keywords if k.arg == "new"), None)
    owner, _, attribute = target.rpartition(".")
    replacement = _replacing(value, functions) if value is not None and owner else None
    if replacement is None:
        return None
    function, how = replacement
    return Replacement(attribute, function, owner, "patch" if how != "method-type" else how, how == "method-type", _site(node))


def _named_by_strings(tree: ast.Module, names: dict[str, str]) -> dict[str, str]:
    """Names the module binds to provider objects it reaches through strings:
    `mod = importlib.import_module("pkg.mod")`, `cls = getattr(mod, "Class")` (in any function)."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        value = node.value
        if not isinstance(value, ast.Call) or not value.args:
            continue
        called = (dotted_text(value.func) or "").rpartition(".")[2]
        first = value.args[0]
        if called == "import_module" and isinstance(first, ast.Constant) and isinstance(first.value, str):
            found[node.targets[0].id] = first.value
        elif called == "getattr" and len(value.args) == 2 and isinstance(value.args[1], ast.Constant) and isinstance(value.args[1].value, str):
            base = _dotted(first, {**names, **found})
            if base is not None:
                found[node.targets[0].id] = f"{base}.{value.args[1].value}"
    return found


def _hasattr_guards(tree: ast.Module) -> dict[tuple[int, str], str]:
    """(id of a statement or call, attribute) -> the test of an `if hasattr(obj, "attribute")`
    that encloses it: the code it guards is skipped where the attribute is gone."""
    found: dict[tuple[int, str], str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        tested = [
            c.args[1].value for c in ast.walk(node.test)
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == "hasattr" and len(c.args) == 2
            and isinstance(c.args[1], ast.Constant) and isinstance(c.args[1].value, str)
        ]  # fmt: skip
        if not tested:
            continue
        text = ast.unparse(node.test)
        for inner in (n for statement in node.body for n in ast.walk(statement)):
            for attribute in tested:
                found.setdefault((id(inner), attribute), text)
    return found


def _replacing(value: ast.expr, functions: dict[str, str]) -> tuple[str, ReplacementVia] | None:
    """(the module function put in place, how) when `value` is one of them, or MethodType of one."""
    if isinstance(value, ast.Name) and value.id in functions:
        return functions[value.id], "assign"
    if isinstance(value, ast.Call) and (dotted_text(value.func) or "").rpartition(".")[2] == "MethodType" and len(value.args) == 2:
        func = value.args[0]
        if isinstance(func, ast.Name) and func.id in functions:
            return functions[func.id], "method-type"
    return None


def _dotted(node: ast.expr, names: dict[str, str]) -> str | None:
    text = dotted_text(node)
    if text is None:
        return None
    head, _, rest = text.partition(".")
    base = names.get(head)
    if base is None:
        return None
    return f"{base}.{rest}" if rest else base


def _site(node: ast.AST) -> Site:
    return Site(node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
