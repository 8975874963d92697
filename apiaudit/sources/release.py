"""Released wheels from the package index: fetched with pip, reduced to their .py files, cached.

Nothing downloaded is ever imported or executed: only `--only-binary=:all:` wheels are
fetched (pip builds no sdist), and the wheel is read as a zip archive. A release with no
wheel apiaudit can read is read from its source distribution, downloaded here and read as
an archive (`sdist.py`), never handed to pip.
"""

from __future__ import annotations

import atexit
import bisect
import contextlib
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from packaging.version import InvalidVersion, Version

from apiaudit.errors import ArgumentError, InputError, NetworkError, NotFoundError
from apiaudit.infra.atomic import (
    DiskFullError,
    atomic_write,
    disk_full_or,
    is_disk_full,
    write_new,
)
from apiaudit.infra.frozen import record
from apiaudit.infra.words import counted
from apiaudit.sources import cache
from apiaudit.sources.archive import (
    DEFAULT_LIMITS,
    HashingReader,
    Malformed,
    WheelLimits,
    check_member_path,
    check_plan,
    downloaded_marker,
    malformed_is_bad_input,
)
from apiaudit.sources.base import CodeTree, Reporter, report_step, report_warning
from apiaudit.sources.cache import canonicalize_name
from apiaudit.sources.filestore import FileStore, store_dir

# The range reader (http.client, ssl), pip (subprocess) and the wheel reader (zipfile, csv, base64)
# are imported by the first fetch, not by every scan: a cached release needs none of them.
if TYPE_CHECKING:
    import subprocess
    import zipfile

    from apiaudit.sources import ranged

# Set inside `fetching_refused()` (`--offline`): nothing is fetched, a cached entry is used as it is.
_FETCH_REFUSED: ContextVar[bool] = ContextVar("apiaudit_fetch_refused", default=False)

_NAME_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")
_RELEASE_SPEC_RE = re.compile(r"^\s*(?P<name>[^=<>!~\s\[]+)\s*==\s*(?P<version>[^=\s]+)\s*$")

# Only the .py files matter, so a wheel built for CPython 3.12 on linux x86_64 serves anywhere.
LINUX_FALLBACK_PYTHON = (3, 12)
LINUX_FALLBACK_PLATFORMS = (
    "manylinux_2_31_x86_64", "manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64",
)  # fmt: skip
LINUX_FALLBACK_ARGS = (
    "--python-version", "3.12",
    "--implementation", "cp",
    "--platform", "manylinux_2_31_x86_64",
    "--platform", "manylinux_2_28_x86_64",
    "--platform", "manylinux_2_17_x86_64",
    "--platform", "manylinux2014_x86_64",
    "--platform", "manylinux1_x86_64",
)  # fmt: skip

_SOURCE_SUFFIXES = (".py", ".pyi")
# entry_points.txt: the plugins the provider loads from a consumer (cache.LAYOUT 2)
_KEPT_DIST_INFO_FILES = frozenset({"METADATA", "top_level.txt", "RECORD", "entry_points.txt"})

_NETWORK_FAILURE_RE = re.compile(
    r"NewConnectionError|Failed to establish a new connection|Temporary failure in name resolution"
    r"|Name or service not known|nodename nor servname|getaddrinfo failed|Network is unreachable"
    r"|Connection refused|ConnectTimeoutError|ReadTimeoutError|timed out|Max retries exceeded"
    r"|ProxyError|SSLError|connection error|Connection broken",
    re.IGNORECASE,
)


_DISK_FULL_RE = re.compile(r"No space left on device|\[Errno 28\]|Disk quota exceeded")


@record
class PipResult:
    returncode: int
    output: str  # stdout and stderr together


def parse_release_spec(spec: str) -> tuple[str, str]:
    """`NAME==VERSION` -> (NAME, VERSION); InputError for anything else."""
    match = _RELEASE_SPEC_RE.match(spec)
    if not match or not _NAME_RE.match(match["name"]):
        raise ArgumentError(f"not a release spec: {spec!r}; write NAME==VERSION (e.g. vllm==0.16.0)")
    name, version = match["name"], match["version"]
    try:
        # Normalised ("v1.0" -> "1.0") so one release has one cache entry.
        return name, str(Version(version))
    except InvalidVersion:
        raise ArgumentError(f"not a valid version in {spec!r}: {version}") from None


def check_distribution_name(name: str) -> None:
    if not _NAME_RE.match(name):
        raise ArgumentError(f"not a valid distribution name: {name!r}")


# `-I`: no working directory or script folder on sys.path, no user site-packages, and every
# PYTHON* variable (PYTHONPATH, PYTHONSTARTUP, ...) ignored; pip also runs in a private empty
# folder. So nothing in an audited checkout (a `pip/` package, a `sitecustomize.py`) can run.
PIP_PYTHON_FLAGS = ("-I",)


def pip_command(args: list[str]) -> list[str]:
    """The exact command apiaudit runs pip with (documented in docs/security.md)."""
    return [sys.executable, *PIP_PYTHON_FLAGS, "-m", "pip", *args]


def pip_environment() -> dict[str, str]:
    """This process's environment without the PYTHON* variables that make Python load code.

    `-I` already ignores them; removing them too keeps pip safe if it starts another Python.
    PIP_* settings (index, proxy, find-links) are kept: they are configuration, not code.
    """
    return {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}


# pip processes now running (fetches run in threads under `matrix`), so a terminating
# command can stop them at once instead of waiting for a 500 MB download to finish.
_LIVE_PIPS: set[subprocess.Popen] = set()
_LIVE_LOCK = threading.Lock()


def stop_running_pips() -> None:
    """Kill every pip apiaudit started that still runs (called when the command is terminated)."""
    with _LIVE_LOCK:
        running = list(_LIVE_PIPS)
    for process in running:
        try:
            process.kill()
        except OSError:
            pass


