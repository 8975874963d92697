"""Imports as the consumer stage sees them: absolute names, and the value each binds.

`module_imports` is the cheap first pass over every file (module-level import bindings,
for re-exports); `ImportContext` turns an imported dotted name into a value: a provider
symbol, a provider object re-exported by another consumer module, a constant or guard
helper another consumer module exports, or a consumer/other name.
"""

from __future__ import annotations

import ast

from apiaudit.consumer.model import ConsumerOptions, Root
from apiaudit.consumer.values import Chain, Const, ConsumerRef, ProviderVersion, Value


# The last options' name tables, built once for every file of a scan (the re-exports of a large
# consumer run to thousands of names): (re-exports, shared values, python version) -> the dicts.
_TABLES: list[tuple[tuple, tuple, tuple, dict[str, str], dict[str, Value]]] = []


def _tables(options: ConsumerOptions) -> tuple[dict[str, str], dict[str, Value]]:
    """Read-only lookup tables of `options`; the same objects for every file with the same options."""
    for reexports, shared_values, python, known_reexports, known_shared in _TABLES:
        if reexports is options.reexports and shared_values is options.shared_values and python == options.python_version:
            return known_reexports, known_shared
    reexport_table = dict(options.reexports)
    shared_table: dict[str, Value] = dict(options.shared_values)  # type: ignore[arg-type]
    # `sys.version_info` is the Python the audited code is assumed to run on.
    shared_table.setdefault("sys.version_info", Const(tuple(options.python_version)))
    _TABLES[:] = [(options.reexports, options.shared_values, options.python_version, reexport_table, shared_table)]
    return reexport_table, shared_table


class ImportContext:
    def __init__(self, module: str, is_package: bool, options: ConsumerOptions):
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.provider_tops = frozenset(options.provider_packages)
        self.reexports, self.shared = _tables(options)  # never written to

    def absolute(self, module: str | None, level: int) -> str:
        if level == 0:
            return module or ""
        parts = self.package.split(".") if self.package else []
        if level > 1:
            parts = parts[: len(parts) - (level - 1)]
        return ".".join(parts + ([module] if module else []))

    def is_provider(self, dotted: str) -> bool:
        return dotted.split(".")[0] in self.provider_tops

    def value_for(self, dotted: str) -> Value:
        if self.is_provider(dotted):
            if dotted.endswith(".__version__"):
                return ProviderVersion("text")
            return Chain(Root("symbol", dotted))
        return self.consumer_value(dotted)

    def consumer_value(self, dotted: str) -> Value:
        """A consumer name, unless the consumer merely re-exports a provider object (or a folded value) under it."""
        if dotted in self.reexports:
            return Chain(Root("symbol", self.reexports[dotted]))
        if dotted in self.shared:
            return self.shared[dotted]
        return ConsumerRef(dotted)


def import_alias_value(ctx: ImportContext, alias: ast.alias, options: ConsumerOptions) -> tuple[str, Value]:
    """`import a.b as c` binds c to a.b; `import a.b` binds a."""
    if alias.asname:
        return alias.asname, ctx.value_for(alias.name)
    top = alias.name.split(".")[0]
    return top, ctx.value_for(top)


def module_imports(tree: ast.Module, module: str, is_package: bool) -> dict[str, str]:
    """Module-level names bound by imports: local dotted name -> imported dotted path (absolute)."""
    package = module if is_package else module.rpartition(".")[0]
    out: dict[str, str] = {}

    def absolute(name: str | None, level: int) -> str:
        if level == 0:
            return name or ""
        parts = package.split(".") if package else []
        if level > 1:
            parts = parts[: len(parts) - (level - 1)]
        return ".".join(parts + ([name] if name else []))

    pending = list(tree.body)
    while pending:
        stmt = pending.pop(0)
        if isinstance(stmt, ast.ImportFrom):
            base = absolute(stmt.module, stmt.level)
            for alias in stmt.names:
                if alias.name != "*":
                    out[f"{module}.{alias.asname or alias.name}"] = f"{base}.{alias.name}"
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    out[f"{module}.{alias.asname}"] = alias.name
        elif isinstance(stmt, ast.If) and not _is_type_checking(stmt.test):
            pending[:0] = stmt.body + stmt.orelse
        elif isinstance(stmt, ast.Try):
            pending[:0] = stmt.body
    return out


def _is_type_checking(test) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
