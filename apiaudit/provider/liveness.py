"""Whether a provider module runs at all in the usual configuration: the imports of it the
release makes, and the guards they sit behind.

A provider call of a consumer's override is a proof only where its line runs. A module that the
release imports only in one branch of an `if/else` chain (`if self.use_v2_model_runner: from
.gpu.model_runner import GPUModelRunner` / `else: from .gpu_model_runner import ...`), itself
or through modules that import it at their top level, runs only when the configuration picks
that branch: its calls make conditional findings, with the guard's text. Looked up only for a
call that would make a finding, and kept with the index.
"""

from __future__ import annotations

import ast
import re
from apiaudit.infra.astutil import absolute_import
from apiaudit.provider.branches import branch_guard, parent_map
from apiaudit.provider.queries import ReleaseFiles

_DEPTH = 4  # importers followed up the chain; beyond, the module counts as run
# a relative import naming the module's leaf (written as \0): `from .leaf import`, `from . import a, leaf`
_RELATIVE = re.compile(r"from\s+\.+[\w.]*\0[\w.]*\s+import|from\s+\.+[\w.]*\s+import\s[^\n]*\0")


def import_guard(index: ReleaseFiles, module: str, depth: int = _DEPTH) -> str | None:
    """The guard every import of `module` in the release sits behind (directly or through the
    modules importing it at their top level), or None when one import runs unguarded, or none
    imports it (an entry point: something outside runs it)."""
    leaf = module.rpartition(".")[2]
    guards: list[str] = []
    for importer, text in index.loader.source_files():
        if importer == module or leaf not in text:
            continue
        if module not in text and not _RELATIVE.search(text.replace(leaf, "\0")):
            continue  # neither an absolute import of it nor a relative one naming its leaf
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            continue
        parents: dict[int, ast.AST] | None = None
        path = index.loader.module_file(importer)
        package = (
            importer
            if path is not None and path.name == "__init__.py"
            else importer.rpartition(".")[0]
        )
        file = (
            index.loader.relative(path)
            if path is not None
            else importer.replace(".", "/") + ".py"
        )
        for node in ast.walk(tree):
            if not _imports(node, module, package):
                continue
            if parents is None:
                parents = parent_map(tree)
            where = _context(node, parents)
            if where == "type-checking":
                continue
            guard = branch_guard(node, None, parents, text.splitlines(), file)
            if guard is None and where == "function":
                guard = _function_guard(node, parents, text.splitlines(), file)
            if guard is not None:
                guards.append(guard)
                continue
            if where == "function" or depth <= 0:
                return None  # imported when a function runs, with no choice on the way: run
            above = import_guard(index, importer, depth - 1)
            if above is None:
                return None
            guards.append(above)
    return guards[0] if guards else None


def _imports(node: ast.AST, module: str, package: str) -> bool:
    if isinstance(node, ast.Import):
        return any(
            alias.name == module or alias.name.startswith(module + ".")
            for alias in node.names
        )
    if isinstance(node, ast.ImportFrom):
        base = absolute_import(package, node.module, node.level)
        if base == module or base.startswith(module + "."):
            return True
        return any(f"{base}.{alias.name}" == module for alias in node.names)
    return False


def _context(node: ast.AST, parents: dict[int, ast.AST]) -> str:
    """'type-checking' (under `if TYPE_CHECKING:`), 'function' (inside a def) or 'module'."""
    where = "module"
    child, parent = node, parents.get(id(node))
    while parent is not None:
        if (
            isinstance(parent, ast.If)
            and any(child is s for s in parent.body)
            and "TYPE_CHECKING" in ast.dump(parent.test)
        ):
            return "type-checking"
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
            where = "function"
        child, parent = parent, parents.get(id(parent))
    return where


def _function_guard(
    node: ast.AST, parents: dict[int, ast.AST], lines: list[str], file: str
) -> str | None:
    """For an import inside a function: a guard on the way out of the nested blocks above the
    def (the def itself is a branch of a chain at module level)."""
    parent = parents.get(id(node))
    while parent is not None and not isinstance(
        parent, (ast.FunctionDef, ast.AsyncFunctionDef)
    ):
        parent = parents.get(id(parent))
    return None if parent is None else branch_guard(parent, None, parents, lines, file)
