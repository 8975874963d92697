"""A provider index cache: the answers a scan needed, keyed by version and file hashes.

A warm scan answers every query from here without visiting a module. The entry is
valid while each provider file it read still has the same sha256 and the engine that
wrote it is the same; anything else (or an unreadable entry) is rebuilt, never trusted.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from pathlib import Path

from apiaudit.provider.index import ProviderIndex
from apiaudit.sources.base import CodeTree

FORMAT = 1
_UNCACHEABLE = ("mro-objects",)  # values holding live Griffe objects


def _engine_fingerprint() -> str:
    here = Path(__file__).parent
    digest = hashlib.sha256(str(FORMAT).encode())
    for path in sorted(here.rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _entry(tree: CodeTree, cache_dir: Path) -> Path:
    where = hashlib.sha256(str(tree.root.resolve()).encode()).hexdigest()[:12]
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in f"{tree.name}-{tree.version or 'local'}")
    return cache_dir / "index" / f"{safe}-{where}.pickle"


def open_index(tree: CodeTree, cache_dir: Path | None) -> ProviderIndex:
    index = ProviderIndex(tree.root, tree.packages)
    if cache_dir is None:
        return index
    path = _entry(tree, cache_dir)
    if not path.is_file():
        return index
    try:
        with path.open("rb") as fh:
            data = pickle.load(fh)
        if data.get("engine") != _engine_fingerprint():
            return index
        for rel, sha in data["touched"].items():
            file = tree.root / rel
            if not file.is_file() or hashlib.sha256(file.read_bytes()).hexdigest() != sha:
                return index
        index.memo.update(data["memo"])
        index.loader.touched.update(data["touched"])
        index.warm = True
    except Exception:  # noqa: BLE001 - any unreadable entry is rebuilt
        print(f"apiaudit: the provider index cache {path.name} was unreadable; rebuilding it", file=sys.stderr)
        try:
            path.unlink()
        except OSError:
            pass
    return index


def save_index(index: ProviderIndex, tree: CodeTree, cache_dir: Path) -> None:
    if getattr(index, "warm", False) and not index.loader._modules:
        return  # nothing new was learned
    memo = {k: v for k, v in index.memo.items() if k[0] not in _UNCACHEABLE}
    data = {"engine": _engine_fingerprint(), "touched": dict(index.loader.touched), "memo": memo}
    path = _entry(tree, cache_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(data, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        pass  # a cache we cannot write only costs speed
