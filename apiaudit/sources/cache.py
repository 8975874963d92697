"""The on-disk cache of extracted release wheels.

Layout: `<cache_dir>/releases/<normalized-name>-<version>/` holds the wheel's .py/.pyi
files at their import paths, its dist-info METADATA/top_level.txt/RECORD/entry_points.txt,
and `complete.json`, written last. An entry without a valid marker, or whose files no
longer match the marker, is broken and gets rebuilt. Files several releases share are
hard links to one file in `releases/.files/` (`apiaudit/sources/filestore.py`).

The marker records each file's path, size and sha256 (checked against the wheel's RECORD
when it was extracted). Opening an entry checks only paths and sizes (one stat per file);
the content is checked where it is read: the provider loader and the consumer stage hash
every file they read anyway and compare with the marker (`content_verifier`), so a
same-length edit of a cached file is caught without hashing the whole tree on every scan.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator, Literal

from apiaudit.infra.frozen import record

# How a release entry was filled (apiaudit/sources/ranged.py reads wheels by ranges).
FetchMethod = Literal["ranges", "download"]


from apiaudit.errors import CacheError
from apiaudit.infra.atomic import atomic_write
from apiaudit.infra.filewalk import files_under
from apiaudit.sources.filestore import prune, store_dir


def canonicalize_name(name: str) -> str:
    """A distribution name as PEP 503 compares it (`packaging.utils.canonicalize_name`; the same
    rule, without importing packaging's tag machinery on a warm scan)."""
    return _SEPARATORS.sub("-", name).lower()


_SEPARATORS = re.compile(r"[-_.]+")

MARKER_NAME = "complete.json"
# Still 1: the per-file `sha256` map was added as an optional key, so entries stay readable
# both ways; a marker without it is upgraded once (`ensure_digests`).
MARKER_FORMAT = 1
# Which dist-info files an entry keeps: 1 (a marker without `layout`) METADATA, top_level.txt
# and RECORD; 2 entry_points.txt too (a consumer's plugins). Optional like `sha256`, so an older
# apiaudit still reads a newer entry; a layout-1 entry whose RECORD lists a file kept now is
# fetched again, one without any is upgraded in place (`ensure_layout`).
LAYOUT = 2
_TEMP_PREFIX = ".partial-"
# A partial folder this old belongs to a run that died; younger ones may be another run's work.
_STALE_TEMP_SECONDS = 6 * 3600


def default_cache_dir() -> Path:
    """$APIAUDIT_CACHE_DIR, else $XDG_CACHE_HOME/apiaudit, else ~/.cache/apiaudit (`~` expanded)."""
    explicit = os.environ.get("APIAUDIT_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg).expanduser() / "apiaudit"
    return Path.home() / ".cache" / "apiaudit"


def releases_dir(cache_dir: Path) -> Path:
    return cache_dir / "releases"


def entry_dir(cache_dir: Path, name: str, version: str) -> Path:
    return releases_dir(cache_dir) / f"{canonicalize_name(name)}-{version}"


@record
class CachedRelease:
    """Another release of a distribution, complete in the same release cache."""

    name: str
    version: str
    root: Path


def releases_beside(root: Path, name: str) -> tuple[CachedRelease, ...]:
    """The other complete entries of distribution `name` in the releases folder that holds the
    entry `root`, by folder name (`<canonical name>-<version>`) and marker: one folder listing
    and a stat each. A version never holds "-" (PEP 440), so `vllm-bnb-plugin-0.0.3` is not a
    release of `vllm`; a folder still being written has no marker yet (it is renamed into place
    whole, `publish_entry`), and its files are not checked here: what a caller reads from them
    is evidence, not a verdict."""
    prefix = canonicalize_name(name) + "-"
    try:
        names = sorted(os.listdir(root.parent))
    except OSError:
        return ()
    found = []
    for folder in names:
        version = folder[len(prefix) :]
        if not folder.startswith(prefix) or not version[:1].isdigit() or "-" in version or folder == root.name:
            continue
        if (root.parent / folder / MARKER_NAME).is_file():
            found.append(CachedRelease(name, version, root.parent / folder))
    return tuple(found)


@record
class Marker:
    name: str
    version: str
    wheel: str
    wheel_sha256: str
    file_count: int
    tree_digest: str
    # relative posix path -> sha256 of every file but the marker; None in markers written before it existed
    digests: dict[str, str] | None = None
    # "ranges": only the kept members were read, by HTTP range requests (`wheel_sha256` is then
    # what the index says, unchecked); "download": the whole wheel was downloaded and hashed.
    # None in markers written before it existed (those were all downloads).
    fetched_by: FetchMethod | None = None
    # Bytes fetched from the index to build the entry (the whole wheel, or the ranges read);
    # None in markers written before it existed.
    fetched_bytes: int | None = None
    # Which dist-info files it keeps (LAYOUT); None in markers written before it existed (1).
    layout: int | None = None

    def to_json(self) -> str:
        data: dict = {
            "format": MARKER_FORMAT,
            "name": self.name,
            "version": self.version,
            "wheel": self.wheel,
            "wheel_sha256": self.wheel_sha256,
            "file_count": self.file_count,
            "tree_digest": self.tree_digest,
        }
        if self.fetched_by is not None:
            data["fetched_by"] = self.fetched_by
        if self.fetched_bytes is not None:
            data["fetched_bytes"] = self.fetched_bytes
        if self.layout is not None:
            data["layout"] = self.layout
        if self.digests is not None:
            data["sha256"] = dict(sorted(self.digests.items()))
        return json.dumps(data, indent=2)


def _listing(directory: Path) -> list[tuple[str, int]]:
    """(relative posix path, size) of every file of an entry except its marker, sorted by path:
    the check every scan that reads a release makes of it (`apiaudit.infra.filewalk`)."""
    return sorted((rel, entry.stat().st_size) for rel, entry in files_under(str(directory)) if rel != MARKER_NAME)


def tree_files(directory: Path) -> list[str]:
    """Relative posix paths of every file of an entry except its marker, sorted."""
    return [rel for rel, _ in _listing(directory)]


def tree_digest(directory: Path, files: list[str]) -> str:
    """A digest of each file's path and size: catches deleted, added and truncated files cheaply."""
    root = str(directory)
    return _digest_of((rel, os.stat(os.path.join(root, rel)).st_size) for rel in files)


def _digest_of(listing) -> str:
    digest = hashlib.sha256()
    for rel, size in listing:
        digest.update(f"{rel}\0{size}\n".encode())
    return digest.hexdigest()


def marker_stamp(directory: Path) -> tuple[int, int, int] | None:
    """(size, mtime, inode) of an entry's marker; None without one."""
    try:
        st = (directory / MARKER_NAME).stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


# Parsed markers by (path, size, mtime, inode): one scan opens each marker several times
# (validation, the provider's and the consumer's content checks); it is parsed once.
_PARSED: dict[tuple[str, int, int, int], dict] = {}


def _marker_json(directory: Path) -> object:
    path = directory / MARKER_NAME
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _PARSED:
        if len(_PARSED) > 64:
            _PARSED.clear()
        _PARSED[key] = json.loads(path.read_text(encoding="utf-8"))
    return _PARSED[key]


# Entries this process found complete, by (path, name, version, marker stamp): a matrix opens
# each release several times (is it cached, its scan, its content checks); it is listed once.
_VALID: dict[tuple[str, str, str, tuple[int, int, int]], Marker] = {}


def read_valid_marker(directory: Path, name: str, version: str) -> tuple[Marker | None, str]:
    """(marker, "") for a complete entry, else (None, why the entry is broken)."""
    stamp = marker_stamp(directory)
    if stamp is None:
        return None, f"no {MARKER_NAME}"
    key = (str(directory), name, version, stamp)
    if key in _VALID:
        return _VALID[key], ""
    found, why = _read_valid_marker(directory, name, version)
    if found is not None:
        if len(_VALID) > 256:
            _VALID.clear()
        _VALID[key] = found
    return found, why


def read_marker(directory: Path, name: str, version: str) -> Marker | None:
    """The entry's marker when it is readable, of this format, and names NAME==VERSION; its files unchecked."""
    marker, _why = _read_marker(directory, name, version)
    return marker


def _read_marker(directory: Path, name: str, version: str) -> tuple[Marker | None, str]:
    marker_path = directory / MARKER_NAME
    if not marker_path.is_file():
        return None, f"no {MARKER_NAME}"
    try:
        raw = _marker_json(directory)
        if not isinstance(raw, dict):
            raise TypeError("not an object")
        marker = Marker(
            name=str(raw["name"]),
            version=str(raw["version"]),
            wheel=str(raw["wheel"]),
            wheel_sha256=str(raw["wheel_sha256"]),
            file_count=int(raw["file_count"]),
            tree_digest=str(raw["tree_digest"]),
            digests=_digests(raw.get("sha256")),
            fetched_by=_fetch_method(raw.get("fetched_by")),
            fetched_bytes=_byte_count(raw.get("fetched_bytes")),
            layout=_byte_count(raw.get("layout")),
        )
        if raw.get("format") != MARKER_FORMAT:
            return None, f"{MARKER_NAME} has an unknown format"
    except (OSError, ValueError, KeyError, TypeError):
        return None, f"{MARKER_NAME} is unreadable"
    if canonicalize_name(marker.name) != canonicalize_name(name) or marker.version != version:
        return None, f"{MARKER_NAME} names {marker.name}=={marker.version}"
    return marker, ""


def _read_valid_marker(directory: Path, name: str, version: str) -> tuple[Marker | None, str]:
    marker, why = _read_marker(directory, name, version)
    if marker is None:
        return None, why
    try:
        listing = _listing(directory)
    except OSError:
        return None, "its files cannot be listed"
    files = [rel for rel, _ in listing]
    if len(files) != marker.file_count:
        return None, f"it holds {len(files)} files, {MARKER_NAME} says {marker.file_count}"
    if _digest_of(listing) != marker.tree_digest:
        return None, "its files differ from what was extracted"
    if marker.digests is not None and sorted(marker.digests) != files:
        return None, f"its files differ from those {MARKER_NAME} lists"
    return marker, ""


def _fetch_method(raw: object) -> FetchMethod | None:
    if raw is None:
        return None
    if raw == "ranges" or raw == "download":
        return raw
    raise ValueError("an unknown fetched_by")


def _byte_count(raw: object) -> int | None:
    if raw is None:
        return None
    if type(raw) is not int or raw < 0:
        raise ValueError("a malformed fetched_bytes")
    return raw


def _digests(raw: object) -> dict[str, str] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise ValueError("a malformed sha256 map")
    return dict(raw)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def ensure_digests(directory: Path, marker: Marker, record_check: Callable[[Path, dict[str, str]], str]) -> str:
    """Give a marker written before per-file hashes existed its sha256 map, once.

    `record_check(directory, digests)` compares them with the entry's RECORD and says what
    differs ("" when nothing). Returns why the entry is broken, or "" once the marker is upgraded.
    """
    if marker.digests is not None:
        return ""
    digests = {rel: file_sha256(directory / rel) for rel in tree_files(directory)}
    why = record_check(directory, digests)
    if why:
        return why
    upgraded = Marker(**{**marker.__dict__, "digests": digests})
    try:
        atomic_write(directory / MARKER_NAME, upgraded.to_json())
    except OSError:
        pass  # a read-only cache stays usable; it is upgraded by whoever can write it
    return ""


def ensure_layout(directory: Path, marker: Marker, absent_kept: Callable[[Path], str]) -> str:
    """Bring an entry extracted under an older LAYOUT up to this one, once.

    `absent_kept(directory)` names a file the entry's RECORD lists that this layout keeps and the
    entry lacks ("" when none). Returns it (the entry must be fetched again), or "" once the
    marker says LAYOUT (the wheel has nothing more to keep)."""
    if (marker.layout or 1) >= LAYOUT:
        return ""
    absent = absent_kept(directory)
    if absent:
        return absent
    current, _why = _read_marker(directory, marker.name, marker.version)  # ensure_digests may have rewritten it
    try:
        atomic_write(directory / MARKER_NAME, replace(current or marker, layout=LAYOUT).to_json())
    except OSError:
        pass  # a read-only cache stays usable; it is upgraded by whoever can write it
    return ""


def recorded_digests(root: Path) -> dict[str, str] | None:
    """The per-file sha256 map of the release entry at `root`, None when `root` is no such entry."""
    try:
        raw = _marker_json(root)
        return _digests(raw.get("sha256")) if isinstance(raw, dict) else None
    except (OSError, ValueError):
        return None


def content_verifier(root: Path, name: str, version: str | None) -> Callable[[str, str], None] | None:
    """For a release entry: a check `verify(relative path, sha256)` for each file read.

    A file whose content differs from what was extracted makes the entry broken: it is
    removed (the next run fetches it afresh) and `CacheError` says so in one line.
    """
    digests = recorded_digests(root)
    if digests is None:
        return None

    def verify(rel: str, sha256: str) -> None:
        if digests.get(rel) == sha256:
            return
        try:
            remove_entry(root)
            after = "it was removed; run again to fetch it afresh"
        except CacheError:
            after = f"delete {root} and run again"
        raise CacheError(
            f"the cached release {name}=={version} was changed after it was extracted "
            f"({rel} no longer matches its sha256); {after}"
        )

    return verify


def new_partial_dir(cache_dir: Path) -> Path:
    """A fresh private working folder on the cache's filesystem, so the final rename is atomic.

    Its name carries this host and process, so a later run can tell a dead run's leftovers
    (removed at once) from another live run's work (left alone).
    """
    base = releases_dir(cache_dir)
    try:
        base.mkdir(parents=True, exist_ok=True)
        _remove_stale_partials(base)
        return Path(tempfile.mkdtemp(prefix=f"{_TEMP_PREFIX}{_owner_tag()}-", dir=base))
    except OSError as exc:
        raise CacheError(f"cannot write the apiaudit cache at {base}: {exc.strerror or exc}") from None


def discard_tree(folder: Path, releases: Path) -> None:
    """Delete a folder this run built in `releases` and will not publish, and the shared files
    (`releases/.files`) only it held: a fetch that failed (a full disk, say) leaves no space taken."""
    shutil.rmtree(folder, ignore_errors=True)
    prune(store_dir(releases))


def remove_dead_partials(cache_dir: Path) -> None:
    """Remove the partial folders whose run has ended (a fetch worker stopped midway)."""
    base = releases_dir(cache_dir)
    if base.is_dir():
        _remove_stale_partials(base)


def _owner_tag() -> str:
    import socket  # only when a release is being fetched (a warm scan never gets here)

    host = "".join(c if c.isalnum() else "_" for c in socket.gethostname())[:40] or "host"
    return f"{host}-{os.getpid()}"


def _owner_is_dead(folder: Path) -> bool:
    """Whether the folder was made on this host by a process that no longer runs."""
    prefix = f"{_TEMP_PREFIX}{_owner_tag().rsplit('-', 1)[0]}-"
    if not folder.name.startswith(prefix):
        return False
    pid_text = folder.name[len(prefix):].split("-", 1)[0]
    if not pid_text.isdigit() or int(pid_text) == os.getpid():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def _remove_stale_partials(base: Path) -> None:
    now = time.time()
    removed = False
    for leftover in base.glob(f"{_TEMP_PREFIX}*"):
        try:
            if _owner_is_dead(leftover) or now - leftover.stat().st_mtime > _STALE_TEMP_SECONDS:
                shutil.rmtree(leftover, ignore_errors=True)
                removed = True
        except OSError:
            pass
    if removed:
        prune(store_dir(base))


def set_aside(directory: Path) -> Path:
    """Move an entry out of its place under a temporary name (a fetch of it again may then
    publish there; it comes back if that fails). The new path."""
    aside = directory.with_name(f"{_TEMP_PREFIX}{directory.name}-older-{os.getpid()}-{time.time_ns()}")
    try:
        directory.rename(aside)
    except OSError as exc:
        raise CacheError(f"cannot move the cache entry {directory} aside: {exc.strerror or exc}") from None
    return aside


def remove_entry(directory: Path) -> None:
    """Delete a broken entry; move it aside first so a half-deleted entry never looks like a real one."""
    if not directory.exists() and not directory.is_symlink():
        return
    doomed = directory.with_name(f"{_TEMP_PREFIX}{directory.name}-broken-{os.getpid()}-{time.time_ns()}")
    try:
        directory.rename(doomed)
    except OSError:
        doomed = directory
    if doomed.is_dir() and not doomed.is_symlink():
        shutil.rmtree(doomed, ignore_errors=True)
    else:
        doomed.unlink(missing_ok=True)
    prune(store_dir(directory.parent))  # the shared files only that entry held
    if directory.exists():
        raise CacheError(f"cannot remove the broken cache entry {directory}")


@contextlib.contextmanager
def fetch_lock(cache_dir: Path, name: str, version: str, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Held while this process fetches NAME==VERSION into the cache. Another process (two cold
    scans at once) or thread asking for the same release waits here (`on_wait` says so first),
    then finds the entry published and fetches nothing. An advisory lock (flock) on a file of
    the cache's `locks/` (beside `releases/`, which holds entries only), released when its
    holder ends, however it ends; where the file system offers none, the fetches run side by
    side as before (`publish_entry` keeps one).

    The holder removes the file before it lets go, so none is left behind; a waiter that then
    holds a removed file's lock opens the path again (the next holder's file)."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        yield
        return
    path = cache_dir / "locks" / f"{canonicalize_name(name)}-{version}.lock"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        yield
        return
    said = False
    while True:
        try:
            handle = open(path, "ab")
        except OSError:
            yield
            return
        try:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if on_wait is not None and not said:
                    on_wait()
                    said = True
                fcntl.flock(handle, fcntl.LOCK_EX)
        except OSError:  # no locks here (some network file systems)
            handle.close()
            yield
            return
        try:
            current = os.stat(path).st_ino
        except FileNotFoundError:
            current = None
        if current == os.fstat(handle.fileno()).st_ino:
            break
        handle.close()  # the holder before removed it: lock the path's file now
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
        handle.close()  # releases the lock


def publish_entry(built: Path, final: Path, name: str, version: str) -> None:
    """Atomically move a fully built entry (marker included) into place.

    If another run published the same entry first, keep theirs when valid.
    """
    for _ in range(2):
        try:
            os.rename(built, final)
            return
        except OSError:
            if not final.exists():
                raise CacheError(f"cannot write the apiaudit cache entry {final}") from None
            marker, _why = read_valid_marker(final, name, version)
            if marker is not None:
                discard_tree(built, final.parent)
                return
            remove_entry(final)
    raise CacheError(f"cannot write the apiaudit cache entry {final}")
