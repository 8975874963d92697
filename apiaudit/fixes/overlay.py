"""Write a patched copy of the consumer into a directory, leaving the installed package untouched.

site-packages is often read-only or shared; an overlay directory put first on
PYTHONPATH shadows the installed package with the patched one.

Nothing here writes through a symlink: the marker, the package folders and the patched
files in DIR are refused when they are links. The copy never follows a symlink of the
consumer: a link that stays inside its package is copied as a link, any other is skipped
and named (`Overlay.skipped`). DIR may neither lie inside a consumer package nor hold one.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Literal

from apiaudit.errors import InputError
from apiaudit.fixes.plan import FixPlan, sha256_bytes
from apiaudit.infra.atomic import atomic_write
from apiaudit.infra.frozen import record
from apiaudit.sources.version import OVERLAY_MARKER, overlay_releases

MARKER = OVERLAY_MARKER


@record
class Skipped:
    """An entry of the consumer the overlay did not copy."""

    path: str  # relative to the overlay, POSIX separators
    why: Literal["symlink-leaves-package", "dangling-symlink", "not-a-file"]
    target: str = ""  # what a symlink points to

    def describe(self) -> str:
        if self.why == "symlink-leaves-package":
            return f"{self.path}: symlink to {self.target} leaves the package; not copied"
        if self.why == "dangling-symlink":
            return f"{self.path}: symlink to {self.target} points nowhere; not copied"
        return f"{self.path}: not a regular file or folder; not copied"


@record
class Overlay:
    directory: Path
    packages: tuple[str, ...]
    patched_files: tuple[Path, ...]
    skipped: tuple[Skipped, ...] = ()

    @property
    def pythonpath_line(self) -> str:
        """The shell line that puts the overlay first on the import path."""
        return f"export PYTHONPATH={shlex.quote(str(self.directory))}${{PYTHONPATH:+:$PYTHONPATH}}"


def _skipped_name(name: str) -> bool:
    return name == "__pycache__" or name.endswith((".pyc", ".pyo"))


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _is_link(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def _copy_file(source: Path, target: Path, mode: int) -> None:
    atomic_write(target, source.read_bytes(), keep_mode=False)
    os.chmod(target, stat.S_IMODE(mode) | stat.S_IWUSR)  # a copy of a read-only site-packages is ours to rewrite


def _copy_package(source: Path, target: Path, package_root: Path, shown: PurePosixPath, skipped: list[Skipped]) -> None:
    """Copy folder `source` to `target` without following a symlink; `package_root` is the real package folder."""
    target.mkdir(mode=0o755)
    with os.scandir(source) as listing:
        entries = sorted(listing, key=lambda e: e.name)
    for entry in entries:
        if _skipped_name(entry.name):
            continue
        here, there, name = Path(entry.path), target / entry.name, (shown / entry.name).as_posix()
        info = entry.stat(follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            pointed = os.readlink(here)
            real = Path(os.path.realpath(here))
            if not real.exists():
                skipped.append(Skipped(name, "dangling-symlink", pointed))
            elif not _within(real, package_root):
                skipped.append(Skipped(name, "symlink-leaves-package", pointed))
            else:  # the same place in the copy, as a relative link: never walked, so never a loop
                real_parent = Path(os.path.realpath(here.parent))
                os.symlink(os.path.relpath(real, real_parent), there, target_is_directory=real.is_dir())
        elif stat.S_ISDIR(info.st_mode):
            _copy_package(here, there, package_root, shown / entry.name, skipped)
            os.chmod(there, stat.S_IMODE(info.st_mode) | stat.S_IRWXU)
        elif stat.S_ISREG(info.st_mode):
            _copy_file(here, there, info.st_mode)
        else:
            skipped.append(Skipped(name, "not-a-file"))


def _check_apart(into_real: Path, sources: Sequence[Path]) -> None:
    """DIR inside a consumer package would copy the package into itself; DIR holding one would overwrite it."""
    for source in sources:
        real = Path(os.path.realpath(source))
        if _within(into_real, real):
            raise InputError(f"{into_real} is inside the consumer package {real}; choose a directory outside it")
        if _within(real, into_real):
            raise InputError(f"the consumer package {real} is inside {into_real}; choose a directory that does not hold it")


def _no_links_below(into_dir: Path, relative: PurePosixPath) -> Path:
    """`into_dir/relative`, refused when any folder on the way is a symlink (the file itself may be one: it is replaced)."""
    current = into_dir
    for part in relative.parts[:-1]:
        current = current / part
        if _is_link(current):
            raise InputError(f"{current} is a symlink; the overlay never writes through one")
    return current / relative.parts[-1]


def write_overlay(
    plan: FixPlan, tree_root: Path, packages: Sequence[str], into_dir: Path, *, release: tuple[str, str] | None = None
) -> Overlay:
    """Copy each package of `tree_root` into `into_dir` and write the plan's patched files there.

    An existing package folder in `into_dir` is replaced only when `into_dir` is an
    earlier overlay (it holds our marker); anything else there is refused, not overwritten.
    `release` (distribution name, version) is what the packages were copied from, when that
    is known for certain (a release or an installed distribution): the marker records it, and
    a scan of the overlay reads its version there (`apiaudit.sources.version`), not from a
    literal in the code, which a release may leave stale.
    """
    tree_root, into_dir = Path(tree_root), Path(into_dir)
    into_real = Path(os.path.realpath(into_dir))
    pairs = [
        (source, into_real / source.name)
        for package in packages
        for source in (tree_root / package, tree_root / f"{package}.py")
        if os.path.lexists(source)
    ]
    _check_apart(into_real, [source for source, _ in pairs])
    for file_fix in plan.changed_files:  # the copy must be the code that was scanned
        source = tree_root / file_fix.path
        if not source.is_file() or sha256_bytes(source.read_bytes()) != file_fix.sha256:
            raise InputError(f"{source} changed since it was scanned; run `apiaudit fix` again")
        parts = PurePosixPath(file_fix.path).parts
        if not parts or parts[0] not in {target.name for _, target in pairs} or ".." in parts:
            raise InputError(f"{file_fix.path} is not a file of the packages copied into {into_real}")
    try:
        into_real.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{into_dir}: cannot create the overlay directory ({exc.strerror or exc})") from None

    marker = into_real / MARKER
    if _is_link(marker) or (marker.exists() and not marker.is_file()):
        raise InputError(f"{marker} is a symlink or not a file; the overlay never writes through one")
    is_overlay = marker.is_file()
    for _, target in pairs:  # everything refused before anything is written
        if _is_link(target):
            raise InputError(f"{target} is a symlink; the overlay never writes through one")
        if target.exists() and not is_overlay:
            raise InputError(f"{target} exists and {into_real} is not an apiaudit overlay; choose an empty directory")

    skipped: list[Skipped] = []
    written: list[Path] = []
    try:
        for source, target in pairs:
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
            if source.is_dir():
                _copy_package(source, target, Path(os.path.realpath(source)), PurePosixPath(target.name), skipped)
                os.chmod(target, stat.S_IMODE(source.stat().st_mode) | stat.S_IRWXU)
            else:
                _copy_file(source, target, source.stat().st_mode)
        for file_fix in plan.changed_files:
            target = _no_links_below(into_real, PurePosixPath(file_fix.path))
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, file_fix.patched)  # replaces a copied link with the patched file, never writes through it
            written.append(target)
        # Packages copied here earlier (another consumer) keep what they were copied from.
        releases = {k: v for k, v in overlay_releases(into_real).items() if k not in packages} if is_overlay else {}
        if release is not None:
            releases.update({package: {"name": release[0], "version": release[1]} for package in packages})
        record = {"format": 1, "source": str(Path(os.path.realpath(tree_root))), "packages": list(packages), "releases": releases}
        atomic_write(marker, json.dumps(record, indent=2))
    except OSError as exc:
        raise InputError(f"{into_dir}: cannot write the overlay ({exc.strerror or exc})") from None
    return Overlay(into_real, tuple(packages), tuple(written), tuple(skipped))
