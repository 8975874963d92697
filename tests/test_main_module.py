"""`python -m apiaudit` inside a hostile checkout: nothing from the working directory is imported.

The checkout holds a `click/` package, `rich/`, `griffe/`, `packaging/`, and modules shadowing the
standard library modules apiaudit imports (`__future__`, `enum`, `dataclasses`, `json`, ...);
each writes a marker file when imported. (Modules Python itself imports before any of
apiaudit's code runs, e.g. `functools` for `runpy`, are Python's own business: `-P` covers them.)
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHADOWED_PACKAGES = ("click", "rich", "griffe", "packaging", "msgspec", "tomli")
SHADOWED_MODULES = (
    "__future__", "enum", "dataclasses", "json", "typing", "pathlib", "hashlib", "tempfile",
    "textwrap", "shutil", "zipfile", "tomllib", "subprocess", "signal", "ast", "logging",
)  # fmt: skip


def hostile_checkout(folder: Path, marker: Path) -> None:
    payload = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    for name in SHADOWED_PACKAGES:
        (folder / name).mkdir(parents=True)
        (folder / name / "__init__.py").write_text(payload)
    for name in SHADOWED_MODULES:
        (folder / f"{name}.py").write_text(payload)


def run_module(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(REPO)  # this checkout's apiaudit, not the hostile folder
    return subprocess.run(
        [sys.executable, "-m", "apiaudit", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_python_dash_m_apiaudit_imports_nothing_from_the_working_directory(tmp_path):
    checkout, marker = tmp_path / "checkout", tmp_path / "ran.txt"
    hostile_checkout(checkout, marker)
    prov = checkout / "src" / "tinyprov"
    prov.mkdir(parents=True)
    (prov / "__init__.py").write_text("def make(a, *, b): ...\n")
    (checkout / "job.py").write_text(textwrap.dedent("""
        from tinyprov import make
        make(1, c=2)
    """))

    version = run_module(checkout, "--version")
    assert version.returncode == 0, version.stderr
    assert "apiaudit" in version.stdout
    scanned = run_module(
        checkout, "scan", "--consumer", "job.py", "--provider", "src/tinyprov", "--format", "json",
        "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    assert scanned.returncode == 1, scanned.stderr  # findings, from the real engine
    assert "unexpected-keyword" in scanned.stdout
    assert not marker.exists(), f"imported from the working directory: {marker.read_text()}"
