"""Every run-time requirement of the carried wheels is carried too or already in the machine's image.

    python bench/gpu/stack_check.py DOWNLOAD_DIR LOCK

Reads each wheel's METADATA as a zip member (nothing is installed or imported), evaluates the
markers for CPython 3.12 on linux x86-64 with no extras, and prints one line per requirement
that neither the carried wheels nor bench/gpu/image-packages.txt cover, unless
bench/gpu/not-carried.txt names it (with why). Exit 1 when any is left.
"""

from __future__ import annotations

import re
import sys
import zipfile
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

HERE = Path(__file__).resolve().parent
TARGET_ENV = default_environment() | {
    "python_version": "3.12", "python_full_version": "3.12.3", "implementation_name": "cpython",
    "platform_python_implementation": "CPython", "sys_platform": "linux", "platform_system": "Linux",
    "platform_machine": "x86_64", "os_name": "posix", "extra": "",
}


def listed(path: Path) -> dict[str, str]:
    """Names in a list file (first word of each line; the rest of the line says why)."""
    names = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            word, _, why = line.partition(" ")
            names[canonicalize_name(word)] = why.strip()
    return names


def requirements_of(wheel: Path) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(n for n in archive.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n))
        text = archive.read(metadata).decode("utf-8")
    return [Requirement(line.split(":", 1)[1].strip()) for line in text.splitlines() if line.startswith("Requires-Dist:")]


def main(download: Path, lock: Path) -> int:
    wheels = [download / line.split(maxsplit=1)[1] for line in lock.read_text().splitlines() if line.strip()]
    carried = {canonicalize_name(parse_wheel_filename(w.name)[0]): str(parse_wheel_filename(w.name)[1]) for w in wheels}
    image = listed(HERE / "image-packages.txt")
    skipped = listed(HERE / "not-carried.txt")
    left = 0
    for wheel in wheels:
        for req in requirements_of(wheel):
            if req.marker is not None and not req.marker.evaluate(TARGET_ENV):
                continue
            name = canonicalize_name(req.name)
            if name in carried:
                if carried[name] not in req.specifier and not req.specifier.contains(carried[name], prereleases=True):
                    print(f"{wheel.name}: needs {req}, carries {name} {carried[name]} (--no-deps installs it anyway)")
                continue
            if name in image or name in skipped:
                continue
            print(f"{wheel.name}: needs {req}: neither carried nor in the image")
            left += 1
    print(f"{len(wheels)} wheels; {left} requirement(s) uncovered")
    return 1 if left else 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]), Path(sys.argv[2])))
