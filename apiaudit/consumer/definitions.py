"""What a consumer file defines that the provider may call: its functions and methods, with the
parameters a caller binds to and the arity of what they return.

The provider calls an override, a plugin's `__init__` or a function put over one of its
methods with the arguments *its* call sites pass; the checks bind those calls to these
signatures (`apiaudit.checks.contracts`). Read on the same parse as the rest of the file, with
nothing resolved: which class a method overrides is the checks' question.
"""

from __future__ import annotations

import ast

from apiaudit.consumer.records import DefinedFunction, DefKind, DefParam, DefParamKind, Site

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
            found.append(_function(node, f"{prefix}.{node.name}", owner))
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


def _function(node: ast.FunctionDef | ast.AsyncFunctionDef, dotted: str, owner: str | None) -> DefinedFunction:
    kind: DefKind = "method" if owner is not None else "function"
    abstract = False
    for decorator in node.decorator_list:
        name = _last_name(decorator)
        if name in _DECORATOR_KINDS and owner is not None:
            kind = _DECORATOR_KINDS[name]
        elif name in ("abstractmethod", "abstractproperty"):
            abstract = True
    site = Site(node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
    returns = _return_arities(node) if owner is not None else ()  # only a method's return is unpacked by its caller
    return DefinedFunction(dotted, owner, _params(node.args), kind, site, returns, abstract)


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
    functions or classes): a tuple display's length, else None (not known statically)."""
    arities: list[int | None] = []
    stack: list[ast.AST] = list(node.body)
    while stack:
        current = stack.pop()
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(current, ast.Return) and current.value is not None:
            value = current.value
            starred = isinstance(value, ast.Tuple) and any(isinstance(e, ast.Starred) for e in value.elts)
            arities.append(len(value.elts) if isinstance(value, ast.Tuple) and not starred else None)
            continue
        stack.extend(ast.iter_child_nodes(current))
    return tuple(arities)
