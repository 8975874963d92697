"""A large consumer's cold work shared between this process and forked copies of it.

Reading and checking one consumer file depends only on what every file shares (the options,
the consumer-wide tables, the provider index, the checks' context), all of it built before
the split: a forked copy inherits it as it stands, with nothing imported or run anew.

The work is cut into contiguous chunks of about equal weight (`plan`), more chunks than
processes, and every process, this one included, takes the next chunk from one queue when it
is done with the last (`run_split`). Work this process does besides its chunks (taking in the
copies' results, warming the index for them) then costs no process its share: a fixed split
left one process idle for seconds while the other finished. Pieces come back in chunk order,
so results are the same whatever process did what. A copy that fails (killed, out of memory,
a hand-back that does not unpickle) costs only time: the chunks it took are done here.

Only where `fork` is safe for pure-Python work: on Linux, in a process with no other thread
(a thread holding a lock at the fork would leave the copy waiting on it forever: `matrix`
fetches in threads, and its scans are never split). Elsewhere, with one CPU, or with
`--jobs 1` / `APIAUDIT_JOBS=1`, everything runs here.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import select
import signal
import struct
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from apiaudit.infra.frozen import record

Item = TypeVar("Item")
Piece = TypeVar("Piece")

MAX_WORKERS = 4  # past this, the copies' duplicated provider loading outweighs the split
MIN_SHARE = 40  # items per process below which a split costs more than it saves
CHUNKS_PER_PROCESS = 12  # the queue's grain: the last chunk taken bounds how long one process waits for another


_chosen: int | None = None  # --jobs


def set_jobs(jobs: int | None) -> None:
    """The number of processes `--jobs` asks for (None: the default)."""
    global _chosen
    _chosen = jobs


@contextlib.contextmanager
def jobs_within(jobs: int | None) -> Iterator[None]:
    """`set_jobs(jobs)` for the block only (None: as it was): a task run in a process that goes on."""
    global _chosen
    outer = _chosen
    if jobs is not None:
        _chosen = jobs
    try:
        yield
    finally:
        _chosen = outer


def worker_count() -> int:
    """How many processes a split uses: `--jobs`, else `APIAUDIT_JOBS`, else the CPUs this
    process may use (at most 4)."""
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return 1
    if _chosen is not None:
        return max(1, _chosen)
    text = os.environ.get("APIAUDIT_JOBS", "").strip()
    if text.isdigit() and int(text) >= 1:
        return int(text)
    return usable_cpus(MAX_WORKERS)


def usable_cpus(at_most: int) -> int:
    """The CPUs this process may run on, at most `at_most` (at least 1)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, at_most))


@record
class Plan(Generic[Item]):
    """How `run_split` shares items: contiguous chunks (in item order) and the processes taking them."""

    chunks: tuple[Sequence[Item], ...]
    processes: int = 1

    @property
    def items(self) -> list[Item]:
        return [item for chunk in self.chunks for item in chunk]


