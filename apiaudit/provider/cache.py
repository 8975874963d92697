"""A provider index cache: the answers a scan needed, keyed by version and file hashes.

A warm scan answers every query from here without visiting a module. The entry is
valid while each provider file it read still has the same sha256 and the engine that
wrote it (its code, Python and Griffe versions) is the same; anything else is rebuilt,
never trusted. Entries are data only (`apiaudit.cache.codec`: JSON of registered frozen
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
import os
import sys
from pathlib import Path

from apiaudit.cache import codec
from apiaudit.infra.atomic import is_disk_full
from apiaudit.provider import records
from apiaudit.provider.index import LIVE_OBJECT_ANSWERS, ProviderIndex
from apiaudit.sources.base import CodeTree
from apiaudit.sources.cache import content_verifier, recorded_digests

FORMAT = 3  # 1 was pickle; 3 records each touched file's (size, mtime_ns)
KIND = "provider-index"
_UNCACHEABLE = LIVE_OBJECT_ANSWERS  # values holding live Griffe objects
# The release's definitions map (every top-level name of every file: most of an entry's bytes)
# lives in a file of its own, read only when a "moved to" question is not already answered.
DEFINITIONS_KEY = ("definitions",)
DEFINITIONS_KIND = "provider-definitions"


class _LazyMemo(dict):
    """The index memo, with the definitions map read from its own file on first use."""

    def __init__(self, data: dict, load_definitions) -> None:
        super().__init__(data)
        self._load = load_definitions
        self.definitions_cached = False

    def _fill(self, key: object) -> None:
        if self._load is not None and key == DEFINITIONS_KEY:
            load, self._load = self._load, None
            table = load()
            if table is not None:
                super().__setitem__(DEFINITIONS_KEY, table)
                self.definitions_cached = True

    def __contains__(self, key: object) -> bool:
        self._fill(key)
        return super().__contains__(key)

    def __getitem__(self, key: object):
        self._fill(key)
        return super().__getitem__(key)

    def get(self, key: object, default=None):
        self._fill(key)
        return super().get(key, default)

codec.register_module(records)


def _engine_fingerprint() -> str:
    here = Path(__file__).parent
    digest = hashlib.sha256(f"{FORMAT}\0{codec.environment_key()}".encode())
    # The index's own code, and the deprecation forecast, whose answers the memo keeps too.
    for path in [*sorted(here.rglob("*.py")), here.parent / "checks" / "deprecations.py"]:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _entry(tree: CodeTree, cache_dir: Path) -> Path:
    where = hashlib.sha256(str(tree.root.resolve()).encode()).hexdigest()[:12]
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in f"{tree.name}-{tree.version or 'local'}")
    return cache_dir / "index" / f"{safe}-{where}.json"


def has_entry(tree: CodeTree, cache_dir: Path) -> bool:
    """Whether an index entry for this tree exists (valid or not: opening it says)."""
    return _entry(tree, cache_dir).is_file()


def open_index(tree: CodeTree, cache_dir: Path | None) -> ProviderIndex:
    index = ProviderIndex(tree.root, tree.packages)
    recorded = recorded_digests(tree.root) if tree.kind == "release" else None
    if tree.kind == "release":
        # Every file Griffe reads is checked against what was extracted from the wheel.
        index.loader.verify = content_verifier(tree.root, tree.name, tree.version)
    if cache_dir is None:
        return index
    path = _entry(tree, cache_dir)
    data = codec.read_or_discard(path, KIND, "provider index cache")
    if data is codec.MISSING:
        return index
    if isinstance(data, dict) and data.get("engine") != _engine_fingerprint():
        return index  # another engine (or an older entry format) wrote it: rebuilt, nothing to say
    try:
        engine, touched, stats, memo = _unpack(data)
    except codec.CacheFormatError as exc:
        print(f"apiaudit: the provider index cache {path.name} failed its check ({exc}); rebuilding it", file=sys.stderr)
        path.unlink(missing_ok=True)
        return index
    if engine != _engine_fingerprint() or not _still_valid(tree, index, touched, stats, recorded):
        return index
    touched_digest = _touched_digest(touched)
    index.memo = _LazyMemo(memo, lambda: _read_definitions(path, touched_digest))
    index.loader.touched.update(touched)
    index.warm = True
    index.cached_stats = stats  # type: ignore[attr-defined]
    index.loaded_keys = frozenset(memo)  # type: ignore[attr-defined]
    index.loaded_touched = dict(touched)  # type: ignore[attr-defined]
    return index


def _definitions_path(entry: Path) -> Path:
    return entry.with_name(entry.stem + ".definitions.json")


def _touched_digest(touched: dict[str, str]) -> str:
    return hashlib.sha256(repr(sorted(touched.items())).encode()).hexdigest()


def _read_definitions(entry: Path, touched_digest: str) -> object:
    """The definitions map saved beside `entry` for the same engine and files, else None (rebuilt)."""
    try:
        data = codec.read(_definitions_path(entry), DEFINITIONS_KIND)
    except (OSError, codec.CacheFormatError):
        return None
    if not isinstance(data, dict) or data.get("engine") != _engine_fingerprint() or data.get("touched") != touched_digest:
        return None
    table = data.get("table")
    return table if isinstance(table, tuple) else None


def _still_valid(
    tree: CodeTree, index: ProviderIndex, touched: dict[str, str], stats: dict[str, tuple[int, int]],
    recorded: dict[str, str] | None,
) -> bool:
    """Whether every file the entry read still holds what it read (see the module docstring)."""
    for rel, sha in touched.items():
        file = os.path.join(tree.root, rel)
        if recorded is not None:
            if recorded.get(rel) != sha:
                return False  # the release was re-extracted with other content, or the entry is foreign
            if stats.get(rel) is not None and codec.file_stat(file) == stats[rel]:
                continue
        try:
            with open(file, "rb") as handle:
                actual = hashlib.sha256(handle.read()).hexdigest()
        except OSError:
            return False
        if recorded is not None and index.loader.verify is not None:
            index.loader.verify(rel, actual)  # an edited release file: the entry is removed, one line
        if actual != sha:
            return False
        if (now := codec.file_stat(file)) is not None:
            stats[rel] = now  # same content, new stat (a copied cache): hashed once, not on every run
    return True


def _unpack(data: object) -> tuple[str, dict[str, str], dict[str, tuple[int, int]], dict[tuple, object]]:
    """(engine, touched files, their stats, memo) of a decoded entry; CacheFormatError for any other shape."""
    if not isinstance(data, dict) or set(data) != {"engine", "touched", "stats", "memo"}:
        raise codec.CacheFormatError("not a provider index entry")
    engine, touched, stats, memo = data["engine"], data["touched"], data["stats"], data["memo"]
    if not isinstance(engine, str) or not isinstance(touched, dict) or not isinstance(memo, dict) or not isinstance(stats, dict):
        raise codec.CacheFormatError("not a provider index entry")
    if not all(isinstance(k, str) and isinstance(v, str) and not k.startswith("/") and ".." not in k.split("/") for k, v in touched.items()):
        raise codec.CacheFormatError("a malformed file list")
    if not all(
        isinstance(k, str) and isinstance(v, tuple) and len(v) == 2 and all(type(x) is int for x in v) for k, v in stats.items()
    ):
        raise codec.CacheFormatError("a malformed stat list")
    if not all(isinstance(k, tuple) and k and isinstance(k[0], str) for k in memo):
        raise codec.CacheFormatError("a malformed memo")
    return engine, touched, stats, memo


def save_index(index: ProviderIndex, tree: CodeTree, cache_dir: Path) -> None:
    """Write the entry, unless this run answered everything from it (then it is left untouched)."""
    if getattr(index, "warm", False) and not _learned(index) and getattr(index, "loaded_touched", None) == index.loader.touched:
        # Nothing new was learned (modules visited for live-object questions such as an MRO
        # leave no plain answer behind): a warm run never rewrites its entry.
        return
    index.memo.get(DEFINITIONS_KEY)  # a cached map not read this run is carried over to the new entry
    memo: dict[tuple, codec.Encoded] = {}
    for key, value in dict.items(index.memo):  # never forces the lazy definitions map
        if key[0] in _UNCACHEABLE or key == DEFINITIONS_KEY:
            continue
        try:
            codec.encode(key)
            memo[key] = codec.Encoded(codec.to_json(value))  # encoded once, as it is written
        except codec.CacheFormatError:
            pass  # a value no registered type describes: computed again next time
    touched = dict(index.loader.touched)
    known = getattr(index, "cached_stats", {})
    stats = {rel: st for rel in touched if (st := known.get(rel) or codec.file_stat(os.path.join(tree.root, rel))) is not None}
    data = {"engine": _engine_fingerprint(), "touched": touched, "stats": stats, "memo": memo}
    path = _entry(tree, cache_dir)
    table = dict.get(index.memo, DEFINITIONS_KEY)
    fresh_table = table is not None and not getattr(index.memo, "definitions_cached", False)
    touched_changed = getattr(index, "loaded_touched", None) != touched
    if table is not None and (fresh_table or touched_changed):
        # Written first: an entry never names a definitions file older than itself.
        definitions = {"engine": data["engine"], "touched": _touched_digest(touched), "table": table}
        try:
            codec.write(_definitions_path(path), DEFINITIONS_KIND, definitions)
        except (OSError, codec.CacheFormatError):
            pass
    try:
        codec.write(path, KIND, data)
    except OSError as exc:
        # A cache we cannot write only costs speed; a full disk is still worth one line.
        if is_disk_full(exc):
            print(f"apiaudit: warning: no space left on device writing {path}; the index cache was not saved", file=sys.stderr)
    except codec.CacheFormatError:
        pass


def _learned(index: ProviderIndex) -> bool:
    """Whether the memo holds cacheable answers the entry did not (a miss answered without a module visit)."""
    loaded: frozenset[tuple] = getattr(index, "loaded_keys", frozenset())
    fresh_table = dict.__contains__(index.memo, DEFINITIONS_KEY) and not getattr(index.memo, "definitions_cached", False)
    return fresh_table or any(
        key[0] not in _UNCACHEABLE and key != DEFINITIONS_KEY and _encodable(key, dict.get(index.memo, key))
        for key in index.memo.keys() - loaded
    )  # a value no registered type describes is computed again on every run: nothing learned


def _encodable(key: tuple, value: object) -> bool:
    try:
        codec.encode((key, value))
    except codec.CacheFormatError:
        return False
    return True
