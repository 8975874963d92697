"""Reading only the .py members of a wheel on the package index, with HTTP range requests.

A wheel is a zip archive: its central directory at the end lists every member and where it
starts. `RangedWheel` is a read-only file over the wheel's URL that holds the byte spans it
has fetched; `zipfile` reads it like any file (the end record and the directory first), and
`prefetch` fetches the spans of the members to keep in a few coalesced, parallel requests.
Everything the full-download path checks on the members still holds (sizes, CRC-32, RECORD
hashes); what it cannot check is the sha256 of the whole wheel (docs/scan.md says so).

The wheel's URL and sha256 come from the project pages pip itself would read (the indexes
of pip's configuration), fetched here as PEP 691 JSON or PEP 503 HTML. Anything unusual
(a page that is not http(s), no matching wheel, a server that ignores `Range`) makes the
caller fall back to pip's full download.
"""

from __future__ import annotations

import bisect
import json
import re
import sys
import threading
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from typing import Iterable, Sequence

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import Tag, compatible_tags, cpython_tags, sys_tags
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from apiaudit.infra.frozen import record
from apiaudit.sources.connections import Client, RequestFailed, is_http

_TIMEOUT_S = 60
_TAIL_BYTES = 1 << 20  # the end record, the central directory and RECORD of most wheels (vLLM: the last ~0.7 MB)
_GAP_BYTES = 1 << 16  # members closer than this are fetched in one request
_SPAN_BYTES = 8 << 20  # one request fetches at most this much (so the parallel requests balance)
_PARALLEL = 8
_MAX_PAGE_BYTES = 64 << 20  # a project page (vLLM's JSON page: ~1 MB)
_MAX_READ_BYTES = 256 << 20  # one read not planned ahead, held in memory (vLLM's directory: ~0.6 MB)
_PAGE_ACCEPT = (
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
)


class RangesUnavailable(Exception):
    """The server does not serve this wheel by byte ranges (or a request failed): download it whole."""


@record
class NetworkSettings:
    """What of pip's configuration the range requests follow: its CA bundle and its proxy."""

    cert: str | None = None
    proxy: str | None = None


@record
class WheelLink:
    url: str
    filename: str
    sha256: str | None  # what the index says the whole wheel hashes to (checked only by a full download)


def network_settings(pip_config_lines: Iterable[str]) -> NetworkSettings:
    """pip's `cert` and `proxy` from `pip config list` lines (`global.cert='...'`, `:env:.proxy='...'`)."""
    found: dict[str, str] = {}
    for line in pip_config_lines:
        match = re.match(r"^([^.=]*)\.([a-z-]+)='(.*)'$", line.strip())
        if not match or match[2] not in ("cert", "proxy"):
            continue
        scope, key, value = match[1], match[2], match[3]
        # pip reads the environment over the files, and a command's section over `global`.
        rank = {":env:": 3, "download": 2, "install": 2, "index": 2, "global": 1}.get(scope, 0)
        if rank and rank >= int(found.get(f"{key}-rank", "0")):
            found[key], found[f"{key}-rank"] = value, str(rank)
    return NetworkSettings(cert=found.get("cert"), proxy=found.get("proxy"))


def client(settings: NetworkSettings) -> Client:
    """A client verifying TLS with pip's CA bundle, through pip's proxy (else the environment's)."""
    return Client(cafile=settings.cert, proxy=settings.proxy, timeout=_TIMEOUT_S)


# ---------------------------------------------------------------------------------- index pages


class _LinkParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str | None]] = []  # (href, data-requires-python)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            values = dict(attrs)
            if values.get("href"):
                self.links.append((values["href"] or "", values.get("data-requires-python")))


@record
class PageFile:
    url: str
    filename: str
    sha256: str | None
    requires_python: str | None


def read_page(page_url: str, http: Client) -> list[PageFile]:
    """The files a PEP 691 (JSON) or PEP 503 (HTML) project page lists; RangesUnavailable when unreadable."""
    if not is_http(page_url):
        raise RangesUnavailable(f"{page_url} is not an http(s) page")
    try:
        answer = http.get(page_url, {"Accept": _PAGE_ACCEPT}, max_bytes=_MAX_PAGE_BYTES)
    except RequestFailed as exc:
        raise RangesUnavailable(f"cannot read {page_url}: {exc}") from None
    if answer.status != 200 or len(answer.body) > _MAX_PAGE_BYTES:
        raise RangesUnavailable(f"cannot read {page_url}: HTTP {answer.status}")
    final_url, content_type, body = answer.url, answer.headers.get("Content-Type", ""), answer.body
    files: list[PageFile] = []
    if "json" in content_type:
        try:
            data = json.loads(body)
            for item in data.get("files", []):
                hashes = item.get("hashes") or {}
                requires = item.get("requires-python")
                files.append(PageFile(
                    url=urllib.parse.urljoin(final_url, str(item["url"])),
                    filename=str(item["filename"]),
                    sha256=str(hashes["sha256"]) if isinstance(hashes, dict) and "sha256" in hashes else None,
                    requires_python=str(requires) if requires else None,
                ))  # fmt: skip
        except (ValueError, KeyError, TypeError, AttributeError):
            raise RangesUnavailable(f"{page_url} is not a readable project page") from None
        return files
    parser = _LinkParser()
    parser.feed(body.decode("utf-8", errors="replace"))
    for href, requires in parser.links:
        url = urllib.parse.urljoin(final_url, href)
        address, _, fragment = url.partition("#")
        filename = urllib.parse.unquote(address.rstrip("/").rsplit("/", 1)[-1])
        sha256 = fragment[len("sha256="):] if fragment.startswith("sha256=") else None
        files.append(PageFile(url=address, filename=filename, sha256=sha256, requires_python=requires))
    return files


