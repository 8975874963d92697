"""Code given as a path on disk: a package directory, a job script, or a folder of both."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

from apiaudit.errors import ArgumentError, NotFoundError
from apiaudit.sources.base import JOB_FILE_SUFFIXES, CodeTree
from apiaudit.sources.version import detect_version, version_inputs

# Folders that hold no code of the project itself (tool caches, virtual environments, VCS data).
_SKIPPED_DIR_NAMES = frozenset({"__pycache__", "node_modules", "site-packages", "dist-packages"})


def looks_like_path(spec: str) -> bool:
    """A spec is a path when it exists, contains a path separator, or names a .py file."""
    if not is_bare_name(spec):
        return True
    try:
        return Path(spec).expanduser().exists()
    except (OSError, ValueError):  # e.g. a name too long for the file system
        return False


def is_bare_name(spec: str) -> bool:
    """Whether a spec has no form of a path (no separator, no .py): a path only if it exists here."""
    separators = {"/", os.sep} | ({os.altsep} if os.altsep else set())
    return not (any(sep in spec for sep in separators) or spec.endswith(".py"))


def resolve_path(spec: str) -> CodeTree:
    path = Path(spec).expanduser()
    if not path.exists():
        raise NotFoundError(f"no such file or directory: {spec}")
    path = path.resolve()

    if path.is_file():
        if path.suffix in JOB_FILE_SUFFIXES:
            return CodeTree(name=path.stem, version=None, root=path.parent, packages=(), kind="path", job_files=(path,))
        if path.suffix != ".py":
            raise ArgumentError(f"not a Python file, job file ({', '.join(sorted(JOB_FILE_SUFFIXES))}) or directory: {spec}")
        return CodeTree(name=path.stem, version=None, root=path.parent, packages=(), scripts=(path,), kind="path")

    if (path / "__init__.py").is_file():
        top = path
        while (top.parent / "__init__.py").is_file() and top.parent != top:
            top = top.parent  # a subpackage: its modules are named from the top package down
        only = (path,) if top != path else ()
        version = detect_version(top.parent, (top.name,))
        return CodeTree(name=top.name, version=version, root=top.parent, packages=(top.name,), kind="path", only=only)

    packages: list[str] = []
    scripts: list[Path] = []
    job_files: list[Path] = []
    for entry in sorted(path.iterdir()):
        if entry.is_file() and entry.suffix == ".py":
            scripts.append(entry)
        elif entry.is_file() and _is_job_file(entry):
            job_files.append(entry)
        elif entry.is_dir() and not _is_skipped_dir(entry):
            if (entry / "__init__.py").is_file():
                packages.append(entry.name)
            else:
                below = _files_below(entry)
                scripts.extend(p for p in below if p.suffix == ".py")
                job_files.extend(p for p in below if p.suffix != ".py")
    if not packages and not scripts and not job_files:
        raise NotFoundError(f"no Python files under {spec} (nor shell, YAML or TOML job files)")
    return CodeTree(
        name=path.name,
        version=detect_version(path, tuple(packages)) if packages else None,
        root=path,
        packages=tuple(packages),
        scripts=tuple(sorted(scripts)),
        kind="path",
        job_files=tuple(sorted(job_files)),
    )


def _is_skipped_dir(directory: Path) -> bool:
    # A nested virtual environment would drown the project in third-party code.
    return (
        directory.name.startswith(".")
        or directory.name in _SKIPPED_DIR_NAMES
        or (directory / "pyvenv.cfg").is_file()
    )


def _is_job_file(path: Path) -> bool:
    """A shell script or YAML/TOML config whose provider command lines a scan reads."""
    return path.suffix in JOB_FILE_SUFFIXES and not path.name.startswith(".")


def _files_below(directory: Path) -> list[Path]:
    """Every .py file and job file under a folder that is not itself a package (symlinked
    folders are not followed)."""
    return [
        folder / name for folder, names, _ in _walk(directory) for name in names
        if name.endswith(".py") or _is_job_file(folder / name)
    ]  # fmt: skip


def _walk(directory: Path) -> Iterator[tuple[Path, list[str], list[Path]]]:
    """(folder, its file names, the folders in it skipped) for each folder under `directory` read, in order."""
    for current, dirnames, filenames in os.walk(directory):
        current_path = Path(current)
        skipped = [current_path / d for d in dirnames if _is_skipped_dir(current_path / d)]
        dirnames[:] = sorted(d for d in dirnames if current_path / d not in skipped)
        yield current_path, sorted(filenames), skipped


def looked_at(spec: str, tree: CodeTree) -> tuple[list[Path], list[Path]]:
    """(folders, files) whose listing or content decide what `spec` resolves to and which of
    its files a consumer's scan lists: a replayed scan (`apiaudit.cache.replay`) checks them."""
    path = Path(spec).expanduser().resolve()
    if not path.is_dir():
        return [], []  # a job script: the file itself is read (and checked) as the consumer
    folders: list[Path] = []
    if (path / "__init__.py").is_file():
        folders += [path, *(p for p in path.parents if tree.root in p.parents)]
    else:
        folders.append(path)
        for entry in sorted(path.iterdir()):
            if not entry.is_dir():
                continue
            if _is_skipped_dir(entry):
                folders += _venv_marked([entry])
            elif (entry / "__init__.py").is_file():
                folders.append(entry)
            else:
                for folder, _, skipped in _walk(entry):
                    folders += [folder, *_venv_marked(skipped)]
    more_folders, files = version_inputs(tree.root, tree.packages)
    return folders + more_folders, files


def _venv_marked(folders: list[Path]) -> list[Path]:
    """The folders skipped only for the pyvenv.cfg in them: their listing says whether it is still there."""
    return [f for f in folders if not f.name.startswith(".") and f.name not in _SKIPPED_DIR_NAMES]
