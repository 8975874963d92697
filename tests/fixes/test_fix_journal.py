"""apply / revert / overlay on a writable copy of fixtures/fixes/consumer."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from fix_helpers import engine_findings, locate

from apiaudit.errors import InputError
from apiaudit.findings import Finding
from apiaudit.fixes import apply, plan_fixes, revert, unified_diff, write_overlay
from apiaudit.fixes.journal import LAST, MANIFEST

ENGINE = "consumerpkg/engine.py"


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_apply_then_revert_restores_identical_bytes(consumer_copy: Path, tmp_path: Path) -> None:
    before = _snapshot(consumer_copy)
    plan = plan_fixes(engine_findings(), consumer_copy)
    entry = apply(plan, tmp_path / "journal")
    assert entry is not None and entry.files == (consumer_copy / ENGINE,)
    patched = (consumer_copy / ENGINE).read_text()
    assert "legacy" not in patched.split("# removed upstream")[0] and "build(second=2, block_size=BLOCK_SIZE)" in patched
    assert "# a comment the fix must not touch" in patched and patched.endswith("x = 1")  # no newline added
    assert revert(tmp_path / "journal") == (consumer_copy / ENGINE,)
    assert _snapshot(consumer_copy) == before
    manifest = json.loads((entry.directory / MANIFEST).read_text())
    assert manifest["status"] == "reverted"
    with pytest.raises(InputError, match="nothing to revert"):
        revert(tmp_path / "journal")


def test_applying_twice_changes_nothing_the_second_time(consumer_copy: Path, tmp_path: Path) -> None:
    apply(plan_fixes(engine_findings(), consumer_copy), tmp_path / "journal")
    after_first = _snapshot(consumer_copy)
    last = (tmp_path / "journal" / LAST).read_text()
    # the same findings, found again at their calls in the patched file
    text = (consumer_copy / ENGINE).read_text()
    relocated = []
    for occurrence, finding in enumerate(engine_findings(), start=1):
        line, column = locate(text, "build(", occurrence)
        relocated.append(Finding(**{**finding.__dict__, "line": line, "column": column}))
    second = plan_fixes(relocated, consumer_copy)
    assert second.changed_files == () and second.fixed == () and len(second.already_fixed) == 2
    assert apply(second, tmp_path / "journal") is None
    assert unified_diff(second) == ""
    assert _snapshot(consumer_copy) == after_first
    assert (tmp_path / "journal" / LAST).read_text() == last


def test_read_only_target_is_one_clear_error_suggesting_into(consumer_copy: Path, tmp_path: Path) -> None:
    target = consumer_copy / ENGINE
    before = target.read_bytes()
    plan = plan_fixes(engine_findings(), consumer_copy)
    target.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    try:
        with pytest.raises(InputError) as raised:
            apply(plan, tmp_path / "journal")
    finally:
        target.chmod(stat.S_IRUSR | stat.S_IWUSR)
    message = str(raised.value)
    assert "read-only" in message and "--into" in message and "\n" not in message
    assert target.read_bytes() == before
    assert not (tmp_path / "journal" / LAST).exists()


def test_a_file_changed_since_the_scan_is_refused(consumer_copy: Path, tmp_path: Path) -> None:
    plan = plan_fixes(engine_findings(), consumer_copy)
    target = consumer_copy / ENGINE
    target.write_bytes(target.read_bytes() + b"\n# edited after the scan\n")
    edited = target.read_bytes()
    with pytest.raises(InputError, match="changed since it was scanned"):
        apply(plan, tmp_path / "journal")
    assert target.read_bytes() == edited


def test_plan_refuses_a_file_whose_scan_hash_differs(consumer_copy: Path) -> None:
    plan = plan_fixes(engine_findings(), consumer_copy, scanned_sha256={ENGINE: "0" * 64})
    assert plan.changed_files == ()
    assert all("changed since it was scanned" in u.reason for u in plan.unfixable)


def test_revert_leaves_a_file_edited_after_the_apply_unless_forced(consumer_copy: Path, tmp_path: Path) -> None:
    original = (consumer_copy / ENGINE).read_bytes()
    apply(plan_fixes(engine_findings(), consumer_copy), tmp_path / "journal")
    (consumer_copy / ENGINE).write_text("edited by hand\n")
    with pytest.raises(InputError, match="changed after the apply"):
        revert(tmp_path / "journal")
    assert (consumer_copy / ENGINE).read_text() == "edited by hand\n"
    revert(tmp_path / "journal", force=True)
    assert (consumer_copy / ENGINE).read_bytes() == original


def test_revert_without_a_journal_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="nothing to revert"):
        revert(tmp_path / "never-used")


def test_apply_keeps_file_permissions(consumer_copy: Path, tmp_path: Path) -> None:
    target = consumer_copy / ENGINE
    target.chmod(0o640)
    apply(plan_fixes(engine_findings(), consumer_copy), tmp_path / "journal")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_overlay_patches_a_copy_and_leaves_the_installed_package_alone(consumer_copy: Path, tmp_path: Path) -> None:
    installed = _snapshot(consumer_copy)
    for path in consumer_copy.rglob("*"):  # installed like a shared, read-only site-packages
        path.chmod(stat.S_IMODE(path.stat().st_mode) & ~0o222)
    try:
        plan = plan_fixes(engine_findings(), consumer_copy)
        overlay = write_overlay(plan, consumer_copy, ["consumerpkg"], tmp_path / "overlay")
        assert _snapshot(consumer_copy) == installed
        copied = _snapshot(tmp_path / "overlay" / "consumerpkg")
        assert copied["untouched.py"] == installed["consumerpkg/untouched.py"]
        assert copied["engine.py"] == plan.files[0].patched != installed[ENGINE]
        assert overlay.patched_files == (tmp_path / "overlay" / ENGINE,)
        assert overlay.pythonpath_line.startswith("export PYTHONPATH=") and str(overlay.directory) in overlay.pythonpath_line
        # a second overlay into the same directory replaces the first
        write_overlay(plan, consumer_copy, ["consumerpkg"], tmp_path / "overlay")
        assert _snapshot(tmp_path / "overlay" / "consumerpkg") == copied
    finally:
        for path in [consumer_copy, *consumer_copy.rglob("*")]:
            path.chmod(stat.S_IMODE(path.stat().st_mode) | stat.S_IWUSR)


def test_overlay_refuses_to_overwrite_a_directory_it_did_not_make(consumer_copy: Path, tmp_path: Path) -> None:
    foreign = tmp_path / "foreign" / "consumerpkg"
    foreign.mkdir(parents=True)
    (foreign / "mine.py").write_text("precious = True\n")
    plan = plan_fixes(engine_findings(), consumer_copy)
    with pytest.raises(InputError, match="not an apiaudit overlay"):
        write_overlay(plan, consumer_copy, ["consumerpkg"], tmp_path / "foreign")
    assert (foreign / "mine.py").read_text() == "precious = True\n"


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
def test_a_read_only_directory_is_refused_too(consumer_copy: Path, tmp_path: Path) -> None:
    package = consumer_copy / "consumerpkg"
    plan = plan_fixes(engine_findings(), consumer_copy)
    package.chmod(0o555)
    try:
        with pytest.raises(InputError, match="--into"):
            apply(plan, tmp_path / "journal")
    finally:
        package.chmod(0o755)
