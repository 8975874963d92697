"""Hostile wheels, built in the test: each is refused with one "malformed wheel" line, before
anything large is written, and nothing of it stays in the cache."""

from __future__ import annotations

import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from wheel_helpers import build_wheel, record_hash

from apiaudit.errors import InputError
from apiaudit.sources import release as release_module
from apiaudit.sources.release import DEFAULT_LIMITS, WheelLimits

REPO = Path(__file__).resolve().parents[2]


def extract(wheel: Path, dest: Path, limits: WheelLimits = DEFAULT_LIMITS):
    return release_module._extract_wheel(wheel, dest, "evil", "1.0", None, limits)


def refused(wheel: Path, tmp_path: Path, limits: WheelLimits = DEFAULT_LIMITS) -> str:
    with pytest.raises(InputError) as caught:
        extract(wheel, tmp_path / "out" / "tree", limits)
    message = str(caught.value)
    assert message.startswith(f"malformed wheel {wheel.name} for evil==1.0: "), message
    assert "\n" not in message
    return message


def zeros_wheel(folder: Path, size: int) -> Path:
    """One kept member of `size` zero bytes: deflates to almost nothing (a zip bomb)."""
    wheel = folder / "evil-1.0-py3-none-any.whl"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("evil/__init__.py", "")
        with archive.open("evil/bomb.py", "w", force_zip64=True) as member:
            block = b"\0" * (1 << 20)
            for _ in range(size >> 20):
                member.write(block)
    return wheel


def test_a_member_larger_than_the_per_file_cap_is_refused_before_writing(tmp_path):
    wheel = zeros_wheel(tmp_path / "w", DEFAULT_LIMITS.max_member_bytes + (1 << 20))
    assert wheel.stat().st_size < 1 << 20
    assert "more than the 67108864 apiaudit extracts per file" in refused(wheel, tmp_path)
    assert not (tmp_path / "out" / "tree").exists(), "nothing is written for a refused wheel"


def test_a_member_that_expands_too_many_fold_is_refused(tmp_path):
    wheel = zeros_wheel(tmp_path / "w", 4 << 20)
    assert "fold" in refused(wheel, tmp_path)


def test_kept_files_past_the_total_cap_are_refused(tmp_path):
    members = {f"evil/m{i}.py": "x = 1\n" * 200 for i in range(5)}
    wheel = build_wheel(tmp_path / "w", "evil", "1.0", members)
    limits = WheelLimits(max_total_bytes=3000)
    assert "expand to more than the 3000 bytes" in refused(wheel, tmp_path, limits)


def test_too_many_members_are_refused(tmp_path):
    wheel = build_wheel(tmp_path / "w", "evil", "1.0", {f"evil/m{i}.py": "" for i in range(20)})
    assert "more than the 10 apiaudit reads" in refused(wheel, tmp_path, WheelLimits(max_members=10))


def test_the_largest_real_shapes_pass_the_default_caps(tmp_path):
    # The largest real vLLM wheel keeps ~1,500 .py files of up to ~0.3 MB each.
    text = ("def f(a, b):\n    return a + b  # ordinary code\n" * 6000)[: 300_000]
    members = {f"evil/m{i}.py": text for i in range(40)}
    wheel = build_wheel(tmp_path / "w", "evil", "1.0", members, record=True)
    marker = extract(wheel, tmp_path / "tree")
    assert marker.file_count == 42 and len(marker.digests) == 42  # + METADATA, RECORD


def test_a_file_and_a_folder_of_one_name_is_a_malformed_wheel(tmp_path):
    wheel = build_wheel(tmp_path / "w", "evil", "1.0", {"evil/mod.py": "", "evil/mod.py/inner.py": ""})
    assert "both a file and a folder" in refused(wheel, tmp_path)


def test_an_over_long_member_name_is_a_malformed_wheel(tmp_path):
    wheel = build_wheel(tmp_path / "w", "evil", "1.0", {"evil/" + "a" * 300 + ".py": ""})
    assert "member name too long" in refused(wheel, tmp_path)


