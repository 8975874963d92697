"""Files several releases share are stored once (`apiaudit/sources/filestore.py`): a later
release links them instead of fetching and writing them, each link is checked first, and an
entry's files read the same whether they were linked or extracted.

Two releases of a wheel built in the test, served by a local index (with byte ranges) to the
real pip and to apiaudit's range reader.
"""

from __future__ import annotations

import errno
import json
import os
import random
import zipfile
from pathlib import Path

import pytest
from wheel_helpers import build_wheel, record_hash

from apiaudit.errors import InputError
from apiaudit.sources import filestore, resolve
from apiaudit.sources.cache import MARKER_NAME, remove_entry

_TEXT = random.Random(3)
# The same in both releases; ~100 KB that does not deflate away, placed before 2 MiB of a
# member not kept, so a range read that skipped it fetched visibly less.
SHARED = "".join(f"X{_TEXT.randrange(10**12)} = {_TEXT.randrange(10**12)}\n" for _ in range(4000))
_NATIVE = {"toypkg/_native.cpython-312-x86_64-linux-gnu.so": random.Random(4).randbytes(2 << 20)}
MEMBERS_1 = {"toypkg/mod.py": SHARED, **_NATIVE, "toypkg/__init__.py": "from toypkg.mod import X1\n", "toypkg/old.py": "A = 1\n" * 50}
MEMBERS_2 = {"toypkg/mod.py": SHARED, **_NATIVE, "toypkg/__init__.py": "from toypkg.mod import X1\nB = 2\n", "toypkg/new.py": "C = 3\n" * 50}


def wheels(folder: Path) -> list[Path]:
    return [
        build_wheel(folder, "toypkg", version, {**members, f"toypkg-{version}.dist-info/top_level.txt": "toypkg\n"},
                    record=True, compression=zipfile.ZIP_DEFLATED)  # fmt: skip
        for version, members in (("1.0", MEMBERS_1), ("2.0", MEMBERS_2))
    ]


def entry(cache_dir: Path, version: str) -> Path:
    return cache_dir / "releases" / f"toypkg-{version}"


def files_of(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and p.name != MARKER_NAME}


def marker(root: Path) -> dict:
    return json.loads((root / MARKER_NAME).read_text(encoding="utf-8"))


@pytest.mark.parametrize("verify_wheels", [False, True], ids=["ranges", "whole-wheel"])
def test_a_file_two_releases_share_is_one_file_and_reads_the_same(tmp_path, serve, verify_wheels):
    built = wheels(tmp_path / "wheels")
    index = serve(built)
    cache_dir = tmp_path / "cache"
    resolve("toypkg==1.0", cache_dir=cache_dir, verify_wheels=verify_wheels)
    sent = index.bytes_sent
    resolve("toypkg==2.0", cache_dir=cache_dir, verify_wheels=verify_wheels)
    first, second = entry(cache_dir, "1.0"), entry(cache_dir, "2.0")
    assert (first / "toypkg/mod.py").stat().st_ino == (second / "toypkg/mod.py").stat().st_ino
    assert (first / "toypkg/__init__.py").stat().st_ino != (second / "toypkg/__init__.py").stat().st_ino
    assert (second / "toypkg/mod.py").read_text() == SHARED
    if not verify_wheels:  # the shared member's bytes were not fetched at all
        with_store = index.bytes_sent - sent
        before = index.bytes_sent
        resolve("toypkg==2.0", cache_dir=tmp_path / "alone")
        with zipfile.ZipFile(built[1]) as archive:
            assert (index.bytes_sent - before) - with_store >= archive.getinfo("toypkg/mod.py").compress_size
    # The entry and its marker are those of an extraction with no store at all.
    plain = tmp_path / "plain"
    resolve("toypkg==2.0", cache_dir=plain, verify_wheels=verify_wheels)
    assert files_of(second) == files_of(entry(plain, "2.0"))
    for key in ("file_count", "tree_digest", "sha256"):
        assert marker(second)[key] == marker(entry(plain, "2.0"))[key], key


def test_a_store_file_changed_since_is_dropped_and_the_member_extracted(tmp_path, serve):
    serve(wheels(tmp_path / "wheels"))
    cache_dir = tmp_path / "cache"
    resolve("toypkg==1.0", cache_dir=cache_dir)
    held = entry(cache_dir, "1.0") / "toypkg/mod.py"
    held.write_text("Y" + SHARED[1:])  # same length, another content, in place
    resolve("toypkg==2.0", cache_dir=cache_dir)
    mod = entry(cache_dir, "2.0") / "toypkg/mod.py"
    assert mod.read_text() == SHARED
    assert mod.stat().st_ino != held.stat().st_ino
    assert mod.stat().st_nlink == 2  # its own file, filed in the store afresh


