"""The table as a person reads it: in a real terminal (tmux) at 80 and at 200 columns."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from apiaudit.findings import ENGINE_RULES

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")


def _scan_in_terminal(width: int, tmp_path: Path) -> list[str]:
    """Run `apiaudit scan` in a detached tmux window `width` columns wide; return the screen's lines."""
    session = f"apiaudit-{uuid.uuid4().hex[:8]}"
    done = tmp_path / "done"
    command = " ".join(
        shlex.quote(part)
        for part in (
            sys.executable, "-m", "apiaudit", "scan",
            "--consumer", str(FIXTURES / "consumers" / "driver" / "driver"),
            "--provider", str(FIXTURES / "providers" / "engine_v2" / "engine"),
            "--rules", str(FIXTURES / "providers"), "--cache-dir", str(tmp_path / "cache"), "--no-progress",
        )
    )  # fmt: skip
    script = tmp_path / "run.sh"
    # stdout is the pane itself: the table must find the terminal's width on its own.
    script.write_text(f"cd {shlex.quote(str(tmp_path))}\nunset COLUMNS LINES\n{command}; touch {done}\nsleep 60\n")
    subprocess.run(["tmux", "-f", "/dev/null", "new-session", "-d", "-s", session, "-x", str(width), "-y", "50", f"bash {script}"], check=True)
    try:
        deadline = time.monotonic() + 60
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert done.exists(), "scan did not finish in the terminal"
        # -J joins lines the terminal wrapped: a joined line longer than the pane overflowed it.
        screen = subprocess.run(
            ["tmux", "capture-pane", "-p", "-J", "-S", "-", "-t", session], capture_output=True, text=True, check=True
        ).stdout
        return [line.rstrip() for line in screen.splitlines()]
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)


@pytest.mark.parametrize("width", [80, 200])
def test_table_fits_the_terminal_and_keeps_rule_ids_whole(width, tmp_path):
    lines = _scan_in_terminal(width, tmp_path)
    assert any("unexpected-keyword" in line for line in lines), "\n".join(lines)
    too_long = [line for line in lines if len(line) > width]
    assert not too_long, too_long
    # A rule id is one word on one line: never folded mid-word.
    for rule in ENGINE_RULES:
        for line in lines:
            for fragment in re.findall(r"[a-z]+(?:-[a-z]+)+-?$", line.strip()):
                assert not (rule.startswith(fragment) and fragment != rule and fragment.endswith("-")), line
    if width == 200:
        # Wide terminals get the four-column layout, and use the room.
        assert any(re.search(r"\bseverity\b.*\brule\b.*\bfinding\b", line) for line in lines)
        assert max(len(line) for line in lines) > 120
