"""Which branch of a provider `if` chain a node sits in: the configuration's choice that makes
a line run. Read by `callsites.py` (a provider call of an override) and `liveness.py` (an
import of a module), both below the index.
"""

from __future__ import annotations

import ast


def parent_map(root: ast.AST) -> dict[int, ast.AST]:
    """id(node) -> its parent, under `root`."""
    parents: dict[int, ast.AST] = {}
    for parent in ast.walk(root):
        for child in ast.iter_child_nodes(parent):
            parents[id(child)] = parent
    return parents


def branch_guard(node: ast.AST, receiver: ast.expr | None, parents: dict[int, ast.AST], lines: list[str], file: str) -> str | None:
    """The innermost provider `if` whose branch holds `node`, in a chain with another branch
    (`if/else`, `if/elif`), whose test does not name `receiver` as a whole (`if self.connector is
    not None` is the object's own presence, not a choice of configuration): its text and place.
    A plain `if` without another branch is not counted (the feature the consumer plugs in turns
    it on); a chain with alternatives runs one of them, as the configuration says."""
    child: ast.AST = node
    parent = parents.get(id(node))
    while parent is not None and not isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        if isinstance(parent, ast.If) and child is not parent.test:
            in_else = any(child is s for s in parent.orelse)
            above = parents.get(id(parent))
            is_elif = isinstance(above, ast.If) and any(parent is s for s in above.orelse)
            if (in_else or parent.orelse or is_elif) and not _names(parent.test, receiver):
                text = lines[parent.lineno - 1].strip() if parent.lineno <= len(lines) else "if ..."
                return f"{'else of ' if in_else else ''}{text} ({file}:{parent.lineno})"
        child, parent = parent, parents.get(id(parent))
    return None


def _names(test: ast.expr, receiver: ast.expr | None) -> bool:
    """Whether `test` uses `receiver` as a whole (`x is not None`, `isinstance(x, C)`), not
    only as the root of another attribute (`self.is_fsdp_enabled` for a call on `self`)."""
    if receiver is None:
        return False
    wanted = ast.dump(receiver)
    parents = parent_map(test)
    return any(
        ast.dump(n) == wanted and not isinstance(parents.get(id(n)), ast.Attribute) for n in ast.walk(test) if type(n) is type(receiver)
    )
