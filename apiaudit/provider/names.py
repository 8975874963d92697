"""Names provider files bind, read from their text without Griffe: the release's map of
top-level definitions (where did a name move), and what the `.py` behind a `.pyi` stub binds.

The loader finds and reads the files; these answers are the index's (and cached with it).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator

from apiaudit.infra.astutil import dotted_text
from apiaudit.infra.frozen import record

# Line starts are matched as "\n" on the text with one prepended, not as `^` under re.M: the
# literal lets the regex engine skip ahead (3x faster over a release's ~1,400 files).
_TOP_LEVEL = re.compile(r"\n(?:class\s+(\w+)|(?:async\s+)?def\s+(\w+)|(\w+)\s*(?::[^=\n]+)?=(?!=))")


def definitions_table(sources: Iterable[tuple[str, str]]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Every top-level name of the given (dotted module, text) -> the dotted names defining it
    (and `<module>LEAF` -> the modules whose last part is LEAF, `<class>NAME` -> the `class NAME`
    statements among them).

    A line scan (column 0: `class X`, `def X`, `X =`, `X: T`), so it costs a read per file,
    not a parse.
    """
    table: dict[str, list[str]] = {}
    for module, text in sources:
        table.setdefault(f"<module>{module.rpartition('.')[2]}", []).append(module)
        found = _top_level(text)
        for name in dict.fromkeys(name for _, name in found):
            table.setdefault(name, []).append(module + "." + name)
        for name in dict.fromkeys(cls for cls, _ in found if cls):
            table.setdefault(f"<class>{name}", []).append(module + "." + name)
    return tuple(sorted((k, tuple(v)) for k, v in table.items()))


def top_level_classes(text: str) -> frozenset[str]:
    """The names of a module's top-level `class` statements, as `definitions_table` reads them
    (its `<class>NAME` entries for this module): one file's question without the whole map."""
    return frozenset(cls for cls, _ in _top_level(text) if cls)


def _top_level(text: str) -> list[tuple[str, str]]:
    """(the class name or "", the name) of each top-level definition of the text, in order."""
    return [(cls, cls or func or name) for cls, func, name in _TOP_LEVEL.findall("\n" + text)]


