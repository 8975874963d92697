"""Whole-scan results, cached: a scan whose inputs are all unchanged answers without opening
the provider index or running a check (a warm `matrix` row, the same preflight again).

The key names everything the checks read: apiaudit's own code and the Python and Griffe
versions, the rules (every rule file's bytes, `apiaudit.recipes.files.rules_digest`), the
model facts, the assumed Python version, the provider tree's identity, and every consumer
file's path and sha256 (after excludes); for a fetched release, the versions of the same
provider's other releases in the cache (evidence of its hooks, `checks.hooks`).

The provider's *content*: for a fetched release, the digest of the per-file sha256 map its
entry recorded at extraction is in the key, and that map is what the release is. The answer
stored was computed from files each checked against that map as it was read, so it is the
answer for the release whatever its cached copy holds now: a warm scan checks none of its
files (a copy damaged since is found, and fetched again, by the next scan that reads it).
For any other tree the entry records each provider file the scan read with its sha256 and
stat: a changed file (stat first, then content) makes the entry stale.

What is cached is the report before policy (suppressions, baseline and severities are applied
afresh on every run), as the report JSON, data only (`apiaudit.cache.codec`). Only finished
scans are stored: a scan that stopped with an input error is never answered from here.

What a scan must know of the rules before it knows whether it runs (the rule ids the project's
settings may name, checked before any consumer is fetched) is cached beside, by the same digest
of the rule files' bytes: a warm scan parses no TOML and builds no rule classes.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from apiaudit.cache import codec
from apiaudit.infra.atomic import is_disk_full
from apiaudit.infra.filewalk import files_under
from apiaudit.infra.frozen import record
from apiaudit.sources.base import CodeTree
from apiaudit.sources.cache import content_verifier, recorded_digests, releases_beside

FORMAT = 2
KIND = "scan-results"
RULES_KIND = "rules-summary"
SOURCES_KIND = "engine-sources"
_ENGINE: str | None = None


def engine_fingerprint(cache_dir: Path | None = None) -> str:
    """apiaudit's own source (every module a scan runs, the runner aside) and the environment.

    The source is known by its content. With `cache_dir`, each module's sha256 is kept there by
    its path, size and modification time (as Python decides whether a module's bytecode is still
    its source): a warm scan stats the engine's modules and reads none of them, and two installs
    of the same code share one set of caches."""
    global _ENGINE
    if _ENGINE is None:  # the code does not change within a process; the environment key may
        digest = hashlib.sha256(str(FORMAT).encode())
        for rel, sha in _source_digests(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), cache_dir):
            digest.update(f"{rel}\0{sha}\n".encode())
        _ENGINE = digest.hexdigest()
    return hashlib.sha256(f"{_ENGINE}\0{codec.environment_key()}".encode()).hexdigest()


def _source_digests(root: str, cache_dir: Path | None) -> list[tuple[str, str]]:
    """(relative posix path, sha256) of each module under `root` a scan runs, sorted; the sha256s
    of modules whose stat is unchanged come from the memo under `cache_dir`."""
    stats = [entry for entry in _source_stats(root) if not entry[0].startswith("runner/")]
    memo = cache_dir / "results" / "engine" / f"{hashlib.sha256(root.encode()).hexdigest()[:16]}.json" if cache_dir else None
    known = _source_memo(memo, root) if memo is not None else {}
    found: list[tuple[str, str]] = []
    changed = len(known) != len(stats)  # a module added or removed
    for rel, size, mtime in stats:
        hit = known.get(rel)
        if hit is not None and hit[:2] == (size, mtime):
            found.append((rel, hit[2]))
            continue
        with open(os.path.join(root, rel), "rb") as handle:
            found.append((rel, hashlib.sha256(handle.read()).hexdigest()))
        changed = True
    if memo is not None and changed:
        files = {rel: [size, mtime, sha] for (rel, size, mtime), (_, sha) in zip(stats, found)}
        try:
            codec.write(memo, SOURCES_KIND, {"root": root, "files": files})
        except (OSError, codec.CacheFormatError):
            pass  # the engine's sources are hashed again next time
    return found


def _source_memo(memo: Path, root: str) -> dict[str, tuple[int, int, str]]:
    data = codec.read_or_discard(memo, SOURCES_KIND, "engine sources cache", "hashing the engine's sources")
    if not isinstance(data, dict) or data.get("root") != root or not isinstance(data.get("files"), dict):
        return {}
    known: dict[str, tuple[int, int, str]] = {}
    for rel, entry in data["files"].items():
        if isinstance(entry, list) and len(entry) == 3 and all(isinstance(v, int) for v in entry[:2]) and isinstance(entry[2], str):
            known[rel] = (entry[0], entry[1], entry[2])
    return known


def _source_stats(root: str) -> list[tuple[str, int, int]]:
    """(relative posix path, size, mtime in ns) of every `.py` file under `root`, sorted."""
    found = []
    for rel, entry in files_under(root, skip_folder=lambda name: name == "__pycache__"):
        if rel.endswith(".py"):
            st = entry.stat()
            found.append((rel, st.st_size, st.st_mtime_ns))
    return sorted(found)


@record
class ConsumerInput:
    """One consumer as the key sees it: its identity and its files' contents."""

    name: str
    version: str | None
    root: str
    label: str
    files: tuple[tuple[str, str], ...]  # (path relative to the root, sha256)
    # How it was given (a fetched release, a path, an installed distribution): the report names
    # it so, and a release folder given as a path is otherwise the same files at the same root.
    kind: str = "path"


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
    provider: CodeTree, rules_digest: str, model: str, python_version: tuple[int, ...], consumers: tuple[ConsumerInput, ...],
    cache_dir: Path | None = None, *, launch: str = "",
) -> str:
    """`launch`: the identity of the release job files' command lines start, when it is not the provider."""
    digest = hashlib.sha256(engine_fingerprint(cache_dir).encode())
    parts = (
        provider.name, provider.version, str(provider.root.resolve()), provider.kind, tuple(provider.packages),
        _release_content(provider), rules_digest, model, tuple(python_version), consumers,
    ) + ((launch,) if launch else ()) + _beside(provider)
    digest.update(repr(parts).encode())
    return digest.hexdigest()