def test_a_link_in_the_store_is_never_followed(tmp_path, serve):
    serve(wheels(tmp_path / "wheels"))
    cache_dir = tmp_path / "cache"
    resolve("toypkg==1.0", cache_dir=cache_dir)
    store = filestore.store_dir(cache_dir / "releases")
    outside = tmp_path / "outside.py"
    outside.write_text(SHARED)  # the right bytes, but not a file of the store
    for shelf in store.iterdir():
        for item in shelf.iterdir():
            item.unlink()
            item.symlink_to(outside)
    resolve("toypkg==2.0", cache_dir=cache_dir)
    mod = entry(cache_dir, "2.0") / "toypkg/mod.py"
    assert not mod.is_symlink() and mod.read_text() == SHARED
    assert mod.stat().st_ino != outside.stat().st_ino


def test_without_hard_links_every_file_is_written(tmp_path, serve, monkeypatch):
    serve(wheels(tmp_path / "wheels"))

    def refused(*args, **kwargs):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(filestore.os, "link", refused)
    cache_dir = tmp_path / "cache"
    resolve("toypkg==1.0", cache_dir=cache_dir)
    resolve("toypkg==2.0", cache_dir=cache_dir)
    assert (entry(cache_dir, "2.0") / "toypkg/mod.py").read_text() == SHARED
    assert (entry(cache_dir, "2.0") / "toypkg/mod.py").stat().st_nlink == 1
    assert not any(p.is_file() for p in filestore.store_dir(cache_dir / "releases").rglob("*"))


def test_removing_an_entry_removes_the_files_only_it_held(tmp_path, serve):
    serve(wheels(tmp_path / "wheels"))
    cache_dir = tmp_path / "cache"
    resolve("toypkg==1.0", cache_dir=cache_dir)
    resolve("toypkg==2.0", cache_dir=cache_dir)
    store = filestore.store_dir(cache_dir / "releases")

    def stored() -> set[int]:
        return {p.stat().st_ino for p in store.rglob("*") if p.is_file()}

    old = (entry(cache_dir, "1.0") / "toypkg/old.py").stat().st_ino
    shared = (entry(cache_dir, "1.0") / "toypkg/mod.py").stat().st_ino
    assert {old, shared} <= stored()
    remove_entry(entry(cache_dir, "1.0"))
    assert old not in stored() and shared in stored()
    assert filestore.prune(store) == 0  # nothing else to remove


def test_the_release_cache_is_still_listed_by_version(tmp_path, serve):
    """`releases/.files` is no release: the offline matrix lists only entries."""
    from apiaudit.policy.offline import cached_versions

    serve(wheels(tmp_path / "wheels"))
    cache_dir = tmp_path / "cache"
    resolve("toypkg==1.0", cache_dir=cache_dir)
    resolve("toypkg==2.0", cache_dir=cache_dir)
    assert cached_versions(cache_dir, "toypkg") == ["1.0", "2.0"]
    assert os.path.isdir(filestore.store_dir(cache_dir / "releases"))


def test_a_fetch_that_fails_midway_leaves_no_shared_file_behind(tmp_path, serve):
    """Files filed by an extraction that then fails (here a member that differs from its RECORD;
    a full disk alike) are removed with its partial folder: they take no space."""
    good, _ = wheels(tmp_path / "wheels")
    members = {**MEMBERS_2, "toypkg-2.0.dist-info/top_level.txt": "toypkg\n"}
    rows = [f"{name},{record_hash(content.encode() if isinstance(content, str) else content)},{len(content)}"
            for name, content in members.items() if name != "toypkg/new.py"]  # fmt: skip
    rows.append(f"toypkg/new.py,{record_hash(b'other')},5")
    members["toypkg-2.0.dist-info/RECORD"] = "\n".join(rows) + "\n"
    broken = build_wheel(tmp_path / "broken", "toypkg", "2.0", members, compression=zipfile.ZIP_DEFLATED)
    serve([good, broken])
    cache_dir = tmp_path / "cache"
    resolve("toypkg==1.0", cache_dir=cache_dir)
    with pytest.raises(InputError, match="does not match its RECORD hash"):
        resolve("toypkg==2.0", cache_dir=cache_dir)
    store = filestore.store_dir(cache_dir / "releases")
    filed = [p for p in store.rglob("*") if p.is_file()]
    assert filed and all(p.stat().st_nlink >= 2 for p in filed), "a filed file no entry holds"
    assert not list((cache_dir / "releases").glob(".partial-*"))
