"""Whole-scan results, cached: a scan whose inputs are all unchanged answers without opening
the provider index or running a check (a warm `matrix` row, the same preflight again).

The key names everything the checks read: apiaudit's own code and the Python and Griffe
versions, the rules in force (their fingerprint), the model facts, the assumed Python version,
the provider tree's identity, and every consumer file's path and sha256 (after excludes). The
provider's *content*: for a fetched release, the digest of the per-file sha256 map its entry
recorded at extraction is in the key; and for every tree the entry records each provider file
the scan read with its sha256 and stat: a changed file (stat first, then content) makes the
entry stale, and in a release it is a broken entry, as wherever a release file is read. What is cached is the report before policy (suppressions,
baseline and severities are applied afresh on every run), as the report JSON, data only
(`apiaudit.cachefmt`). Only finished scans are stored: a scan that stopped with an input error
is never answered from here.
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from apiaudit import cachefmt
from apiaudit.atomic import is_disk_full
from apiaudit.sources.base import CodeTree
from apiaudit.sources.cache import content_verifier, recorded_digests

FORMAT = 1
KIND = "scan-results"
_ENGINE: str | None = None


def engine_fingerprint() -> str:
    """apiaudit's own source (every module a scan runs, the runner aside) and the environment."""
    global _ENGINE
    if _ENGINE is None:  # the code does not change within a process; the environment key may
        here = Path(__file__).resolve().parent
        digest = hashlib.sha256(str(FORMAT).encode())
        for path in sorted(here.rglob("*.py")):
            rel = path.relative_to(here).as_posix()
            if rel.startswith("runner/"):
                continue
            digest.update(rel.encode() + b"\0" + path.read_bytes())
        _ENGINE = digest.hexdigest()
    return hashlib.sha256(f"{_ENGINE}\0{cachefmt.environment_key()}".encode()).hexdigest()


@dataclass(frozen=True)
class ConsumerInput:
    """One consumer as the key sees it: its identity and its files' contents."""

    name: str
    version: str | None
    root: str
    label: str
    files: tuple[tuple[str, str], ...]  # (path relative to the root, sha256)


def file_digests(root: Path, relative_paths: tuple[str, ...]) -> tuple[tuple[str, str], ...] | None:
    """(path, sha256) of each file; None when one cannot be read (the scan then runs and says why)."""
    out = []
    for rel in relative_paths:
        try:
            out.append((rel, hashlib.sha256((root / rel).read_bytes()).hexdigest()))
        except OSError:
            return None
    return tuple(out)


def scan_key(
    provider: CodeTree, rules_fingerprint: str, remote_code: str, model: str, python_version: tuple[int, ...],
    consumers: tuple[ConsumerInput, ...],
) -> str:
    digest = hashlib.sha256(engine_fingerprint().encode())
    parts = (
        provider.name, provider.version, str(provider.root.resolve()), provider.kind, tuple(provider.packages),
        _release_content(provider), rules_fingerprint, remote_code, model, tuple(python_version), consumers,
    )
    digest.update(repr(parts).encode())
    return digest.hexdigest()


def _release_content(provider: CodeTree) -> str:
    """For a fetched release: the digest of the per-file sha256 map its entry recorded (checked
    against the wheel's RECORD when it was extracted), which stands for every file it holds."""
    if provider.kind != "release":
        return ""
    recorded = recorded_digests(provider.root)
    return hashlib.sha256(repr(sorted(recorded.items())).encode()).hexdigest() if recorded else ""


def _entry(cache_dir: Path, key: str) -> Path:
    return cache_dir / "results" / f"{key[:40]}.json"


def lookup(cache_dir: Path, key: str, provider: CodeTree) -> dict | None:
    """The cached report (as report JSON) for `key`, when every provider file it read is unchanged.

    A release file whose stat changed is hashed and checked against what its entry recorded
    at extraction, as wherever a release file is read: an edit is a broken entry (CacheError)."""
    data = cachefmt.read_or_discard(_entry(cache_dir, key), KIND, "scan results cache", "scanning afresh")
    if not isinstance(data, dict) or set(data) != {"key", "provider_files", "report"} or data["key"] != key:
        return None
    files, report = data["provider_files"], data["report"]
    if not isinstance(files, dict) or not isinstance(report, dict):
        return None
    root = str(provider.root)
    verify = content_verifier(provider.root, provider.name, provider.version) if provider.kind == "release" else None
    for rel, recorded in files.items():
        if not (isinstance(rel, str) and isinstance(recorded, tuple) and len(recorded) == 2):
            return None
        if rel.startswith("/") or ".." in rel.split("/"):
            return None
        sha, stat = recorded
        file = os.path.join(root, rel)
        if stat is not None and _stat(file) == tuple(stat):
            continue
        try:
            with open(file, "rb") as handle:
                actual = hashlib.sha256(handle.read()).hexdigest()
        except OSError:
            return None
        if verify is not None:
            verify(rel, actual)
        if actual != sha:
            return None
    return report


def _stat(file: str) -> tuple[int, int] | None:
    """`cachefmt.file_stat` on a string path: one call per provider file a scan read, kept cheap."""
    try:
        st = os.stat(file)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def store(cache_dir: Path, key: str, provider: CodeTree, touched: dict[str, str], report: dict) -> None:
    """Keep a finished scan's report; a full disk or an unencodable value only skips the entry."""
    root = str(provider.root)
    files = {rel: (sha, _stat(os.path.join(root, rel))) for rel, sha in touched.items()}
    try:
        cachefmt.write(_entry(cache_dir, key), KIND, {"key": key, "provider_files": files, "report": report})
    except OSError as exc:
        if is_disk_full(exc):
            print("apiaudit: warning: no space left on device; the scan results were not cached", file=sys.stderr)
    except cachefmt.CacheFormatError:
        pass
