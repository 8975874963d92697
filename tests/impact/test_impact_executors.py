"""The sweep's executors: this process, the local process pool, and a Dask cluster the test starts
(two worker processes) give the same impact and the same atlas; bad addresses are one line."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from dataclasses import replace

import pytest
from click.testing import CliRunner

from apiaudit.cli.group import cli
from apiaudit.errors import ArgumentError, NetworkError, NotInstalledError
from apiaudit.impact.atlas import run_atlas
from apiaudit.impact.atlas_page import render_atlas
from apiaudit.impact.executors import in_task_order, open_executor
from apiaudit.impact.executors.local import WARM_LIMIT_S
from apiaudit.impact.render import render_impact
from apiaudit.impact.run import run_impact
from tests.impact.conftest import DOWNSTREAMS, NEW, OLD, REPO, write_list
from tests.matrix import matrix_toy as toy


@pytest.fixture(scope="module")
def dask_scheduler():
    """A Dask cluster of two worker processes on this machine, which import this very tree."""
    from distributed import LocalCluster

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


def _each_executor(dask_address, run):
    """`run(executor, cache folder name)` on each executor, each with a cache of its own (each scans cold).
    The pool is made to take every task after the first (no task is quick enough to stay here)."""
    from apiaudit.impact.executors import local

    answers = {}
    for name, address, workers in (("inline", "local", 1), ("pool", "local", 2), ("dask", dask_address, None)):
        with pytest.MonkeyPatch.context() as patch, open_executor(address, workers=workers) as executor:
            patch.setattr(local, "WARM_LIMIT_S", 0.0)
            assert executor.workers == (1 if name == "inline" else 2)
            answers[name] = run(executor, name)
            assert name != "pool" or executor.pooled
    return answers


def test_impact_is_the_same_on_every_executor(dask_scheduler, tmp_path):
    listed = write_list(tmp_path, names=(*DOWNSTREAMS, "impact_unused"))  # "unused" comes back from a worker as such
    results = _each_executor(
        dask_scheduler.replace("tcp://", "dask://"),
        lambda executor, name: run_impact(str(OLD), str(NEW), downstream_files=[listed], cache_dir=tmp_path / name, executor=executor),
    )
    same = {name: replace(result, duration_s=0.0) for name, result in results.items()}
    assert same["dask"] == same["pool"] == same["inline"]
    assert [d.outcome for d in same["dask"].downstreams] == ["breaks", "breaks", "clean", "unused"]
    texts = {name: render_impact(result, "json").replace(str(result.duration_s), "") for name, result in results.items()}
    assert texts["dask"] == texts["pool"] == texts["inline"]  # the same ids, in the same order
    assert '"id"' in texts["dask"]


def test_the_atlas_is_the_same_on_every_executor(dask_scheduler, tmp_path):
    user = toy.write_consumer(tmp_path / "project")
    listed = tmp_path / "downstream.toml"
    listed.write_text(f'replace-bundled = true\ndownstream = ["{user}", "{tmp_path / "gone"}"]\n')

    def atlas(executor, name):
        toy.publish(tmp_path / name)
        return run_atlas("toyprov>=1.1", downstream_files=[listed], cache_dir=tmp_path / name, available=toy.VERSIONS, executor=executor)

    results = _each_executor(dask_scheduler, atlas)
    same = {name: replace(result, duration_s=0.0) for name, result in results.items()}
    assert same["dask"] == same["pool"] == same["inline"]
    assert [c.outcome for c in same["dask"].rows[0].cells] == ["clean", "clean", "breaks", "breaks"]
    pages = {name: render_atlas(result, "json").replace(str(result.duration_s), "") for name, result in results.items()}
    assert pages["dask"] == pages["pool"] == pages["inline"]


def test_results_come_back_in_task_order_whatever_order_they_complete_in():
    class Backwards:
        shares_files, workers, inline = True, 2, False

        def map(self, fn, tasks):
            return ((i, fn(tasks[i])) for i in reversed(range(len(tasks))))

    seen: list[int] = []
    assert in_task_order(Backwards(), str.upper, ["a", "b", "c"], done=lambda i, _: seen.append(i)) == ["A", "B", "C"]
    assert seen == [2, 1, 0]


def _nap(seconds: float) -> tuple[float, int]:
    time.sleep(seconds)
    return seconds, os.getpid()


def _spin(seconds: float) -> tuple[float, int]:
    """`seconds` of this thread's CPU: a task doing work, not waiting."""
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass
    return seconds, os.getpid()


def test_the_local_pool_starts_no_worker_while_tasks_are_quick():
    with open_executor("local", workers=2) as executor:
        assert in_task_order(executor, _nap, [0.0, 0.0, 0.0]) == [(0.0, os.getpid())] * 3
        assert not executor.pooled  # warm tasks: answered here, no worker started