def _run_pip(args: list[str]) -> PipResult:
    """Run this Python's pip, isolated, with output captured (none of it reaches our stdout)."""
    import subprocess

    command = pip_command(args)
    with tempfile.TemporaryDirectory(prefix="apiaudit-pip-") as private_cwd:
        try:
            process = subprocess.Popen(
                command,
                cwd=private_cwd,
                env=pip_environment(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
            )
        except OSError as exc:
            raise InputError(f"could not run pip ({sys.executable} -I -m pip): {exc}") from None
        with process:  # closes the pipe and reaps pip however this ends
            with _LIVE_LOCK:
                _LIVE_PIPS.add(process)
            try:
                output, _ = process.communicate()
            except BaseException:
                process.kill()
                raise
            finally:
                with _LIVE_LOCK:
                    _LIVE_PIPS.discard(process)
    if process.returncode != 0 and "No module named pip" in output:
        raise InputError(f"pip is not installed in this Python ({sys.executable}); it is needed to fetch releases")
    return PipResult(process.returncode, output)


# Inside `validate_once()`: the entries validated so far, by folder: (the marker's stat then,
# the tree). A later resolve of the same release costs one stat of its marker; file contents are
# still checked where they are read.
_VALIDATED: dict[str, tuple[tuple[int, int, int] | None, CodeTree]] | None = None


@contextlib.contextmanager
def validate_once():
    """Within the block, each release entry is walked and checked once (a matrix resolves each
    release in its fetch step, then in its scan, then for each consumer)."""
    global _VALIDATED
    outer, _VALIDATED = _VALIDATED, ({} if _VALIDATED is None else _VALIDATED)
    try:
        yield
    finally:
        _VALIDATED = outer


# `--verify-wheels`: every release fetched by this process is downloaded whole (pip checks its
# sha256 against the index's) instead of read member by member with range requests.
_VERIFY_WHEELS = False


def set_verify_wheels(verify: bool) -> None:
    """Make whole-wheel downloads this process's default (the `--verify-wheels` option)."""
    global _VERIFY_WHEELS
    _VERIFY_WHEELS = bool(verify)


def verifies_wheels() -> bool:
    """Whether this process downloads whole wheels by default (`set_verify_wheels`)."""
    return _VERIFY_WHEELS


def fetch_release(
    name: str,
    version: str,
    *,
    cache_dir: Path,
    progress: Reporter | None = None,
    verify_wheels: bool | None = None,
    check_entry: bool = True,
    again: bool = False,
) -> CodeTree:
    """The cached .py tree of wheel NAME==VERSION, fetching and extracting it on first use
    (`again`: an older entry is being replaced, as the caller has said: no "first time" line).

    A first fetch reads only the kept members with HTTP range requests when the index serves
    them; `verify_wheels` (default: `set_verify_wheels`) downloads the whole wheel instead.
    A cached entry is listed whole before it is returned (a missing, added or truncated file is a
    broken entry, fetched again); with `check_entry=False`, an entry whose marker names this
    release is returned unlisted, for a caller that may read none of its files and resolves it
    again, checked, before it does.
    """
    final = cache.entry_dir(cache_dir, name, version)
    if not check_entry:
        marker = cache.read_marker(final, name, version)
        if marker is not None and marker.digests is not None and (marker.layout or 1) >= cache.LAYOUT:  # an older marker is upgraded below first
            return _release_tree(name, version, final)
    memo = _VALIDATED
    known = memo.get(str(final)) if memo is not None else None
    if known is not None and known[0] == cache.marker_stamp(final):
        return known[1]  # validated earlier in this process (a matrix asks for each release more than once)
    if final.exists():
        marker, why = cache.read_valid_marker(final, name, version)
        absent = ""
        if marker is not None:
            why = cache.ensure_digests(final, marker, _record_mismatch)
            absent = "" if why else cache.ensure_layout(final, marker, _absent_kept)
            if not why and not absent:
                tree = _release_tree(name, version, final)
                if memo is not None:
                    memo[str(final)] = (cache.marker_stamp(final), tree)
                return tree
        if absent:
            return _refreshed(name, version, final, absent, cache_dir=cache_dir, progress=progress, verify_wheels=verify_wheels)
        if _FETCH_REFUSED.get():
            raise NetworkError(f"cache entry {final} is broken ({why}) and --offline fetches nothing: run once without --offline")
        report_warning(progress, f"cache entry {final} is broken ({why}); fetching {name}=={version} again")
        cache.remove_entry(final)

    waited = f"waiting for another apiaudit process fetching {name}=={version}"
    with cache.fetch_lock(cache_dir, name, version, on_wait=lambda: report_step(progress, waited)):
        if final.exists():  # another process fetched it while this one waited
            marker, _why = cache.read_valid_marker(final, name, version)
            if marker is not None:
                return _release_tree(name, version, final)
        work = cache.new_partial_dir(cache_dir)
        # Nothing is said about fetching before the index shows the release exists: an unknown
        # version is one line saying so, not a fetch that then fails.
        announce = _Announcement(progress, None if again else f"fetching {name}=={version} (first time only)")
        try:
            built = work / "tree"
            whole = _VERIFY_WHEELS if verify_wheels is None else verify_wheels
            store = FileStore(store_dir(cache.releases_dir(cache_dir)))
            marker = None if whole else _fetch_by_ranges(name, version, built, cache_dir, progress, store, announce)
            if marker is None:
                cache.discard_tree(built, cache.releases_dir(cache_dir))  # what a failed range fetch left
                try:
                    wheel = _download_wheel(name, version, work / "download", progress, announce)
                except _SourceOnly as only:
                    announce()
                    marker = _read_source_release(only.source, name, version, built, progress)
                else:
                    marker = _extract_wheel(wheel, built, name, version, progress, store=store)
                    wheel.unlink()  # large wheels (vllm: ~500 MB) must not linger; the .py tree is all we read
            atomic_write(built / cache.MARKER_NAME, marker.to_json())
            cache.publish_entry(built, final, name, version)
        except BaseException:
            cache.discard_tree(work, cache.releases_dir(cache_dir))  # what the failed fetch wrote
            raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return replace(_release_tree(name, version, final), fetched=True)


def _refreshed(
    name: str, version: str, final: Path, absent: str, *, cache_dir: Path, progress: Reporter | None, verify_wheels: bool | None
) -> CodeTree:
    """An entry an older apiaudit extracted, whole and usable but without `absent` (a file this
    layout keeps): fetched again where fetching is allowed and works; else kept, and used as it
    is (what that file declares, a consumer's entry points, is not read). The old entry stays in
    place until the new one is complete: `--offline`, or no network, never loses it."""
    said = f"cache entry {final} was extracted by an older apiaudit, without {absent}"
    if _FETCH_REFUSED.get():
        report_warning(progress, f"{said}; --offline fetches nothing, so it is used as it is")
        return _release_tree(name, version, final)
    report_warning(progress, f"{said}; fetching {name}=={version} again")
    aside = cache.set_aside(final)
    try:
        tree = fetch_release(name, version, cache_dir=cache_dir, progress=progress, verify_wheels=verify_wheels, again=True)
    except (InputError, OSError) as failed:  # a CacheError is an InputError
        if not final.exists():
            os.rename(aside, final)
        report_warning(progress, f"{said}, and fetching it again failed ({failed}): it is used as it is")
        return _release_tree(name, version, final)
    cache.remove_entry(aside)
    return tree


@contextlib.contextmanager
def fetching_refused() -> Iterator[None]:
    """Inside the block no release is fetched (`--offline`): an entry an older apiaudit extracted
    is used as it is, and a broken one is an InputError, not fetched again."""
    token = _FETCH_REFUSED.set(True)
    try:
        yield
    finally:
        _FETCH_REFUSED.reset(token)


def _record_rows(entry: Path) -> Iterator[tuple[Path, list[str] | None]]:
    """(RECORD file, one of its rows) for every kept RECORD of an entry, in path order; a row of
    None for a RECORD that cannot be read (then nothing more of it)."""
    import csv

    for record in sorted(entry.glob("*.dist-info/RECORD")):
        try:
            rows = list(csv.reader(record.read_text(encoding="utf-8").splitlines()))
        except (OSError, UnicodeDecodeError, csv.Error):
            yield record, None
            continue
        for row in rows:
            yield record, row


def _absent_kept(entry: Path) -> str:
    """A dist-info file the entry's RECORD lists, that is kept now and the entry lacks ("" if none)."""
    for record, row in _record_rows(entry):
        if row is None:
            return f"{record.relative_to(entry).as_posix()} (unreadable)"
        parts = row[0].split("/") if row else []
        kept = len(parts) == 2 and parts[0] == record.parent.name and parts[1] in _KEPT_DIST_INFO_FILES
        if kept and not (entry / row[0]).is_file():
            return row[0]
    return ""


def _record_mismatch(entry: Path, digests: dict[str, str]) -> str:
    """Which file of an extracted entry differs from the sha256 its kept RECORD gives ("" if none)."""
    import base64

    for record, row in _record_rows(entry):
        if row is None:
            return f"{record.relative_to(entry).as_posix()} is unreadable"
        if len(row) < 2 or not row[1].startswith("sha256="):
            continue
        member_parts = row[0].split("/")
        if len(member_parts) > 2 and member_parts[0].endswith(".data") and member_parts[1] in ("purelib", "platlib"):
            rel = "/".join(member_parts[2:])
        else:
            rel = row[0]
        if rel in digests:
            expected = row[1][len("sha256="):]
            actual = base64.urlsafe_b64encode(bytes.fromhex(digests[rel])).rstrip(b"=").decode()
            if actual != expected:
                return f"{rel} differs from its RECORD hash"
    return ""


class _Announcement:
    """The "fetching NAME==VERSION" line, said once, when the release is known to exist; notes
    about how it is fetched wait for it (`later`)."""

    def __init__(self, progress: Reporter | None, line: str | None) -> None:
        self.progress, self.line, self.done = progress, line, False  # line None: said already
        self.pending: list[str] = []

    def __call__(self) -> None:
        if not self.done:
            self.done = True
            if self.line is not None:
                report_step(self.progress, self.line)
            for note in self.pending:
                report_step(self.progress, note)
            self.pending.clear()

    def later(self, note: str) -> None:
        """`note` now if the fetch is announced, else just after the announcement."""
        if self.done:
            report_step(self.progress, note)
        else:
            self.pending.append(note)


class _SourceOnly(Exception):
    """pip found no wheel of the release it could take, but its source distribution (`source`)."""

    def __init__(self, source: ranged.PageFile) -> None:
        super().__init__(source.filename)
        self.source = source


# The largest source distribution apiaudit downloads (vllm-ascend's: ~20 MB; it is held in memory).
_MAX_SDIST_BYTES = 256 << 20


def _read_source_release(source: ranged.PageFile, name: str, version: str, dest: Path, progress: Reporter | None) -> cache.Marker:
    """Build the entry of a release that has no wheel apiaudit can read from its source
    distribution: downloaded whole (its sha256 checked against the index's where the index gives
    one), then read as data (`sdist.read_sdist`), never built or run."""
    import urllib.parse
    import urllib.request

    from apiaudit.sources import sdist
    from apiaudit.sources.connections import RequestFailed, is_http

    report_step(progress, f"no wheel for {name}=={version}: reading its source distribution ({source.filename}; nothing of it is built or run)")
    if is_http(source.url):
        try:
            answer = _http_client().get(source.url, {"Accept-Encoding": "identity"}, max_bytes=_MAX_SDIST_BYTES)
        except RequestFailed as exc:
            raise InputError(f"could not fetch {source.filename} for {name}=={version}: {exc}") from None
        if answer.status != 200:
            raise InputError(f"could not fetch {source.filename} for {name}=={version}: HTTP {answer.status}")
        data = answer.body
    elif urllib.parse.urlsplit(source.url).scheme == "file":  # a --find-links folder of pip's configuration
        try:
            with open(urllib.request.url2pathname(urllib.parse.urlsplit(source.url).path), "rb") as handle:
                data = handle.read(_MAX_SDIST_BYTES + 1)
        except OSError as exc:
            raise InputError(f"could not read {source.url} for {name}=={version}: {exc.strerror or exc}") from None
    else:
        raise InputError(f"cannot fetch {source.url} for {name}=={version}: not an http(s) or file address")
    if len(data) > _MAX_SDIST_BYTES:
        raise InputError(f"malformed sdist {source.filename} for {name}=={version}: larger than the {_MAX_SDIST_BYTES} bytes apiaudit reads")
    if source.sha256 and hashlib.sha256(data).hexdigest() != source.sha256.lower():
        raise InputError(f"the downloaded {source.filename} for {name}=={version} does not match the index's sha256")
    folder = dest.parent / "sdist"
    folder.mkdir(parents=True, exist_ok=True)
    archive = folder / source.filename
    atomic_write(archive, data)
    marker = sdist.read_sdist(archive, dest, name, version, progress)
    archive.unlink()
    return marker


def _download_wheel(name: str, version: str, dest: Path, progress: Reporter | None, announce: _Announcement | None = None) -> Path:
    announce = announce or _Announcement(progress, f"fetching {name}=={version}")
    dest.mkdir(parents=True, exist_ok=True)
    base_args = [
        "download", "--no-deps", "--only-binary=:all:", "--no-cache-dir", "--progress-bar", "off",
        "--retries", "2", "-vv", "-d", str(dest.resolve()), f"{name}=={version}",
    ]  # fmt: skip
    first = _run_pip(base_args)
    result = first
    if first.returncode == 0:
        announce()
    elif _worth_retrying_for_linux(first.output):
        if not announce.done and not _version_seen(first.output, name, version):
            raise _pip_failure(name, version, first.output, first.output)  # no such release: nothing to fetch
        skipped = _skipped_links(first.output, name, version)
        source = _skipped_source(skipped)
        if source is not None and not any(link.filename.endswith(".whl") for link, _page in skipped):
            raise _SourceOnly(source)  # no wheel of any platform: no other platform's to try
        announce()
        report_step(
            progress,
            f"no {name}=={version} wheel for this Python/platform; "
            "fetching the linux x86_64 CPython 3.12 one (only .py files are read)",
        )
        result = _run_pip(base_args + list(LINUX_FALLBACK_ARGS))
    if result.returncode != 0:
        if _DISK_FULL_RE.search(result.output):
            raise DiskFullError(dest)
        source = _skipped_source(_skipped_links(first.output + "\n" + result.output, name, version))
        if source is not None:
            raise _SourceOnly(source)
        raise _pip_failure(name, version, result.output, first.output)
    wheels = sorted(dest.glob("*.whl"))
    if len(wheels) != 1:
        raise InputError(f"pip fetched no single wheel for {name}=={version} (got {len(wheels)})")
    return wheels[0]


def _version_seen(output: str, name: str, version: str) -> bool:
    """Whether pip's output shows a file of NAME==VERSION on the index (listed, or skipped as not for here)."""
    wanted = _safe_version(version)
    return wanted in {_safe_version(v) for v in _versions_listed(output)} or _version_skipped(output, name, version)


def _worth_retrying_for_linux(output: str) -> bool:
    if _index_unreachable(output) or _project_unknown(output):
        return False
    return "No matching distribution found" in output or "Could not find a version" in output


def _versions_listed(output: str) -> list[str]:
    """Versions from pip's "(from versions: a, b, c)" error line; [] for "none" or no such line."""
    versions: list[str] = []
    for listed in re.findall(r"\(from versions: ([^)]*)\)", output):
        for item in listed.split(","):
            item = item.strip()
            if item and item != "none" and item not in versions:
                versions.append(item)
    return versions


def _project_unknown(output: str) -> bool:
    return bool(re.search(r"Could not fetch URL \S+: 404 ", output)) and not _versions_listed(output)


def _index_unreachable(output: str) -> bool:
    """Whether pip failed to talk to an index at all (as opposed to the index saying no)."""
    evidence = re.findall(r"Could not fetch URL \S+: (.*)", output)
    evidence += re.findall(r"Retrying \(Retry\(.*", output)
    evidence += [line for line in output.splitlines() if line.startswith("ERROR:")]
    return any(_NETWORK_FAILURE_RE.search(line) for line in evidence)


def _newest(versions: list[str]) -> str | None:
    parsed = []
    for item in versions:
        try:
            parsed.append(Version(item))
        except InvalidVersion:
            continue
    if not parsed:
        return None
    finals = [v for v in parsed if not v.is_prerelease and not v.is_devrelease]
    return str(max(finals or parsed))


def _version_skipped(output: str, name: str, version: str) -> bool:
    """Whether pip saw files of NAME==VERSION but skipped them all (sdist only, or other platforms)."""
    return bool(_skipped_links(output, name, version))


def _skipped_source(skipped: list[tuple[ranged.PageFile, str | None]]) -> ranged.PageFile | None:
    """The source distribution among the files pip skipped, with the sha256 its index page gives
    where pip's line says none (pip names the page; a JSON page's links carry no `#sha256=`)."""
    from apiaudit.sources import ranged
    from apiaudit.sources.connections import is_http

    for link, page in skipped:
        if link.filename.endswith(".whl"):
            continue
        if link.sha256 is None and page is not None:
            try:
                listed = _page_files(page, _http_client()) if is_http(page) else []
            except ranged.RangesUnavailable:
                listed = []  # downloaded unchecked, as pip would with no hash
            link = next((replace(link, sha256=item.sha256) for item in listed if item.filename == link.filename and item.sha256), link)
        return link
    return None


def _skipped_links(output: str, name: str, version: str) -> list[tuple[ranged.PageFile, str | None]]:
    """The files of NAME==VERSION pip's verbose output says it skipped (wheels for other
    platforms, sdists: pip builds none), sdists .tar.gz first, each with the page pip found it
    on where it says; a `#sha256=` kept as the file's hash."""
    import urllib.parse

    from packaging.utils import (
        InvalidSdistFilename,
        InvalidWheelFilename,
        parse_sdist_filename,
        parse_wheel_filename,
    )

    from apiaudit.sources import ranged

    wanted_name, wanted_version = canonicalize_name(name), Version(version)
    found: list[tuple[ranged.PageFile, str | None]] = []
    for url, page in re.findall(r"Skipping link: .*?: (\S+)(?: \(from (\S+)\))?", output):
        address, _, fragment = url.partition("#")
        filename = urllib.parse.unquote(address.rstrip("/").rsplit("/", 1)[-1])
        try:
            if filename.endswith(".whl"):
                file_name, file_version, _build, _tags = parse_wheel_filename(filename)
            else:
                file_name, file_version = parse_sdist_filename(filename)
        except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
            continue
        if file_name == wanted_name and file_version == wanted_version and address not in {f.url for f, _page in found}:
            sha256 = fragment[len("sha256="):] if fragment.startswith("sha256=") else None
            found.append((ranged.PageFile(url=address, filename=filename, sha256=sha256, requires_python=None), page or None))
    return sorted(found, key=lambda pair: not pair[0].filename.endswith(".tar.gz"))


def _pip_failure(name: str, version: str, output: str, first_output: str) -> InputError:
    """Turn pip's failure output into one clear line."""
    both = first_output + "\n" + output
    listed = _versions_listed(both)
    if not listed and _index_unreachable(both):
        return NetworkError(f"could not reach the package index to fetch {name}=={version}")
    if _project_unknown(both):
        return NotFoundError(f"no distribution named {name} on the package index")
    if _version_skipped(both, name, version):
        return NotFoundError(
            f"{name}=={version} has no wheel apiaudit can read (for this Python, or CPython 3.12 on linux x86_64) "
            "and no source distribution"
        )
    if listed and version not in listed and Version(version) not in {_safe_version(v) for v in listed}:
        return NotFoundError(f"{name} has no release {version}; newest is {_newest(listed)}")
    if not listed:
        return NotFoundError(f"{name} publishes no wheel apiaudit can read on the package index")
    errors = [line.strip() for line in output.splitlines() if line.startswith("ERROR:")]
    detail = errors[-1][len("ERROR:"):].strip() if errors else "pip failed"
    return InputError(f"could not fetch {name}=={version}: {detail}")


def _safe_version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _member_target(member: str, dist_info_names: set[str]) -> str | None:
    """Where a wheel member lands in the cache entry, or None to skip it.

    Raises Malformed for a member path that could escape the entry (absolute, `..`, drive).
    """
    check_member_path(member)
    if member.endswith("/"):
        return None
    parts = member.split("/")
    top = parts[0]
    if top.endswith(".data"):
        # purelib/platlib install into site-packages itself; scripts, headers and data do not.
        if len(parts) > 2 and parts[1] in ("purelib", "platlib") and member.endswith(_SOURCE_SUFFIXES):
            return "/".join(parts[2:])
        return None
    if top.endswith(".dist-info"):
        if len(parts) == 2 and parts[1] in _KEPT_DIST_INFO_FILES and top in dist_info_names:
            return member
        return None
    return member if member.endswith(_SOURCE_SUFFIXES) else None


def _record_hashes(archive: zipfile.ZipFile, dist_info_names: set[str]) -> dict[str, tuple[str, str, int | None]]:
    """member -> (algorithm, urlsafe-base64 digest, size) from the wheel's RECORD, where it gives them."""
    import csv

    found: dict[str, tuple[str, str, int | None]] = {}
    for dist_info in sorted(dist_info_names):
        try:
            text = archive.read(f"{dist_info}/RECORD").decode("utf-8")
        except KeyError:
            continue
        for row in csv.reader(text.splitlines()):
            if len(row) < 2 or "=" not in row[1]:
                continue
            algorithm, _, digest = row[1].partition("=")
            size = int(row[2]) if len(row) > 2 and row[2].isdigit() else None
            if algorithm in hashlib.algorithms_guaranteed:
                found[row[0]] = (algorithm, digest, size)
    return found


def _extract_wheel(
    wheel: Path, dest: Path, name: str, version: str, progress: Reporter | None, limits: WheelLimits = DEFAULT_LIMITS,
    store: FileStore | None = None,
) -> cache.Marker:
    """Write the wheel's kept members under `dest`; every malformed archive is one InputError line."""
    with malformed_is_bad_input("wheel", wheel.name, name, version, dest):
        digests = _extract_members(wheel, dest, progress, limits, store=store)
    return downloaded_marker(wheel, dest, name, version, digests)


def _extract_members(
    wheel: Path | ranged.RangedWheel,
    dest: Path,
    progress: Reporter | None,
    limits: WheelLimits,
    prefetch: Callable[[zipfile.ZipFile, list[zipfile.ZipInfo]], None] | None = None,
    store: FileStore | None = None,
) -> dict[str, str]:
    """Extract the kept members of `wheel` (a file, or a wheel read by ranges) into `dest`.

    `prefetch(archive, infos)` runs once the plan has passed every limit, before any member is
    read: for the RECORD files, then for every member the `store` (a `FileStore`) cannot link
    (the ranged wheel fetches those members' bytes there). A member the store links is not
    read: its bytes are those of the file its RECORD sha256 names, checked before linking.
    """
    import zipfile

    try:
        archive = zipfile.ZipFile(wheel)  # type: ignore[arg-type,unused-ignore]
    except (zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise Malformed(f"not a readable zip archive ({exc})") from None
    digests: dict[str, str] = {}
    with archive:
        infos = archive.infolist()
        if len(infos) > limits.max_members:
            raise Malformed(f"it has {len(infos)} members, more than the {limits.max_members} apiaudit reads")
        # Only the wheel's own dist-info (one top-level *.dist-info folder) is kept.
        tops = {info.filename.split("/", 1)[0] for info in infos}
        dist_info_names = {top for top in tops if top.endswith(".dist-info")}
        planned = [(info, _member_target(info.filename, dist_info_names)) for info in infos]
        kept = [(info, target) for info, target in planned if target is not None]
        check_plan(kept, limits)
        records = [info for info, target in kept if target.endswith("/RECORD")]
        if prefetch is not None:
            prefetch(archive, records)
        recorded = _record_hashes(archive, dist_info_names)
        # Members whose content the store already holds are linked, not read (nor fetched).
        shared = _shared_members(kept, recorded, store) if store is not None else {}
        if prefetch is not None:
            prefetch(archive, [info for info, _ in kept if info.filename not in shared])
        source_count = sum(1 for _, target in kept if target.endswith(_SOURCE_SUFFIXES))
        report_step(progress, f"extracting {counted(source_count, '.py file')}")
        dest.mkdir(parents=True)
        # No member reaches outside `dest`: `_member_target` refuses absolute paths, drives and
        # `..` parts, and nothing in the new `dest` is a link (only folders, new files and hard
        # links to regular files are made in it), so no path needs resolving. Each folder is
        # made once; paths are plain strings (a pathlib object per member costs more than the
        # member's write).
        root = str(dest)
        made = {""}
        for info, target in kept:
            path = os.path.join(root, target)
            folder = target.rpartition("/")[0]
            if folder not in made:
                os.makedirs(os.path.join(root, folder), exist_ok=True)
                made.add(folder)
            content = shared.get(info.filename)
            if content is not None and store is not None and store.link_into(content, info.file_size, path):
                digests[target] = content
                continue
            record = recorded.get(info.filename)
            with archive.open(info) as member:
                reader = HashingReader(member, record[0] if record else None)
                written = write_new(path, reader, limit=info.file_size)
            if written != info.file_size:
                raise Malformed(f"member {info.filename!r} holds {written} bytes, its header says {info.file_size}")
            if record and not info.filename.endswith("/RECORD"):
                algorithm, digest, size = record
                if reader.digest(algorithm) != digest or (size is not None and size != written):
                    raise Malformed(f"member {info.filename!r} does not match its RECORD hash")
            digests[target] = reader.sha256.hexdigest()
            if store is not None and record and not info.filename.endswith("/RECORD"):
                store.keep(path, digests[target])
    return digests


def _shared_members(
    kept: list[tuple[zipfile.ZipInfo, str]], recorded: dict[str, tuple[str, str, int | None]], store: FileStore
) -> dict[str, str]:
    """member -> sha256 (hex) for each kept member whose RECORD sha256 the store holds a file of."""
    import base64
    import binascii

    found: dict[str, str] = {}
    for info, target in kept:
        record = recorded.get(info.filename)
        if record is None or record[0] != "sha256" or target.endswith("/RECORD"):
            continue
        if record[2] is not None and record[2] != info.file_size:
            continue  # the archive contradicts its RECORD: extracted, and refused, as usual
        try:
            raw = base64.urlsafe_b64decode(record[1] + "=" * (-len(record[1]) % 4))
        except (binascii.Error, ValueError):
            continue
        if len(raw) == 32 and store.has(raw.hex()):
            found[info.filename] = raw.hex()
    return found


def _fetch_by_ranges(
    name: str, version: str, dest: Path, cache_dir: Path, progress: Reporter | None, store: FileStore | None = None,
    announce: _Announcement | None = None,
) -> cache.Marker | None:
    """Extract NAME==VERSION's kept members by HTTP range requests; None when that is not possible
    (no http(s) index page lists the wheel, or the server serves no ranges): then pip downloads it.
    A release whose pages list no wheel apiaudit can read, but a source distribution, is read
    from that (`_read_source_release`).

    Index pages that list the project's files but none of VERSION mean there is no such release:
    an InputError naming the newest, said before anything about fetching (`announce` is called
    once the pages show the release). A malformed wheel is an InputError here as in the full
    download: the same checks run.
    """
    from apiaudit.sources import ranged

    announce = announce or _Announcement(progress, f"fetching {name}=={version}")
    pages = index_pages(name, cache_dir)
    if not pages:
        return None
    try:
        http = _http_client()
        listings = [_page_files(page, http) for page in pages]
    except ranged.RangesUnavailable as why:
        announce.later(f"reading {name}=={version} by byte ranges is not possible ({why}); downloading the whole wheel")
        return None
    versions = {v for listed in listings for v in ranged.release_versions(listed, name)}
    wanted = _safe_version(version)
    if versions and wanted not in versions:
        raise NotFoundError(f"{name} has no release {version}; newest is {_newest([str(v) for v in versions])}")
    if versions:
        announce()
    try:
        link = None
        for listed in listings:
            link = ranged.choose_wheel(
                listed, name, version, fallback_python=LINUX_FALLBACK_PYTHON, fallback_platforms=LINUX_FALLBACK_PLATFORMS,
            )  # fmt: skip
            if link is not None:
                break
        if link is None:
            source = next(filter(None, (ranged.choose_sdist(listed, name, version) for listed in listings)), None)
            return None if source is None else _read_source_release(source, name, version, dest, progress)
        wheel = ranged.RangedWheel(link.url, http)
    except ranged.RangesUnavailable as why:
        announce.later(f"reading {name}=={version} by byte ranges is not possible ({why}); downloading the whole wheel")
        return None
    report_step(progress, f"reading the .py files of {link.filename} by byte ranges")
    try:
        with malformed_is_bad_input("wheel", link.filename, name, version, dest):
            digests = _extract_members(
                wheel, dest, progress, DEFAULT_LIMITS, prefetch=_member_prefetch(wheel, DEFAULT_LIMITS), store=store
            )
    except ranged.RangesUnavailable as why:
        report_step(progress, f"a range request for {name}=={version} failed ({why}); downloading the whole wheel")
        return None
    finally:
        wheel.close()
    files = cache.tree_files(dest)
    return cache.Marker(
        name=name,
        version=version,
        wheel=link.filename,
        wheel_sha256=link.sha256 or "",  # what the index says; only a full download checks it
        file_count=len(files),
        tree_digest=cache.tree_digest(dest, files),
        digests=digests,
        fetched_by="ranges",
        fetched_bytes=wheel.fetched_bytes,
        layout=cache.LAYOUT,
    )


# Project pages read this process (a matrix fetches many releases of one project at once).
_PAGE_FILES: dict[str, tuple[float, list[ranged.PageFile]]] = {}
_PAGE_FILES_LOCK = threading.Lock()


def _page_files(page: str, http: ranged.Client) -> list[ranged.PageFile]:
    from apiaudit.sources import ranged

    with _PAGE_FILES_LOCK:
        known = _PAGE_FILES.get(page)
        if known is None or time.monotonic() - known[0] > VERSIONS_TTL_SECONDS:
            known = (time.monotonic(), ranged.read_page(page, http))
            _PAGE_FILES[page] = known
        return known[1]


# A member's local header: 30 bytes, its name and an extra field (up to 64 KiB each), then its
# data and perhaps a 24-byte data descriptor.
_LOCAL_OVERHEAD = 30 + 2 * 0xFFFF + 24


def _member_prefetch(wheel: ranged.RangedWheel, limits: WheelLimits) -> Callable[[zipfile.ZipFile, list[zipfile.ZipInfo]], None]:
    """The prefetch step of a ranged extraction: each kept member's span, up to the next member."""
    boundaries: list[int] = []  # where each member starts, sorted (once per wheel)

    def prefetch(archive: zipfile.ZipFile, kept: list[zipfile.ZipInfo]) -> None:
        if not boundaries:
            boundaries.extend(sorted({info.header_offset for info in archive.infolist()} | {archive.start_dir}))
        spans = []
        total = 0
        for info in kept:
            following = boundaries[bisect.bisect_right(boundaries, info.header_offset)] if info.header_offset < boundaries[-1] else wheel.size
            end = min(following, info.header_offset + info.compress_size + _LOCAL_OVERHEAD)
            spans.append((info.header_offset, end))
            total += info.compress_size
            if total > limits.max_total_bytes:
                raise Malformed(f"its kept members claim more than the {limits.max_total_bytes} bytes apiaudit reads")
        wheel.prefetch(spans)

    return prefetch


_SETTINGS: dict[tuple[tuple[str, str], ...], ranged.NetworkSettings] = {}
_CLIENTS: dict[ranged.NetworkSettings, ranged.Client] = {}
_SETTINGS_LOCK = threading.Lock()


def _network_settings() -> ranged.NetworkSettings:
    """pip's CA bundle and proxy (`pip config list`), read once per process (and PIP_* environment)."""
    from apiaudit.sources import ranged

    key = _pip_settings_key()
    with _SETTINGS_LOCK:
        if key not in _SETTINGS:
            result = _run_pip(["config", "list"])
            _SETTINGS[key] = ranged.network_settings(result.output.splitlines() if result.returncode == 0 else [])
        return _SETTINGS[key]


def _http_client() -> ranged.Client:
    """One client per process and network settings: its connections serve every release fetched."""
    from apiaudit.sources import ranged

    settings = _network_settings()
    with _SETTINGS_LOCK:
        if settings not in _CLIENTS:
            if not _CLIENTS:
                atexit.register(_close_clients)
            _CLIENTS[settings] = ranged.client(settings)
        return _CLIENTS[settings]


def _close_clients() -> None:
    with _SETTINGS_LOCK:
        clients = list(_CLIENTS.values())
        _CLIENTS.clear()
    for client in clients:
        client.close()


def _release_tree(name: str, version: str, entry: Path) -> CodeTree:
    return CodeTree(name=name, version=version, root=entry, packages=release_packages(entry), kind="release")


def release_packages(entry: Path) -> tuple[str, ...]:
    """Top-level import packages of an extracted wheel: top_level.txt, else folders/modules holding .py files."""
    for top_level in sorted(entry.glob("*.dist-info/top_level.txt")):
        names = [line.strip() for line in top_level.read_text(encoding="utf-8").splitlines()]
        present = [n for n in dict.fromkeys(names) if n and _holds_python(entry, n)]
        if present:
            return tuple(present)
    found = []
    for child in sorted(entry.iterdir()):
        if child.name.endswith((".dist-info", ".data")) or child.name.startswith("."):
            continue
        if child.is_dir() and _holds_python(entry, child.name):
            found.append(child.name)
        elif child.is_file() and child.suffix in _SOURCE_SUFFIXES and child.stem.isidentifier():
            if child.stem not in found:
                found.append(child.stem)
    return tuple(found)


def _holds_python(entry: Path, name: str) -> bool:
    if "/" in name or "\\" in name or name in ("", ".", ".."):
        return False
    if (entry / f"{name}.py").is_file() or (entry / f"{name}.pyi").is_file():
        return True
    folder = entry / name
    return folder.is_dir() and any(folder.rglob("*.py"))


# How long a listing of the index's versions is reused (`--refresh` bypasses it): long enough for a
# matrix run in every job of a pipeline, short enough that a new release shows up the same hour.
VERSIONS_TTL_SECONDS = 600
_VERSIONS_KIND = "index-versions"


def _versions_file(cache_dir: Path, name: str, include_prereleases: bool) -> Path:
    return Path(cache_dir) / "index-versions" / f"{canonicalize_name(name)}{'-pre' if include_prereleases else ''}.json"


def release_versions(
    name: str, *, include_prereleases: bool = False, cache_dir: Path | None = None, refresh: bool = False
) -> list[str]:
    """Every version of NAME the package index offers, oldest first.

    With `cache_dir`, a listing younger than VERSIONS_TTL_SECONDS is reused (data only, JSON);
    `refresh` asks the index again.
    """
    check_distribution_name(name)
    if cache_dir is None:
        return _listed_versions(name, include_prereleases)[0]
    where = _versions_file(cache_dir, name, include_prereleases)
    if not refresh:
        cached = _cached_listing(where)
        if cached is not None:
            return cached[0]
    versions, pages = _listed_versions(name, include_prereleases)
    _store_listing(where, versions, pages)
    with _PAGES_LOCK:
        _PAGES[(canonicalize_name(name), _pip_settings_key())] = pages
    return versions


def _store_listing(where: Path, versions: list[str], pages: list[str]) -> None:
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(where, json.dumps({"kind": _VERSIONS_KIND, "listed_at": time.time(), "versions": versions, "pages": pages}))
    except OSError:
        pass  # an unwritable cache only costs the next listing


def _cached_listing(where: Path) -> tuple[list[str], list[str] | None] | None:
    """(versions, the index pages pip read them from, None in listings older than that key) when fresh."""
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("kind") != _VERSIONS_KIND:
        return None
    listed_at, versions, pages = data.get("listed_at"), data.get("versions"), data.get("pages")
    if not isinstance(listed_at, (int, float)) or not 0 <= time.time() - listed_at < VERSIONS_TTL_SECONDS:
        return None
    if not isinstance(versions, list) or not versions or not all(isinstance(v, str) and _safe_version(v) is not None for v in versions):
        return None
    if not (isinstance(pages, list) and all(isinstance(page, str) for page in pages)):
        pages = None
    return versions, pages


# The index pages of each project, learnt this process: by canonical name and pip's environment
# settings (PIP_INDEX_URL and the like change what pip reads).
_PAGES: dict[tuple[str, tuple[tuple[str, str], ...]], list[str]] = {}
_PAGES_LOCK = threading.Lock()


def _pip_settings_key() -> tuple[tuple[str, str], ...]:
    return tuple(sorted((key, value) for key, value in os.environ.items() if key.startswith("PIP_")))


def index_pages(name: str, cache_dir: Path) -> list[str]:
    """The http(s) project pages pip looks NAME up in (its configured indexes), [] when it has none.

    Learnt with the version listing (`pip index versions -vv` names them): from a fresh listing
    in the cache (a matrix writes one), else by listing them; one lookup a process, however many
    fetch threads ask.
    """
    key = (canonicalize_name(name), _pip_settings_key())
    with _PAGES_LOCK:
        if key in _PAGES:
            return _PAGES[key]
        for include_prereleases in (False, True):
            cached = _cached_listing(_versions_file(cache_dir, name, include_prereleases))
            if cached is not None and cached[1] is not None:
                _PAGES[key] = cached[1]
                return cached[1]
        try:
            # Not written to the cache: a fetch leaves nothing but its release entry behind.
            pages = _listed_versions(name, False)[1]
        except InputError:
            pages = []  # the full download says what is wrong, in its own words
        _PAGES[key] = pages
        return pages


@record
class LearntIndex:
    """What this process learnt from pip about reaching the package index (its `cert` and
    `proxy`, a project's pages), handed to the processes that fetch releases for it, so none of
    them runs pip again to learn the same."""

    settings: tuple[tuple[tuple[tuple[str, str], ...], ranged.NetworkSettings], ...]
    pages: tuple[tuple[tuple[str, tuple[tuple[str, str], ...]], tuple[str, ...]], ...]


def learn_index(name: str, cache_dir: Path) -> LearntIndex:
    """Learn (once a process) what range reads of NAME's wheels need, and return it all."""
    if index_pages(name, cache_dir):
        _network_settings()
    with _SETTINGS_LOCK:
        settings = tuple(_SETTINGS.items())
    with _PAGES_LOCK:
        pages = tuple((key, tuple(found)) for key, found in _PAGES.items())
    return LearntIndex(settings=settings, pages=pages)


def adopt_learnt_index(learnt: LearntIndex) -> None:
    """Take what another process learnt (`learn_index`) as learnt here."""
    with _SETTINGS_LOCK:
        _SETTINGS.update(learnt.settings)
    with _PAGES_LOCK:
        _PAGES.update((key, list(found)) for key, found in learnt.pages)


def _pages_listed(output: str) -> list[str]:
    """The http(s) locations under pip's "N location(s) to search for versions of NAME:" line."""
    pages: list[str] = []
    lines = output.splitlines()
    for number, line in enumerate(lines):
        if re.match(r"^\d+ location\(s\) to search for versions of ", line):
            for item in lines[number + 1:]:
                match = re.match(r"^\* (\S+)$", item.strip())
                if not match:
                    break
                if match[1].startswith(("https://", "http://")) and match[1] not in pages:
                    pages.append(match[1])
    return pages


def _listed_versions(name: str, include_prereleases: bool) -> tuple[list[str], list[str]]:
    """(every version of NAME oldest first, the http(s) index pages pip read)."""
    # Every version the index has, not just those this interpreter could install.
    args = ["index", "versions", "-vv", "--retries", "2", "--ignore-requires-python", name]
    if include_prereleases:
        args.append("--pre")
    result = _run_pip(args)
    versions: list[str] = []
    if result.returncode == 0:
        match = re.search(r"^Available versions:\s*(.*)$", result.output, re.MULTILINE)
        if match:
            versions = [v.strip() for v in match[1].split(",") if v.strip()]
    elif re.search(r"unknown command|no such option", result.output, re.IGNORECASE):
        # Old pip without `pip index`: ask for a version no index can have and read the list pip prints.
        with tempfile.TemporaryDirectory(prefix="apiaudit-probe-") as scratch:
            probe = _run_pip(["download", "--no-deps", "--only-binary=:all:", "--no-cache-dir", "-vv",
                              "--retries", "2", "-d", scratch, f"{name}==0+apiaudit.probe"])  # fmt: skip
        result = PipResult(1, probe.output)
        versions = _versions_listed(probe.output)
        if not include_prereleases:
            versions = [v for v in versions if (parsed := _safe_version(v)) is not None and not parsed.is_prerelease]
    if not versions:
        if _index_unreachable(result.output):
            raise NetworkError(f"could not reach the package index to list the releases of {name}")
        raise NotFoundError(f"no distribution named {name} on the package index")
    unique: dict[Version, str] = {}
    for item in versions:
        parsed = _safe_version(item)
        if parsed is not None:
            unique.setdefault(parsed, item)
    return [unique[v] for v in sorted(unique)], _pages_listed(result.output)
