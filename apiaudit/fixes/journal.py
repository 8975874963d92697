"""Apply a FixPlan in place, with a journal that can put every byte back, and touch nothing else.

One journal directory per consumer identity (its root, packages and scripts), one entry per apply::

    <cache>/journal/<key of the consumer>/<seq>-<stamp>/manifest.json   the consumer, status, per file:
                                                                        path (relative to the consumer
                                                                        root), sha256 before/after,
                                                                        backup name, state
    <cache>/journal/<key of the consumer>/<seq>-<stamp>/<n>.orig        the original bytes of file n

Applies stack up; `revert` undoes the newest one that is not yet fully reverted (LIFO).

A journal is data read back from disk, so nothing in it is trusted: the manifest's shape is
checked strictly, it must name the consumer being reverted, every path must be relative,
lie inside one of that consumer's packages or scripts and be reached from the consumer root
through no symlink, the file must exist (revert never creates a file), and every backup must
be a plain file inside the entry whose sha256 is the one recorded. Anything off: one line,
nothing written.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
import time
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any, Literal, get_args

from apiaudit.errors import InputError
from apiaudit.fixes.plan import FileFix, FixPlan, sha256_bytes
from apiaudit.infra.atomic import atomic_write
from apiaudit.infra.frozen import record
from apiaudit.sources.base import CodeTree

MANIFEST = "manifest.json"
FORMAT = 2
_INTO_HINT = "use `apiaudit fix --into DIR` to write a patched copy instead"
_FORCE_COMMAND = "apiaudit fix --revert --force"

Status = Literal["applying", "applied", "failed", "partly-reverted", "reverted"]
FileState = Literal["applied", "restored", "abandoned"]  # abandoned: deleted after the apply; --force gave up on it
_OPEN: tuple[Status, ...] = ("applying", "applied", "partly-reverted")  # what a revert may undo

_ENTRY_NAME = re.compile(r"^(\d{6})-\d{8}T\d{6}-\d+$")
_BACKUP_NAME = re.compile(r"^\d+\.orig$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_MANIFEST_KEYS = {"format", "status", "created", "reverted", "consumer", "files"}
_RECORD_KEYS = {"path", "finding_path", "original_sha256", "patched_sha256", "backup", "state"}
_CONSUMER_KEYS = {"root", "packages", "scripts"}


@record
class ConsumerIdentity:
    """What a journal belongs to: the resolved import root and exactly which packages and scripts under it.

    Two consumers under one parent folder share a root but not their packages, so they
    get separate journals.
    """

    root: Path
    packages: tuple[str, ...]
    scripts: tuple[str, ...] = ()  # relative to root, POSIX separators

    @classmethod
    def of(cls, tree: CodeTree) -> ConsumerIdentity:
        root = Path(tree.root)
        scripts = tuple(sorted(Path(s).relative_to(root).as_posix() for s in tree.scripts))
        return cls(Path(os.path.realpath(root)), tuple(sorted(tree.packages)), scripts)

    def to_json(self) -> dict[str, Any]:
        return {"root": str(self.root), "packages": list(self.packages), "scripts": list(self.scripts)}

    @property
    def key(self) -> str:
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()[:16]

    def describe(self) -> str:
        members = [*self.packages, *self.scripts]
        return f"{', '.join(members) or '(nothing)'} under {self.root}"

    def contains(self, relative: PurePosixPath) -> bool:
        """Whether a root-relative path is a file of this consumer (in a package, or one of its scripts)."""
        parts = relative.parts
        in_package_folder = len(parts) > 1 and parts[0] in self.packages
        single_module = len(parts) == 1 and parts[0].endswith(".py") and parts[0][:-3] in self.packages
        return in_package_folder or single_module or relative.as_posix() in self.scripts


def default_journal_dir(consumer: ConsumerIdentity, cache_dir: Path | None = None) -> Path:
    """Where applies to `consumer` are journaled: <cache>/journal/<key of the consumer's identity>."""
    from apiaudit.sources.cache import default_cache_dir

    return (cache_dir or default_cache_dir()) / "journal" / consumer.key


@record
class JournalEntry:
    directory: Path
    files: tuple[Path, ...]  # the files written (a symlink's target, not the link)


@record
class NotRestored:
    path: Path
    why: Literal["edited", "deleted"]

    def describe(self, force_command: str = _FORCE_COMMAND) -> str:
        """`force_command`: the command that restores it anyway, as the caller can write it whole."""
        if self.why == "edited":
            return f"not restored: {self.path}: edited since the apply; `{force_command}` restores the original anyway"
        return f"not restored: {self.path}: deleted since the apply; revert never creates a file"


