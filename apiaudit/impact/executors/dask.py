"""The Dask executor: the sweep's tasks on a Dask distributed scheduler's workers
(`--executor dask://HOST:PORT` or `tcp://HOST:PORT`), from the optional `distributed` extra.

Each task goes to the cluster as data (a task record, the function by its module name), so the
workers need apiaudit installed, not this process's objects. Workers on another machine read
none of this machine's files: tasks then name no cache, and each worker fetches the releases it
scans into its own default cache (`APIAUDIT_CACHE_DIR` there); a path given as a downstream or
provider must be readable at that path on the workers.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from typing import Any, Callable, Iterator, Sequence, TypeVar
from urllib.parse import urlsplit

from apiaudit.errors import NetworkError, NotInstalledError

Task = TypeVar("Task")
Result = TypeVar("Result")


class DaskExecutor:
    inline = False

    def __init__(self, client: Any, workers: int, shares_files: bool) -> None:
        self._client = client
        self.workers = workers
        self.shares_files = shares_files

    @classmethod
    @contextlib.contextmanager
    def connected(cls, address: str, *, connect_timeout_s: float = 10.0) -> Iterator[DaskExecutor]:
        try:
            from distributed import Client
        except ImportError:
            raise NotInstalledError(
                f"--executor {address}: the Dask executor needs the distributed extra: pip install 'apiaudit[distributed]'",
                "distributed",
            ) from None
        scheduler = "tcp://" + address.split("://", 1)[1]
        try:
            client = Client(scheduler, timeout=connect_timeout_s, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise NetworkError(f"--executor {address}: cannot reach the Dask scheduler: {_one_line(exc)}") from None
        try:
            addresses = list(client.scheduler_info().get("workers", {}))
            threads = sum(client.nthreads().values()) or 1
            yield cls(client, threads, all(_on_this_machine(a) for a in addresses))
        finally:
            client.close()

    def map(self, fn: Callable[[Task], Result], tasks: Sequence[Task]) -> Iterator[tuple[int, Result]]:
        from distributed import as_completed

        # pure=False: two equal tasks are still two runs (a warm cache makes the second cheap).
        futures = self._client.map(fn, list(tasks), pure=False)
        positions = {future.key: position for position, future in enumerate(futures)}
        for future, result in as_completed(futures, with_results=True, loop=self._client.loop):
            yield positions[future.key], result


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _on_this_machine(worker_address: str) -> bool:
    """Whether a worker (tcp://HOST:PORT) runs on this machine: a loopback address or one of this host's."""
    host = urlsplit(worker_address).hostname or ""
    try:
        if ipaddress.ip_address(host).is_loopback:
            return True
    except ValueError:
        if host == "localhost":
            return True
    try:
        own = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None)}
    except OSError:
        return False
    return host in own