_CLASS = re.compile(r"\n[ \t]*class[ \t]+(\w+)[ \t]*\(([^)]*)\)")  # "\n": see _TOP_LEVEL
_BASE = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(?:\[.*)?$", re.S)


def class_bases_table(sources: Iterable[tuple[str, str]]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The last name of each base class as written -> the dotted classes (module.Class, nested
    classes by their own name) whose `class` statement names it: where to look for subclasses.
    A line scan like `definitions_table`; a candidate is confirmed by its MRO before it counts."""
    table: dict[str, list[str]] = {}
    for module, text in sources:
        for match in _CLASS.finditer("\n" + text):
            for part in match.group(2).split(","):
                base = _BASE.match(part)
                if base is None or "=" in part:
                    continue  # a keyword (metaclass=...), or not a name
                table.setdefault(base.group(1).rpartition(".")[2], []).append(f"{module}.{match.group(1)}")
    return tuple(sorted((k, tuple(dict.fromkeys(v))) for k, v in table.items()))


def plain_reexports(text: str, module: str, is_package: bool) -> dict[str, str]:
    """name -> the dotted name it is bound to in the module `module` (its text), for each name one
    unconditional top-level `from X import name [as name]` binds and nothing else at top level
    can: no other statement binding it, no import of it under a condition. Empty when a star
    import or a module `__getattr__` may bind any name, or the text does not parse (the caller
    asks Griffe)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return {}
    found: dict[str, str | None] = {}  # None: bound otherwise too

    def clash(name: str) -> None:
        found[name] = None

    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            source = _absolute(node, module if is_package else module.rpartition(".")[0])
            for alias in node.names:
                if alias.name == "*":
                    return {}
                bound = alias.asname or alias.name
                found[bound] = f"{source}.{alias.name}" if source is not None and bound not in found else None
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == "__getattr__":
                return {}
            clash(node.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                clash(alias.asname or alias.name.partition(".")[0])
        elif not isinstance(node, ast.Expr):
            # assigned, or imported under a condition (`try:`, `if:`): Griffe decides
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load):
                    clash(sub.id)
                elif isinstance(sub, ast.alias):
                    clash(sub.asname or sub.name.partition(".")[0])
    return {name: target for name, target in found.items() if target is not None}


@record
class RuntimeBindings:
    """What a `.py` beside its `.pyi` binds, read once: names, and whether it hides any."""

    names: frozenset[str]
    opaque: bool  # a star import, an unreadable file, or a run-time namespace


def runtime_bindings(text: str | None) -> RuntimeBindings:
    """What the module text binds at top level or anywhere by assignment (None: unreadable)."""
    if text is None:
        return RuntimeBindings(frozenset(), True)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return RuntimeBindings(frozenset(), True)
    from apiaudit.provider.extension import (
        dynamic_namespace,  # Griffe's side: only when a stub is read
    )

    names: set[str] = set()
    opaque = dynamic_namespace(tree) is not None
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    opaque = True
                else:
                    names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return RuntimeBindings(frozenset(names), opaque)


MAX_CONSTANT_HOPS = 4  # `from ._version import X` re-exported through a few modules


def module_constant(text: str | None, name: str, package: str) -> tuple[str, str] | None:
    """What `name` is bound to at the top level of a module when its imports work:
    ("literal", repr of a literal) or ("import", dotted path it is imported from); None when
    it is bound otherwise, or under an `if`/loop (the release would not decide it alone).

    A `try:` body counts and its handlers do not (`except ImportError: X = (0, 0, "dev")`
    runs only when the import fails); `if TYPE_CHECKING:` never runs. `package` resolves a
    relative import (the module's own package)."""
    if text is None:
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    found: tuple[str, str] | None = None
    for stmt, compound in _running(tree.body):
        if compound:
            if name in _bound_names(stmt):
                found = None  # bound under a test or a loop: the release alone does not decide it
        elif isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                if (alias.asname or alias.name) == name and alias.name != "*":
                    base = _absolute(stmt, package)
                    found = ("import", f"{base}.{alias.name}") if base else None
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if stmt.value is None or not any(isinstance(t, ast.Name) and t.id == name for t in targets):
                continue
            try:
                found = ("literal", repr(ast.literal_eval(stmt.value)))
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                found = None
        elif name in _bound_names(stmt):
            found = None
    return found


def _running(body: list[ast.stmt]) -> Iterator[tuple[ast.stmt, bool]]:
    """(statement, compound) for the top-level statements that run when nothing fails; a
    compound one (an `if`, a loop, a `with`) is handed on whole, for the names it binds."""
    for stmt in body:
        if isinstance(stmt, ast.Try):
            yield from _running(stmt.body + stmt.orelse + stmt.finalbody)
        elif isinstance(stmt, ast.If) and (dotted_text(stmt.test) or "").rpartition(".")[2] == "TYPE_CHECKING":
            yield from _running(stmt.orelse)
        else:
            yield stmt, isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.AsyncFor, ast.AsyncWith, ast.Match))


def _bound_names(node: ast.stmt) -> set[str]:
    out: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            out.add(sub.id)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in sub.names)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(sub.name)
    return out


def _absolute(stmt: ast.ImportFrom, package: str) -> str | None:
    if not stmt.level:
        return stmt.module
    parts = package.split(".")
    if stmt.level - 1 > len(parts) - 1 and stmt.level > 1:
        return None
    base = parts[: len(parts) - (stmt.level - 1)] if stmt.level > 1 else parts
    return ".".join(base + ([stmt.module] if stmt.module else []))
