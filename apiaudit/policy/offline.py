"""`--offline`: fetch nothing. A release spec must already be in the cache; installed code and paths are read as usual."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from apiaudit.errors import NetworkError


def require_cached(specs: Iterable[str], cache_dir: Path) -> None:
    """InputError (one line) for the first NAME==VERSION spec with no complete cache entry."""
    from apiaudit.sources import cache as release_cache
    from apiaudit.sources.local import looks_like_path
    from apiaudit.sources.release import parse_release_spec

    for spec in specs:
        spec = spec.strip()
        if "==" not in spec or looks_like_path(spec):
            continue
        name, version = parse_release_spec(spec)
        entry = release_cache.entry_dir(cache_dir, name, version)
        if not entry.exists() or release_cache.read_valid_marker(entry, name, version)[0] is None:
            raise NetworkError(
                f"{name}=={version} is not in the cache ({cache_dir}) and --offline fetches nothing: "
                "run once without --offline, or point --cache-dir at a cache that has it"
            )


def cached_versions(cache_dir: Path, name: str) -> list[str]:
    """Every version of NAME with a complete release cache entry, oldest first (the offline matrix's releases)."""
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion, Version

    from apiaudit.sources import cache as release_cache

    prefix = f"{canonicalize_name(name)}-"
    found = []
    directory = release_cache.releases_dir(cache_dir)
    for entry in sorted(directory.iterdir()) if directory.is_dir() else ():
        version = entry.name[len(prefix):] if entry.name.startswith(prefix) else None
        if not version:
            continue
        try:
            parsed = Version(version)
        except InvalidVersion:
            continue
        if release_cache.read_valid_marker(entry, name, version)[0] is not None:
            found.append((parsed, version))
    return [v for _, v in sorted(found)]
