"""Where code comes from: a path, an installed distribution, or a released wheel -> CodeTree.

Nothing resolved here is ever imported: installed code is found from its metadata,
released code is fetched as a wheel (else read from its sdist, never built) and only its
.py files are extracted.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from apiaudit.errors import ArgumentError
from apiaudit.sources.base import CodeTree, Reporter, SourceWarning, report_warning
from apiaudit.sources.cache import default_cache_dir
from apiaudit.sources.local import is_bare_name, looks_like_path, resolve_path
from apiaudit.sources.release import (
    check_distribution_name,
    fetch_release,
    fetching_refused,
    parse_release_spec,
)
from apiaudit.sources.release import release_versions as _release_versions

__all__ = ["CodeTree", "Reporter", "SourceWarning", "check", "default_cache_dir", "fetching_refused", "release_versions", "resolve"]


def resolve(
    spec: str, *, cache_dir: Path | None = None, progress: Reporter | None = None, verify_wheels: bool | None = None,
    check_entry: bool = True,
) -> CodeTree:
    """Resolve what to audit.

    `spec` is a path (package dir, job script, or folder of both), `NAME==VERSION`
    (a released wheel, cached under `cache_dir`), or a bare distribution NAME
    installed in this Python. A release fetched for the first time is read by HTTP range
    requests (only its .py files) unless `verify_wheels` (default: `--verify-wheels`) asks
    for the whole wheel. `check_entry=False` returns a cached release without listing its
    files (`fetch_release`): for a caller that resolves it again before reading any.
    """
    spec = _not_empty(spec)
    if looks_like_path(spec):
        if is_bare_name(spec):
            _say_when_a_folder_hides_a_distribution(spec, progress)
        return resolve_path(spec)
    release = _release_or_name(spec)
    if release is not None:
        return fetch_release(
            *release, cache_dir=cache_dir or default_cache_dir(), progress=progress, verify_wheels=verify_wheels,
            check_entry=check_entry,
        )  # fmt: skip
    from apiaudit.sources.installed import (
        resolve_installed,  # importlib.metadata: only for an installed NAME
    )

    return resolve_installed(spec)


# NAME followed by version clauses (`vllm>=0.16`, `vllm>=0.11,<0.17`, `vllm~=0.16.0`): a range, not a release.
VERSION_RANGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\s*(?:<|>|~=|!=)[^;@]*$")


_SAID_FOLDER_OVER_DISTRIBUTION: set[tuple[str, str]] = set()


def _say_when_a_folder_hides_a_distribution(name: str, progress: Reporter | None) -> None:
    """A bare NAME that is also a folder or file here is read from there: say so where a distribution
    of that name is installed too, since NAME alone reads as the installed one."""
    from importlib import metadata

    key = (str(Path.cwd()), name)
    if key in _SAID_FOLDER_OVER_DISTRIBUTION:  # a scan resolves a consumer more than once
        return
    _SAID_FOLDER_OVER_DISTRIBUTION.add(key)
    try:
        installed = metadata.distribution(name).version
    except (metadata.PackageNotFoundError, ValueError):
        return
    report_warning(
        progress,
        f"{name}: reading ./{name} here, not the installed {name} {installed} (pass ./{name} to say so, "
        f"or cd elsewhere for the installed one)",
    )


def check(spec: str) -> None:
    """Refuse now what `resolve` would refuse, asking the network nothing: a path that is not
    there, a malformed NAME==VERSION, a bare NAME not installed. Every command checks its inputs
    this way before it fetches anything, so bad input never costs a download first."""
    spec = _not_empty(spec)
    if looks_like_path(spec):
        resolve_path(spec)
    elif _release_or_name(spec) is None:
        from apiaudit.sources.installed import resolve_installed

        resolve_installed(spec)


def _not_empty(spec: str) -> str:
    spec = spec.strip()
    if not spec:
        raise ArgumentError("empty source: give a path, NAME==VERSION, or an installed distribution NAME")
    return spec


def _release_or_name(spec: str) -> tuple[str, str] | None:
    """(NAME, VERSION) of a release spec; None for a well-formed bare distribution name."""
    if "==" in spec:
        return parse_release_spec(spec)
    if VERSION_RANGE.match(spec):
        raise ArgumentError(
            f"cannot audit {spec!r}: a scan reads one release (NAME==VERSION); "
            f"every release of a provider range: `apiaudit matrix --provider {shlex.quote(spec)} --consumer ...`"
        )
    if any(op in spec for op in ("<", ">", "!=", "~=", "=", "@", "[", " ")):
        raise ArgumentError(f"cannot audit {spec!r}: give a path, NAME==VERSION, or an installed distribution NAME")
    check_distribution_name(spec)
    return None


def release_versions(
    name: str, *, include_prereleases: bool = False, cache_dir: Path | None = None, refresh: bool = False
) -> list[str]:
    """Every version of NAME the package index offers, oldest first (pre-releases only when asked).

    With `cache_dir`, a listing a few minutes old is reused unless `refresh`."""
    return _release_versions(name, include_prereleases=include_prereleases, cache_dir=cache_dir, refresh=refresh)
