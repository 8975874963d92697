"""Work shared with forked copies of this process (`apiaudit.infra.workers`).

The forking tests run in a fresh interpreter: a copy is made only in a process with no other
thread, and the test process may hold some (libraries earlier tests imported start them)."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from apiaudit.infra import workers
from apiaudit.infra.workers import Plan, plan, run_split

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="work is forked on Linux only")


def test_a_plan_cuts_contiguous_chunks_of_about_equal_weight():
    items = list(range(1000))
    two = plan(items, 2)
    assert two.processes == 2 and two.items == items
    assert len(two.chunks) == 2 * workers.CHUNKS_PER_PROCESS
    assert max(map(len, two.chunks)) - min(map(len, two.chunks)) <= 1
    weighted = plan(items, 2, weight=lambda i: 1 if i < 900 else 100)  # the last tenth weighs most
    assert weighted.items == items
    assert len([c for c in weighted.chunks if c[0] < 900]) <= 2  # the light items share a chunk or two
    assert plan(items[: workers.MIN_SHARE + 1], 4) == Plan((items[: workers.MIN_SHARE + 1],), 1)  # too few: no split
    assert plan([], 4) == Plan(([],), 1)
    assert plan(items, 1) == Plan((items,), 1)


def _drained(script: str) -> str:
    return (
        """
        import json, os
        from apiaudit.infra.workers import News, Plan, run_split
        def each(send_item):
            def work(take, send):
                for chunk in take:
                    for item in chunk:
                        send_item(item, send)
            return work
        """
        + script
    )


@linux_only
def test_every_process_takes_chunks_from_one_queue_and_pieces_come_back_in_chunk_order(fresh_interpreter):
    got = fresh_interpreter(
        _drained(
            """
        import time
        seen = []
        def work(take, send):
            for chunk in take:
                for item in chunk:
                    time.sleep(0.001)
                    send((os.getpid(), item))
            send(("tail", os.getpid()))
        parent = os.getpid()
        chunks = tuple(list(range(start, start + 10)) for start in range(0, 300, 10))
        split = run_split(Plan(chunks, 3), work, seen.append)
        print(json.dumps({"parent": parent, "chunks": split.chunks, "tails": split.tails, "seen": len(seen)}))
        """
        )
    )
    assert [[item for _, item in pieces] for pieces in got["chunks"]] == [list(range(s, s + 10)) for s in range(0, 300, 10)]
    by_chunk = [{pid for pid, _ in pieces} for pieces in got["chunks"]]
    assert all(len(pids) == 1 for pids in by_chunk)  # a chunk is done by one process
    assert len(set.union(*by_chunk)) >= 2
    tails = [pid for _, pid in got["tails"]]  # every process sends its tail, whatever it took
    assert len(set(tails)) == 3 and tails[0] == got["parent"]
    assert got["seen"] == 300 + 3  # every process's pieces are seen here as they arrive


@linux_only
def test_a_copy_that_fails_or_cannot_hand_back_has_its_chunks_done_here(fresh_interpreter):
    got = fresh_interpreter(
        _drained(
            """
        parent = os.getpid()
        def dies(item, send):
            if os.getpid() != parent and item == 99:
                os._exit(3)  # as if killed, after sending some
            send(item)
        def unpicklable(item, send):
            send((lambda: item) if os.getpid() != parent else item)  # a lambda does not pickle
        chunks = ([1, 2], [5, 99, 1], [3], [4], [6])
        print(json.dumps([run_split(Plan(chunks, 2), each(dies)).chunks, run_split(Plan(([1], [2], [3]), 2), each(unpicklable)).chunks]))
        """
        )
    )
    assert got == [[[1, 2], [5, 99, 1], [3], [4], [6]], [[1], [2], [3]]]


@linux_only
def test_a_copy_packs_what_it_hands_back(fresh_interpreter):
    got = fresh_interpreter(
        _drained(
            """
        import time
        split = run_split(Plan(tuple([i] for i in range(1, 41)), 2), each(lambda item, send: time.sleep(0.002) or send(item)), pack=lambda piece: -piece)
        print(json.dumps(split.pieces))
        """
        )
    )
    assert sorted(abs(p) for p in got) == list(range(1, 41)) and any(p < 0 for p in got)  # the copy's pieces, packed


@linux_only
def test_news_of_a_piece_reaches_the_other_processes_while_they_work(fresh_interpreter):
    got = fresh_interpreter(
        _drained(
            """
        import time
        heard = []
        def work(take, send):
            for chunk in take:
                for item in chunk:
                    time.sleep(0.005)
                    send((os.getpid(), item, sorted(heard)))
        news = News(tell=lambda piece: piece[1], hear=heard.append)
        split = run_split(Plan(tuple([i] for i in range(60)), 3), work, news=news)
        print(json.dumps({"parent": os.getpid(), "pieces": split.pieces, "heard": sorted(heard)}))
        """
        )
    )
    pieces = got["pieces"]
    mine = {item for pid, item, _ in pieces if pid == got["parent"]}
    assert set(got["heard"]) == set(range(60)) - mine  # this process hears every copy's items
    for pid, item, heard in pieces:
        if pid != got["parent"]:
            own = {i for p, i, _ in pieces if p == pid}
            assert not set(heard) & own  # a copy never hears its own news
    late = [heard for pid, item, heard in pieces if pid != got["parent"] and item > 40]
    assert late and all(heard for heard in late)  # and hears the others' while it works


def test_no_copy_is_forked_while_another_thread_runs():
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()

    def work(take, send):
        for chunk in take:
            for x in chunk:
                send((os.getpid(), x))

    try:
        split = run_split(Plan(([1], [2], [3]), 3), work)
    finally:
        stop.set()
        thread.join()
    assert split.chunks == [[(os.getpid(), 1)], [(os.getpid(), 2)], [(os.getpid(), 3)]]


def test_jobs_and_the_environment_choose_the_count(monkeypatch):
    monkeypatch.setenv("APIAUDIT_JOBS", "3")
    workers.set_jobs(None)
    assert workers.worker_count() == (3 if sys.platform.startswith("linux") else 1)
    workers.set_jobs(1)
    try:
        assert workers.worker_count() == 1
    finally:
        workers.set_jobs(None)


def test_jobs_within_sets_the_split_for_the_block_only():
    workers.set_jobs(3)
    try:
        with workers.jobs_within(1):
            assert workers.worker_count() == 1 or not sys.platform.startswith("linux")
        assert workers._chosen == 3
        with workers.jobs_within(None):
            assert workers._chosen == 3
    finally:
        workers.set_jobs(None)
