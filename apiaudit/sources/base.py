"""The code an audit reads: where it lies, what it is called, which version it is."""

from __future__ import annotations

import warnings
from dataclasses import field
from pathlib import Path
from typing import Protocol, runtime_checkable

from apiaudit.findings import CodeOrigin, SourceKind
from apiaudit.infra.frozen import record

# Files of a job-scripts folder read for the provider command lines they hold (not Python).
JOB_FILE_SUFFIXES = frozenset({".sh", ".bash", ".yaml", ".yml", ".toml"})


@record
class CodeTree:
    """A body of Python source to read (never import).

    `root` is the directory that would be on sys.path: `root/<package>/...` for each
    of `packages`. `scripts` are loose `.py` files (job scripts) under `root` that
    belong to no package. A package tree has `packages` and no `scripts`; a folder
    of scripts has `scripts` and may have no `packages`. `job_files` are the folder's
    shell scripts and YAML/TOML configs (`JOB_FILE_SUFFIXES`): only the provider command
    lines they hold are read from them (the launch audit).
    """

    name: str
    version: str | None
    root: Path
    packages: tuple[str, ...]
    scripts: tuple[Path, ...] = ()
    kind: SourceKind = "path"
    # A subpackage given as the consumer (`.../speculators/data_generation`): only its files
    # are read, but module names stay those Python uses (`speculators.data_generation.x`).
    only: tuple[Path, ...] = ()
    # True when resolving this tree downloaded it (a release not yet in the cache); not part of
    # what the tree is, so two resolutions of one release compare equal.
    fetched: bool = field(default=False, compare=False)
    job_files: tuple[Path, ...] = ()

    def origin(self) -> CodeOrigin:
        return CodeOrigin(name=self.name, version=self.version, root=str(self.root), kind=self.kind)

    def python_files(self) -> list[Path]:
        """Every .py file of the tree, packages first, sorted for stable output."""
        files: list[Path] = []
        for pkg in self.packages:
            base = self.root / pkg
            if base.is_dir():
                files.extend(sorted(p for p in base.rglob("*.py") if "__pycache__" not in p.parts))
            elif (self.root / f"{pkg}.py").is_file():
                files.append(self.root / f"{pkg}.py")
        files.extend(sorted(self.scripts))
        return self._within_only(files)

    def files(self) -> list[Path]:
        """Every file a scan reads: the Python files, then the job files (sorted)."""
        return self.python_files() + self._within_only(sorted(self.job_files))

    def _within_only(self, files: list[Path]) -> list[Path]:
        if self.only:
            files = [f for f in files if any(f == o or o in f.parents for o in self.only)]
        return files


@runtime_checkable
class Reporter(Protocol):
    """Anything that can show one line of progress for long work (fetching, extracting)."""

    def step(self, message: str) -> None: ...


def report_step(progress: Reporter | None, message: str) -> None:
    """Tell `progress` about a step of long work; silent when there is no reporter."""
    if progress is not None:
        progress.step(message)


def report_warning(progress: Reporter | None, message: str) -> None:
    """Say something went wrong but was handled: through `progress` when given, else as a warning."""
    if progress is not None:
        progress.step(message)
    else:
        warnings.warn(message, SourceWarning, stacklevel=3)


class SourceWarning(UserWarning):
    """A recoverable problem while resolving code (e.g. a broken cache entry that was rebuilt)."""
