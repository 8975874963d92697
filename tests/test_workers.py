"""Work shared with forked copies of this process (`apiaudit.workers`).

The forking tests run in a fresh interpreter: a copy is made only in a process with no other
thread, and the test process may hold some (libraries earlier tests imported start them)."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from apiaudit import workers
from apiaudit.workers import run_split, shares

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="shares are forked on Linux only")


def test_shares_are_contiguous_and_about_equal_in_weight():
    items = list(range(1000))
    two = shares(items, 2)
    assert [len(s) for s in two] == [500, 500] and [x for s in two for x in s] == items
    weighted = shares(items, 2, weight=lambda i: 1 if i < 900 else 100)  # the last tenth weighs most
    assert [x for s in weighted for x in s] == items and len(weighted[0]) > 900
    assert shares(items[:150], 4) == [items[:150]]  # too few items per process: no split
    assert shares([], 4) == [[]]


@linux_only
def test_each_share_after_the_first_runs_in_a_copy_and_pieces_come_back_in_order(fresh_interpreter):
    got = fresh_interpreter(
        """
        import json, os
        from apiaudit.workers import run_split
        seen = []
        def work(part, send):
            for item in part:
                send((os.getpid(), item))
        parts = [list(range(0, 40)), list(range(40, 45)), list(range(45, 100))]  # more than a batch
        results = run_split(parts, work, seen.append)
        print(json.dumps({"parent": os.getpid(), "results": results, "seen": len(seen)}))
        """
    )
    results = got["results"]
    assert [[item for _, item in pieces] for pieces in results] == [list(range(0, 40)), list(range(40, 45)), list(range(45, 100))]
    pids = [{pid for pid, _ in pieces} for pieces in results]
    assert pids[0] == {got["parent"]} and len(set.union(*pids)) == 3
    assert got["seen"] == 100  # every process's pieces are seen here as they arrive


@linux_only
def test_a_copy_that_fails_or_cannot_hand_back_has_its_share_done_here(fresh_interpreter):
    got = fresh_interpreter(
        """
        import json, os
        from apiaudit.workers import run_split
        parent = os.getpid()
        def dies(part, send):
            for item in part:
                if os.getpid() != parent and item == 99:
                    os._exit(3)  # as if killed, after sending some
                send(item)
        def unpicklable(part, send):
            for item in part:
                send((lambda: item) if os.getpid() != parent else item)  # a lambda does not pickle
        print(json.dumps([run_split([[1, 2], [5, 99, 1], [3]], dies), run_split([[1], [2]], unpicklable)]))
        """
    )
    assert got == [[[1, 2], [5, 99, 1], [3]], [[1], [2]]]


def test_no_copy_is_forked_while_another_thread_runs():
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        results = run_split([[1], [2], [3]], lambda part, send: [send((os.getpid(), x)) for x in part] and None)
    finally:
        stop.set()
        thread.join()
    assert results == [[(os.getpid(), 1)], [(os.getpid(), 2)], [(os.getpid(), 3)]]


def test_jobs_and_the_environment_choose_the_count(monkeypatch):
    monkeypatch.setenv("APIAUDIT_JOBS", "3")
    workers.set_jobs(None)
    assert workers.worker_count() == (3 if sys.platform.startswith("linux") else 1)
    workers.set_jobs(1)
    try:
        assert workers.worker_count() == 1
    finally:
        workers.set_jobs(None)
