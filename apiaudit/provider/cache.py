"""A provider index cache: the answers a scan needed, keyed by version and file hashes.

A warm scan answers every query from here without visiting a module. The entry is
valid while each provider file it read still has the same sha256 and the engine that
wrote it (its code, Python and Griffe versions) is the same; anything else is rebuilt,
never trusted. Entries are data only (`apiaudit.cachefmt`: JSON of registered frozen
values, verified by a content hash), so a planted entry can never run code.

Checking "the same sha256" costs no hashing on the warm path of a release tree: its
marker (`apiaudit.sources.cache`) records each extracted file's sha256, so the entry's
hashes are compared with the marker's, and each file's size and mtime with those the
entry recorded when it was written (one stat per file). A file whose stat differs is
hashed; if its content no longer matches the marker, the release entry was edited after
extraction and `content_verifier` removes it with one line (a same-length edit changes
the mtime, so it is caught here; one that also restores the mtime is caught wherever the
file is read again, as for every cached release). Other trees (a checkout, an installed
package) have no marker: every file the entry read is hashed again.

A warm run that learned nothing new leaves the entry as it is (no rewrite).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from apiaudit import cachefmt
from apiaudit.atomic import is_disk_full
from apiaudit.provider import model
from apiaudit.provider.index import ProviderIndex
from apiaudit.sources.base import CodeTree
from apiaudit.sources.cache import content_verifier, recorded_digests

FORMAT = 3  # 1 was pickle; 3 records each touched file's (size, mtime_ns)
KIND = "provider-index"
_UNCACHEABLE = ("mro-objects",)  # values holding live Griffe objects

cachefmt.register_module(model)


def _engine_fingerprint() -> str:
    here = Path(__file__).parent
    digest = hashlib.sha256(f"{FORMAT}\0{cachefmt.environment_key()}".encode())
    for path in sorted(here.rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _entry(tree: CodeTree, cache_dir: Path) -> Path:
    where = hashlib.sha256(str(tree.root.resolve()).encode()).hexdigest()[:12]
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in f"{tree.name}-{tree.version or 'local'}")
    return cache_dir / "index" / f"{safe}-{where}.json"


def open_index(tree: CodeTree, cache_dir: Path | None) -> ProviderIndex:
    index = ProviderIndex(tree.root, tree.packages)
    recorded = recorded_digests(tree.root) if tree.kind == "release" else None
    if tree.kind == "release":
        # Every file Griffe reads is checked against what was extracted from the wheel.
        index.loader.verify = content_verifier(tree.root, tree.name, tree.version)
    if cache_dir is None:
        return index
    path = _entry(tree, cache_dir)
    try:
        data = cachefmt.read(path, KIND)
        if isinstance(data, dict) and data.get("engine") != _engine_fingerprint():
            return index  # another engine (or an older entry format) wrote it: rebuilt, nothing to say
        engine, touched, stats, memo = _unpack(data)
    except FileNotFoundError:
        return index
    except (OSError, cachefmt.CacheFormatError) as exc:
        print(f"apiaudit: the provider index cache {path.name} failed its check ({exc}); rebuilding it", file=sys.stderr)
        path.unlink(missing_ok=True)
        return index
    if engine != _engine_fingerprint() or not _still_valid(tree, index, touched, stats, recorded):
        return index
    index.memo.update(memo)
    index.loader.touched.update(touched)
    index.warm = True
    index.cached_stats = stats  # type: ignore[attr-defined]
    index.loaded_keys = frozenset(memo)  # type: ignore[attr-defined]
    return index


def _stat(file: Path) -> tuple[int, int] | None:
    try:
        st = file.stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def _still_valid(
    tree: CodeTree, index: ProviderIndex, touched: dict[str, str], stats: dict[str, tuple[int, int]],
    recorded: dict[str, str] | None,
) -> bool:
    """Whether every file the entry read still holds what it read (see the module docstring)."""
    for rel, sha in touched.items():
        file = tree.root / rel
        if recorded is not None:
            if recorded.get(rel) != sha:
                return False  # the release was re-extracted with other content, or the entry is foreign
            if stats.get(rel) is not None and _stat(file) == stats[rel]:
                continue
        try:
            actual = hashlib.sha256(file.read_bytes()).hexdigest()
        except OSError:
            return False
        if recorded is not None and index.loader.verify is not None:
            index.loader.verify(rel, actual)  # an edited release file: the entry is removed, one line
        if actual != sha:
            return False
        if (now := _stat(file)) is not None:
            stats[rel] = now  # same content, new stat (a copied cache): hashed once, not on every run
    return True


def _unpack(data: object) -> tuple[str, dict[str, str], dict[str, tuple[int, int]], dict[tuple, object]]:
    """(engine, touched files, their stats, memo) of a decoded entry; CacheFormatError for any other shape."""
    if not isinstance(data, dict) or set(data) != {"engine", "touched", "stats", "memo"}:
        raise cachefmt.CacheFormatError("not a provider index entry")
    engine, touched, stats, memo = data["engine"], data["touched"], data["stats"], data["memo"]
    if not isinstance(engine, str) or not isinstance(touched, dict) or not isinstance(memo, dict) or not isinstance(stats, dict):
        raise cachefmt.CacheFormatError("not a provider index entry")
    if not all(isinstance(k, str) and isinstance(v, str) and not k.startswith("/") and ".." not in k.split("/") for k, v in touched.items()):
        raise cachefmt.CacheFormatError("a malformed file list")
    if not all(
        isinstance(k, str) and isinstance(v, tuple) and len(v) == 2 and all(type(x) is int for x in v) for k, v in stats.items()
    ):
        raise cachefmt.CacheFormatError("a malformed stat list")
    if not all(isinstance(k, tuple) and k and isinstance(k[0], str) for k in memo):
        raise cachefmt.CacheFormatError("a malformed memo")
    return engine, touched, stats, memo


def save_index(index: ProviderIndex, tree: CodeTree, cache_dir: Path) -> None:
    """Write the entry, unless this run answered everything from it (then it is left untouched)."""
    if getattr(index, "warm", False) and not index.loader._modules and not _learned(index):
        return  # nothing new was learned: a warm run never rewrites its entry
    memo = {}
    for key, value in index.memo.items():
        if key[0] in _UNCACHEABLE:
            continue
        try:
            cachefmt.encode((key, value))
        except cachefmt.CacheFormatError:
            continue  # a value no registered type describes: computed again next time
        memo[key] = value
    touched = dict(index.loader.touched)
    known = getattr(index, "cached_stats", {})
    stats = {rel: st for rel in touched if (st := known.get(rel) or _stat(tree.root / rel)) is not None}
    data = {"engine": _engine_fingerprint(), "touched": touched, "stats": stats, "memo": memo}
    path = _entry(tree, cache_dir)
    try:
        cachefmt.write(path, KIND, data)
    except OSError as exc:
        # A cache we cannot write only costs speed; a full disk is still worth one line.
        if is_disk_full(exc):
            print(f"apiaudit: warning: no space left on device writing {path}; the index cache was not saved", file=sys.stderr)
    except cachefmt.CacheFormatError:
        pass


def _learned(index: ProviderIndex) -> bool:
    """Whether the memo holds cacheable answers the entry did not (a miss answered without a module visit)."""
    loaded = getattr(index, "loaded_keys", frozenset())
    return any(key[0] not in _UNCACHEABLE for key in index.memo.keys() - loaded)