@record
class RevertResult:
    entry: Path
    restored: tuple[Path, ...]
    not_restored: tuple[NotRestored, ...]


@record
class _Record:
    path: PurePosixPath
    finding_path: str
    original_sha256: str
    patched_sha256: str
    backup: str
    state: FileState

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path.as_posix(),
            "finding_path": self.finding_path,
            "original_sha256": self.original_sha256,
            "patched_sha256": self.patched_sha256,
            "backup": self.backup,
            "state": self.state,
        }


@record
class _Manifest:
    status: Status
    created: float
    reverted: float | None
    consumer: ConsumerIdentity
    files: tuple[_Record, ...]

    def to_json(self) -> bytes:
        data = {
            "format": FORMAT,
            "status": self.status,
            "created": self.created,
            "reverted": self.reverted,
            "consumer": self.consumer.to_json(),
            "files": [r.to_json() for r in self.files],
        }
        return json.dumps(data, indent=2).encode()


class _Damaged(Exception):
    """The journal is not one apiaudit wrote for this consumer (or was edited since)."""


# --- reading a journal back: strict, nothing trusted ---------------------------------------------


def _relative_path(text: Any) -> PurePosixPath:
    if not isinstance(text, str) or not text or "\\" in text or "\x00" in text or text.startswith("/"):
        raise _Damaged(f"path {text!r} is not relative to the consumer root")
    if any(part in ("", ".", "..") for part in text.split("/")):
        raise _Damaged(f"path {text!r} leaves or loops in the consumer root")
    return PurePosixPath(text)


def _parse_consumer(data: Any) -> ConsumerIdentity:
    if not isinstance(data, dict) or set(data) != _CONSUMER_KEYS:
        raise _Damaged("its consumer is not recorded")
    root, packages, scripts = data["root"], data["packages"], data["scripts"]
    if not isinstance(root, str) or not all(isinstance(x, list) and all(isinstance(i, str) for i in x) for x in (packages, scripts)):
        raise _Damaged("its consumer is not recorded")
    return ConsumerIdentity(Path(root), tuple(packages), tuple(scripts))


def _parse_record(data: Any) -> _Record:
    if not isinstance(data, dict) or set(data) != _RECORD_KEYS:
        raise _Damaged("a file record has the wrong fields")
    for key in ("original_sha256", "patched_sha256"):
        if not isinstance(data[key], str) or not _SHA256.match(data[key]):
            raise _Damaged(f"a file record's {key} is not a sha256")
    backup = data["backup"]
    if not isinstance(backup, str) or not _BACKUP_NAME.match(backup):
        raise _Damaged(f"backup {backup!r} is not a file of the journal entry")
    if data["state"] not in get_args(FileState) or not isinstance(data["finding_path"], str):
        raise _Damaged("a file record has the wrong fields")
    return _Record(_relative_path(data["path"]), data["finding_path"], data["original_sha256"], data["patched_sha256"], backup, data["state"])


def _parse_manifest(raw: bytes) -> _Manifest:
    try:
        data = json.loads(raw)
    except ValueError:
        raise _Damaged("the manifest is not JSON") from None
    if not isinstance(data, dict) or set(data) != _MANIFEST_KEYS:
        raise _Damaged("the manifest has the wrong fields")
    if data["format"] != FORMAT or isinstance(data["format"], bool):
        raise _Damaged(f"unknown journal format {data['format']!r}")
    if data["status"] not in get_args(Status):
        raise _Damaged(f"unknown status {data['status']!r}")
    if not isinstance(data["created"], (int, float)) or not (data["reverted"] is None or isinstance(data["reverted"], (int, float))):
        raise _Damaged("the manifest's times are not numbers")
    if not isinstance(data["files"], list) or not data["files"]:
        raise _Damaged("the manifest lists no files")
    records = tuple(_parse_record(r) for r in data["files"])
    if len({r.path for r in records}) != len(records) or len({r.backup for r in records}) != len(records):
        raise _Damaged("the manifest names a file or a backup twice")
    return _Manifest(data["status"], float(data["created"]), data["reverted"], _parse_consumer(data["consumer"]), records)


