"""Helpers for the fix tests: findings built by hand at places in the fixture files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from apiaudit.findings import Finding, Severity

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "fixes"
EXPECTED = FIXTURES / "expected"


def locate(source: str, needle: str, occurrence: int = 1) -> tuple[int, int]:
    """(1-based line, 0-based column) where the `occurrence`-th `needle` starts in `source`."""
    offset = -1
    for _ in range(occurrence):
        offset = source.index(needle, offset + 1)
    line = source.count("\n", 0, offset) + 1
    column = offset - (source.rfind("\n", 0, offset) + 1)
    return line, column


def make_finding(path: str, needle: str, rule: str, occurrence: int = 1, **overrides: Any) -> Finding:
    """A Finding at `needle` in fixture file `path` (relative to fixtures/fixes)."""
    line, column = locate((FIXTURES / path).read_text(), needle, occurrence)
    base: dict[str, Any] = dict(
        rule=rule,
        severity=Severity.ERROR,
        consumer="fixture",
        path=path,
        line=line,
        column=column,
        callee=None,
        param=None,
        message=f"{rule} (built by hand)",
    )
    base.update(overrides)
    return Finding(**base)


def engine_findings(path: str = "consumerpkg/engine.py") -> list[Finding]:
    """The two findings a scan of the fixture consumer would report."""
    source = (FIXTURES / "consumer" / path).read_text()
    legacy_line, legacy_column = locate(source, "build(")
    second_line, second_column = locate(source, "build(", 2)
    common = dict(severity=Severity.ERROR, consumer="consumerpkg", path=path, callee="provider.api.build", message="m")
    return [
        Finding(rule="unexpected-keyword", line=legacy_line, column=legacy_column, param="legacy", **common),
        Finding(
            rule="missing-required",
            line=second_line,
            column=second_column,
            param="block_size",
            **common,
        ),
    ]


# --- small projects for the `apiaudit fix` command: a one-function provider and its consumers ---

PROVIDER_SOURCE = "def make(a, *, b):\n    return a\n"
# `c=` is gone upstream (removed), `b` is required and `b` is in scope: both fixable.
JOB_SOURCE = "from tinyprov import make\n\nb = 3\nmake(\n    1,\n    c=2,  # old keyword\n)\n"


def invoke(*args: Any) -> tuple[int, str, str]:
    """Run the real CLI in-process: (exit code, stdout, stderr)."""
    from click.testing import CliRunner

    from apiaudit.cli.group import cli

    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("apiaudit: error")]


def make_provider(base: Path) -> Path:
    provider = base / "prov" / "tinyprov"
    provider.mkdir(parents=True)
    (provider / "__init__.py").write_text(PROVIDER_SOURCE)
    return provider


def make_package(parent: Path, name: str, files: dict[str, str] | None = None) -> Path:
    """A consumer package `parent/name` (default: one fixable job.py)."""
    package = parent / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for relative, text in ({"job.py": JOB_SOURCE} if files is None else files).items():
        (package / relative).parent.mkdir(parents=True, exist_ok=True)
        (package / relative).write_text(text)
    return package


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Every entry under `root`: file bytes, or `-> target` for a symlink (never followed)."""
    entries: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        if path.is_symlink():
            entries[key] = f"-> {os.readlink(path)}"
        elif path.is_file():
            entries[key] = path.read_bytes()
    return entries


def build_wheel(folder: Path, name: str, version: str, members: dict[str, str]) -> Path:
    """A minimal pure-Python wheel, for the real pip to fetch from a local folder."""
    import zipfile

    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    dist_info = f"{name}-{version}.dist-info"
    base = {
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{dist_info}/top_level.txt": f"{name}\n",
        f"{dist_info}/RECORD": "",
    }
    with zipfile.ZipFile(wheel, "w") as archive:
        for member, content in {**base, **members}.items():
            archive.writestr(member, content)
    return wheel
