""""Did you mean": the known word closest to a mistyped one, for the one line bad input gets."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(word: str, known: Iterable[str]) -> str | None:
    """The known word most like `word` (difflib's ratio at least 0.6), or None."""
    close = difflib.get_close_matches(word, list(known), n=1)
    return close[0] if close else None


def hint(word: str, known: Iterable[str], *, listing: str | None = None) -> str:
    """` (did you mean 'x'?)` for the closest known word; without one, ` (known: a, b, ...)`, or
    ` (LISTING)` where the known words are too many to name (e.g. "`apiaudit rule` lists them")."""
    words = list(known)
    match = closest(word, words)
    if match is not None:
        return f" (did you mean '{match}'?)"
    return f" ({listing})" if listing else f" (known: {', '.join(words)})"