def _read_plain_file(path: Path) -> bytes:
    """The bytes of a regular file that is not a symlink (opened without following one)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _Damaged(f"{path.name} is not a plain file")
        with os.fdopen(fd, "rb") as handle:
            fd = -1
            return handle.read()
    finally:
        if fd >= 0:
            os.close(fd)


def _read_manifest(entry: Path) -> _Manifest:
    if not stat.S_ISDIR(os.lstat(entry).st_mode):
        raise _Damaged("the entry is not a plain directory")
    try:
        return _parse_manifest(_read_plain_file(entry / MANIFEST))
    except OSError as exc:
        raise _Damaged(f"the manifest cannot be read ({exc.strerror or exc})") from None


def _entries(journal_dir: Path) -> list[tuple[int, Path]]:
    """Every apply journaled in `journal_dir`, oldest first (names apiaudit did not write are ignored)."""
    try:
        names = os.listdir(journal_dir)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise InputError(f"{journal_dir}: cannot read the fix journal ({exc.strerror or exc})") from None
    found = [(int(m.group(1)), journal_dir / name) for name in names if (m := _ENTRY_NAME.match(name))]
    return sorted(found)


def _locate(consumer: ConsumerIdentity, relative: PurePosixPath) -> Path | None:
    """The consumer's file at `relative`, reached through no symlink; None when it no longer exists."""
    if not consumer.contains(relative):
        raise _Damaged(f"{relative} is not a file of the consumer {consumer.describe()}")
    if Path(os.path.realpath(consumer.root)) != consumer.root:
        raise _Damaged(f"the consumer root {consumer.root} is reached through a symlink now")
    current = consumer.root
    for number, part in enumerate(relative.parts):
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _Damaged(f"{current} cannot be checked ({exc.strerror or exc})") from None
        if stat.S_ISLNK(mode):
            raise _Damaged(f"{current} is a symlink; revert never writes through one")
        last = number == len(relative.parts) - 1
        if (last and not stat.S_ISREG(mode)) or (not last and not stat.S_ISDIR(mode)):
            raise _Damaged(f"{current} is not a plain {'file' if last else 'directory'}")
    return current


def _damaged_line(entry: Path, why: str) -> InputError:
    return InputError(f"fix journal {entry} is damaged or not this consumer's ({why}); nothing restored")


# --- apply ---------------------------------------------------------------------------------------


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


def _os_error_line(path: Path, exc: OSError) -> InputError:
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return InputError(f"{path} is read-only; {_INTO_HINT}")
    return InputError(f"{path}: cannot write ({exc.strerror or exc})")


def _real_file(consumer: ConsumerIdentity, file_fix: FileFix) -> PurePosixPath:
    """The root-relative path of the file a fix really edits: a symlink's target, which must be the consumer's."""
    real = Path(os.path.realpath(file_fix.file))
    try:
        relative = PurePosixPath(real.relative_to(consumer.root).as_posix())
    except ValueError:
        relative = None
    if relative is None or not consumer.contains(relative):
        raise InputError(f"{file_fix.file} resolves to {real}, outside the consumer {consumer.describe()}; not edited")
    return relative


def _write_manifest(entry: Path, manifest: _Manifest) -> None:
    atomic_write(entry / MANIFEST, manifest.to_json())


def _new_entry(journal_dir: Path) -> Path:
    journal_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}"
    while True:
        existing = _entries(journal_dir)
        sequence = (existing[-1][0] + 1) if existing else 1
        entry = journal_dir / f"{sequence:06d}-{stamp}"
        try:
            entry.mkdir()  # exclusive: a concurrent apply takes the next number
            return entry
        except FileExistsError:
            continue


def apply(plan: FixPlan, consumer: ConsumerIdentity, journal_dir: Path) -> JournalEntry | None:
    """Write every changed file of `plan` in place; None when there is nothing to change.

    Checked before anything is written: every file is the consumer's (a symlink is
    followed only to a target inside the consumer, and that target is edited, the link
    kept), still has the bytes that were scanned, and is writable. The originals are
    journaled before the first write; a failed write puts back the files already written.
    """
    changed = plan.changed_files
    if not changed:
        return None
    targets: dict[PurePosixPath, FileFix] = {}
    for file_fix in changed:
        relative = _real_file(consumer, file_fix)
        real = consumer.root / relative
        try:
            current = real.read_bytes()
        except OSError as exc:
            raise InputError(f"{file_fix.file}: cannot read ({exc.strerror or exc})") from None
        if sha256_bytes(current) != file_fix.sha256:
            raise InputError(f"{file_fix.file} changed since it was scanned; run `apiaudit fix` again")
        if not _writable(real):
            raise InputError(f"{file_fix.file} is read-only; {_INTO_HINT}")
        earlier = targets.get(relative)
        if earlier is not None and earlier.patched != file_fix.patched:
            raise InputError(f"{earlier.file} and {file_fix.file} are one file ({real}) with different fixes; fix it by hand")
        targets.setdefault(relative, file_fix)  # a link and its target: one file, written once

    journal_dir = Path(journal_dir)
    try:
        entry = _new_entry(journal_dir)
        records = []
        for number, (relative, file_fix) in enumerate(targets.items()):
            backup = f"{number}.orig"
            atomic_write(entry / backup, file_fix.original, keep_mode=False)
            records.append(_Record(relative, file_fix.path, file_fix.sha256, sha256_bytes(file_fix.patched), backup, "applied"))
        manifest = _Manifest("applying", time.time(), None, consumer, tuple(records))
        _write_manifest(entry, manifest)
    except OSError as exc:
        raise InputError(f"{journal_dir}: cannot write the fix journal ({exc.strerror or exc})") from None

    written: list[Path] = []
    items = list(targets.items())
    try:
        for relative, file_fix in items:
            atomic_write(consumer.root / relative, file_fix.patched)
            written.append(consumer.root / relative)
    except OSError as exc:
        for (relative, file_fix), _ in zip(items, written):  # put back what was already changed: all or nothing
            atomic_write(consumer.root / relative, file_fix.original)
        _write_manifest(entry, replace(manifest, status="failed"))
        raise _os_error_line(consumer.root / items[len(written)][0], exc) from None
    _write_manifest(entry, replace(manifest, status="applied"))
    return JournalEntry(entry, tuple(written))


