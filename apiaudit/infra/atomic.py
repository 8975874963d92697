"""One way to write a file: all of it or none of it, never a 0-byte or half-written file.

Every writer in apiaudit (reports, caches, journals, overlays, manifests) goes through
`atomic_write`: the bytes go to a temporary file beside the target, are flushed to disk,
and replace the target in one rename. A failure (a full disk, a read-only folder) leaves
the old file, removes the temporary one, and raises `OSError` for the caller to turn into
one clear line. A full disk raises `DiskFullError`, which is also an `InputError`, so the
command line reports it as "no space left on device writing X" and exits 2.

`write_new` writes a stream into a new file (a cache entry's member, inside a private
folder that is itself published in one rename) with the same cleanup and the same error.
"""

from __future__ import annotations

import errno
import os
import stat

from apiaudit.errors import InputError

# Only os at run time (no tempfile, pathlib or typing): a replayed scan writes `-o` with
# `atomic_write` before anything else is imported (`apiaudit.cache.replay`).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Callable, Iterable, Protocol

    class Readable(Protocol):
        """A binary stream `write_new` copies from (a file, or a reader wrapping one)."""

        def read(self, size: int = -1, /) -> bytes: ...


TEMP_SUFFIX = ".apiaudit-tmp"
# What `tempfile.mkstemp` opens its file with: new, private (0600), not through a link.
_TEMP_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_FULL = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})
_CHUNK = 1 << 20


class DiskFullError(InputError, OSError):
    """No space (or quota) left while writing `path`: one clear line, exit 2."""

    def __init__(self, path: Path | str | None):
        self.path = path
        where = str(path) if path is not None else "a file"
        super().__init__(errno.ENOSPC, f"no space left on device writing {where}")

    def __str__(self) -> str:
        return self.strerror or ""


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in _FULL


def disk_full_or(exc: OSError, path: Path | str | None) -> OSError:
    """`exc` as a `DiskFullError` about `path` when it means the disk is full, else `exc` itself."""
    if isinstance(exc, DiskFullError) or not is_disk_full(exc):
        return exc
    return DiskFullError(path if path is not None else exc.filename)


def _write_all(fd: int, payload: bytes | memoryview) -> None:
    view = memoryview(payload)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def atomic_write(
    path: Path | str, data: bytes | str | Iterable[bytes], *, keep_mode: bool = True, head: Callable[[], bytes] | None = None
) -> None:
    """Replace `path` with `data` (str is written as UTF-8) in one rename.

    `data` may be an iterable of byte chunks, written as they come (a large cache is never
    held whole); `head`, called once they are all written, gives the bytes that then replace
    the file's first bytes (a header holding the hash of what follows, its place kept by the
    first chunk)."""
    chunks: Iterable[bytes] = [data.encode("utf-8") if isinstance(data, str) else data] if isinstance(data, (bytes, str)) else data
    mode = None
    if keep_mode:
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except OSError:
            mode = None
    if mode is None:
        mode = 0o666 & ~current_umask()  # a new file as any tool creates it, not mkstemp's 0600
    try:
        fd, temp = _temporary_beside(os.fspath(path))
    except OSError as exc:
        if is_disk_full(exc):
            raise disk_full_or(exc, path) from None
        # Say what failed: the new file beside the target (a target that exists, in a folder
        # such as /proc that takes no new file, otherwise reads "No such file or directory").
        raise OSError(exc.errno, f"cannot create a file in {os.path.dirname(os.fspath(path)) or os.curdir} ({exc.strerror or exc})", os.fspath(path)) from None
    try:
        try:
            for chunk in chunks:
                _write_all(fd, chunk)
            if head is not None:
                first = head()
                if os.pwrite(fd, first, 0) != len(first):
                    raise OSError(errno.EIO, f"short write of {os.path.basename(os.fspath(path))}'s header")
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException as exc:
        _remove(temp)
        if isinstance(exc, OSError):
            raise disk_full_or(exc, path) from None
        raise


def current_umask() -> int:
    """The process's umask, read without changing it (Linux: /proc/self/status), else by setting it back at once."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _temporary_beside(path: str) -> tuple[int, str]:
    """(descriptor, name) of a new private file beside `path`, made as `tempfile.mkstemp` makes one."""
    folder, name = os.path.split(path)
    for _ in range(100):
        temp = os.path.join(folder, f".{name}.{os.urandom(6).hex()}{TEMP_SUFFIX}")
        try:
            return os.open(temp, _TEMP_FLAGS, 0o600), temp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name", path)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def write_new(path: Path | str, source: Readable, *, limit: int | None = None) -> int:
    """Copy `source` into the new file `path` (never an existing one); the bytes written.

    With `limit`, stop and raise `ValueError` once more than `limit` bytes arrive (the
    file is removed), so a stream cannot grow past what its header declared.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o644)
    except OSError as exc:
        raise disk_full_or(exc, path) from None
    total = 0
    try:
        try:
            while chunk := source.read(_CHUNK):
                total += len(chunk)
                if limit is not None and total > limit:
                    raise ValueError(f"{os.path.basename(path)} holds more than the {limit} bytes it declared")
                _write_all(fd, chunk)
        finally:
            os.close(fd)
    except BaseException as exc:
        _remove(os.fspath(path))
        if isinstance(exc, OSError):
            raise disk_full_or(exc, path) from None
        raise
    return total
