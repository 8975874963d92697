"""The index's memo: every public question is answered once, on plain values, and kept; what
one process learned joins another's (`adopt`), and the cache (`provider/cache.py`) stores it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from apiaudit.provider.loader import ModuleLoader

_MISSING = object()
# Memo answers that hold live Griffe objects: never stored, never handed to another process.
LIVE_OBJECT_ANSWERS = ("mro-objects",)
# Answers a process builds again rather than receive from another: the map of every top-level
# name of the release (`definitions`) costs more to send and read back than to make.
REBUILT_NOT_SENT = ("definitions",)


class IndexMemo:
    """The bottom layer of `ProviderIndex`: the release's files (`loader`) and the answers kept."""

    def __init__(self, root: Path, packages: tuple[str, ...]):
        self.loader = ModuleLoader(root, packages)
        self.memo: dict[tuple, Any] = {}
        self.warm = False  # answered from a cache entry

    def _cached(self, key: tuple, compute):
        value = self.memo.get(key, _MISSING)  # one lookup: a warm scan asks this ~100,000 times
        if value is not _MISSING:
            return value
        value = compute()
        self.memo[key] = value
        return value

    def answered(self) -> frozenset[tuple]:
        """The questions answered so far (`answers_since` tells what was learned after)."""
        return frozenset(dict.keys(self.memo))

    def answers_since(self, answered: frozenset[tuple]) -> tuple[dict[tuple, Any], dict[str, str]]:
        """(plain answers, provider files read) learned since `answered`, for another process's index."""
        answers = {
            k: v for k, v in dict.items(self.memo) if k not in answered and k[0] not in LIVE_OBJECT_ANSWERS and k[0] not in REBUILT_NOT_SENT
        }
        return answers, dict(self.loader.touched)

    def adopt(self, answers: dict[tuple, Any], touched: dict[str, str]) -> None:
        """What another process's index of the same release learned (`answers_since`)."""
        for key, value in answers.items():
            if not dict.__contains__(self.memo, key):
                dict.__setitem__(self.memo, key, value)  # a lazy memo's hook is not run
        for relative, digest in touched.items():
            self.loader.touched.setdefault(relative, digest)
