"""Names provider files bind, read from their text without Griffe: the release's map of
top-level definitions (where did a name move), and what the `.py` behind a `.pyi` stub binds.

The loader finds and reads the files; these answers are the index's (and cached with it).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass

_TOP_LEVEL = re.compile(r"^(?:class\s+(\w+)|(?:async\s+)?def\s+(\w+)|(\w+)\s*(?::[^=\n]+)?=(?!=))", re.M)


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
        found = [(m.group(1), next(g for g in m.groups() if g)) for m in _TOP_LEVEL.finditer(text)]
        for name in dict.fromkeys(name for _, name in found):
            table.setdefault(name, []).append(module + "." + name)
        for name in dict.fromkeys(cls for cls, _ in found if cls):
            table.setdefault(f"<class>{name}", []).append(module + "." + name)
    return tuple(sorted((k, tuple(v)) for k, v in table.items()))


_CLASS = re.compile(r"^[ \t]*class[ \t]+(\w+)[ \t]*\(([^)]*)\)", re.M)
_BASE = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(?:\[.*)?$", re.S)


def class_bases_table(sources: Iterable[tuple[str, str]]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The last name of each base class as written -> the dotted classes (module.Class, nested
    classes by their own name) whose `class` statement names it: where to look for subclasses.
    A line scan like `definitions_table`; a candidate is confirmed by its MRO before it counts."""
    table: dict[str, list[str]] = {}
    for module, text in sources:
        for match in _CLASS.finditer(text):
            for part in match.group(2).split(","):
                base = _BASE.match(part)
                if base is None or "=" in part:
                    continue  # a keyword (metaclass=...), or not a name
                table.setdefault(base.group(1).rpartition(".")[2], []).append(f"{module}.{match.group(1)}")
    return tuple(sorted((k, tuple(dict.fromkeys(v))) for k, v in table.items()))


@dataclass(frozen=True)
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
