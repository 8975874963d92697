"""Imports as the consumer stage sees them: absolute names, and the value each binds.

`module_imports` is the cheap first pass over every file (module-level import bindings,
for re-exports); `ImportContext` turns an imported dotted name into a value: a provider
symbol, a provider object re-exported by another consumer module, a constant or guard
helper another consumer module exports, or a consumer/other name.
"""

from __future__ import annotations

import ast

from apiaudit.consumer.records import ConsumerOptions, Root
from apiaudit.consumer.values import (
    Chain,
    Const,
    ConsumerRef,
    DictValue,
    Helper,
    ProviderVersion,
    Value,
)
from apiaudit.infra.astutil import absolute_import


class ConsumerNames:
    """What other consumer modules make of a dotted name (the consumer-wide tables): a provider
    object it re-exports (`compat.P` for the provider's P), a constant or guard helper it
    exports, or None (a plain consumer name)."""

    def __init__(self, reexports: dict[str, str], shared: dict[str, Value]):
        self.reexports = reexports
        self.shared = shared  # never written to
        # No dict value among the exports: a module's own calls can touch only its own dicts.
        self.has_dicts = any(isinstance(v, DictValue) for v in shared.values())
        # No requirement check among the exports: a call statement can be one only where this module defines it.
        self.has_requirements = any(isinstance(v, Helper) and v.form == "require" for v in shared.values())

    def value(self, dotted: str) -> Value | None:
        if dotted in self.reexports:
            return Chain(Root("symbol", self.reexports[dotted]))
        return self.shared.get(dotted)


def with_python(shared: dict[str, Value], python_version: tuple[int, ...]) -> dict[str, Value]:
    """The shared values with `sys.version_info`: the Python the audited code is assumed to run on."""
    shared.setdefault("sys.version_info", Const(tuple(python_version)))
    return shared


# The last options' tables, built once for every file of a scan (the re-exports of a large
# consumer run to thousands of names): (re-exports, shared values, python version) -> names.
_TABLES: list[tuple[tuple, tuple, tuple, ConsumerNames]] = []


def names_of(options: ConsumerOptions) -> ConsumerNames:
    """`options`' consumer-wide tables; the same object for every file with the same options."""
    for reexports, shared_values, python, known in _TABLES:
        if reexports is options.reexports and shared_values is options.shared_values and python == options.python_version:
            return known
    shared: dict[str, Value] = with_python(dict(options.shared_values), options.python_version)  # type: ignore[arg-type]
    names = ConsumerNames(dict(options.reexports), shared)
    _TABLES[:] = [(options.reexports, options.shared_values, options.python_version, names)]
    return names


class ImportContext:
    def __init__(self, module: str, is_package: bool, options: ConsumerOptions, names: ConsumerNames | None = None):
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.provider_tops = frozenset(options.provider_packages)
        self.names = names or names_of(options)

    def absolute(self, module: str | None, level: int) -> str:
        return absolute_import(self.package, module, level)

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
        value = self.names.value(dotted)
        return ConsumerRef(dotted) if value is None else value


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
    pending = list(tree.body)
    while pending:
        stmt = pending.pop(0)
        if isinstance(stmt, ast.ImportFrom):
            base = absolute_import(package, stmt.module, stmt.level)
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