def _allows(requires_python: str | None, python: Version) -> bool:
    if not requires_python:
        return True
    try:
        return SpecifierSet(requires_python).contains(python, prereleases=True)
    except InvalidSpecifier:
        return True  # pip ignores what it cannot read too


def fallback_tags(python: tuple[int, int], platforms: Sequence[str]) -> list[Tag]:
    """The tags of the linux CPython wheel fetched when this interpreter has none (pip's order)."""
    return [*cpython_tags(python, platforms=platforms), *compatible_tags(python, f"cp{python[0]}{python[1]}", platforms)]


def release_versions(files: Sequence[PageFile], name: str) -> set[Version]:
    """The versions of NAME a project page has any file of (wheel or sdist, any platform)."""
    wanted = canonicalize_name(name)
    found: set[Version] = set()
    for item in files:
        try:
            if item.filename.endswith(".whl"):
                file_name, file_version, _build, _tags = parse_wheel_filename(item.filename)
            else:
                file_name, file_version = parse_sdist_filename(item.filename)
        except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
            continue
        if file_name == wanted:
            found.add(file_version)
    return found


def choose_wheel(
    files: Sequence[PageFile], name: str, version: str, *, fallback_python: tuple[int, int], fallback_platforms: Sequence[str]
) -> WheelLink | None:
    """The wheel of NAME==VERSION pip would download: this interpreter's best, else the linux fallback's."""
    wanted_name, wanted_version = canonicalize_name(name), Version(version)
    wheels: list[tuple[frozenset[Tag], PageFile]] = []
    for item in files:
        if not item.filename.endswith(".whl") or not is_http(item.url):
            continue
        try:
            file_name, file_version, _build, tags = parse_wheel_filename(item.filename)
        except (InvalidWheelFilename, InvalidVersion):
            continue
        if file_name == wanted_name and file_version == wanted_version:
            wheels.append((tags, item))
    here = Version(".".join(map(str, sys.version_info[:3])))
    for priority, python in ((list(sys_tags()), here), (fallback_tags(fallback_python, fallback_platforms), Version("%d.%d" % fallback_python))):
        rank = {tag: i for i, tag in enumerate(priority)}
        ranked = [
            (min(rank[t] for t in tags if t in rank), item)
            for tags, item in wheels
            if any(t in rank for t in tags) and _allows(item.requires_python, python)
        ]
        if ranked:
            best = min(ranked, key=lambda pair: pair[0])[1]
            return WheelLink(url=best.url, filename=best.filename, sha256=best.sha256)
    return None


def choose_sdist(files: Sequence[PageFile], name: str, version: str) -> PageFile | None:
    """The source distribution of NAME==VERSION a page lists (a .tar.gz before a .zip), None without one."""
    wanted_name, wanted_version = canonicalize_name(name), Version(version)
    found = []
    for item in files:
        if item.filename.endswith(".whl") or not is_http(item.url):
            continue
        try:
            file_name, file_version = parse_sdist_filename(item.filename)
        except (InvalidSdistFilename, InvalidVersion):
            continue
        if file_name == wanted_name and file_version == wanted_version:
            found.append(item)
    return min(found, key=lambda item: not item.filename.endswith(".tar.gz"), default=None)


# ---------------------------------------------------------------------------------- the ranged file


