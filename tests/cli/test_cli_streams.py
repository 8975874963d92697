"""The standard streams as other tools treat them: a reader that went away (`| head`), and colour."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from apiaudit.cli.streams import EXIT_BROKEN_PIPE, use_color

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
DRIVER = ["--consumer", str(FIXTURES / "consumers" / "driver" / "driver"),
          "--provider", str(FIXTURES / "providers" / "engine_v2" / "engine"), "--rules", str(FIXTURES / "providers")]  # fmt: skip


def _run_into_closed_pipe(args: list[str], tmp_path: Path, *, close: str = "stdout") -> tuple[int, str]:
    """Run `python -m apiaudit ARGS` with stdout (or stderr) a pipe whose reader is already gone:
    every write to it fails, as `apiaudit ... | head -0` does when head exits first."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    err = tmp_path / "stderr.txt"
    out = tmp_path / "stdout.txt"
    try:
        with err.open("wb") as err_file, out.open("wb") as out_file:
            streams = {"stdout": write_end, "stderr": err_file} if close == "stdout" else {"stdout": out_file, "stderr": write_end}
            done = subprocess.run([sys.executable, "-m", "apiaudit", *args], cwd=tmp_path, timeout=300, **streams)
    finally:
        os.close(write_end)
    return done.returncode, err.read_text() if close == "stdout" else out.read_text()


@pytest.mark.parametrize(
    "args",
    [
        ["rule"],
        ["rule", "unexpected-keyword"],
        ["--help"],
        ["scan", "--help"],
        ["--version"],
        ["config"],
        ["scan", *DRIVER, "--format", "sarif", "--no-progress"],
        ["scan", *DRIVER, "--format", "table", "--no-progress"],
    ],
    ids=["rule", "rule-id", "help", "scan-help", "version", "config", "scan-sarif", "scan-table"],
)
def test_a_closed_reader_ends_quietly_with_141(args, tmp_path):
    if args[0] == "scan" and "--help" not in args:
        args += ["--cache-dir", str(tmp_path / "cache")]
    code, stderr = _run_into_closed_pipe(args, tmp_path)
    assert code == EXIT_BROKEN_PIPE == 141, stderr
    assert stderr == "", stderr  # no "internal error", no "Exception ignored"


def test_a_closed_stderr_ends_quietly_too(tmp_path):
    # `apiaudit scan -o FILE 2>&1 | head -0`: "wrote ..." goes to stderr, which nobody reads.
    args = ["scan", *DRIVER, "-o", str(tmp_path / "report.json"), "--cache-dir", str(tmp_path / "cache")]
    code, stdout = _run_into_closed_pipe(args, tmp_path, close="stderr")
    assert code == EXIT_BROKEN_PIPE, stdout
    assert stdout == ""


@pytest.mark.parametrize(
    ("env", "tty", "expected"),
    [
        ({}, True, True),
        ({}, False, False),
        ({"NO_COLOR": "1"}, True, False),
        ({"NO_COLOR": ""}, True, True),  # an empty value is no request (no-color.org)
        ({"FORCE_COLOR": "1"}, False, True),
        ({"FORCE_COLOR": ""}, False, False),
        ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, False),
    ],
)
def test_use_color_honours_no_color_and_force_color(monkeypatch, env, tty, expected):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)

    class Stream:
        def isatty(self) -> bool:
            return tty

    assert use_color(Stream()) is expected  # type: ignore[arg-type]
