"""The version of code given as a path, read from what lies beside it (never imported).

In order: the marker of an overlay `apiaudit fix --into` wrote from a release or an installed
distribution (the version it was copied from), a `*.dist-info` of the package next to it (an
installed copy), a `pyproject.toml` above it with a literal `[project] version`, then a
`__version__ = "..."` / `version = "..."` literal in the package's `__init__.py`, `version.py`
or `_version.py` (a release's own literal may be stale: speculators 0.3.0 says 0.2.0).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

_NAME = re.compile(r"[-_.]+")
# The marker `apiaudit fix --into DIR` leaves in DIR (apiaudit.fixes.overlay): JSON whose
# "releases" map each package copied to the distribution and version it was copied from.
OVERLAY_MARKER = ".apiaudit-overlay.json"


def _normal(name: str) -> str:
    return _NAME.sub("_", name).lower()


def detect_version(root: Path, packages: tuple[str, ...]) -> str | None:
    """The version of the packages under `root`, or None when nothing beside them says."""
    for finder in (_from_overlay_marker, _from_dist_info, _from_pyproject, _from_literal):
        found = finder(root, packages)
        if found:
            return found
    return None


def overlay_releases(root: Path) -> dict[str, dict[str, str]]:
    """package -> {"name", "version"} of the release an overlay in `root` was copied from ({} when none)."""
    import json

    try:
        record = json.loads((root / OVERLAY_MARKER).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    releases = record.get("releases") if isinstance(record, dict) else None
    if not isinstance(releases, dict):
        return {}
    return {
        package: {"name": entry["name"], "version": entry["version"]}
        for package, entry in releases.items()
        if isinstance(package, str) and isinstance(entry, dict)
        and isinstance(entry.get("name"), str) and isinstance(entry.get("version"), str) and entry["version"]
    }  # fmt: skip


def _from_overlay_marker(root: Path, packages: tuple[str, ...]) -> str | None:
    releases = overlay_releases(root)
    for package in packages:
        if package in releases:
            return releases[package]["version"]
    return None


def version_inputs(root: Path, packages: tuple[str, ...]) -> tuple[list[Path], list[Path]]:
    """(folders, files) whose listing or content `detect_version(root, packages)` depends on."""
    folders = [root, root.parent]
    files = [root / "pyproject.toml", root.parent / "pyproject.toml", root / OVERLAY_MARKER]
    try:
        infos = sorted(root.glob("*.dist-info"))
    except OSError:
        infos = []
    files += [info / name for info in infos for name in ("top_level.txt", "METADATA")]
    for package in packages:
        base = root / package
        files += [base / "__init__.py", base / "version.py", base / "_version.py", root / f"{package}.py"]
    return folders, files


def _from_dist_info(root: Path, packages: tuple[str, ...]) -> str | None:
    wanted = {_normal(p) for p in packages}
    try:
        candidates = sorted(root.glob("*.dist-info"))
    except OSError:
        return None
    for info in candidates:
        name, _, version = info.name[: -len(".dist-info")].partition("-")
        top = set()
        try:
            top = {_normal(line.strip()) for line in (info / "top_level.txt").read_text("utf-8").splitlines() if line.strip()}
        except OSError:
            pass
        if _normal(name) in wanted or top & wanted:
            meta = _metadata_version(info / "METADATA")
            return meta or version or None
    return None


def _metadata_version(path: Path) -> str | None:
    try:
        for line in path.read_text("utf-8", errors="replace").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip() or None
            if not line.strip():
                break
    except OSError:
        return None
    return None


def _from_pyproject(root: Path, packages: tuple[str, ...]) -> str | None:
    from apiaudit.infra.tomlcompat import tomllib

    wanted = {_normal(p) for p in packages}
    for base in (root, root.parent):
        path = base / "pyproject.toml"
        try:
            data = tomllib.loads(path.read_text("utf-8"))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            continue
        project = data.get("project") if isinstance(data, dict) else None
        if not isinstance(project, dict):
            continue
        version = project.get("version")
        name = project.get("name")
        if isinstance(version, str) and isinstance(name, str) and _normal(name) in wanted:
            return version
    return None


def _from_literal(root: Path, packages: tuple[str, ...]) -> str | None:
    for package in packages:
        base = root / package
        for candidate in (base / "__init__.py", base / "version.py", base / "_version.py", root / f"{package}.py"):
            found = _literal_version(candidate)
            if found:
                return found
    return None


def _literal_version(path: Path) -> str | None:
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError, RecursionError):
        return None
    for stmt in tree.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        value = getattr(stmt, "value", None)
        if any(isinstance(t, ast.Name) and t.id in ("__version__", "version", "VERSION") for t in targets):
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                return value.value
    return None
