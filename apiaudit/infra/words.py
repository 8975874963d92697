"""Counts in words: "1 file", "2 files", for every line a person reads."""

from __future__ import annotations


def counted(n: int, word: str, plural: str | None = None) -> str:
    """`n` and `word`, in the plural unless `n` is 1 (`plural` where adding "s" is wrong)."""
    return f"{n} {word if n == 1 else (plural or word + 's')}"