def test_a_duplicate_member_is_a_malformed_wheel(tmp_path):
    wheel = tmp_path / "evil-1.0-py3-none-any.whl"
    with pytest.warns(UserWarning), zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("evil/mod.py", "a = 1\n")
        archive.writestr("evil/mod.py", "a = 2\n")
    assert "appears twice" in refused(wheel, tmp_path)


def _patch_sizes(wheel: Path, member: str, declared: int) -> None:
    """Make the archive's headers declare `declared` uncompressed bytes for `member`."""
    data = bytearray(wheel.read_bytes())
    name = member.encode()
    for signature, size_at, name_len_at, name_at in ((b"PK\x03\x04", 22, 26, 30), (b"PK\x01\x02", 24, 28, 46)):
        start = 0
        while (start := data.find(signature, start)) != -1:
            (length,) = struct.unpack_from("<H", data, start + name_len_at)
            if data[start + name_at : start + name_at + length] == name:
                struct.pack_into("<I", data, start + size_at, declared)
            start += 4
    wheel.write_bytes(bytes(data))


@pytest.mark.parametrize("declared", [3, 5000], ids=["header-smaller", "header-larger"])
def test_a_member_whose_size_differs_from_its_header_is_a_malformed_wheel(tmp_path, declared):
    wheel = build_wheel(tmp_path / "w", "evil", "1.0", {"evil/mod.py": "def f(a): ...\n" * 20})
    _patch_sizes(wheel, "evil/mod.py", declared)
    refused(wheel, tmp_path)


def test_a_member_that_differs_from_its_record_hash_is_a_malformed_wheel(tmp_path):
    record = f"evil/mod.py,{record_hash(b'something else')},14\nevil-1.0.dist-info/RECORD,,\n"
    wheel = build_wheel(
        tmp_path / "w", "evil", "1.0", {"evil/mod.py": "def f(a): ...\n", "evil-1.0.dist-info/RECORD": record}
    )
    assert "does not match its RECORD hash" in refused(wheel, tmp_path)


@pytest.mark.parametrize("content", [b"not a zip at all", b"PK\x03\x04" + b"\0" * 40], ids=["garbage", "truncated"])
def test_an_unreadable_archive_is_a_malformed_wheel(tmp_path, content):
    wheel = tmp_path / "evil-1.0-py3-none-any.whl"
    wheel.write_bytes(content)
    refused(wheel, tmp_path)


def test_the_marker_records_each_files_sha256(tmp_path):
    wheel = build_wheel(tmp_path / "w", "evil", "1.0", {"evil/__init__.py": "x = 1\n"}, record=True)
    marker = extract(wheel, tmp_path / "tree")
    import hashlib

    assert marker.digests["evil/__init__.py"] == hashlib.sha256(b"x = 1\n").hexdigest()
    assert set(marker.digests) == {"evil/__init__.py", "evil-1.0.dist-info/METADATA", "evil-1.0.dist-info/RECORD"}


def test_the_command_line_says_malformed_wheel_and_leaves_no_partial_folder(tmp_path, monkeypatch):
    links = tmp_path / "links"
    build_wheel(links, "evil", "1.0", {"evil/mod.py": "", "evil/mod.py/inner.py": ""})
    cache_dir = tmp_path / "cache"
    consumer = tmp_path / "job.py"
    consumer.write_text("import evil\n")
    env = {
        "PATH": "/usr/bin:/bin", "PIP_CONFIG_FILE": "/dev/null", "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(links), "PYTHONPATH": str(REPO), "HOME": str(tmp_path),
    }  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "apiaudit", "scan", "--provider", "evil==1.0", "--consumer", str(consumer),
         "--cache-dir", str(cache_dir), "--format", "json"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    # Off a terminal, progress notices are plain lines; the error is one line, and the last.
    errors = [line for line in done.stderr.strip().splitlines() if "error" in line]
    assert errors == done.stderr.strip().splitlines()[-1:] == [
        "apiaudit: error: malformed wheel evil-1.0-py3-none-any.whl for evil==1.0: 'evil/mod.py' is both a file and a folder"
    ]
    assert not [p for p in (cache_dir / "releases").iterdir()], "no partial folder or entry left"
