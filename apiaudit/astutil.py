"""Small readings of `ast` nodes that every stage reading source needs (never executing it)."""

from __future__ import annotations

import ast


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


def absolute_import(package: str, name: str | None, level: int) -> str:
    """The module `from <level dots><name> import ...` names, inside `package` (the importing
    module's package: itself for an `__init__`)."""
    if level == 0:
        return name or ""
    parts = package.split(".") if package else []
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts + ([name] if name else []))
