"""Lazy, per-module loading of provider source with Griffe.

Griffe's full package load reads every module of a large provider (seconds for vLLM);
a consumer reaches a few dozen. `ModuleLoader` visits one file at a time, on demand,
and never imports anything.
"""

from __future__ import annotations

import ast
import hashlib
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from apiaudit.infra import lazyimport
from apiaudit.infra.lazyimport import lazy_module
from apiaudit.provider import compiled

TYPE_CHECKING = False
if TYPE_CHECKING:
    import griffe

    from apiaudit.provider import extension as _extension
else:
    # Imported on the first module visited: a warm scan answered from the cache visits none.
    griffe = lazy_module("griffe")
    _extension = lazy_module("apiaudit.provider.extension")

# Griffe warns about things it cannot follow in third-party code; that is our job to report.
logging.getLogger("griffe").setLevel(logging.ERROR)


class ModuleLoader:
    """Finds and visits provider modules under `root` for the given top-level packages."""

    def __init__(self, root: Path, packages: tuple[str, ...]):
        self.root = root
        self.packages = frozenset(packages)
        self._modules: dict[str, griffe.Module | None] = {}
        self._extensions: griffe.Extensions | None = None  # made on the first visit (it imports Griffe)
        self.touched: dict[str, str] = {}  # relative file -> sha256, for cache validation
        # Called with (relative file, sha256) for every file read; raises when the content is not
        # what it should be (a release cache entry edited after extraction).
        self.verify: Callable[[str, str], None] | None = None
        self.parse_failures: dict[str, str] = {}
        self._stubs: dict[str, griffe.Module] = {}
        self._compiled: frozenset[str] | None = None
        self._runtime: dict[str, RuntimeBindings | None] = {}
        self._root = os.fspath(root)
        self._files: dict[str, Path | None] = {}
        self._dirs: dict[str, bool] = {}
        self._relative: dict[str, str] = {}

    # ------------------------------------------------ compiled modules and stubs
    @property
    def compiled(self) -> frozenset[str]:
        """Extension modules of the provider (read once from the file tree and RECORDs)."""
        if self._compiled is None:
            self._compiled, records = compiled.compiled_modules_and_records(self.root, tuple(self.packages))
            for record in records:
                self._touch(record)  # a changed RECORD invalidates the index cache
        return self._compiled

    def compiled_prefix(self, dotted: str) -> str | None:
        """The extension module `dotted` is or lies in (a stub package beside it counts)."""
        return compiled.compiled_prefix(dotted, self.compiled)

    def _touch(self, path: Path) -> None:
        try:
            self.touched[self.relative(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            pass

    def runtime_file(self, dotted: str) -> Path | None:
        """The `.py` that runs when `dotted`'s interface is a `.pyi` stub beside it; else None."""
        path = self.module_file(dotted)
        if path is None or path.suffix != ".pyi":
            return None
        runtime = path.with_suffix(".py")
        return runtime if runtime.is_file() else None

    def runtime_bindings(self, dotted: str) -> RuntimeBindings | None:
        """Names the `.py` behind `dotted`'s stub binds (None when there is no such `.py`)."""
        if dotted not in self._runtime:
            runtime = self.runtime_file(dotted)
            if runtime is not None:
                self._touch(runtime)
            self._runtime[dotted] = runtime_bindings(runtime) if runtime is not None else None
        return self._runtime[dotted]

    def owns(self, dotted: str) -> bool:
        return dotted.split(".", 1)[0] in self.packages

    def module_file(self, dotted: str) -> Path | None:
        # Asked for every module a scan visits, and again for every name looked up in it: the
        # release's files do not change while it is read, so each answer is kept.
        if dotted not in self._files:
            base = os.path.join(self._root, *dotted.split("."))
            candidates = (f"{base}/__init__.pyi", f"{base}/__init__.py", f"{base}.pyi", f"{base}.py")
            self._files[dotted] = next((Path(c) for c in candidates if os.path.isfile(c)), None)
        return self._files[dotted]

    def is_package_dir(self, dotted: str) -> bool:
        """A namespace package (a directory without __init__.py) still imports."""
        found = self._dirs.get(dotted)
        if found is None:
            found = self._dirs[dotted] = os.path.isdir(os.path.join(self._root, *dotted.split(".")))
        return found

    def relative(self, path: Path | str) -> str:
        text = os.fspath(path)
        found = self._relative.get(text)
        if found is None:
            try:
                found = Path(text).relative_to(self.root).as_posix()
            except ValueError:
                found = Path(text).as_posix()
            self._relative[text] = found
        return found

    def load(self, dotted: str) -> griffe.Module | None:
        if dotted in self._modules:
            return self._modules[dotted]
        module = None
        path = self.module_file(dotted)
        if path is not None:
            data = path.read_bytes()
            sha256 = hashlib.sha256(data).hexdigest()
            if self.verify is not None:
                self.verify(self.relative(path), sha256)
            self.touched[self.relative(path)] = sha256
            code = data.decode("utf-8", errors="replace")
            parent_name, _, name = dotted.rpartition(".")
            if self._extensions is None:
                lazyimport.load_all()  # Griffe and the index's helpers, once, before any Griffe object exists
                self._extensions = griffe.Extensions(_extension.FactsExtension())
            try:
                module = griffe.visit(
                    name, path, code, extensions=self._extensions, parent=self._stub(parent_name) if parent_name else None
                )
            except (SyntaxError, ValueError, RecursionError) as exc:
                # A provider file we cannot parse: treat as unknown, never crash.
                self.parse_failures[dotted] = str(exc)
                module = None
            if module is not None:
                declare_overload_only(module)
        self._modules[dotted] = module
        return module

    def _stub(self, dotted: str) -> griffe.Module:
        """A bare parent package, so Griffe resolves relative imports as Python does."""
        if dotted not in self._stubs:
            parent_name, _, name = dotted.rpartition(".")
            parent = self._stub(parent_name) if parent_name else None
            base = self.root.joinpath(*dotted.split("."))
            self._stubs[dotted] = griffe.Module(name, filepath=base / "__init__.py", parent=parent)
        return self._stubs[dotted]

    def definitions_table(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Every top-level name of the provider's modules -> the dotted names defining it, in one
        pass (and `<module>LEAF` -> the modules whose last part is LEAF).

        A line scan (column 0: `class X`, `def X`, `X =`, `X: T`), so it costs a read per file,
        not a parse; every file read is recorded for cache validation.
        """
        table: dict[str, list[str]] = {}
        for pkg in sorted(self.packages):
            base = self.root / pkg
            files = sorted(base.rglob("*.py")) if base.is_dir() else []
            for path in files:
                try:
                    data = path.read_bytes()
                except OSError:
                    continue
                digest = hashlib.sha256(data).hexdigest()
                if self.verify is not None:
                    self.verify(self.relative(path), digest)
                self.touched.setdefault(self.relative(path), digest)
                rel = path.relative_to(self.root).with_suffix("")
                parts = list(rel.parts)
                if parts[-1] == "__init__":
                    parts.pop()
                module = ".".join(parts)
                table.setdefault(f"<module>{parts[-1]}", []).append(module)
                found = (next(g for g in m.groups() if g) for m in _TOP_LEVEL.finditer(data.decode("utf-8", errors="replace")))
                for name in dict.fromkeys(found):
                    table.setdefault(name, []).append(module + "." + name)
        return tuple(sorted((k, tuple(v)) for k, v in table.items()))



def declare_overload_only(obj: griffe.Module | griffe.Class) -> None:
    """A function declared only through `@overload` (a stub's usual form) defines the name.

    Griffe keeps such overloads on the parent's `overloads` map and no member; give each one a
    member whose `overloads` are the declarations, marked so binding uses no runtime fallback.
    """
    for name, overloads in list(obj.overloads.items()):
        if not overloads or name in obj.members:
            continue
        first, last = overloads[0], overloads[-1]
        func = griffe.Function(
            name,
            lineno=first.lineno,
            endlineno=last.endlineno,
            parameters=first.parameters,
            returns=first.returns,
            decorators=[d for d in first.decorators if "overload" not in str(d.value)],
        )
        func.labels |= {label for label in first.labels if label in ("staticmethod", "classmethod", "property")}
        func.overloads = list(overloads)
        func.extra[_extension.KEY] = {"overloads_only": True}
        obj.set_member(name, func)
    for member in list(obj.members.values()):
        if not member.is_alias and isinstance(member, griffe.Class):
            declare_overload_only(member)


@dataclass(frozen=True)
class RuntimeBindings:
    """What a `.py` beside its `.pyi` binds, read once: names, and whether it hides any."""

    names: frozenset[str]
    opaque: bool  # a star import, an unreadable file, or a run-time namespace


def runtime_bindings(path: Path) -> RuntimeBindings:
    try:
        tree = ast.parse(path.read_text("utf-8", errors="replace"))
    except (SyntaxError, ValueError, RecursionError, OSError):
        return RuntimeBindings(frozenset(), True)
    names: set[str] = set()
    opaque = _extension.dynamic_namespace(tree) is not None
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


_TOP_LEVEL = re.compile(r"^(?:class\s+(\w+)|(?:async\s+)?def\s+(\w+)|(\w+)\s*(?::[^=\n]+)?=(?!=))", re.M)
