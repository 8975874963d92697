"""Wheels read by HTTP range requests: only the kept members are fetched, every check of the full
download still holds, and anything else (no ranges, `--verify-wheels`) downloads the whole wheel.

Offline tests serve a wheel built in the test from a local HTTP index (with and without Range
support) to the real pip and to apiaudit's range reader; the `network` test range-reads a real
vLLM release and compares its files with the full download's.
"""

from __future__ import annotations

import json
import random
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from wheel_helpers import build_wheel, record_hash

from apiaudit.errors import InputError
from apiaudit.sources import ranged, resolve
from apiaudit.sources import release as release_module
from apiaudit.sources.cache import MARKER_NAME

# A large member apiaudit does not keep: a range read fetches at most the part of it that lies
# in the wheel's last MiB (read first, with the central directory).
_NATIVE = random.Random(7).randbytes(3 << 20)
MEMBERS: dict[str, bytes | str] = {
    "toypkg/__init__.py": "from toypkg.mod import f\n",
    "toypkg/mod.py": "def f(a, *, b=1):\n    return a + b\n" * 40,
    "toypkg/sub/deep.pyi": "def g() -> int: ...\n",
    "toypkg/_native.cpython-312-x86_64-linux-gnu.so": _NATIVE,
    "toypkg/data.json": "{}",
    "toypkg-1.0.dist-info/top_level.txt": "toypkg\n",
    "toypkg-1.0.data/purelib/toypkg_extra/__init__.py": "X = 1\n",
}


def toy_wheel(folder: Path, members: dict[str, bytes | str] = MEMBERS) -> Path:
    return build_wheel(folder, "toypkg", "1.0", members, record=True, compression=zipfile.ZIP_DEFLATED)


def marker_of(cache_dir: Path) -> dict:
    return json.loads((cache_dir / "releases" / "toypkg-1.0" / MARKER_NAME).read_text(encoding="utf-8"))


def tree_of(cache_dir: Path) -> dict[str, bytes]:
    entry = cache_dir / "releases" / "toypkg-1.0"
    return {p.relative_to(entry).as_posix(): p.read_bytes() for p in sorted(entry.rglob("*")) if p.is_file() and p.name != MARKER_NAME}


def test_only_the_kept_members_are_fetched_and_the_tree_equals_the_full_downloads(tmp_path, serve):
    wheel = toy_wheel(tmp_path / "wheels")
    index = serve([wheel])
    tree = resolve("toypkg==1.0", cache_dir=tmp_path / "ranged")
    assert tree.fetched and tree.packages == ("toypkg",)  # as its top_level.txt says
    assert marker_of(tmp_path / "ranged")["fetched_by"] == "ranges"
    reads = index.wheel_reads()
    assert reads and all(header is not None for header in reads), "the whole wheel was asked for"
    assert index.bytes_sent < wheel.stat().st_size / 2, "the large member not kept was fetched"
    assert marker_of(tmp_path / "ranged")["fetched_bytes"] == index.bytes_sent  # what the marker says was read

    sent = index.bytes_sent
    resolve("toypkg==1.0", cache_dir=tmp_path / "whole", verify_wheels=True)
    assert index.bytes_sent - sent == wheel.stat().st_size  # pip downloaded the wheel whole
    assert marker_of(tmp_path / "whole")["fetched_by"] == "download"
    assert marker_of(tmp_path / "whole")["fetched_bytes"] == wheel.stat().st_size
    assert tree_of(tmp_path / "ranged") == tree_of(tmp_path / "whole")
    ranged_marker, whole_marker = marker_of(tmp_path / "ranged"), marker_of(tmp_path / "whole")
    for key in ("wheel", "wheel_sha256", "file_count", "tree_digest", "sha256"):
        assert ranged_marker[key] == whole_marker[key], key


def test_a_server_without_ranges_gets_the_full_download(tmp_path, serve):
    wheel = toy_wheel(tmp_path / "wheels")
    index = serve([wheel], ranges=False)
    steps: list[str] = []

    class Steps:
        def step(self, message: str) -> None:
            steps.append(message)

    resolve("toypkg==1.0", cache_dir=tmp_path / "cache", progress=Steps())
    assert marker_of(tmp_path / "cache")["fetched_by"] == "download"
    assert any("downloading the whole wheel" in step for step in steps), steps
    assert tree_of(tmp_path / "cache")["toypkg/mod.py"] == str(MEMBERS["toypkg/mod.py"]).encode()
    assert None in index.wheel_reads()  # pip's whole-file GET


