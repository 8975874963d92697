"""apply / revert on a writable copy of fixtures/fixes/consumer, and on hostile journals and trees."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest
from fix_helpers import (
    JOB_SOURCE,
    engine_findings,
    error_lines,
    invoke,
    locate,
    make_package,
    make_provider,
    snapshot,
)

from apiaudit.errors import InputError
from apiaudit.findings import Finding
from apiaudit.fixes import ConsumerIdentity, apply, plan_fixes, revert, unified_diff
from apiaudit.fixes.journal import MANIFEST

ENGINE = "consumerpkg/engine.py"


@pytest.fixture
def consumer(consumer_copy: Path) -> ConsumerIdentity:
    return ConsumerIdentity(consumer_copy.resolve(), ("consumerpkg",))


def _journal_entries(journal: Path) -> list[str]:
    return sorted(p.name for p in journal.iterdir()) if journal.is_dir() else []


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_apply_then_revert_restores_identical_bytes(consumer_copy: Path, consumer: ConsumerIdentity, tmp_path: Path) -> None:
    before = _snapshot(consumer_copy)
    plan = plan_fixes(engine_findings(), consumer_copy)
    entry = apply(plan, consumer, tmp_path / "journal")
    assert entry is not None and entry.files == (consumer_copy / ENGINE,)
    patched = (consumer_copy / ENGINE).read_text()
    assert "legacy" not in patched.split("# removed upstream")[0] and "build(second=2, block_size=BLOCK_SIZE)" in patched
    assert "# a comment the fix must not touch" in patched and patched.endswith("x = 1")  # no newline added
    result = revert(consumer, tmp_path / "journal")
    assert result.restored == (consumer_copy / ENGINE,) and result.not_restored == ()
    assert _snapshot(consumer_copy) == before
    manifest = json.loads((entry.directory / MANIFEST).read_text())
    assert manifest["status"] == "reverted"
    with pytest.raises(InputError, match="nothing to revert"):
        revert(consumer, tmp_path / "journal")


def test_applying_twice_changes_nothing_the_second_time(consumer_copy: Path, consumer: ConsumerIdentity, tmp_path: Path) -> None:
    apply(plan_fixes(engine_findings(), consumer_copy), consumer, tmp_path / "journal")
    after_first = _snapshot(consumer_copy)
    entries = _journal_entries(tmp_path / "journal")
    # the same findings, found again at their calls in the patched file
    text = (consumer_copy / ENGINE).read_text()
    relocated = []
    for occurrence, finding in enumerate(engine_findings(), start=1):
        line, column = locate(text, "build(", occurrence)
        relocated.append(Finding(**{**finding.__dict__, "line": line, "column": column}))
    second = plan_fixes(relocated, consumer_copy)
    assert second.changed_files == () and second.fixed == () and len(second.already_fixed) == 2
    assert apply(second, consumer, tmp_path / "journal") is None
    assert unified_diff(second) == ""
    assert _snapshot(consumer_copy) == after_first
    assert _journal_entries(tmp_path / "journal") == entries


def test_read_only_target_is_one_clear_error_suggesting_into(consumer_copy: Path, consumer: ConsumerIdentity, tmp_path: Path) -> None:
    target = consumer_copy / ENGINE
    before = target.read_bytes()
    plan = plan_fixes(engine_findings(), consumer_copy)
    target.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    try:
        with pytest.raises(InputError) as raised:
            apply(plan, consumer, tmp_path / "journal")
    finally:
        target.chmod(stat.S_IRUSR | stat.S_IWUSR)
    message = str(raised.value)
    assert "read-only" in message and "--into" in message and "\n" not in message
    assert target.read_bytes() == before
    assert _journal_entries(tmp_path / "journal") == []


def test_a_file_changed_since_the_scan_is_refused(consumer_copy: Path, consumer: ConsumerIdentity, tmp_path: Path) -> None:
    plan = plan_fixes(engine_findings(), consumer_copy)
    target = consumer_copy / ENGINE
    target.write_bytes(target.read_bytes() + b"\n# edited after the scan\n")
    edited = target.read_bytes()
    with pytest.raises(InputError, match="changed since it was scanned"):
        apply(plan, consumer, tmp_path / "journal")
    assert target.read_bytes() == edited


def test_plan_refuses_a_file_whose_scan_hash_differs(consumer_copy: Path) -> None:
    plan = plan_fixes(engine_findings(), consumer_copy, scanned_sha256={ENGINE: "0" * 64})
    assert plan.changed_files == ()
    assert all("changed since it was scanned" in u.reason for u in plan.unfixable)


def test_revert_leaves_a_file_edited_after_the_apply_unless_forced(consumer_copy: Path, consumer: ConsumerIdentity, tmp_path: Path) -> None:
    original = (consumer_copy / ENGINE).read_bytes()
    apply(plan_fixes(engine_findings(), consumer_copy), consumer, tmp_path / "journal")
    (consumer_copy / ENGINE).write_text("edited by hand\n")
    result = revert(consumer, tmp_path / "journal")
    assert result.restored == () and [n.why for n in result.not_restored] == ["edited"]
    assert "--revert --force" in result.not_restored[0].describe()
    assert (consumer_copy / ENGINE).read_text() == "edited by hand\n"
    revert(consumer, tmp_path / "journal", force=True)
    assert (consumer_copy / ENGINE).read_bytes() == original


def test_revert_without_a_journal_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="nothing to revert"):
        revert(ConsumerIdentity(tmp_path, ("pkg",)), tmp_path / "never-used")


def test_apply_keeps_file_permissions(consumer_copy: Path, consumer: ConsumerIdentity, tmp_path: Path) -> None:
    target = consumer_copy / ENGINE
    target.chmod(0o640)
    apply(plan_fixes(engine_findings(), consumer_copy), consumer, tmp_path / "journal")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
def test_a_read_only_directory_is_refused_too(consumer_copy: Path, consumer: ConsumerIdentity, tmp_path: Path) -> None:
    package = consumer_copy / "consumerpkg"
    plan = plan_fixes(engine_findings(), consumer_copy)
    package.chmod(0o555)
    try:
        with pytest.raises(InputError, match="--into"):
            apply(plan, consumer, tmp_path / "journal")
    finally:
        package.chmod(0o755)


# --- hostile journals: a journal is data on disk, and revert trusts none of it ---------------------

def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def applied(tmp_path: Path):
    """`mypkg` applied through the real CLI; an outside folder with a victim file beside it."""
    provider = make_provider(tmp_path)
    package = make_package(tmp_path / "cons", "mypkg")
    cache = tmp_path / "cache"
    code, _, err = invoke("fix", "--consumer", package, "--provider", provider, "--cache-dir", cache, "--apply", "--no-progress")
    assert code == 0, err
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_bytes(b"precious\n")
    (outside / "evil.orig").write_bytes(b"import os  # planted\n")
    manifests = sorted(cache.rglob(MANIFEST))
    assert len(manifests) == 1
    return SimpleNamespace(provider=provider, package=package, cache=cache, outside=outside, manifest=manifests[0])


def _revert(project, *extra) -> tuple[int, str, str]:
    return invoke("fix", "--consumer", project.package, "--provider", project.provider, "--cache-dir", project.cache, "--revert", *extra)


def _tamper(project, change) -> None:
    manifest = json.loads(project.manifest.read_text())
    change(manifest, manifest["files"][0], project)
    project.manifest.write_text(json.dumps(manifest))


def _point_at(path_of):
    """Make the record name another file, with the hashes an attacker would write to pass the checks."""

    def change(manifest, record, project):
        target = path_of(project)
        record["path"] = str(target)
        current = (project.package.parent / target) if not Path(target).is_absolute() else Path(target)
        record["patched_sha256"] = _sha(current.read_bytes() if current.is_file() else b"")

    return change


def _link_out(manifest, record, project):
    (project.package / "out").symlink_to(project.outside, target_is_directory=True)
    _point_at(lambda p: "mypkg/out/victim.txt")(manifest, record, project)


def _backup_at(backup_of):
    def change(manifest, record, project):
        record["backup"] = backup_of(project)
        record["original_sha256"] = _sha((project.outside / "evil.orig").read_bytes())

    return change


def _backup_symlink(manifest, record, project):
    backup = project.manifest.parent / record["backup"]
    backup.unlink()
    backup.symlink_to(project.outside / "evil.orig")
    record["original_sha256"] = _sha((project.outside / "evil.orig").read_bytes())


def _backup_swapped(manifest, record, project):
    (project.manifest.parent / record["backup"]).write_bytes(b"import os  # planted\n")


def _entry_of(field, value):
    def change(manifest, record, project):
        record[field] = value

    return change


def _manifest_of(field, value):
    def change(manifest, record, project):
        manifest[field] = value

    return change


def _drop(field):
    def change(manifest, record, project):
        del record[field]

    return change


TAMPERINGS = {
    "absolute path outside the consumer": _point_at(lambda p: p.outside / "victim.txt"),
    "relative path escaping the root": _point_at(lambda p: "../outside/victim.txt"),
    "path through a symlink leaving the consumer": _link_out,
    "absolute path of a file that did not exist": _point_at(lambda p: p.package / "planted.py"),
    "a file beside the package, not in it": _point_at(lambda p: "victim.txt"),
    "backup outside the entry (absolute)": _backup_at(lambda p: str(p.outside / "evil.orig")),
    "backup outside the entry (relative)": _backup_at(lambda p: "../../../../outside/evil.orig"),
    "backup is a symlink out of the entry": _backup_symlink,
    "backup bytes swapped": _backup_swapped,
    "files is not a list": _manifest_of("files", {"mypkg/job.py": "x"}),
    "a record without its backup": _drop("backup"),
    "a record with an unknown key": _entry_of("mode", "0777"),
    "a hash that is not a sha256": _entry_of("original_sha256", "abc"),
    "an unknown status": _manifest_of("status", "done"),
    "an unknown format": _manifest_of("format", 99),
}


@pytest.mark.parametrize("tampering", list(TAMPERINGS), ids=list(TAMPERINGS))
def test_a_tampered_journal_is_refused_with_one_line_and_nothing_written(applied, tmp_path: Path, tampering: str) -> None:
    _tamper(applied, TAMPERINGS[tampering])
    before = snapshot(tmp_path)
    code, _, err = _revert(applied)
    assert code == 2, err
    assert len(error_lines(err)) == 1 and "Traceback" not in err, err
    assert snapshot(tmp_path) == before, "a refused revert writes nothing, anywhere"
    code, _, err = _revert(applied, "--force")
    assert code == 2 and len(error_lines(err)) == 1, err
    assert snapshot(tmp_path) == before, "--force forces past edited files, never past a damaged journal"


# --- whose apply a revert undoes: the consumer's identity, newest first -----------------------------

def _fix(provider: Path, cache: Path, consumer: Path, *extra) -> tuple[int, str, str]:
    return invoke("fix", "--consumer", consumer, "--provider", provider, "--cache-dir", cache, "--no-progress", *extra)


@pytest.mark.parametrize("apply_order", ["ab", "ba"])
@pytest.mark.parametrize("revert_order", ["ab", "ba"])
def test_two_consumers_under_one_parent_folder_revert_their_own_applies(tmp_path: Path, apply_order: str, revert_order: str) -> None:
    provider, cache = make_provider(tmp_path), tmp_path / "cache"
    packages = {name: make_package(tmp_path / "cons", f"pkg{name}") for name in "ab"}
    original = {name: (package / "job.py").read_bytes() for name, package in packages.items()}
    for name in apply_order:
        assert _fix(provider, cache, packages[name], "--apply")[0] == 0
    patched = {name: (package / "job.py").read_bytes() for name, package in packages.items()}
    assert all(patched[n] != original[n] for n in "ab")
    first, second = revert_order
    code, _, err = _fix(provider, cache, packages[first], "--revert")
    assert code == 0, err
    assert (packages[first] / "job.py").read_bytes() == original[first]
    assert (packages[second] / "job.py").read_bytes() == patched[second], "the other consumer's apply stays"
    code, _, err = _fix(provider, cache, packages[second], "--revert")
    assert code == 0, err
    assert {n: (packages[n] / "job.py").read_bytes() for n in "ab"} == original


def test_each_apply_is_undone_in_turn_newest_first(tmp_path: Path) -> None:
    provider, cache = make_provider(tmp_path), tmp_path / "cache"
    package = make_package(tmp_path / "cons", "mypkg")
    states = [snapshot(package)]
    assert _fix(provider, cache, package, "--apply")[0] == 0
    (package / "later.py").write_text(JOB_SOURCE)  # new code with the same old call, fixed by a second apply
    states.append(snapshot(package))
    assert _fix(provider, cache, package, "--apply")[0] == 0
    assert snapshot(package) != states[-1]
    assert _fix(provider, cache, package, "--revert")[0] == 0
    assert snapshot(package) == states[1], "the second apply is undone first"
    assert _fix(provider, cache, package, "--revert")[0] == 0
    assert snapshot(package) == {k: v for k, v in states[0].items()} | {"later.py": JOB_SOURCE.encode()}
    code, _, err = _fix(provider, cache, package, "--revert")
    assert code == 2 and "nothing to revert" in err


# --- symlinked files and files edited after the apply ------------------------------------------------

def test_apply_edits_a_symlinks_target_in_place_and_revert_restores_it(tmp_path: Path) -> None:
    provider, cache = make_provider(tmp_path), tmp_path / "cache"
    package = make_package(tmp_path / "cons", "mypkg", {"impl.py": JOB_SOURCE})
    (package / "alias.py").symlink_to("impl.py")
    before = snapshot(package)
    code, _, err = _fix(provider, cache, package, "--apply")
    assert code == 0, err
    assert os.readlink(package / "alias.py") == "impl.py", "the link stays a link"
    assert (package / "impl.py").read_bytes() != JOB_SOURCE.encode()
    code, _, err = _fix(provider, cache, package, "--revert")
    assert code == 0, err
    assert snapshot(package) == before


def test_apply_refuses_a_symlink_whose_target_is_outside_the_consumer(tmp_path: Path) -> None:
    provider, cache = make_provider(tmp_path), tmp_path / "cache"
    package = make_package(tmp_path / "cons", "mypkg", {})
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "shared.py").write_text(JOB_SOURCE)
    (package / "ext.py").symlink_to(outside / "shared.py")
    before = snapshot(tmp_path / "cons"), snapshot(outside)
    code, _, err = _fix(provider, cache, package, "--apply")
    assert code == 2 and len(error_lines(err)) == 1 and "outside" in error_lines(err)[0], err
    assert (snapshot(tmp_path / "cons"), snapshot(outside)) == before
    assert not list(cache.glob("journal/*/*")), "nothing journaled"


def test_revert_restores_what_it_can_names_each_edited_file_and_force_finishes(tmp_path: Path) -> None:
    provider, cache = make_provider(tmp_path), tmp_path / "cache"
    package = make_package(tmp_path / "cons", "mypkg", {"a.py": JOB_SOURCE, "b.py": JOB_SOURCE, "c.py": JOB_SOURCE})
    assert _fix(provider, cache, package, "--apply")[0] == 0
    (package / "a.py").write_text("edited by hand\n")
    (package / "c.py").write_text("edited by hand too\n")
    code, _, err = _fix(provider, cache, package, "--revert")
    assert code == 1, err
    assert (package / "b.py").read_text() == JOB_SOURCE, "one edited file does not block the others"
    assert (package / "a.py").read_text() == "edited by hand\n"
    left = [line for line in err.splitlines() if "not restored" in line]
    assert len(left) == 2 and "a.py" in left[0] and "c.py" in left[1] and all("--revert --force" in line for line in left), err
    code, _, err = _fix(provider, cache, package, "--revert")  # the journal remembers what is left
    assert code == 1 and len([line for line in err.splitlines() if "not restored" in line]) == 2, err
    code, _, err = _fix(provider, cache, package, "--revert", "--force")
    assert code == 0, err
    assert all((package / name).read_text() == JOB_SOURCE for name in ("a.py", "b.py", "c.py"))
    code, _, err = _fix(provider, cache, package, "--revert")
    assert code == 2 and "nothing to revert" in err


def test_a_journal_naming_a_file_that_does_not_exist_never_creates_it(applied, tmp_path: Path) -> None:
    _tamper(applied, _point_at(lambda p: "mypkg/planted.py"))
    before = snapshot(tmp_path)
    for extra in ((), ("--force",)):
        code, _, err = _revert(applied, *extra)
        assert code == 1, err
        left = [line for line in err.splitlines() if "not restored" in line]
        assert len(left) == 1 and "planted.py" in left[0] and "deleted" in left[0], err
        assert not (applied.package / "planted.py").exists()
        assert {k: v for k, v in snapshot(tmp_path).items() if not k.startswith("cache")} == {
            k: v for k, v in before.items() if not k.startswith("cache")
        }
    code, _, err = _revert(applied)  # --force gave up on it: nothing is left to revert
    assert code == 2 and "nothing to revert" in err


def test_an_entry_copied_from_another_consumers_journal_is_refused(tmp_path: Path) -> None:
    provider, cache = make_provider(tmp_path), tmp_path / "cache"
    first, second = make_package(tmp_path / "cons", "pkga"), make_package(tmp_path / "cons", "pkgb")
    for package in (first, second):
        assert _fix(provider, cache, package, "--apply")[0] == 0
    (entry_a,) = [m.parent for m in cache.rglob(MANIFEST) if "pkga" in m.read_text()]
    (entry_b,) = [m.parent for m in cache.rglob(MANIFEST) if "pkgb" in m.read_text()]
    planted = entry_b.parent / entry_b.name.replace("000001-", "000002-", 1)
    shutil.copytree(entry_a, planted)
    before = snapshot(tmp_path / "cons")
    code, _, err = _fix(provider, cache, second, "--revert")
    assert code == 2 and len(error_lines(err)) == 1 and "not this consumer's" in err, err
    assert snapshot(tmp_path / "cons") == before


def test_a_loose_job_script_is_applied_and_reverted(tmp_path: Path) -> None:
    provider, cache = make_provider(tmp_path), tmp_path / "cache"
    scripts = tmp_path / "jobs"
    scripts.mkdir()
    (scripts / "run.py").write_text(JOB_SOURCE)
    (scripts / "other.py").write_text(JOB_SOURCE)
    assert _fix(provider, cache, scripts / "run.py", "--apply")[0] == 0
    assert (scripts / "run.py").read_text() != JOB_SOURCE and (scripts / "other.py").read_text() == JOB_SOURCE
    code, _, err = _fix(provider, cache, scripts, "--revert")
    assert code == 2 and "nothing to revert" in err, "the folder is another consumer than its one script"
    assert _fix(provider, cache, scripts / "run.py", "--revert")[0] == 0
    assert (scripts / "run.py").read_text() == JOB_SOURCE
