"""Where the consumer puts an object of one of its own classes: read from its text, on demand.

Asked only at a finding, when a member the annotated provider class lacks is defined by a
consumer class of no provider base: that class can stand in for the annotation only where its
objects are seen going there. A class that merely defines a member of the same name is no
evidence (a dataclass of the consumer's own with a request's field names).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from apiaudit.checks.context import CheckContext
from apiaudit.consumer import parse_quietly
from apiaudit.consumer.records import ConsumerFile


def passed_as(ctx: CheckContext, dotted: str, holder: str, declared: str = "") -> str | None:
    """`path:line` of a place the consumer puts an object of its class `dotted` under the name
    `holder`: a keyword argument or an assignment (`holder=Cls(...)`, `self.holder = Cls(...)`),
    a call of a consumer function whose parameter `holder` it fills positionally with one, or
    the class passing itself (`self`) there; or where it holds one in a name it annotates with
    the provider class `declared` (`engine: EngineClient | None`, then `engine = Cls(...)`).
    None: nowhere the text shows."""
    short = dotted.rpartition(".")[2]
    if declared:
        held = _held_as_declared(ctx, short, declared.rpartition(".")[2])
        if held is not None:
            return held
    files = [f for f in ctx.files if holder in f.source]
    positions = dict(_parameter_positions(ctx, files, holder))
    for file in files:
        if short not in file.source and "self" not in file.source:
            continue
        tree = consumer_tree(ctx, file)
        if tree is None:
            continue
        for node, inside in _walk_classes(tree, None):
            line = _puts(node, inside, short, dotted.rpartition(".")[0] == file.module, holder, positions)
            if line is not None:
                return f"{file.path}:{line}"
    return None


def _held_as_declared(ctx: CheckContext, short: str, declared: str) -> str | None:
    """`path:line` of `name = Cls(...)` in a function that annotates `name` with the declared
    class (a parameter or a variable annotation naming it)."""
    for file in ctx.files:
        if short not in file.source or declared not in file.source:
            continue
        tree = consumer_tree(ctx, file)
        if tree is None:
            continue
        for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            annotated = {a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs) if _names(a.annotation, declared)}
            annotated |= {n.target.id for n in ast.walk(function) if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and _names(n.annotation, declared)}
            for node in ast.walk(function):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and called_name(node.value) == short:
                    if any(isinstance(t, ast.Name) and t.id in annotated for t in node.targets):
                        return f"{file.path}:{node.lineno}"
    return None


def _names(annotation: ast.expr | None, declared: str) -> bool:
    """Whether an annotation names the class (`EngineClient`, `EngineClient | None`, `"EngineClient"`)."""
    if annotation is None:
        return False
    text = annotation.value if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str) else ast.unparse(annotation)
    return declared in text.replace(".", " ").replace("|", " ").replace("[", " ").replace("]", " ").split()


def _puts(node: ast.AST, inside: str | None, short: str, same_module: bool, holder: str, positions: dict[str, int]) -> int | None:
    def is_one(value: ast.expr) -> bool:
        if isinstance(value, ast.Call):
            func = value.func
            return (isinstance(func, ast.Name) and func.id == short) or (isinstance(func, ast.Attribute) and func.attr == short)
        return same_module and inside == short and isinstance(value, ast.Name) and value.id == "self"

    if isinstance(node, ast.Call):
        if any(k.arg == holder and is_one(k.value) for k in node.keywords):
            return node.lineno
        called = node.func.id if isinstance(node.func, ast.Name) else node.func.attr if isinstance(node.func, ast.Attribute) else None
        at = positions.get(called or "")
        if at is not None and at < len(node.args) and is_one(node.args[at]):
            return node.lineno
    elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and is_one(node.value):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            name = target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) else None
            if name == holder:
                return node.lineno
    return None


def _parameter_positions(ctx: CheckContext, files: list[ConsumerFile], holder: str) -> Iterator[tuple[str, int]]:
    """(function name, the position a caller fills `holder` at) for each consumer function or
    method with a parameter of that name (`self`/`cls` not counted for a method)."""
    for file in files:
        tree = consumer_tree(ctx, file)
        if tree is None:
            continue
        for node, inside in _walk_classes(tree, None):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            params = [*node.args.posonlyargs, *node.args.args]
            names = [p.arg for p in params]
            if holder not in names:
                continue
            at = names.index(holder)
            if inside is not None and names and names[0] in ("self", "cls"):
                at -= 1
            yield node.name, at


def _walk_classes(tree: ast.AST, inside: str | None) -> Iterator[tuple[ast.AST, str | None]]:
    """Every node, with the name of the class whose body (at any depth) holds it."""
    for child in ast.iter_child_nodes(tree):
        yield child, inside
        yield from _walk_classes(child, child.name if isinstance(child, ast.ClassDef) else inside)


def consumer_tree(ctx: CheckContext, file: ConsumerFile) -> ast.AST | None:
    if file.path not in ctx.trees:
        try:
            ctx.trees[file.path] = parse_quietly(file.source, file.path)
        except (SyntaxError, ValueError):
            ctx.trees[file.path] = None
    tree = ctx.trees[file.path]
    return tree if isinstance(tree, ast.AST) else None


def registered_classes(ctx: CheckContext, registrar: str) -> frozenset[str]:
    """The consumer classes an instance of which the consumer passes to a method named
    `registrar` (`manager.register(MyPlugin(config))`, or a name assigned one first), by dotted
    path. Memoised per consumer."""
    memo = ctx.registered.get(registrar)
    if memo is not None:
        return memo
    by_short: dict[str, list[str]] = {}
    for dotted in ctx.classes:
        by_short.setdefault(dotted.rpartition(".")[2], []).append(dotted)
    found: set[str] = set()
    needle = f".{registrar}("
    for file in ctx.files:
        if needle not in file.source:
            continue
        tree = consumer_tree(ctx, file)
        if tree is None:
            continue
        made: dict[str, str] = {}  # local name -> the class a call assigned it from
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                called = called_name(node.value)
                for target in node.targets:
                    if isinstance(target, ast.Name) and called:
                        made[target.id] = called
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == registrar and node.args):
                continue
            arg = node.args[0]
            short = called_name(arg) if isinstance(arg, ast.Call) else made.get(arg.id) if isinstance(arg, ast.Name) else None
            candidates = by_short.get(short or "", [])
            own = [c for c in candidates if c.rpartition(".")[0] == file.module]
            found.update(own or candidates)
    result = ctx.registered[registrar] = frozenset(found)
    return result


def called_name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