def plan(items: Sequence[Item], workers: int, weight: Callable[[Item], float] | None = None) -> Plan[Item]:
    """`items` in contiguous chunks of about equal `weight` (default: one each) for up to `workers`
    processes: one chunk and one process where there are too few items to be worth a split."""
    processes = max(1, min(workers, len(items) // MIN_SHARE))
    if processes == 1:
        return Plan((items,), 1)
    count = min(len(items), processes * CHUNKS_PER_PROCESS)
    weights = [max(weight(item), 1e-9) if weight else 1.0 for item in items]
    total, bounds, running = sum(weights), [0], 0.0
    for i, w in enumerate(weights):
        running += w
        if len(bounds) < count and running >= total * len(bounds) / count:
            bounds.append(i + 1)
    bounds.append(len(items))
    return Plan(tuple(items[a:b] for a, b in zip(bounds, bounds[1:]) if b > a), processes)


@dataclass
class Split(Generic[Piece]):
    """What `run_split` brings back: each chunk's pieces in the order sent, and the pieces a
    process sent after its last chunk (`tails`: this process's first, then each copy's)."""

    chunks: list[list[Piece]]
    tails: list[Piece] = field(default_factory=list)

    @property
    def pieces(self) -> list[Piece]:
        return [piece for pieces in self.chunks for piece in pieces]


# work(take, send): `take` yields the chunks this process is to do, one at a time (the next one
# is taken from the queue when the last is done); `send` hands back a piece of the current chunk,
# or after the last one, a tail piece.
Work = Callable[[Iterator[Sequence[Any]], Callable[[Any], None]], None]


@record
class News:
    """What the processes of a split tell each other while they work (`run_split(news=)`): this
    process hears what each copy's pieces tell and passes it on to the other copies; a copy
    hears it between two of its pieces. What a process hears must never change what its pieces
    mean, only how soon they are right (a first reading that needs no second)."""

    tell: Callable[[Any], Any]  # a piece (as a copy packed it) -> what the others should hear (None: nothing)
    hear: Callable[[Any], None]  # in a process: what another one told


def run_split(
    shared: Plan[Item],
    work: Work,
    on_piece: Callable[[Piece], None] | None = None,
    *,
    pack: Callable[[Piece], Any] | None = None,
    news: News | None = None,
) -> Split[Piece]:
    """`work(take, send)` in this process and in `shared.processes - 1` forked copies, all taking
    chunks from one queue. Every piece comes back in its chunk's list, in the order sent;
    `on_piece` sees each one here as it arrives (progress). `pack` is applied in a copy to each
    piece it sends (a form cheaper to hand back; the caller reads both forms)."""
    report = on_piece or (lambda piece: None)
    chunks = shared.chunks
    split: Split = Split([[] for _ in chunks])
    if shared.processes <= 1 or len(chunks) <= 1 or threading.active_count() > 1:
        _work_here(_Here(chunks, split), range(len(chunks)), work, report)
        return split
    queue_read, queue_write = os.pipe()
    copies: list[_Copy] = []
    try:
        # The whole queue is written before any process reads it, and each read takes one whole
        # record: a pipe read is atomic against other readers of the same pipe.
        _write_all(queue_write, b"".join(_TICKET.pack(i) for i in range(len(chunks))))
        os.close(queue_write)
        queue_write = -1
        for _ in range(shared.processes - 1):
            copies.append(_fork(queue_read, chunks, work, pack, news, copies))
        here = _Here(chunks, split)

        def send(piece: Any) -> None:
            here.keep(piece)
            report(piece)
            if news is not None:
                _pass_on(copies, news.tell(piece), None)
            _take_in(copies, report, news, timeout=0)

        work(here.take(_tickets(queue_read)), send)
        while any(copy.fd >= 0 for copy in copies):
            _take_in(copies, report, news, timeout=None)
        completed = set(here.done)
        for copy in copies:
            _, status = os.waitpid(copy.pid, 0)
            copy.running = False
            if status == 0 and copy.ended and not copy.broken:
                completed.update(copy.done)
                for number, pieces in copy.pieces.items():
                    split.chunks[number] = pieces
                split.tails.extend(copy.tails)
        # A copy that failed, or whose pieces did not all come back: its chunks are done here.
        missing = [i for i in range(len(chunks)) if i not in completed]
        if missing:
            _work_here(_Here(chunks, split), missing, work, report)
        return split
    finally:
        os.close(queue_read)
        if queue_write >= 0:
            os.close(queue_write)
        for copy in copies:
            copy.close()
            if copy.running:  # interrupted: the copy's work is not wanted any more
                try:
                    os.kill(copy.pid, signal.SIGKILL)
                    os.waitpid(copy.pid, 0)
                except (ChildProcessError, ProcessLookupError, OSError):
                    pass


_TICKET = struct.Struct("<I")
_FRAME = struct.Struct("<cQ")  # kind (b"P": a batch, b"E": the end, b"N": news), payload length
_BATCH_PIECES = 32
_BATCH_SECONDS = 0.25
# A batch holds (chunk number, piece, False) per piece, and (chunk number, None, True) when a
# chunk is done; a piece sent after the last chunk has the number _TAIL.
_TAIL = -1


def _tickets(fd: int) -> Iterator[int]:
    """The chunk numbers this process takes from the queue, each when it asks for the next."""
    while len(data := os.read(fd, _TICKET.size)) == _TICKET.size:
        yield _TICKET.unpack(data)[0]
    # Empty (or, never seen, torn): a chunk nobody finished is done by the process that finds it missing.


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class _Copy:
    """A forked copy as this process sees it: its pipes, what it sent so far, how it ended."""

    def __init__(self, pid: int, fd: int, feed: int):
        self.pid, self.fd, self.feed = pid, fd, feed
        self.running = True
        self.buffer = bytearray()
        self.unsent = bytearray()  # news not yet written to its feed (never waited for)
        self.pieces: dict[int, list] = {}
        self.tails: list = []
        self.done: list[int] = []
        self.ended = False
        self.broken = False

    def close(self) -> None:
        for name in ("fd", "feed"):
            fd = getattr(self, name)
            if fd >= 0:
                os.close(fd)
                setattr(self, name, -1)

    def flush_news(self) -> None:
        """Write what of the news its feed takes now; a copy that has stopped reading gets no more."""
        while self.unsent and self.feed >= 0:
            try:
                written = os.write(self.feed, self.unsent)
            except BlockingIOError:
                return
            except OSError:  # it has left (a broken pipe): nothing more to tell it
                os.close(self.feed)
                self.feed = -1
                self.unsent.clear()
                return
            del self.unsent[:written]


def _pass_on(copies: list[_Copy], message: Any, source: _Copy | None) -> None:
    """`message` to every copy but `source`, without waiting on any."""
    if message is None:
        return
    frame: bytes | None = None
    for copy in copies:
        if copy is source or copy.feed < 0 or copy.ended:
            continue
        if frame is None:
            payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
            frame = _FRAME.pack(b"N", len(payload)) + payload
        copy.unsent += frame
        copy.flush_news()


class _Here:
    """This process's side of a split: the chunk under way, where its pieces go, what it finished."""

    def __init__(self, chunks: tuple[Sequence[Any], ...], split: Split):
        self.chunks, self.split = chunks, split
        self.current = _TAIL
        self.done: list[int] = []

    def take(self, numbers: Iterable[int]) -> Iterator[Sequence[Any]]:
        for number in numbers:
            self.current = number
            self.split.chunks[number] = []  # a chunk done again starts afresh
            yield self.chunks[number]
            self.done.append(number)
        self.current = _TAIL

    def keep(self, piece: Any) -> None:
        (self.split.chunks[self.current] if self.current != _TAIL else self.split.tails).append(piece)


def _work_here(here: _Here, numbers: Iterable[int], work: Work, report: Callable[[Any], None]) -> None:
    def send(piece: Any) -> None:
        here.keep(piece)
        report(piece)

    work(here.take(numbers), send)


def _fork(queue: int, chunks, work: Work, pack, news: News | None, earlier: list[_Copy]) -> _Copy:
    read_fd, write_fd = _pipe()
    feed_read, feed_write = _pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: "fork() of a multi-threaded process" (none here)
        pid = os.fork()
    if pid == 0:  # the copy: take chunks, hand them back, and leave without running any exit handler
        status = 1
        try:
            os.close(read_fd)
            os.close(feed_write)
            for other in earlier:
                other.close()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.set_blocking(feed_read, False)
            # A short-lived copy that leaves by _exit: the collector's passes would only touch (and
            # so copy) every page of the heap it shares with this process, to free next to nothing.
            gc.disable()
            batch: list = []
            flushed = [time.monotonic()]
            current = [_TAIL]
            heard = bytearray()

            def flush() -> None:
                if batch:
                    _write_frame(write_fd, b"P", pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL))
                    batch.clear()
                flushed[0] = time.monotonic()

            def taken() -> Iterator[Sequence[Any]]:
                for number in _tickets(queue):
                    current[0] = number
                    yield chunks[number]
                    batch.append((number, None, True))
                current[0] = _TAIL

            def send(piece) -> None:
                batch.append((current[0], pack(piece) if pack else piece, False))
                if len(batch) >= _BATCH_PIECES or time.monotonic() - flushed[0] >= _BATCH_SECONDS:
                    flush()
                if news is not None:
                    _hear(feed_read, heard, news)

            work(taken(), send)
            flush()
            _write_frame(write_fd, b"E", b"")
            status = 0
        except BaseException:  # noqa: BLE001 - any failure: the parent does its chunks itself
            status = 1
        finally:
            os._exit(status)
    os.close(write_fd)
    os.close(feed_read)
    os.set_blocking(feed_write, False)
    return _Copy(pid, read_fd, feed_write)


_PIPE_BYTES = 1 << 20


def _pipe() -> tuple[int, int]:
    """A pipe that holds a megabyte where the system allows (64 KiB by default): a copy writing
    its results waits on this process less."""
    read_fd, write_fd = os.pipe()
    try:
        import fcntl

        fcntl.fcntl(write_fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), _PIPE_BYTES)
    except (ImportError, OSError):
        pass
    return read_fd, write_fd


