"""The cyclic collector paused for a block, and set for one command."""

from __future__ import annotations

import gc

from apiaudit.infra.gcpause import for_one_command, paused_gc


def test_paused_gc_restores_what_it_found():
    assert gc.isenabled()
    with paused_gc():
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_one_command_collects_rarely():
    before = gc.get_threshold()
    try:
        for_one_command()
        young, middle, old = gc.get_threshold()
        assert young >= 100_000 and middle > 10 and old > 10
    finally:
        gc.set_threshold(*before)
