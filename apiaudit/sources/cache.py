"""The on-disk cache of extracted release wheels.

Layout: `<cache_dir>/releases/<normalized-name>-<version>/` holds the wheel's .py/.pyi
files at their import paths, its dist-info METADATA/top_level.txt/RECORD, and
`complete.json`, written last. An entry without a valid marker, or whose files no
longer match the marker, is broken and gets rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

from apiaudit.errors import CacheError

MARKER_NAME = "complete.json"
MARKER_FORMAT = 1
_TEMP_PREFIX = ".partial-"
# A partial folder this old belongs to a run that died; younger ones may be another run's work.
_STALE_TEMP_SECONDS = 6 * 3600


def default_cache_dir() -> Path:
    """$APIAUDIT_CACHE_DIR, else $XDG_CACHE_HOME/apiaudit, else ~/.cache/apiaudit."""
    explicit = os.environ.get("APIAUDIT_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg).expanduser() / "apiaudit"
    return Path.home() / ".cache" / "apiaudit"


def releases_dir(cache_dir: Path) -> Path:
    return cache_dir / "releases"


def entry_dir(cache_dir: Path, name: str, version: str) -> Path:
    return releases_dir(cache_dir) / f"{canonicalize_name(name)}-{version}"


@dataclass(frozen=True)
class Marker:
    name: str
    version: str
    wheel: str
    wheel_sha256: str
    file_count: int
    tree_digest: str

    def to_json(self) -> str:
        return json.dumps(
            {
                "format": MARKER_FORMAT,
                "name": self.name,
                "version": self.version,
                "wheel": self.wheel,
                "wheel_sha256": self.wheel_sha256,
                "file_count": self.file_count,
                "tree_digest": self.tree_digest,
            },
            indent=2,
        )


def tree_files(directory: Path) -> list[str]:
    """Relative posix paths of every file of an entry except its marker, sorted."""
    files = []
    for current, dirnames, filenames in os.walk(directory):
        dirnames.sort()
        for filename in filenames:
            rel = Path(current, filename).relative_to(directory).as_posix()
            if rel != MARKER_NAME:
                files.append(rel)
    return sorted(files)


def tree_digest(directory: Path, files: list[str]) -> str:
    """A digest of each file's path and size: catches deleted, added and truncated files cheaply."""
    digest = hashlib.sha256()
    for rel in files:
        digest.update(f"{rel}\0{(directory / rel).stat().st_size}\n".encode())
    return digest.hexdigest()


def read_valid_marker(directory: Path, name: str, version: str) -> tuple[Marker | None, str]:
    """(marker, "") for a complete entry, else (None, why the entry is broken)."""
    marker_path = directory / MARKER_NAME
    if not marker_path.is_file():
        return None, f"no {MARKER_NAME}"
    try:
        raw = json.loads(marker_path.read_text(encoding="utf-8"))
        marker = Marker(
            name=str(raw["name"]),
            version=str(raw["version"]),
            wheel=str(raw["wheel"]),
            wheel_sha256=str(raw["wheel_sha256"]),
            file_count=int(raw["file_count"]),
            tree_digest=str(raw["tree_digest"]),
        )
        if raw.get("format") != MARKER_FORMAT:
            return None, f"{MARKER_NAME} has an unknown format"
    except (OSError, ValueError, KeyError, TypeError):
        return None, f"{MARKER_NAME} is unreadable"
    if canonicalize_name(marker.name) != canonicalize_name(name) or marker.version != version:
        return None, f"{MARKER_NAME} names {marker.name}=={marker.version}"
    files = tree_files(directory)
    if len(files) != marker.file_count:
        return None, f"it holds {len(files)} files, {MARKER_NAME} says {marker.file_count}"
    if tree_digest(directory, files) != marker.tree_digest:
        return None, "its files differ from what was extracted"
    return marker, ""


def new_partial_dir(cache_dir: Path) -> Path:
    """A fresh private working folder on the cache's filesystem, so the final rename is atomic."""
    base = releases_dir(cache_dir)
    try:
        base.mkdir(parents=True, exist_ok=True)
        _remove_stale_partials(base)
        return Path(tempfile.mkdtemp(prefix=_TEMP_PREFIX, dir=base))
    except OSError as exc:
        raise CacheError(f"cannot write the apiaudit cache at {base}: {exc.strerror or exc}") from None


def _remove_stale_partials(base: Path) -> None:
    now = time.time()
    for leftover in base.glob(f"{_TEMP_PREFIX}*"):
        try:
            if now - leftover.stat().st_mtime > _STALE_TEMP_SECONDS:
                shutil.rmtree(leftover, ignore_errors=True)
        except OSError:
            pass


def remove_entry(directory: Path) -> None:
    """Delete a broken entry; move it aside first so a half-deleted entry never looks like a real one."""
    if not directory.exists() and not directory.is_symlink():
        return
    doomed = directory.with_name(f"{_TEMP_PREFIX}{directory.name}-broken-{os.getpid()}-{time.time_ns()}")
    try:
        directory.rename(doomed)
    except OSError:
        doomed = directory
    if doomed.is_dir() and not doomed.is_symlink():
        shutil.rmtree(doomed, ignore_errors=True)
    else:
        doomed.unlink(missing_ok=True)
    if directory.exists():
        raise CacheError(f"cannot remove the broken cache entry {directory}")


def publish_entry(built: Path, final: Path, name: str, version: str) -> None:
    """Atomically move a fully built entry (marker included) into place.

    If another run published the same entry first, keep theirs when valid.
    """
    for _ in range(2):
        try:
            os.rename(built, final)
            return
        except OSError:
            if not final.exists():
                raise CacheError(f"cannot write the apiaudit cache entry {final}") from None
            marker, _why = read_valid_marker(final, name, version)
            if marker is not None:
                shutil.rmtree(built, ignore_errors=True)
                return
            remove_entry(final)
    raise CacheError(f"cannot write the apiaudit cache entry {final}")
