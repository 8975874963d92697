"""Write a patched copy of the consumer into a directory, leaving the installed package untouched.

site-packages is often read-only or shared; an overlay directory put first on
PYTHONPATH shadows the installed package with the patched one.
"""

from __future__ import annotations

import json
import shlex
import shutil
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from apiaudit.errors import InputError
from apiaudit.fixes.journal import atomic_write
from apiaudit.fixes.plan import FixPlan, sha256_bytes

MARKER = ".apiaudit-overlay.json"


@dataclass(frozen=True)
class Overlay:
    directory: Path
    packages: tuple[str, ...]
    patched_files: tuple[Path, ...]

    @property
    def pythonpath_line(self) -> str:
        """The shell line that puts the overlay first on the import path."""
        return f"export PYTHONPATH={shlex.quote(str(self.directory))}${{PYTHONPATH:+:$PYTHONPATH}}"


def _ignore(directory: str, names: list[str]) -> list[str]:
    return [n for n in names if n == "__pycache__" or n.endswith((".pyc", ".pyo"))]


def _make_writable(root: Path) -> None:
    """A copy of a read-only site-packages keeps its modes; the overlay is ours to rewrite."""
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


def write_overlay(plan: FixPlan, tree_root: Path, packages: Sequence[str], into_dir: Path) -> Overlay:
    """Copy each package of `tree_root` into `into_dir` and write the plan's patched files there.

    An existing package folder in `into_dir` is replaced only when `into_dir` is an
    earlier overlay (it holds our marker); anything else there is refused, not overwritten.
    """
    tree_root, into_dir = Path(tree_root), Path(into_dir)
    if into_dir.resolve() == tree_root.resolve():
        raise InputError(f"{into_dir}: the overlay must not be the consumer's own directory")
    marker = into_dir / MARKER
    try:
        into_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{into_dir}: cannot create the overlay directory ({exc.strerror or exc})") from None
    is_overlay = marker.is_file()
    for file_fix in plan.changed_files:  # the copy must be the code that was scanned
        source = tree_root / file_fix.path
        if not source.is_file() or sha256_bytes(source.read_bytes()) != file_fix.sha256:
            raise InputError(f"{source} changed since it was scanned; run `apiaudit fix` again")
    try:
        for package in packages:
            for source, target in ((tree_root / package, into_dir / package), (tree_root / f"{package}.py", into_dir / f"{package}.py")):
                if not source.exists():
                    continue
                if target.exists():
                    if not is_overlay:
                        raise InputError(f"{target} exists and {into_dir} is not an apiaudit overlay; choose an empty directory")
                    shutil.rmtree(target) if target.is_dir() else target.unlink()
                if source.is_dir():
                    shutil.copytree(source, target, ignore=_ignore)
                    _make_writable(target)
                else:
                    shutil.copyfile(source, target)
        written = []
        for file_fix in plan.changed_files:
            target = into_dir / file_fix.path
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.exists():
                atomic_write(target, file_fix.patched)
            else:
                target.write_bytes(file_fix.patched)
            written.append(target)
        marker.write_text(json.dumps({"format": 1, "source": str(tree_root.resolve()), "packages": list(packages)}, indent=2))
    except OSError as exc:
        raise InputError(f"{into_dir}: cannot write the overlay ({exc.strerror or exc})") from None
    return Overlay(into_dir.resolve(), tuple(packages), tuple(written))
