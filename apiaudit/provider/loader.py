"""Lazy, per-module loading of provider source with Griffe.

Griffe's full package load reads every module of a large provider (seconds for vLLM);
a consumer reaches a few dozen. `ModuleLoader` visits one file at a time, on demand,
and never imports anything.
"""

from __future__ import annotations

import hashlib
import logging
import re
from pathlib import Path
from typing import Callable

import griffe

from apiaudit.provider.facts import FactsExtension

# Griffe warns about things it cannot follow in third-party code; that is our job to report.
logging.getLogger("griffe").setLevel(logging.ERROR)


class ModuleLoader:
    """Finds and visits provider modules under `root` for the given top-level packages."""

    def __init__(self, root: Path, packages: tuple[str, ...]):
        self.root = root
        self.packages = frozenset(packages)
        self._modules: dict[str, griffe.Module | None] = {}
        self._extensions = griffe.Extensions(FactsExtension())
        self.touched: dict[str, str] = {}  # relative file -> sha256, for cache validation
        # Called with (relative file, sha256) for every file read; raises when the content is not
        # what it should be (a release cache entry edited after extraction).
        self.verify: Callable[[str, str], None] | None = None
        self.parse_failures: dict[str, str] = {}
        self._stubs: dict[str, griffe.Module] = {}

    def owns(self, dotted: str) -> bool:
        return dotted.split(".", 1)[0] in self.packages

    def module_file(self, dotted: str) -> Path | None:
        parts = dotted.split(".")
        base = self.root.joinpath(*parts)
        for candidate in (base / "__init__.pyi", base / "__init__.py", base.with_suffix(".pyi"), base.with_suffix(".py")):
            if candidate.is_file():
                return candidate
        return None

    def is_package_dir(self, dotted: str) -> bool:
        """A namespace package (a directory without __init__.py) still imports."""
        return self.root.joinpath(*dotted.split(".")).is_dir()

    def relative(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.as_posix()

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
            try:
                module = griffe.visit(
                    name, path, code, extensions=self._extensions, parent=self._stub(parent_name) if parent_name else None
                )
            except (SyntaxError, ValueError, RecursionError) as exc:
                # A provider file we cannot parse: treat as unknown, never crash.
                self.parse_failures[dotted] = str(exc)
                module = None
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


_TOP_LEVEL = re.compile(r"^(?:class\s+(\w+)|(?:async\s+)?def\s+(\w+)|(\w+)\s*(?::[^=\n]+)?=(?!=))", re.M)
