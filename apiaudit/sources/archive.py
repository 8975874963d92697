"""What every release archive apiaudit reads must pass, wheel or source distribution.

A wheel (`release.py`) and an sdist (`sdist.py`) are extracted into a cache entry under the
same rules: fixed limits on members, sizes and compression, no member path that could leave
the entry, each kept member written as a new file no larger than its header says, and any
refusal one line (`malformed wheel ...` / `malformed sdist ...`, exit 2) before anything
large is written.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Protocol

from apiaudit.errors import InputError
from apiaudit.infra.atomic import disk_full_or, is_disk_full
from apiaudit.infra.frozen import record
from apiaudit.sources import cache

# What the refusal line calls the archive.
ArchiveKind = Literal["wheel", "sdist"]


@record
class WheelLimits:
    """What apiaudit extracts from one archive at most (docs/scan.md lists them).

    Generous: vLLM 0.33.0 (336 MB) has 5,802 members and keeps 3,234 files, 51 MB in all,
    none over 0.8 MB, none deflated more than 12-fold. An archive past any limit is refused
    before anything is written. An sdist's `.tar.gz` is one compressed stream: its whole
    unpacked tar is held to `max_total_bytes` and to `max_ratio` against the archive's size.
    """

    max_members: int = 100_000  # entries in the archive, kept or not
    max_member_bytes: int = 64 << 20  # one kept file, uncompressed
    max_total_bytes: int = 1 << 30  # every kept file together, uncompressed
    max_ratio: int = 200  # uncompressed / compressed size of one kept file ...
    ratio_floor_bytes: int = 1 << 20  # ... judged only for files larger than this


DEFAULT_LIMITS = WheelLimits()
_MAX_NAME_BYTES = 255  # one path component, as most filesystems allow
_MAX_PATH_BYTES = 1024  # a whole member path inside the entry


class Malformed(Exception):
    """Why an archive cannot be extracted; `malformed_is_bad_input` turns it into one InputError line."""


class PlannedMember(Protocol):
    """What the plan check reads of a member (a `zipfile.ZipInfo`, or `TarMember`)."""

    @property
    def filename(self) -> str: ...
    @property
    def file_size(self) -> int: ...
    @property
    def compress_size(self) -> int: ...
    @property
    def flag_bits(self) -> int: ...


@record
class TarMember:
    """A regular file of a tar archive as the plan check reads it: a tar's members are not
    compressed one by one (its stream's ratio is judged as it is unpacked), nor encrypted."""

    filename: str
    file_size: int

    @property
    def compress_size(self) -> int:
        return self.file_size

    @property
    def flag_bits(self) -> int:
        return 0


_DRIVE_RE = re.compile(r"^[A-Za-z]:")


def check_member_path(member: str) -> None:
    """Raise Malformed for a member path that could escape the entry (absolute, `..`, a drive),
    or that names one file two ways (`a//b`, `a/./b`). A folder's trailing `/` is allowed."""
    if "\\" in member or "\0" in member or member.startswith("/") or _DRIVE_RE.match(member):
        raise Malformed(f"unsafe member path {member!r}")
    parts = member.removesuffix("/").split("/")
    if ".." in parts or "." in parts or "" in parts:
        raise Malformed(f"unsafe member path {member!r}")


def check_plan(planned: Sequence[tuple[PlannedMember, str]], limits: WheelLimits) -> None:
    """Refuse, before writing anything, what could not be extracted as a tree of files."""
    targets: set[str] = set()
    folders: set[str] = set()
    total = 0
    for info, target in planned:
        encoded = target.encode("utf-8", errors="surrogateescape")
        if len(encoded) > _MAX_PATH_BYTES or any(len(p.encode("utf-8", errors="surrogateescape")) > _MAX_NAME_BYTES for p in target.split("/")):
            raise Malformed(f"member name too long: {info.filename[:80]!r}...")
        if target in targets:
            raise Malformed(f"member {info.filename!r} appears twice")
        targets.add(target)
        parts = target.split("/")
        folders.update("/".join(parts[:i]) for i in range(1, len(parts)))
        if info.flag_bits & 0x1:
            raise Malformed(f"member {info.filename!r} is encrypted")
        if info.file_size > limits.max_member_bytes:
            raise Malformed(
                f"member {info.filename!r} expands to {info.file_size} bytes, "
                f"more than the {limits.max_member_bytes} apiaudit extracts per file"
            )
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > limits.ratio_floor_bytes and ratio > limits.max_ratio:
            raise Malformed(
                f"member {info.filename!r} expands {ratio:.0f}-fold, more than the {limits.max_ratio}-fold "
                "apiaudit accepts (a zip bomb?)"
            )
        total += info.file_size
        if total > limits.max_total_bytes:
            raise Malformed(f"its kept files expand to more than the {limits.max_total_bytes} bytes apiaudit extracts")
    clash = sorted(targets & folders)
    if clash:
        raise Malformed(f"{clash[0]!r} is both a file and a folder")


class HashingReader:
    """A member stream that hashes what it hands on (sha256, plus RECORD's algorithm)."""

    def __init__(self, source, algorithm: str | None):
        self.source = source
        self.sha256 = hashlib.sha256()
        self.other = hashlib.new(algorithm) if algorithm and algorithm != "sha256" else None

    def read(self, size: int = -1) -> bytes:
        chunk = self.source.read(size)
        self.sha256.update(chunk)
        if self.other is not None:
            self.other.update(chunk)
        return chunk

    def digest(self, algorithm: str) -> str:
        import base64

        hasher = self.sha256 if algorithm == "sha256" or self.other is None else self.other
        return base64.urlsafe_b64encode(hasher.digest()).rstrip(b"=").decode()


def downloaded_marker(archive: Path, dest: Path, name: str, version: str, digests: dict[str, str]) -> cache.Marker:
    """The marker of the entry `dest` extracted from the whole archive `archive` (`digests`: each file's sha256)."""
    files = cache.tree_files(dest)
    return cache.Marker(
        name=name,
        version=version,
        wheel=archive.name,
        wheel_sha256=cache.file_sha256(archive),
        file_count=len(files),
        tree_digest=cache.tree_digest(dest, files),
        digests=digests,
        fetched_by="download",
        fetched_bytes=archive.stat().st_size,
        layout=cache.LAYOUT,
    )


@contextlib.contextmanager
def malformed_is_bad_input(kind: ArchiveKind, filename: str, name: str, version: str, dest: Path):
    """Whatever a malformed archive raises while its members are extracted, as one InputError line."""
    import tarfile
    import zipfile
    import zlib

    said = f"malformed {kind} {filename} for {name}=={version}"
    try:
        yield
    except Malformed as why:
        raise InputError(f"{said}: {why}") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, tarfile.TarError, zlib.error, EOFError, NotImplementedError,
            RuntimeError, ValueError) as exc:  # fmt: skip
        raise InputError(f"{said}: {exc}") from None
    except OSError as exc:
        if is_disk_full(exc):
            raise disk_full_or(exc, dest) from None
        # A name the filesystem refuses, a member that cannot be created, a corrupt gzip
        # stream (gzip.BadGzipFile): the archive is at fault.
        raise InputError(f"{said}: {exc.strerror or exc}") from None
