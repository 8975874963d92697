"""Apply a FixPlan in place, with a journal that can put every byte back.

Layout of a journal directory::

    <journal_dir>/LAST                      name of the latest apply
    <journal_dir>/<stamp>/manifest.json     status, and per file: path, sha256 before/after, backup
    <journal_dir>/<stamp>/<n>.orig          the original bytes of file n
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from apiaudit.errors import InputError
from apiaudit.fixes.plan import FixPlan, sha256_bytes

MANIFEST = "manifest.json"
LAST = "LAST"
_INTO_HINT = "use `apiaudit fix --into DIR` to write a patched copy instead"


def default_journal_dir(root: Path, cache_dir: Path | None = None) -> Path:
    """Where applies to the tree at `root` are journaled: <cache>/journal/<hash of root>."""
    from apiaudit.sources.cache import default_cache_dir

    key = hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()[:16]
    return (cache_dir or default_cache_dir()) / "journal" / key


@dataclass(frozen=True)
class JournalEntry:
    directory: Path
    files: tuple[Path, ...]


def _writable(path: Path) -> bool:
    """Writable by us, and not marked read-only (root ignores permission bits; we do not)."""
    any_write = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
    try:
        mode, parent_mode = path.stat().st_mode, path.parent.stat().st_mode
    except OSError:
        return False
    return (
        bool(mode & any_write)
        and bool(parent_mode & any_write)  # the rewrite is a rename inside the directory
        and os.access(path, os.W_OK)
        and os.access(path.parent, os.W_OK | os.X_OK)
    )


def atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` with `data` in one rename, keeping its permission bits."""
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else None
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".apiaudit-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _os_error_line(path: Path, exc: OSError) -> InputError:
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return InputError(f"{path} is read-only; {_INTO_HINT}")
    return InputError(f"{path}: cannot write ({exc.strerror or exc})")


def apply(plan: FixPlan, journal_dir: Path) -> JournalEntry | None:
    """Write every changed file of `plan` in place; None when there is nothing to change.

    Checked before anything is written: every file still has the bytes that were
    scanned, and every file is writable. The originals are journaled before the first
    write, and a failed write puts back the files already written.
    """
    changed = plan.changed_files
    if not changed:
        return None
    for file_fix in changed:
        try:
            current = file_fix.file.read_bytes()
        except OSError as exc:
            raise InputError(f"{file_fix.file}: cannot read ({exc.strerror or exc})") from None
        if sha256_bytes(current) != file_fix.sha256:
            raise InputError(f"{file_fix.file} changed since it was scanned; run `apiaudit fix` again")
        if not _writable(file_fix.file):
            raise InputError(f"{file_fix.file} is read-only; {_INTO_HINT}")

    journal_dir = Path(journal_dir)
    try:
        journal_dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}-{time.monotonic_ns() % 1_000_000:06d}"
        entry = journal_dir / stamp
        entry.mkdir()
        records = []
        for number, file_fix in enumerate(changed):
            backup = f"{number}.orig"
            (entry / backup).write_bytes(file_fix.original)
            records.append(
                {
                    "path": str(file_fix.file.resolve()),
                    "finding_path": file_fix.path,
                    "original_sha256": file_fix.sha256,
                    "patched_sha256": sha256_bytes(file_fix.patched),
                    "backup": backup,
                }
            )
        manifest = {"format": 1, "status": "applying", "created": time.time(), "files": records}
        atomic_write(entry / MANIFEST, json.dumps(manifest, indent=2).encode())
    except OSError as exc:
        raise InputError(f"{journal_dir}: cannot write the fix journal ({exc.strerror or exc})") from None

    written: list[int] = []
    try:
        for number, file_fix in enumerate(changed):
            atomic_write(file_fix.file, file_fix.patched)
            written.append(number)
    except OSError as exc:
        for number in written:  # put back what was already changed: all or nothing
            atomic_write(changed[number].file, changed[number].original)
        manifest["status"] = "failed"
        atomic_write(entry / MANIFEST, json.dumps(manifest, indent=2).encode())
        raise _os_error_line(changed[len(written)].file, exc) from None
    manifest["status"] = "applied"
    atomic_write(entry / MANIFEST, json.dumps(manifest, indent=2).encode())
    atomic_write(journal_dir / LAST, stamp.encode())
    return JournalEntry(entry, tuple(f.file for f in changed))


def revert(journal_dir: Path, *, force: bool = False) -> tuple[Path, ...]:
    """Restore every file of the last apply byte for byte, then mark that apply reverted.

    A file edited after the apply is left alone (an InputError names it) unless `force`.
    """
    journal_dir = Path(journal_dir)
    try:
        stamp = (journal_dir / LAST).read_text().strip()
        entry = journal_dir / stamp
        manifest = json.loads((entry / MANIFEST).read_text())
    except (OSError, ValueError):
        raise InputError(f"nothing to revert: no apply journaled in {journal_dir}") from None
    if manifest.get("status") != "applied":
        raise InputError(f"nothing to revert: the last apply ({stamp}) is {manifest.get('status')}")
    records = manifest["files"]
    originals: list[bytes] = []
    for record in records:  # check everything before restoring anything
        path = Path(record["path"])
        current = path.read_bytes() if path.is_file() else b""
        if not force and sha256_bytes(current) != record["patched_sha256"]:
            raise InputError(f"{path} changed after the apply; revert with force to restore it anyway")
        backup = entry / record["backup"]
        original = backup.read_bytes() if backup.is_file() else b""
        if sha256_bytes(original) != record["original_sha256"]:
            raise InputError(f"{backup}: journal backup is missing or damaged; nothing restored")
        originals.append(original)
    restored = []
    for record, original in zip(records, originals):
        path = Path(record["path"])
        try:
            atomic_write(path, original)
        except OSError as exc:
            raise _os_error_line(path, exc) from None
        restored.append(path)
    manifest["status"] = "reverted"
    manifest["reverted"] = time.time()
    atomic_write(entry / MANIFEST, json.dumps(manifest, indent=2).encode())
    return tuple(restored)
