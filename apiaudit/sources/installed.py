"""Code of a distribution installed in the running Python, found from its metadata (never imported)."""

from __future__ import annotations

import ast
import json
import os
import re
import sys
from collections import Counter
from importlib import metadata
from pathlib import Path, PurePosixPath
from urllib.parse import urlparse
from urllib.request import url2pathname

from apiaudit.errors import InputError, NotInstalledError
from apiaudit.sources.base import CodeTree

# Top-level names in RECORD that are install machinery, not the distribution's own code.
_MACHINERY_PREFIXES = ("__editable__", "_virtualenv", "__pycache__")


def resolve_installed(name: str, *, search_path: list[str] | None = None) -> CodeTree:
    """Resolve distribution `name` of this Python (or of `search_path`, a sys.path-like list)."""
    dist = _find_distribution(name, search_path)
    version = dist.version
    editable = _editable_source(dist)
    if editable is not None:
        root, packages = editable
    else:
        root = Path(str(dist.locate_file(""))).resolve()
        packages = _installed_packages(dist, root)
    if not packages:
        raise InputError(
            f"{name} {version} is installed but ships no Python package or module "
            "(a meta-package? name the distribution that holds the code)"
        )
    return CodeTree(name=name, version=version, root=root, packages=tuple(packages), kind="installed")


def _find_distribution(name: str, search_path: list[str] | None) -> metadata.Distribution:
    try:
        if search_path is None:
            return metadata.distribution(name)
        found = next(iter(metadata.distributions(name=name, path=search_path)), None)
        if found is None:
            raise metadata.PackageNotFoundError(name)
        return found
    except metadata.PackageNotFoundError:
        raise NotInstalledError(
            f"{name} is not installed in this Python ({sys.executable}); "
            f"pass --consumer/--provider {name}==VERSION or a path",
            name,
        ) from None


def _top_level_names(dist: metadata.Distribution) -> list[str]:
    text = dist.read_text("top_level.txt") or ""
    names = []
    for line in text.splitlines():
        entry = line.strip().replace("\\", "/")
        if entry and "/" not in entry and entry not in names:
            names.append(entry)
    return names


def _record_top_levels(dist: metadata.Distribution) -> list[str]:
    """Top-level packages/modules that hold .py files according to RECORD, in first-seen order."""
    names: list[str] = []
    for file in dist.files or ():
        parts = PurePosixPath(str(file).replace("\\", "/")).parts
        if not parts or parts[0] in ("..", ".") or not str(file).endswith(".py"):
            continue
        top = parts[0]
        if top.endswith((".dist-info", ".egg-info", ".data")) or top.startswith(_MACHINERY_PREFIXES):
            continue
        if len(parts) == 1:
            top = top[: -len(".py")]
        if top.isidentifier() and top not in names:
            names.append(top)
    return names


def _existing(root: Path, names: list[str]) -> list[str]:
    return [n for n in names if n.isidentifier() and ((root / n).is_dir() or (root / f"{n}.py").is_file())]


def _installed_packages(dist: metadata.Distribution, root: Path) -> list[str]:
    from_record = _existing(root, _record_top_levels(dist))
    if from_record:
        return from_record
    return _existing(root, _top_level_names(dist))


