"""Release files shared by content: one copy of each file however many releases hold it.

Consecutive releases of a provider share most of their files (twelve vLLM releases hold
22,021 `.py` files, 5,647 distinct), and creating a file costs far more than linking one:
on an ext4 disk a vLLM release's 2,000 files take ~0.4 s to create and ~0.06 s to link.
So each file an extraction writes is also hard-linked here under its sha256
(`releases/.files/ab/abcd…`), and a later extraction whose wheel `RECORD` names a sha256
already here links that file into its entry instead of reading, inflating and writing the
member (a range read does not even fetch it).

An entry's files stay ordinary files at their import paths: readers never see the store.
What is linked is checked first: a regular file (never a link) of the size `RECORD` states
whose bytes hash to the sha256 it is filed under. One that fails is dropped from the store
and the member is extracted as if it were not here. Where the filesystem has no hard links
(or refuses one), extraction writes every file, as before.

A file no entry links any more (link count 1) is garbage: `prune` removes those, and runs
whenever apiaudit removes a release entry or gives up a fetch. Deleting `releases/` clears
everything.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import threading
from pathlib import Path

STORE_NAME = ".files"  # inside `releases/`: no release entry's name starts with a dot

# A refused link that means this filesystem (or this pair of folders) links nothing.
_NO_LINKS = {errno.EPERM, errno.EXDEV, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EACCES, errno.ENOSYS}
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
# Link a link itself, never what it points to, where the platform can say so (not Windows).
_LINK_OPTIONS = {"follow_symlinks": False} if os.link in os.supports_follow_symlinks else {}


def store_dir(releases: Path) -> Path:
    return releases / STORE_NAME


class FileStore:
    """The shared files of one release cache (`releases/.files`); safe across threads and processes.

    Every operation is an optimisation: a failure means the caller writes the file itself.
    """

    def __init__(self, folder: Path):
        self.folder = str(folder)
        self._usable = True
        self._folders: set[str] = set()
        self._lock = threading.Lock()

    def _path(self, sha256: str) -> str:
        return os.path.join(self.folder, sha256[:2], sha256)

    def has(self, sha256: str) -> bool:
        """Whether a file is filed under `sha256` (unchecked: `link_into` checks it)."""
        return self._usable and os.path.lexists(self._path(sha256))

    def link_into(self, sha256: str, size: int, target: str) -> bool:
        """Make `target` (a new path) a link to the file of content `sha256` and `size`; False
        when there is none, it fails its check (then it is dropped), or the link is refused."""
        if not self._usable:
            return False
        source = self._path(sha256)
        try:
            fd = os.open(source, _READ_FLAGS)
        except OSError:
            return False
        try:
            held = os.fstat(fd)
            sound = stat.S_ISREG(held.st_mode) and held.st_size == size and _sha256_of(fd, size) == sha256
        except OSError:
            sound = False
        finally:
            os.close(fd)
        if not sound:
            self._drop(source)
            return False
        try:
            os.link(source, target, **_LINK_OPTIONS)
        except OSError as exc:
            self._refused(exc)
            return False
        try:
            made = os.lstat(target)
        except OSError:
            return False
        if (made.st_ino, made.st_dev) != (held.st_ino, held.st_dev) or not stat.S_ISREG(made.st_mode):
            os.unlink(target)  # the store's file was swapped between its check and the link
            return False
        return True

    def keep(self, path: str, sha256: str) -> None:
        """File the just-written `path` (content `sha256`) here, for the next extraction to link."""
        if not self._usable:
            return
        shelf = os.path.join(self.folder, sha256[:2])
        try:
            if shelf not in self._folders:
                os.makedirs(shelf, exist_ok=True)
                with self._lock:
                    self._folders.add(shelf)
            os.link(path, os.path.join(shelf, sha256), **_LINK_OPTIONS)
        except FileExistsError:
            pass  # another extraction filed the same content first
        except OSError as exc:
            self._refused(exc)

    def _refused(self, exc: OSError) -> None:
        if exc.errno in _NO_LINKS or exc.errno == errno.ENOSPC:
            self._usable = False

    @staticmethod
    def _drop(path: str) -> None:
        try:
            os.unlink(path)
        except OSError:
            pass


def _sha256_of(fd: int, size: int) -> str:
    digest = hashlib.sha256()
    remaining = size
    while remaining > 0:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            break
        digest.update(chunk)
        remaining -= len(chunk)
    if remaining or os.read(fd, 1):
        return ""  # another size than fstat said: changing under us
    return digest.hexdigest()


def prune(folder: Path) -> int:
    """Remove the files no release entry links any more; how many were removed."""
    removed = 0
    try:
        shelves = list(os.scandir(folder))
    except OSError:
        return 0
    for shelf in shelves:
        if not shelf.is_dir(follow_symlinks=False):
            continue
        try:
            files = list(os.scandir(shelf.path))
        except OSError:
            continue
        for item in files:
            try:
                if item.stat(follow_symlinks=False).st_nlink <= 1:
                    os.unlink(item.path)
                    removed += 1
            except OSError:
                pass
    return removed
