"""Lazy, per-module loading of provider source with Griffe.

Griffe's full package load reads every module of a large provider (seconds for vLLM);
a consumer reaches a few dozen. `ModuleLoader` visits one file at a time, on demand,
and never imports anything.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Callable, Iterator

from apiaudit.infra import lazyimport
from apiaudit.infra.filewalk import files_under
from apiaudit.infra.gcpause import paused_gc
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
        self._root = os.fspath(root)
        self._files: dict[str, Path | None] = {}
        self._dirs: dict[str, bool] = {}
        self._relative: dict[str, str] = {}
        # every (module, text) once read: a cold scan asks for all of them three or four times
        # (definitions, class bases, call-site lookups), and a read verifies and hashes each file
        self._sources: list[tuple[str, str]] | None = None

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

    def read_module_bytes(self, path: Path | str, relative: str | None = None) -> bytes:
        """A provider module file's bytes, recorded as read (for cache validation) and verified
        (`verify`) the first time: hashed once a run, however many readers ask (OSError as open)."""
        with open(path, "rb") as handle:
            data = handle.read()
        relative = relative or self.relative(path)
        if relative not in self.touched:
            digest = hashlib.sha256(data).hexdigest()
            if self.verify is not None:
                self.verify(relative, digest)
            self.touched[relative] = digest
        return data

    def runtime_file(self, dotted: str) -> Path | None:
        """The `.py` that runs when `dotted`'s interface is a `.pyi` stub beside it; else None."""
        path = self.module_file(dotted)
        if path is None or path.suffix != ".pyi":
            return None
        runtime = path.with_suffix(".py")
        return runtime if runtime.is_file() else None

    def read_text(self, path: Path) -> str | None:
        """A provider module file's text, recorded as read (None when it cannot be read)."""
        try:
            text = self.read_module_bytes(path).decode("utf-8", errors="replace")
        except OSError:
            return None
        # universal newlines, as a file opened as text reads
        return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text

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
            code = self.read_module_bytes(path).decode("utf-8", errors="replace")
            parent_name, _, name = dotted.rpartition(".")
            if self._extensions is None:
                lazyimport.load_all()  # Griffe and the index's helpers, once, before any Griffe object exists
                self._extensions = griffe.Extensions(_extension.FactsExtension())
            try:
                # Griffe's objects of one module live as long as the loader: no garbage to collect
                # while it builds them, and a collection then walks every module read so far.
                with paused_gc():
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

    def source_files(self) -> Iterator[tuple[str, str]]:
        """(dotted module, text) of every `.py` of the provider's packages, in path order; each
        file read is verified and recorded for cache validation (the names index reads them)."""
        if self._sources is None:
            self._sources = list(self._read_sources())
        return iter(self._sources)

    def _read_sources(self) -> Iterator[tuple[str, str]]:
        # On strings (`files_under`): ~1,400 files a release, one pathlib object each cost more
        # than reading them.
        root = os.fspath(self.root)
        for pkg in sorted(self.packages):
            base = os.path.join(root, pkg)
            if not os.path.isdir(base):
                continue
            # in path order, as `sorted(Path.rglob(...))` gives it: folder by folder
            files = sorted((rel for rel, _ in files_under(base) if rel.endswith(".py")), key=lambda rel: rel.split("/"))
            for rel in files:
                relative = f"{pkg}/{rel}"
                try:
                    data = self.read_module_bytes(os.path.join(base, rel), relative)
                except OSError:
                    continue
                parts = relative[:-3].split("/")
                if parts[-1] == "__init__":
                    parts.pop()
                yield ".".join(parts), data.decode("utf-8", errors="replace")


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
