"""Which provider modules are compiled extension modules (`.so` / `.pyd`), found without importing.

Griffe reads source; an extension module has none (at most a `.pyi` stub beside it), so the
index cannot know what it defines. Two readers, unioned:

- the file tree under the provider root (installed distributions, paths);
- every `*.dist-info/RECORD` directly under the root: a release cache entry keeps only the
  wheel's `.py`/`.pyi` files and its RECORD, which still lists each extension member.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path, PurePosixPath

EXTENSION_SUFFIXES = (".so", ".pyd")


def module_name(member: str) -> str | None:
    """'pkg/sub/_impl.cpython-312-x86_64-linux-gnu.so' -> 'pkg.sub._impl'; None if not a module path."""
    path = PurePosixPath(member.replace("\\", "/"))
    if not path.name.endswith(EXTENSION_SUFFIXES):
        return None
    stem = path.name.split(".", 1)[0]
    parts = [*path.parts[:-1], stem]
    if not parts or not all(p.isidentifier() for p in parts):
        return None  # a shared library such as libfoo-1.2.so, or a data folder: not importable
    return ".".join(parts)


def _from_tree(root: Path, packages: frozenset[str]) -> set[str]:
    found: set[str] = set()
    try:
        entries = list(os.scandir(root))
    except OSError:
        return found
    for entry in entries:
        top = entry.name.split(".", 1)[0]
        if top not in packages:
            continue
        if entry.is_file() and entry.name.endswith(EXTENSION_SUFFIXES):
            name = module_name(entry.name)
            if name:
                found.add(name)
        elif entry.is_dir() and entry.name == top:
            for folder, dirs, files in os.walk(entry.path):
                dirs[:] = [d for d in dirs if d.isidentifier()]
                rel = Path(folder).relative_to(root).as_posix()
                for file in files:
                    if file.endswith(EXTENSION_SUFFIXES):
                        name = module_name(f"{rel}/{file}")
                        if name:
                            found.add(name)
    return found


def _from_records(root: Path, packages: frozenset[str]) -> tuple[set[str], list[Path]]:
    """Extension modules listed in the RECORDs directly under the root, and the RECORDs that
    list any file of `packages` (the ones whose change can change the answer)."""
    found: set[str] = set()
    relevant: list[Path] = []
    for record in sorted(root.glob("*.dist-info/RECORD")):
        try:
            text = record.read_text("utf-8", errors="replace")
        except OSError:
            continue
        owns = False
        for row in csv.reader(text.splitlines()):
            if not row:
                continue
            top = row[0].replace("\\", "/").split("/", 1)[0].split(".", 1)[0]
            if top not in packages:
                continue
            owns = True
            name = module_name(row[0])
            if name:
                found.add(name)
        if owns:
            relevant.append(record)
    return found, relevant


def compiled_modules_and_records(root: Path, packages: tuple[str, ...] | frozenset[str]) -> tuple[frozenset[str], tuple[Path, ...]]:
    """Dotted names of the extension modules of `packages` under `root`, and the RECORDs read for them."""
    wanted = frozenset(packages)
    from_records, records = _from_records(root, wanted)
    return frozenset(_from_tree(root, wanted) | from_records), tuple(records)


def compiled_modules(root: Path, packages: tuple[str, ...] | frozenset[str]) -> frozenset[str]:
    """Dotted names of the extension modules of `packages` under `root`."""
    return compiled_modules_and_records(root, packages)[0]


def compiled_prefix(dotted: str, compiled: frozenset[str]) -> str | None:
    """The compiled module `dotted` is (or lies inside), if any: `pkg._ext.Name` -> `pkg._ext`."""
    if not compiled:
        return None
    parts = dotted.split(".")
    for i in range(1, len(parts) + 1):
        prefix = ".".join(parts[:i])
        if prefix in compiled:
            return prefix
    return None