class RangedWheel:
    """A read-only, seekable file over a wheel's URL, holding only the byte spans it fetched.

    A read of bytes not yet held fetches them (with some read-ahead); `prefetch` fetches many
    spans at once. Every response must be a 206 with the asked span of a file of the same size.
    """

    def __init__(self, url: str, http: Client):
        if not is_http(url):
            raise RangesUnavailable(f"{url} is not an http(s) address")
        self.url = url
        self._http = http
        self._lock = threading.Lock()
        self._starts: list[int] = []  # sorted starts of the held spans (never overlapping)
        self._spans: dict[int, bytes] = {}
        self.fetched_bytes = 0
        self.requests = 0
        self.size = -1
        self._pos = 0
        tail_start, tail = self._get(None, None)  # the last bytes, and the file's size from Content-Range
        self._hold(tail_start, tail)

    # -- HTTP
    def _get(self, start: int | None, end: int | None) -> tuple[int, bytes]:
        """Bytes [start, end) (or, with no start, the last _TAIL_BYTES + 22): (where they start, them)."""
        wanted = f"bytes=-{_TAIL_BYTES + 22}" if start is None else f"bytes={start}-{(end or 0) - 1}"
        asked = _TAIL_BYTES + 22 if start is None else (end or 0) - start
        try:
            answer = self._http.get(self.url, {"Range": wanted, "Accept-Encoding": "identity"}, max_bytes=asked)
        except RequestFailed as exc:
            raise RangesUnavailable(f"a range request failed: {exc}") from None
        if answer.status != 206:
            raise RangesUnavailable(f"the server answered {answer.status} to a range request")
        match = re.match(r"^bytes (\d+)-(\d+)/(\d+)$", answer.headers.get("Content-Range", "").strip())
        if not match:
            raise RangesUnavailable("the server's answer to a range request names no byte range")
        first, last, total = (int(g) for g in match.groups())
        if self.size >= 0 and total != self.size:
            raise RangesUnavailable("the wheel changed size between two range requests")
        if start is not None and (first != start or last != (end or 0) - 1):
            raise RangesUnavailable("the server answered another byte range than the one asked")
        body = answer.body
        if len(body) != last - first + 1:
            raise RangesUnavailable("a range answer holds another number of bytes than it says")
        with self._lock:
            self.size = total
            self.requests += 1
            self.fetched_bytes += len(body)
        return first, body

    def _hold(self, start: int, data: bytes) -> None:
        """Keep [start, start + len(data)), merged with the held spans it overlaps or touches."""
        with self._lock:
            end = start + len(data)
            first = bisect.bisect_right(self._starts, start) - 1
            if first < 0 or self._starts[first] + len(self._spans[self._starts[first]]) < start:
                first += 1
            last = first
            merged_start, merged_end = start, end
            while last < len(self._starts) and self._starts[last] <= end:
                held_start = self._starts[last]
                merged_start = min(merged_start, held_start)
                merged_end = max(merged_end, held_start + len(self._spans[held_start]))
                last += 1
            merged = bytearray(merged_end - merged_start)
            for held_start in self._starts[first:last]:
                held = self._spans.pop(held_start)
                merged[held_start - merged_start: held_start - merged_start + len(held)] = held
            merged[start - merged_start: end - merged_start] = data
            del self._starts[first:last]
            self._starts.insert(first, merged_start)
            self._spans[merged_start] = bytes(merged)

    def _held(self, start: int, length: int) -> bytes | None:
        with self._lock:
            index = bisect.bisect_right(self._starts, start) - 1
            if index < 0:
                return None
            span_start = self._starts[index]
            span = self._spans[span_start]
            if span_start + len(span) >= start + length:
                return span[start - span_start: start - span_start + length]
            return None

    def prefetch(self, spans: Iterable[tuple[int, int]]) -> None:
        """Fetch every [start, end) span, neighbours in one request, several requests at once."""
        merged: list[list[int]] = []
        for start, end in sorted((max(0, s), min(e, self.size)) for s, e in spans):
            if end <= start or self._held(start, end - start) is not None:
                continue
            if merged and start - merged[-1][1] <= _GAP_BYTES and end - merged[-1][0] <= _SPAN_BYTES:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        if not merged:
            return
        with ThreadPoolExecutor(max_workers=min(_PARALLEL, len(merged)), thread_name_prefix="apiaudit-range") as pool:
            for first, body in pool.map(lambda span: self._get(span[0], span[1]), merged):
                self._hold(first, body)

    # -- the file protocol zipfile uses
    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self.size}[whence]
        if base + offset < 0:
            raise ValueError("negative seek position")
        self._pos = base + offset
        return self._pos

    def read(self, size: int = -1) -> bytes:
        if self._pos >= self.size:
            return b""
        length = self.size - self._pos if size is None or size < 0 else min(size, self.size - self._pos)
        data = self._held(self._pos, length)
        if data is None:
            # Not prefetched (the central directory, or a member zipfile reads ahead of the plan).
            if length > _MAX_READ_BYTES:
                raise RangesUnavailable(f"a read of {length} bytes at once (a central directory that large?)")
            first, body = self._get(self._pos, min(self.size, self._pos + max(length, _GAP_BYTES)))
            self._hold(first, body)
            data = self._held(self._pos, length)
            if data is None:  # pragma: no cover - _get checked the span it returned
                raise RangesUnavailable("a range answer did not cover what was asked")
        self._pos += len(data)
        return data

    def close(self) -> None:
        with self._lock:
            self._starts.clear()
            self._spans.clear()