def _editable_source(dist: metadata.Distribution) -> tuple[Path, list[str]] | None:
    """(source root, packages) of an editable install, or None for a regular one."""
    site_dir = Path(str(dist.locate_file(""))).resolve()
    mapping = _setuptools_finder_mapping(dist, site_dir)
    pth_dirs = _pth_source_dirs(dist, site_dir)
    project_dir = _direct_url_editable_dir(dist)
    if not mapping and not pth_dirs and project_dir is None:
        return None

    if mapping:
        # Strict setuptools editable: each top-level package maps to its source folder.
        parents = Counter(Path(p).resolve().parent for p in mapping.values())
        root = parents.most_common(1)[0][0]
        packages = sorted(n for n, p in mapping.items() if Path(p).resolve().parent == root)
        packages = _existing(root, packages)
        if packages:
            return root, packages

    candidates = list(pth_dirs)
    if project_dir is not None:
        candidates += [project_dir / "src", project_dir]
    dist_name = dist.metadata["Name"] or ""
    guessed = re.sub(r"[-_.]+", "_", dist_name)
    wanted = _top_level_names(dist) + [guessed, guessed.lower()]
    for candidate in candidates:
        if not candidate.is_dir():
            continue
        packages = _existing(candidate, list(dict.fromkeys(wanted)))
        if not packages:
            packages = sorted(
                d.name for d in candidate.iterdir() if (d / "__init__.py").is_file() and d.name.isidentifier()
            )
        if packages:
            return candidate.resolve(), packages
    looked = ", ".join(str(c) for c in candidates) or "nowhere"
    raise InputError(f"{dist_name} is an editable install but its source was not found (looked in {looked})")


def _direct_url_editable_dir(dist: metadata.Distribution) -> Path | None:
    text = dist.read_text("direct_url.json")
    if not text:
        return None
    try:
        info = json.loads(text)
    except ValueError:
        return None
    if not (isinstance(info, dict) and (info.get("dir_info") or {}).get("editable")):
        return None
    url = urlparse(str(info.get("url", "")))
    if url.scheme != "file":
        return None
    return Path(url2pathname(url.path))


def _pth_source_dirs(dist: metadata.Distribution, site_dir: Path) -> list[Path]:
    """Folders that .pth files of this distribution put on sys.path ("import" lines are skipped, never run)."""
    dirs: list[Path] = []
    for file in dist.files or ():
        if not str(file).endswith(".pth"):
            continue
        try:
            text = Path(str(dist.locate_file(file))).read_text(encoding="utf-8")
        except OSError:
            continue
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith(("#", "import ", "import\t")):
                continue
            candidate = Path(line) if os.path.isabs(line) else site_dir / line
            if candidate.is_dir() and candidate.resolve() != site_dir:
                dirs.append(candidate.resolve())
    return dirs


def _setuptools_finder_mapping(dist: metadata.Distribution, site_dir: Path) -> dict[str, str]:
    """The MAPPING literal of a setuptools `__editable___*_finder.py`, read with ast (not executed)."""
    for file in dist.files or ():
        name = PurePosixPath(str(file)).name
        if not (name.startswith("__editable__") and name.endswith("_finder.py")):
            continue
        try:
            tree = ast.parse(Path(str(dist.locate_file(file))).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        for node in tree.body:
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "MAPPING" for t in node.targets)
            ):
                try:
                    value = ast.literal_eval(node.value)
                except ValueError:
                    continue
                if isinstance(value, dict):
                    return {str(k): str(v) for k, v in value.items() if "." not in str(k) and Path(str(v)).is_dir()}
    return {}


def looked_at(name: str, tree: CodeTree) -> tuple[list[Path], list[Path]] | None:
    """(folders, files) whose listing or content decide what `resolve_installed(name)` gives,
    besides the folders of sys.path (a replayed scan checks those too); None when the
    distribution is not a folder of metadata (an egg, a zip)."""
    dist = _find_distribution(name, None)
    info = getattr(dist, "_path", None)
    if info is None or not Path(str(info)).is_dir():
        return None
    info = Path(str(info))
    files = [p for p in sorted(info.iterdir()) if p.is_file()]
    for file in dist.files or ():
        base = PurePosixPath(str(file)).name
        if base.endswith(".pth") or (base.startswith("__editable__") and base.endswith("_finder.py")):
            files.append(Path(str(dist.locate_file(file))))
    site_dir = Path(str(dist.locate_file(""))).resolve()
    folders = [info, Path(tree.root), *_pth_source_dirs(dist, site_dir)]
    project = _direct_url_editable_dir(dist)
    if project is not None:
        folders += [project / "src", project]
    return folders, files