def test_set_verify_wheels_downloads_whole_wheels(tmp_path, serve, monkeypatch):
    index = serve([toy_wheel(tmp_path / "wheels")])
    monkeypatch.setattr(release_module, "_VERIFY_WHEELS", False)
    release_module.set_verify_wheels(True)
    resolve("toypkg==1.0", cache_dir=tmp_path / "cache")
    assert marker_of(tmp_path / "cache")["fetched_by"] == "download"
    assert index.wheel_reads() == [None]


def test_the_verify_wheels_option_reaches_the_fetch(tmp_path, serve, monkeypatch):
    from apiaudit.cli.group import cli

    serve([toy_wheel(tmp_path / "wheels")])
    monkeypatch.setattr(release_module, "_VERIFY_WHEELS", False)
    consumer = tmp_path / "job.py"
    consumer.write_text("from toypkg.mod import f\nf(1, b=2)\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["scan", "--consumer", str(consumer), "--provider", "toypkg==1.0",
                                       "--cache-dir", str(tmp_path / "cache"), "--verify-wheels", "--format", "json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert marker_of(tmp_path / "cache")["fetched_by"] == "download"


@pytest.mark.parametrize("command", ["scan", "matrix", "fix", "preflight", "explain"])
def test_every_command_that_fetches_releases_takes_verify_wheels(command):
    from apiaudit.cli.group import cli

    result = CliRunner().invoke(cli, [command, "--help"])
    assert "--verify-wheels" in result.output


def corrupt_member(wheel: Path, member: str) -> None:
    """Flip one byte of a stored member's data (its CRC-32 and RECORD hash no longer match)."""
    with zipfile.ZipFile(wheel) as archive:
        info = archive.getinfo(member)
    data = bytearray(wheel.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start] ^= 0xFF
    wheel.write_bytes(bytes(data))


def test_a_member_whose_crc_differs_is_refused(tmp_path, serve):
    wheel = build_wheel(tmp_path / "wheels", "toypkg", "1.0", MEMBERS, record=True)  # stored: bytes as written
    corrupt_member(wheel, "toypkg/mod.py")
    serve([wheel])
    with pytest.raises(InputError, match=r"malformed wheel .*toypkg-1\.0.*(CRC|RECORD)"):
        resolve("toypkg==1.0", cache_dir=tmp_path / "cache")
    assert not (tmp_path / "cache" / "releases" / "toypkg-1.0").exists()


def test_a_member_that_differs_from_record_is_refused(tmp_path, serve):
    members = {**MEMBERS, "toypkg-1.0.dist-info/RECORD": (
        f"toypkg/mod.py,{record_hash(b'something else')},14\n"
        "toypkg-1.0.dist-info/RECORD,,\n"
    )}  # fmt: skip
    serve([toy_wheel(tmp_path / "wheels", members)])
    with pytest.raises(InputError, match="does not match its RECORD hash"):
        resolve("toypkg==1.0", cache_dir=tmp_path / "cache")


def test_a_hostile_member_path_is_refused_before_anything_is_fetched(tmp_path, serve):
    index = serve([toy_wheel(tmp_path / "wheels", {**MEMBERS, "../escape.py": "x = 1\n"})])
    with pytest.raises(InputError, match="unsafe member path"):
        resolve("toypkg==1.0", cache_dir=tmp_path / "cache")
    # The end record and the central directory only: no member was read.
    assert len(index.wheel_reads()) <= 2
    assert not (tmp_path / "escape.py").exists()


def test_a_version_the_page_does_not_list_is_one_line_before_anything_is_said_or_fetched(tmp_path, serve):
    index = serve([toy_wheel(tmp_path / "wheels")])
    steps: list[str] = []

    class Steps:
        def step(self, message: str) -> None:
            steps.append(message)

    with pytest.raises(InputError) as caught:
        resolve("toypkg==2.0", cache_dir=tmp_path / "cache", progress=Steps())
    assert str(caught.value) == "toypkg has no release 2.0; newest is 1.0"
    assert steps == []  # no "fetching", no fallback wheel
    assert index.wheel_reads() == []


# ----------------------------------------------------------------------------- the pieces


def test_held_spans_merge_and_reads_come_from_them(tmp_path, serve, http):
    wheel = toy_wheel(tmp_path / "wheels")
    index = serve([wheel])
    data = wheel.read_bytes()
    reader = ranged.RangedWheel(f"{index.url}/files/{wheel.name}", http)
    assert reader.size == len(data)
    reader.prefetch([(0, 100), (50, 300), (5000, 5100), (len(data) - 10, len(data) + 50)])
    before = reader.requests
    for start, length in ((0, 300), (5000, 100), (len(data) - 10, 10), (120, 30)):
        reader.seek(start)
        assert reader.read(length) == data[start: start + length]
    assert reader.requests == before  # every read above came from held spans
    reader.seek(200_000)
    assert reader.read(1000) == data[200_000:201_000]  # not held: fetched on demand
    reader.seek(-5, 2)
    assert reader.read() == data[-5:]
    with zipfile.ZipFile(reader) as archive:  # type: ignore[arg-type]
        assert archive.read("toypkg/mod.py") == str(MEMBERS["toypkg/mod.py"]).encode()


def test_a_server_that_ignores_range_is_unavailable(tmp_path, serve, http):
    wheel = toy_wheel(tmp_path / "wheels")
    index = serve([wheel], ranges=False)
    with pytest.raises(ranged.RangesUnavailable, match="200"):
        ranged.RangedWheel(f"{index.url}/files/{wheel.name}", http)


def page_file(filename: str, requires_python: str | None = None):
    return ranged.PageFile(f"https://index.invalid/{filename}", filename, "0" * 64, requires_python)


def test_the_wheel_chosen_is_this_interpreters_else_the_linux_fallback():
    files = [
        page_file("pkg-1.0.tar.gz"),
        page_file("pkg-1.0-cp312-cp312-manylinux_2_28_x86_64.whl"),
        page_file("pkg-1.0-py3-none-any.whl"),
        page_file("pkg-0.9-py3-none-any.whl"),
    ]
    chosen = ranged.choose_wheel(files, "pkg", "1.0", fallback_python=(3, 12), fallback_platforms=["manylinux_2_28_x86_64"])
    assert chosen is not None and chosen.filename == "pkg-1.0-py3-none-any.whl"
    only_linux = [f for f in files if "manylinux" in f.filename]
    chosen = ranged.choose_wheel(only_linux, "PKG", "1.0", fallback_python=(3, 12), fallback_platforms=["manylinux_2_28_x86_64"])
    assert chosen is not None and chosen.filename == "pkg-1.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    local = [ranged.PageFile("file:///etc/pkg-1.0-py3-none-any.whl", "pkg-1.0-py3-none-any.whl", None, None)]
    assert ranged.choose_wheel(local, "pkg", "1.0", fallback_python=(3, 12), fallback_platforms=[]) is None
    refused = [page_file("pkg-1.0-py3-none-any.whl", requires_python=">=99")]
    assert ranged.choose_wheel(refused, "pkg", "1.0", fallback_python=(3, 12), fallback_platforms=[]) is None


def test_pips_cert_and_proxy_are_read_from_its_config_listing():
    settings = ranged.network_settings([
        "global.cert='/etc/a.pem'",
        "global.proxy='http://proxy.invalid:1'",
        ":env:.cert='/etc/b.pem'",
        "global.index-url='https://index.invalid/simple'",
    ])  # fmt: skip
    assert settings == ranged.NetworkSettings(cert="/etc/b.pem", proxy="http://proxy.invalid:1")
    assert ranged.network_settings([]) == ranged.NetworkSettings()


def test_pages_are_read_from_pips_verbose_listing():
    output = (
        "2 location(s) to search for versions of pkg:\n"
        "* https://one.invalid/simple/pkg/\n"
        "* file:///somewhere/simple/pkg/\n"
        "Fetching project page and analyzing links: https://one.invalid/simple/pkg/\n"
    )
    assert release_module._pages_listed(output) == ["https://one.invalid/simple/pkg/"]


# ----------------------------------------------------------------------------- a real release


@pytest.mark.network
def test_a_real_vllm_release_read_by_ranges_equals_its_full_download(tmp_path, release_cache):
    spec = "vllm==0.11.0"
    # A cache of its own for the full download (kept between runs): in the shared one, another
    # test may have read this release by ranges first, and a cached release is not fetched again.
    whole = resolve(spec, cache_dir=release_cache / "whole-downloads", verify_wheels=True)
    whole_marker = json.loads((whole.root / MARKER_NAME).read_text(encoding="utf-8"))
    assert whole_marker.get("fetched_by", "download") == "download"
    ranged_tree = resolve(spec, cache_dir=tmp_path)
    ranged_marker = json.loads((ranged_tree.root / MARKER_NAME).read_text(encoding="utf-8"))
    assert ranged_marker["fetched_by"] == "ranges", "the package index served no byte ranges"
    assert ranged_marker["wheel"] == whole_marker["wheel"]
    assert ranged_marker["wheel_sha256"] == whole_marker["wheel_sha256"]
    assert ranged_marker["sha256"] == whole_marker["sha256"]
    assert ranged_marker["tree_digest"] == whole_marker["tree_digest"]
    assert ranged_tree.packages == whole.packages