def _beside(provider: CodeTree) -> tuple[tuple[str, ...], ...]:
    """The provider's other releases in the cache, which the checks read as evidence of its hooks
    (`checks.hooks`): a release fetched since makes the scan run again."""
    if provider.kind != "release":
        return ()
    return (tuple(r.version for r in releases_beside(provider.root, provider.name)),)


def release_content(provider: CodeTree) -> str:
    """The digest standing for a fetched release's content ("" for any other tree)."""
    return _release_content(provider)


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
    """The cached report (as report JSON) for `key`, when every provider file it recorded is unchanged.

    A release whose content the key pins records none. One that does not (a marker without
    per-file digests): a file whose stat changed is hashed and checked against what its entry
    recorded at extraction, as wherever a release file is read: an edit is a broken entry (CacheError)."""
    data = codec.read_or_discard(_entry(cache_dir, key), KIND, "scan results cache", "scanning afresh")
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
        if stat is not None and codec.file_stat(file) == tuple(stat):
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


def recorded_provider_files(cache_dir: Path, key: str) -> dict[str, str] | None:
    """Path -> sha256 of each provider file the entry for `key` holds to be unchanged (none for a
    release, whose content the key pins); None when there is no readable entry."""
    try:
        data = codec.read(_entry(cache_dir, key), KIND)
    except (OSError, codec.CacheFormatError):
        return None
    files = data.get("provider_files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return None
    return {rel: recorded[0] for rel, recorded in files.items() if isinstance(recorded, tuple) and recorded}


def entry_path(cache_dir: Path, key: str) -> Path:
    """Where the results of the scan with key `key` are kept."""
    return _entry(cache_dir, key)


def store(cache_dir: Path, key: str, provider: CodeTree, touched: dict[str, str], report: dict) -> None:
    """Keep a finished scan's report; a full disk or an unencodable value only skips the entry."""
    root = str(provider.root)
    pinned = bool(_release_content(provider))  # the key names the release's content: nothing to re-check
    files = {} if pinned else {rel: (sha, codec.file_stat(os.path.join(root, rel))) for rel, sha in touched.items()}
    try:
        codec.write(_entry(cache_dir, key), KIND, {"key": key, "provider_files": files, "report": report})
    except OSError as exc:
        if is_disk_full(exc):
            print("apiaudit: warning: no space left on device; the scan results were not cached", file=sys.stderr)
    except codec.CacheFormatError:
        pass


@record
class RulesSummary:
    """What a scan asks of the rules before its results are looked up."""

    digest: str  # of every rule file's bytes (`rules_digest`): the rules' part of the scan key
    known_rules: frozenset[str]  # the engine's rule ids and those the provider's rules add


def _rules_entry(cache_dir: Path, digest: str, names: tuple[str, ...]) -> tuple[Path, str]:
    key = hashlib.sha256(f"{engine_fingerprint(cache_dir)}\0{digest}\0{names!r}".encode()).hexdigest()
    return cache_dir / "results" / "rules" / f"{key[:40]}.json", key


def cached_rules(cache_dir: Path, digest: str, names: tuple[str, ...]) -> RulesSummary | None:
    """The summary stored for these rule files (by their bytes) and provider names, if any.

    Stored only once the files loaded and validated: equal bytes under the same engine load alike."""
    path, key = _rules_entry(cache_dir, digest, names)
    data = codec.read_or_discard(path, RULES_KIND, "rules summary cache", "reading the rules afresh")
    if not isinstance(data, dict) or data.get("key") != key:
        return None
    known = data.get("known_rules")
    if not isinstance(known, list) or not all(isinstance(rule, str) for rule in known):
        return None
    return RulesSummary(digest, frozenset(known))


def store_rules(cache_dir: Path, names: tuple[str, ...], summary: RulesSummary) -> None:
    """Keep a summary; a full disk or an unwritable cache only skips it (the rules load next time)."""
    path, key = _rules_entry(cache_dir, summary.digest, names)
    try:
        codec.write(path, RULES_KIND, {"key": key, "known_rules": sorted(summary.known_rules)})
    except (OSError, codec.CacheFormatError):
        pass
