"""A provider index cache: the answers a scan needed, keyed by version and file hashes.

A warm scan answers every query from here without visiting a module. The entry is
valid while each provider file it read still has the same sha256 and the engine that
wrote it (its code, Python and Griffe versions) is the same; anything else is rebuilt,
never trusted. Entries are data only (`apiaudit.cachefmt`: JSON of registered frozen
values, verified by a content hash), so a planted entry can never run code.
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
from apiaudit.sources.cache import content_verifier

FORMAT = 2  # 1 was pickle
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
    if tree.kind == "release":
        # Every file Griffe reads is checked against what was extracted from the wheel.
        index.loader.verify = content_verifier(tree.root, tree.name, tree.version)
    if cache_dir is None:
        return index
    path = _entry(tree, cache_dir)
    try:
        data = cachefmt.read(path, KIND)
        engine, touched, memo = _unpack(data)
    except FileNotFoundError:
        return index
    except (OSError, cachefmt.CacheFormatError) as exc:
        print(f"apiaudit: the provider index cache {path.name} failed its check ({exc}); rebuilding it", file=sys.stderr)
        path.unlink(missing_ok=True)
        return index
    if engine != _engine_fingerprint():
        return index
    for rel, sha in touched.items():
        file = tree.root / rel
        try:
            if hashlib.sha256(file.read_bytes()).hexdigest() != sha:
                return index
        except OSError:
            return index
    index.memo.update(memo)
    index.loader.touched.update(touched)
    index.warm = True
    return index


def _unpack(data: object) -> tuple[str, dict[str, str], dict[tuple, object]]:
    """(engine, touched files, memo) of a decoded entry; CacheFormatError for any other shape."""
    if not isinstance(data, dict) or set(data) != {"engine", "touched", "memo"}:
        raise cachefmt.CacheFormatError("not a provider index entry")
    engine, touched, memo = data["engine"], data["touched"], data["memo"]
    if not isinstance(engine, str) or not isinstance(touched, dict) or not isinstance(memo, dict):
        raise cachefmt.CacheFormatError("not a provider index entry")
    if not all(isinstance(k, str) and isinstance(v, str) and not k.startswith("/") and ".." not in k.split("/") for k, v in touched.items()):
        raise cachefmt.CacheFormatError("a malformed file list")
    if not all(isinstance(k, tuple) and k and isinstance(k[0], str) for k in memo):
        raise cachefmt.CacheFormatError("a malformed memo")
    return engine, touched, memo


def save_index(index: ProviderIndex, tree: CodeTree, cache_dir: Path) -> None:
    if getattr(index, "warm", False) and not index.loader._modules:
        return  # nothing new was learned
    memo = {}
    for key, value in index.memo.items():
        if key[0] in _UNCACHEABLE:
            continue
        try:
            cachefmt.encode((key, value))
        except cachefmt.CacheFormatError:
            continue  # a value no registered type describes: computed again next time
        memo[key] = value
    data = {"engine": _engine_fingerprint(), "touched": dict(index.loader.touched), "memo": memo}
    path = _entry(tree, cache_dir)
    try:
        cachefmt.write(path, KIND, data)
    except OSError as exc:
        # A cache we cannot write only costs speed; a full disk is still worth one line.
        if is_disk_full(exc):
            print(f"apiaudit: warning: no space left on device writing {path}; the index cache was not saved", file=sys.stderr)
    except cachefmt.CacheFormatError:
        pass