def test_a_slow_task_hands_every_task_after_it_to_the_pool_at_once():
    with open_executor("local", workers=2) as executor:
        slow = WARM_LIMIT_S * 3
        answers = in_task_order(executor, _spin, [0.0, slow, 0.0, 0.0])
    assert [seconds for seconds, _ in answers] == [0.0, slow, 0.0, 0.0]
    here = [pid == os.getpid() for _, pid in answers]
    assert here == [True, True, False, False] and executor.pooled  # the tasks after the slow one ran in workers


def test_slow_is_cpu_used_not_time_waited_unless_the_wait_is_long(monkeypatch):
    from apiaudit.impact.executors import local

    # A busy machine: a warm task waits for a CPU, longer than the CPU limit, using little of it.
    with open_executor("local", workers=2) as executor:
        in_task_order(executor, _nap, [WARM_LIMIT_S * 2, 0.0])
        assert not executor.pooled
    monkeypatch.setattr(local, "WAIT_LIMIT_S", 0.2)  # a download: waiting long is not warm either
    with open_executor("local", workers=2) as executor:
        assert [pid == os.getpid() for _, pid in in_task_order(executor, _nap, [0.5, 0.0])] == [True, False]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # free again once closed: nothing listens there


def test_a_scheduler_that_cannot_be_reached_is_one_line():
    address = f"dask://127.0.0.1:{_closed_port()}"
    with pytest.raises(NetworkError, match=f"--executor {address}: cannot reach the Dask scheduler"):
        with open_executor(address, connect_timeout_s=1):
            pass


def test_the_dask_executor_without_its_extra_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if not installed
    with pytest.raises(NotInstalledError, match=r"pip install 'apiaudit\[distributed\]'"):
        with open_executor("tcp://127.0.0.1:8786"):
            pass


@pytest.mark.parametrize(
    ("address", "workers", "message"),
    [
        ("ray://head:10001", None, "--executor ray://head:10001: give local, or a Dask scheduler"),
        ("local", 0, "--workers 0: give at least 1"),
        ("dask://127.0.0.1:8786", 2, "--workers is for --executor local"),
    ],
)
def test_an_executor_of_no_known_kind_is_bad_input(address, workers, message):
    with pytest.raises(ArgumentError, match=message):
        with open_executor(address, workers=workers):
            pass


@pytest.mark.parametrize("command", ["impact", "atlas"])
def test_on_the_command_line_a_bad_executor_is_one_line_and_exit_2(tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    sides = [str(OLD), str(NEW)] if command == "impact" else ["--provider", "toyprov>=1.1"]
    args = [command, *sides, "--downstream", str(write_list(tmp_path)), "--executor", "ray://head", "--no-progress"]
    outcome = CliRunner().invoke(cli, args, env={"APIAUDIT_CACHE_DIR": str(tmp_path), "APIAUDIT_CONFIG": "none"})
    lines = outcome.stderr.strip().splitlines()
    assert outcome.exit_code == 2 and len(lines) == 1 and "--executor ray://head: give local" in lines[0], outcome.stderr


def test_a_task_carries_specs_a_worker_can_read_and_the_cache_only_where_it_is_shared(tmp_path, monkeypatch):
    from apiaudit.impact.tasks import sweep_task
    from apiaudit.policy.config import Settings

    monkeypatch.chdir(tmp_path)
    (tmp_path / "downstream").mkdir()

    class Remote:
        shares_files, workers, inline = False, 8, False

    class Here:
        shares_files, workers, inline = True, 1, True

    common = dict(cache_dir=tmp_path / "cache", rules_dirs=[tmp_path / "rules"], settings=Settings(offline=True))
    remote = sweep_task(Remote(), "downstream", "vllm==0.17.0", against="vllm==0.16.0", **common)
    assert remote.consumer == str(tmp_path / "downstream")  # a path made absolute: a worker's folder is not ours
    assert (remote.provider, remote.against) == ("vllm==0.17.0", "vllm==0.16.0")
    assert remote.cache_dir is None and remote.jobs == 1  # the worker's own cache; one CPU a scan, tasks side by side
    assert remote.rules_dirs == (str(tmp_path / "rules"),) and remote.offline
    here = sweep_task(Here(), "downstream", "vllm==0.17.0", **common)
    assert here.cache_dir == str(tmp_path / "cache") and here.jobs is None and here.against is None


def test_on_the_command_line_impact_on_a_dask_scheduler_is_the_local_report(dask_scheduler, tmp_path):
    listed = write_list(tmp_path)
    outputs = {}
    for executor in ("local", dask_scheduler.replace("tcp://", "dask://")):
        out = tmp_path / f"{executor.split(':')[0]}.json"
        args = ["impact", str(OLD), str(NEW), "--downstream", str(listed), "--executor", executor, "-o", str(out), "--no-progress"]
        cache = tmp_path / f"cache-{executor.split(':')[0]}"
        outcome = CliRunner().invoke(cli, args, env={"APIAUDIT_CACHE_DIR": str(cache), "APIAUDIT_CONFIG": "none"})
        assert outcome.exit_code == 1, outcome.stderr  # two downstreams break
        data = json.loads(out.read_text(encoding="utf-8"))
        data.pop("duration_s")
        outputs[executor] = data
    local, remote = outputs.values()
    assert local == remote
