"""atomic_write and write_new: all or nothing; a full disk is one DiskFullError and no leftovers."""

from __future__ import annotations

import errno
import io
import os

import pytest

from apiaudit.errors import InputError
from apiaudit.infra import atomic
from apiaudit.infra.atomic import DiskFullError, atomic_write, write_new


def _full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("call", ["write", "replace", "fsync"])
def test_a_full_disk_leaves_the_old_file_and_no_temporary_one(tmp_path, monkeypatch, call):
    target = tmp_path / "report.json"
    target.write_text("old\n")
    monkeypatch.setattr(atomic.os, call, _full)
    with pytest.raises(DiskFullError) as caught:
        atomic_write(target, "new\n" * 1000)
    monkeypatch.undo()
    assert str(caught.value) == f"no space left on device writing {target}"
    assert isinstance(caught.value, InputError) and isinstance(caught.value, OSError)
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_a_full_disk_on_a_new_file_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(atomic.os, "write", _full)
    with pytest.raises(DiskFullError):
        atomic_write(tmp_path / "new.json", b"x")
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


def test_other_errors_stay_plain_oserrors(tmp_path, monkeypatch):
    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(atomic.os, "replace", denied)
    with pytest.raises(PermissionError):
        atomic_write(tmp_path / "x", b"x")
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


def test_write_new_refuses_more_bytes_than_declared_and_removes_the_file(tmp_path):
    with pytest.raises(ValueError, match="more than the 3 bytes"):
        write_new(tmp_path / "m.py", io.BytesIO(b"12345"), limit=3)
    assert not (tmp_path / "m.py").exists()
    assert write_new(tmp_path / "m.py", io.BytesIO(b"123"), limit=3) == 3


def test_write_new_never_replaces_an_existing_file(tmp_path):
    (tmp_path / "m.py").write_text("mine")
    with pytest.raises(FileExistsError):
        write_new(tmp_path / "m.py", io.BytesIO(b"theirs"))
    assert (tmp_path / "m.py").read_text() == "mine"


def test_write_new_on_a_full_disk_removes_the_partial_file(tmp_path, monkeypatch):
    monkeypatch.setattr(atomic.os, "write", _full)
    with pytest.raises(DiskFullError, match="no space left on device writing .*m.py"):
        write_new(tmp_path / "m.py", io.BytesIO(b"x" * 10))
    monkeypatch.undo()
    assert not os.listdir(tmp_path)
