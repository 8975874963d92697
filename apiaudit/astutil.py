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
