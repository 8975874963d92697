"""write_overlay on a writable copy of fixtures/fixes/consumer, and on hostile overlay folders and trees."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from fix_helpers import engine_findings, snapshot

from apiaudit.errors import InputError
from apiaudit.fixes import plan_fixes, write_overlay
from apiaudit.fixes.overlay import MARKER

ENGINE = "consumerpkg/engine.py"
_snapshot = snapshot


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


# --- never write through a symlink in DIR ------------------------------------------------------------

def test_a_marker_that_is_a_symlink_is_refused_and_its_target_untouched(consumer_copy: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious\n")
    into = tmp_path / "overlay"
    into.mkdir()
    (into / MARKER).symlink_to(victim)
    plan = plan_fixes(engine_findings(), consumer_copy)
    with pytest.raises(InputError, match="symlink"):
        write_overlay(plan, consumer_copy, ["consumerpkg"], into)
    assert victim.read_bytes() == b"precious\n"
    assert snapshot(into) == {MARKER: f"-> {victim}"}


def test_a_package_folder_in_an_earlier_overlay_that_is_a_symlink_is_refused(consumer_copy: Path, tmp_path: Path) -> None:
    plan = plan_fixes(engine_findings(), consumer_copy)
    into = tmp_path / "overlay"
    write_overlay(plan, consumer_copy, ["consumerpkg"], into)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "engine.py").write_text("precious = True\n")
    for path in sorted((into / "consumerpkg").rglob("*"), reverse=True):
        path.unlink()
    (into / "consumerpkg").rmdir()
    (into / "consumerpkg").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(InputError, match="symlink"):
        write_overlay(plan, consumer_copy, ["consumerpkg"], into)
    assert snapshot(elsewhere) == {"engine.py": b"precious = True\n"}


# --- symlinks inside the consumer: copied as links when they stay in the package, else skipped -------

def test_symlinks_in_the_consumer_are_never_followed_out_of_the_package(consumer_copy: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("TOKEN = 'from outside'\n")
    package = consumer_copy / "consumerpkg"
    (package / "alias.py").symlink_to("untouched.py")  # stays inside: kept as a link
    (package / "here").symlink_to(".", target_is_directory=True)  # stays inside: a link, never walked
    (package / "secret.py").symlink_to(outside / "secret.py")  # leaves: skipped
    (package / "data").symlink_to(outside, target_is_directory=True)  # leaves: skipped
    (package / "loop").symlink_to("..", target_is_directory=True)  # leaves (the import root): skipped
    (package / "dangling.py").symlink_to("nowhere.py")
    plan = plan_fixes(engine_findings(), consumer_copy)
    overlay = write_overlay(plan, consumer_copy, ["consumerpkg"], tmp_path / "overlay")
    copied = snapshot(tmp_path / "overlay" / "consumerpkg")
    assert copied == {
        "__init__.py": (package / "__init__.py").read_bytes(),
        "alias.py": "-> untouched.py",
        "engine.py": plan.files[0].patched,
        "here": "-> .",
        "untouched.py": (package / "untouched.py").read_bytes(),
    }
    assert sorted(s.path for s in overlay.skipped) == ["consumerpkg/dangling.py", "consumerpkg/data", "consumerpkg/loop", "consumerpkg/secret.py"]
    assert all("symlink" in s.describe() for s in overlay.skipped)


# --- DIR and the consumer must not hold each other --------------------------------------------------

def test_a_dir_inside_the_consumer_package_is_refused(consumer_copy: Path, tmp_path: Path) -> None:
    before = snapshot(consumer_copy)
    plan = plan_fixes(engine_findings(), consumer_copy)
    with pytest.raises(InputError, match="inside"):
        write_overlay(plan, consumer_copy, ["consumerpkg"], consumer_copy / "consumerpkg" / "patched")
    (tmp_path / "sneaky").symlink_to(consumer_copy / "consumerpkg", target_is_directory=True)
    with pytest.raises(InputError, match="inside"):
        write_overlay(plan, consumer_copy, ["consumerpkg"], tmp_path / "sneaky" / "deeper")
    assert snapshot(consumer_copy) == before


@pytest.mark.parametrize("holder", ["root", "parent"])
def test_a_dir_that_holds_the_consumer_package_is_refused(consumer_copy: Path, tmp_path: Path, holder: str) -> None:
    before = snapshot(tmp_path)
    plan = plan_fixes(engine_findings(), consumer_copy)
    into = consumer_copy if holder == "root" else consumer_copy.parent
    with pytest.raises(InputError, match="inside"):
        write_overlay(plan, consumer_copy, ["consumerpkg"], into)
    assert snapshot(tmp_path) == before
