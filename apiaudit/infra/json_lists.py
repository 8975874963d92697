"""A cached list of plain-JSON items, one file under a cache folder: what the exact-fix cache and
impact's tie memo keep. Read back only whole (every item decoded, as many as the caller expects);
written atomically, and a full disk keeps nothing (the next run computes the items again)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from apiaudit.infra.atomic import atomic_write, is_disk_full

T = TypeVar("T")


def load_items(folder: Path, name: str, count: int, decode: Callable[[Any], T]) -> list[T] | None:
    """The `count` items stored under `name`; None when absent, unreadable, undecodable or of
    another length."""
    try:
        items = [decode(item) for item in json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))]
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return items if len(items) == count else None


def store_items(folder: Path, name: str, items: Sequence[T], encode: Callable[[T], Any]) -> None:
    """Keep `items` under `name` (a full disk keeps nothing; any other failure is raised)."""
    text = json.dumps([encode(item) for item in items])
    try:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(folder / f"{name}.json", text)
    except OSError as exc:
        if not is_disk_full(exc):
            raise
