"""Whole-scan results, cached: a scan whose inputs are all unchanged answers without opening
the provider index or running a check (a warm `matrix` row, the same preflight again).

The key names everything the checks read: apiaudit's own code and the Python and Griffe
versions, the rules in force (their fingerprint), the model facts, the assumed Python version,
the provider tree's identity, and every consumer file's path and sha256 (after excludes). The
provider's *content* is checked the way the index cache checks it: the entry records each
provider file the scan read with its sha256 and stat, and a changed file (stat first, then
content) makes the entry stale. What is cached is the report before policy (suppressions,
baseline and severities are applied afresh on every run), as the report JSON, data only
(`apiaudit.cachefmt`). Only finished scans are stored: a scan that stopped with an input error
is never answered from here.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path

from apiaudit import cachefmt
from apiaudit.atomic import is_disk_full
from apiaudit.sources.base import CodeTree

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
        rules_fingerprint, remote_code, model, tuple(python_version), consumers,
    )
    digest.update(repr(parts).encode())
    return digest.hexdigest()


def _entry(cache_dir: Path, key: str) -> Path:
    return cache_dir / "results" / f"{key[:40]}.json"


def lookup(cache_dir: Path, key: str, provider: CodeTree) -> dict | None:
    """The cached report (as report JSON) for `key`, when every provider file it read is unchanged."""
    data = cachefmt.read_or_discard(_entry(cache_dir, key), KIND, "scan results cache", "scanning afresh")
    if not isinstance(data, dict) or set(data) != {"key", "provider_files", "report"} or data["key"] != key:
        return None
    files, report = data["provider_files"], data["report"]
    if not isinstance(files, dict) or not isinstance(report, dict):
        return None
    for rel, recorded in files.items():
        if not (isinstance(rel, str) and isinstance(recorded, tuple) and len(recorded) == 2):
            return None
        if rel.startswith("/") or ".." in rel.split("/"):
            return None
        sha, stat = recorded
        file = provider.root / rel
        if stat is not None and cachefmt.file_stat(file) == tuple(stat):
            continue
        try:
            if hashlib.sha256(file.read_bytes()).hexdigest() != sha:
                return None
        except OSError:
            return None
    return report


def store(cache_dir: Path, key: str, provider: CodeTree, touched: dict[str, str], report: dict) -> None:
    """Keep a finished scan's report; a full disk or an unencodable value only skips the entry."""
    files = {rel: (sha, cachefmt.file_stat(provider.root / rel)) for rel, sha in touched.items()}
    try:
        cachefmt.write(_entry(cache_dir, key), KIND, {"key": key, "provider_files": files, "report": report})
    except OSError as exc:
        if is_disk_full(exc):
            print("apiaudit: warning: no space left on device; the scan results were not cached", file=sys.stderr)
    except cachefmt.CacheFormatError:
        pass