def _hear(feed: int, heard: bytearray, news: News) -> None:
    """In a copy: what its feed holds now, each whole message handed to `news.hear`."""
    while True:
        try:
            data = os.read(feed, 1 << 20)
        except BlockingIOError:
            break
        if not data:
            break
        heard += data
    while len(heard) >= _FRAME.size:
        _, size = _FRAME.unpack_from(heard)
        if len(heard) < _FRAME.size + size:
            break
        message = pickle.loads(bytes(heard[_FRAME.size : _FRAME.size + size]))
        del heard[: _FRAME.size + size]
        news.hear(message)


def _write_frame(fd: int, kind: bytes, payload: bytes) -> None:
    _write_all(fd, _FRAME.pack(kind, len(payload)) + payload)


def _take_in(copies: list[_Copy], report: Callable, news: News | None, timeout: float | None) -> None:
    """Read what the copies have sent (waiting up to `timeout`; None: until one sends), and pass
    on the news of it."""
    open_fds = [c.fd for c in copies if c.fd >= 0]
    if not open_fds:
        return
    ready, _, _ = select.select(open_fds, [], [], timeout)
    for copy in copies:
        if copy.fd not in ready:
            continue
        try:
            chunk = os.read(copy.fd, _PIPE_BYTES)
        except OSError:
            chunk = b""
        if not chunk:
            os.close(copy.fd)
            copy.fd = -1
            continue
        copy.buffer += chunk
        while len(copy.buffer) >= _FRAME.size:
            kind, size = _FRAME.unpack_from(copy.buffer)
            if len(copy.buffer) < _FRAME.size + size:
                break
            payload = bytes(copy.buffer[_FRAME.size : _FRAME.size + size])
            del copy.buffer[: _FRAME.size + size]
            if kind == b"E":
                copy.ended = True
                continue
            try:
                # Our own copy's values, through a pipe only the two processes hold (no file, no cache).
                batch = pickle.loads(payload)
            except Exception:  # noqa: BLE001 - a damaged hand-back: the copy's chunks are done here instead
                copy.broken = True
                continue
            for number, piece, done in batch:
                if done:
                    copy.done.append(number)
                    continue
                (copy.pieces.setdefault(number, []) if number != _TAIL else copy.tails).append(piece)
                report(piece)
                if news is not None and (message := news.tell(piece)) is not None:
                    news.hear(message)
                    _pass_on(copies, message, copy)
    for copy in copies:
        copy.flush_news()


__all__ = ["MAX_WORKERS", "News", "Plan", "Split", "plan", "run_split", "set_jobs", "usable_cpus", "worker_count"]
