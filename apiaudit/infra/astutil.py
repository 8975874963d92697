"""Small readings of `ast` nodes that every stage reading source needs (never executing it)."""

from __future__ import annotations

import ast
import re
from collections import deque
from typing import Iterator


def attribute_store_text(name: str) -> str:
    """A regular expression for the text of a store of the attribute `name` on some object, as one
    line shows it: `x.name = v`, `x.name: T = v`, `x.name += v` (any augmented operator), an item
    of a target (`x.name, y = v`), a loop's target (`for x.name in`); never `x.name == v`. A cheap
    test of a file before its tree is read (a few reads match too: the tree tells)."""
    name = re.escape(name)
    return (
        rf"\.{name}\s*(?::[^=\n]*)?(?:[-+*/%@&|^]|//|<<|>>|\*\*)?=(?!=)"
        rf"|\.{name}\s*[,)\]][^=\n]*=(?!=)"
        rf"|\bfor\b[^\n]*\.{name}\s+in\b"
    )


def dotted_text(node: ast.AST) -> str | None:
    """`a.b.C` as text for a Name/Attribute chain; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def named_path(node: ast.AST, names: dict[str, str]) -> str | None:
    """The dotted path a Name/Attribute chain stands for where its first name means `names[it]`
    (a module's imports and definitions: `module_names`); None for anything else."""
    text = dotted_text(node)
    if text is None:
        return None
    head, _, rest = text.partition(".")
    return None if head not in names else f"{names[head]}.{rest}" if rest else names[head]


def union_members(node: ast.AST) -> list[ast.AST]:
    """The members an annotation names: `A | B`, `Optional[A]`, `Union[A, B]` (None left out)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return union_members(node.left) + union_members(node.right)
    if isinstance(node, ast.Constant) and node.value is None:
        return []
    if isinstance(node, ast.Subscript):
        tail = (dotted_text(node.value) or "").rsplit(".", 1)[-1]
        if tail == "Optional":
            return union_members(node.slice)
        if tail == "Union":
            elements = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return [member for element in elements for member in union_members(element)]
    return [node]


def descendants(node: ast.AST):
    """`node` and every node under it, in no promised order: `ast.walk` (breadth first) costs
    about twice as much, and a search for any or every node of a kind needs no order."""
    todo = [node]
    pop, push, is_node = todo.pop, todo.append, ast.AST
    while todo:
        current = pop()
        yield current
        for name in current._fields:
            value = getattr(current, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, is_node):
                        push(item)
            elif isinstance(value, is_node):
                push(value)


def breadth_first(node: ast.AST) -> Iterator[ast.AST]:
    """`ast.walk(node)`, in its order, without its generator over `ast.iter_fields` for every node
    (where the order matters: what a walk collects in it is reported so)."""
    queue = [node]
    for current in queue:  # a list iterated while it grows: a queue that is never popped
        yield current
        for name in current._fields:
            value = getattr(current, name, None)
            if isinstance(value, ast.AST):
                queue.append(value)
            elif type(value) is list:
                queue += [item for item in value if isinstance(item, ast.AST)]


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """`list(ast.iter_child_nodes(node))`, in its order, without a generator over `ast.iter_fields`
    (a walk that reads every expression asks it for most of them)."""
    children: list[ast.AST] = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            children.append(value)
        elif isinstance(value, list):
            children += [item for item in value if isinstance(item, ast.AST)]
    return children


def never_rebound(body: list[ast.stmt], names: set[str] | frozenset[str]) -> frozenset[str]:
    """Those of `names` (a function's parameters) that nothing in `body` binds again: a store, a
    `del`, an import, `global`/`nonlocal`, an `except ... as`, a match capture, a nested scope's own
    binding of the name (a parameter, a `def` or `class` of that name) all count. A name kept
    holds what the caller passed wherever the function reads it."""
    kept = set(names)
    if not kept:
        return frozenset()
    for sub in (sub for stmt in body for sub in descendants(stmt)):
        if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load):
            kept.discard(sub.id)
        elif isinstance(sub, ast.arg):
            kept.discard(sub.arg)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            kept.discard(sub.name)
        elif isinstance(sub, (ast.Global, ast.Nonlocal)):
            kept.difference_update(sub.names)
        elif isinstance(sub, ast.ExceptHandler) and sub.name:
            kept.discard(sub.name)
        elif isinstance(sub, ast.alias):
            kept.discard(sub.asname or sub.name.partition(".")[0])
        elif isinstance(sub, (ast.MatchAs, ast.MatchStar)) and sub.name:
            kept.discard(sub.name)
        elif isinstance(sub, ast.MatchMapping) and sub.rest:
            kept.discard(sub.rest)
    return frozenset(kept)


_STATEMENT_LISTS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})


def statements_breadth_first(node: ast.AST):
    """`node` and the statements under it (and the except/case clauses holding some) in
    `ast.walk`'s order: expressions hold no statements, so leaving them out keeps the others'
    order, at a fraction of the cost where only statements matter (assignments, definitions)."""
    queue = deque([node])
    while queue:
        current = queue.popleft()
        yield current
        for name in current._fields:
            if name in _STATEMENT_LISTS:
                value = getattr(current, name, None)
                if type(value) is list:
                    queue.extend(value)


def lone_carriage_return(text: str) -> bool:
    """Whether a "\r" not followed by "\n" ends a line: the parser counts it as a line end, so
    line numbers read from `text.split("\n")` or a count of "\n" would not match its own."""
    return "\r" in text and "\r" in text.replace("\r\n", "\n")


def own_statements(body: list[ast.stmt]):
    """The statements of a body, under its `if`/`for`/`with`/`try`/`match` blocks too, but not
    inside the functions and classes it defines (those statements themselves are given)."""
    stack: list = list(body)
    while stack:
        stmt = stack.pop()
        yield stmt
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for part in ("body", "orelse", "finalbody", "handlers", "cases"):
                stack.extend(getattr(stmt, part, None) or [])


def assignment_targets(stmt: ast.AST) -> list[ast.expr]:
    """What a statement stores into or deletes (its targets; none for any other statement).
    With `statements_breadth_first`, every attribute store but a comprehension's `for self.x in`."""
    if isinstance(stmt, (ast.Assign, ast.Delete)):
        return stmt.targets
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
        return [stmt.target]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [item.optional_vars for item in stmt.items if item.optional_vars is not None]
    return []


def absolute_import(package: str, name: str | None, level: int) -> str:
    """The module `from <level dots><name> import ...` names, inside `package` (the importing
    module's package: itself for an `__init__`)."""
    if level == 0:
        return name or ""
    parts = package.split(".") if package else []
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts + ([name] if name else []))


def unparse(node: ast.AST) -> str:
    """`ast.unparse(node)`, the same text, written directly for the forms a call site takes most
    often (names, attributes, subscripts and calls of them with such arguments): the general
    unparser costs the consumer stage a twentieth of its time, spent mostly on these."""
    text = _plain_text(node)
    return ast.unparse(node) if text is None else text


# Constants whose text is their repr in `ast.unparse` (floats and `...` are not; strings only
# when plain, below).
_REPR_CONSTANTS = (int, type(None))


def _plain_text(node: ast.AST) -> str | None:
    """The text of a name, attribute, subscript or call whose every part is one too (or a
    starred one, a keyword of one, an int, a bool, None or a plain string); None for any other form."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        value = _plain_text(node.value)
        return None if value is None else f"{value}.{node.attr}"
    if isinstance(node, ast.Subscript):
        value, key = _plain_text(node.value), _argument_text(node.slice)
        return None if value is None or key is None else f"{value}[{key}]"
    if not isinstance(node, ast.Call):
        return None
    func = _plain_text(node.func)
    if func is None:
        return None
    parts: list[str] = []
    for arg in node.args:
        text = _plain_text(arg.value) if isinstance(arg, ast.Starred) else _argument_text(arg)
        if text is None:
            return None
        parts.append(f"*{text}" if isinstance(arg, ast.Starred) else text)
    for keyword in node.keywords:
        text = _plain_text(keyword.value) if keyword.arg is None else _argument_text(keyword.value)
        if text is None:
            return None
        parts.append(f"**{text}" if keyword.arg is None else f"{keyword.arg}={text}")
    return f"{func}({', '.join(parts)})"


def _argument_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and node.kind is None:
        value = node.value
        if isinstance(value, _REPR_CONSTANTS):
            return repr(value)
        # A string with nothing to escape or quote around is written in single quotes.
        if isinstance(value, str) and value.isprintable() and not any(c in value for c in "\\'\""):
            return f"'{value}'"
        return None
    return _plain_text(node)


def module_names(tree: ast.Module, module: str) -> dict[str, str]:
    """A module's own top-level names -> the dotted paths they stand for: its imports (also under
    a module-level `if`/`try`; a relative one made absolute from `module`) and the classes and
    functions it defines."""
    names: dict[str, str] = {}
    package = module.rpartition(".")[0]
    statements: list[ast.stmt] = list(tree.body)
    for node in statements:
        if isinstance(node, ast.If):
            statements.extend(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            statements.extend(node.body + [s for h in node.handlers for s in h.body] + node.orelse)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    names.setdefault(alias.name.split(".")[0], alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join([*parts, *([node.module] if node.module else [])])
            for alias in node.names:
                if alias.name != "*":
                    names[alias.asname or alias.name] = f"{base}.{alias.name}"
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names[node.name] = f"{module}.{node.name}"
    return names


def names_anywhere(tree: ast.Module, module: str) -> dict[str, str]:
    """`module_names`, and the names a function imports for itself (a registration often imports
    what it registers where it calls it), unless two imports bind one name differently."""
    names = module_names(tree, module)
    nested: dict[str, str | None] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for name, dotted in module_names(ast.Module(body=node.body, type_ignores=[]), module).items():
                if not dotted.startswith(f"{module}."):  # an import, not a def of the function's own
                    nested[name] = dotted if nested.get(name, dotted) == dotted else None
    for name, bound in nested.items():
        if bound is not None:
            names.setdefault(name, bound)
    return names