# --- revert --------------------------------------------------------------------------------------


def _newest_open(journal_dir: Path, consumer: ConsumerIdentity) -> tuple[Path, _Manifest]:
    for _, entry in reversed(_entries(journal_dir)):
        try:
            manifest = _read_manifest(entry)
            if manifest.consumer != consumer:
                raise _Damaged(f"it belongs to {manifest.consumer.describe()}")
        except _Damaged as exc:
            raise _damaged_line(entry, str(exc)) from None
        if manifest.status in _OPEN:
            return entry, manifest
    raise InputError(f"nothing to revert: no apply to {consumer.describe()} is journaled")


def revert(consumer: ConsumerIdentity, journal_dir: Path, *, force: bool = False) -> RevertResult:
    """Undo the newest apply to `consumer` not yet reverted: restore every file it safely can.

    The whole entry is checked first (see the module docstring); anything off raises an
    InputError and nothing is written. Then each file is restored when it still has the
    bytes the apply wrote (or any bytes, with `force`); a file edited since is left and
    reported, and stays in the journal so a later revert (with `force`) finishes the job.
    A file deleted since the apply is never recreated; `force` stops asking for it.
    """
    entry, manifest = _newest_open(Path(journal_dir), consumer)
    checked: list[tuple[_Record, Path | None, bytes]] = []
    try:
        for record in manifest.files:  # check everything before restoring anything
            if record.state != "applied":
                continue
            target = _locate(consumer, record.path)
            try:
                original = _read_plain_file(entry / record.backup)
            except OSError as exc:
                raise _Damaged(f"backup {record.backup} cannot be read ({exc.strerror or exc})") from None
            if sha256_bytes(original) != record.original_sha256:
                raise _Damaged(f"backup {record.backup} does not match its recorded sha256")
            checked.append((record, target, original))
    except _Damaged as exc:
        raise _damaged_line(entry, str(exc)) from None

    states = {r.path: r.state for r in manifest.files}
    restored: list[Path] = []
    not_restored: list[NotRestored] = []
    failure: InputError | None = None
    for record, target, original in checked:
        if target is None:
            not_restored.append(NotRestored(consumer.root / record.path, "deleted"))
            if force:
                states[record.path] = "abandoned"
            continue
        try:
            current = sha256_bytes(target.read_bytes())
            if current == record.original_sha256:  # already the original (an apply cut short, or put back by hand)
                states[record.path] = "restored"
                restored.append(target)
            elif current == record.patched_sha256 or force:
                atomic_write(target, original)
                states[record.path] = "restored"
                restored.append(target)
            else:
                not_restored.append(NotRestored(target, "edited"))
        except OSError as exc:
            failure = _os_error_line(target, exc)
            break
    if any(states[r.path] != r.state for r in manifest.files):  # a revert that changed nothing writes nothing
        finished = all(state != "applied" for state in states.values())
        updated = replace(
            manifest,
            status="reverted" if finished else "partly-reverted",
            reverted=time.time(),
            files=tuple(replace(r, state=states[r.path]) for r in manifest.files),
        )
        try:
            _write_manifest(entry, updated)
        except OSError as exc:
            raise InputError(f"{entry}: cannot update the fix journal ({exc.strerror or exc})") from None
    if failure is not None:
        raise failure
    return RevertResult(entry, tuple(restored), tuple(not_restored))
