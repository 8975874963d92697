"""The cyclic garbage collector paused while a stage builds a large acyclic structure.

Decoding a cache file or parsing a source file allocates hundreds of thousands of containers
that form no cycles (JSON values, `ast` trees, frozen dataclasses); each allocation burst makes
the collector walk every live object again, which cost more than the decoding itself (5x on a
1,000-file consumer cache). Reference counting still frees them; the collector resumes after.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic collection inside the block (nested blocks are fine; the outermost restores it)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# (young, middle, old); Python's defaults are (700, 10, 10).
ONE_COMMAND_THRESHOLDS = (500_000, 50, 100)


def for_one_command() -> None:
    """An audit builds its index and values once and keeps them to the end, so a collection
    finds little to free while it walks every young object (~400 ns each): collect the young
    generation every 500,000 net allocations, not 700, and the older ones rarely (50 and 100
    young collections, not 10 and 10). A cold scan of one consumer then collects once at most
    (at Python's settings that was a tenth of its CPU); a large one collects rarely, and what
    it leaves uncollected meanwhile is bounded by that count (a cold 1,000-file scan: a third
    of its CPU otherwise)."""
    gc.set_threshold(*ONE_COMMAND_THRESHOLDS)
