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


DRIVER_ENGINE = (
    "--consumer", str(FIXTURES / "consumers" / "driver" / "driver"),
    "--provider", str(FIXTURES / "providers" / "engine_v2" / "engine"), "--rules", str(FIXTURES / "providers"),
)  # fmt: skip


def _scan_in_terminal(width: int, tmp_path: Path, *, env: str = "", escapes: bool = False, pair: tuple[str, ...] = DRIVER_ENGINE,
                      height: int = 50, pipe: str = "") -> list[str]:  # fmt: skip
    """Run `apiaudit scan` in a detached tmux window `width` columns wide; return the screen's lines.

    `env`: shell assignments put before the command (`NO_COLOR=1`); `escapes`: keep the colour
    sequences of the screen (tmux's `capture-pane -e`); `pair`: the consumer and provider options;
    `pipe`: a command the output is piped into (`| cat`, as into a pager)."""
    session = f"apiaudit-{uuid.uuid4().hex[:8]}"
    done = tmp_path / "done"
    command = " ".join(
        shlex.quote(part)
        for part in (sys.executable, "-m", "apiaudit", "scan", *pair, "--cache-dir", str(tmp_path / "cache"), "--no-progress")
    )
    script = tmp_path / "run.sh"
    # stdout is the pane itself: the table must find the terminal's width on its own.
    script.write_text(f"cd {shlex.quote(str(tmp_path))}\nunset COLUMNS LINES NO_COLOR FORCE_COLOR\n{env} {command} {pipe}; touch {done}\nsleep 60\n")
    subprocess.run(["tmux", "-f", "/dev/null", "new-session", "-d", "-s", session, "-x", str(width), "-y", str(height), f"bash {script}"], check=True)
    try:
        deadline = time.monotonic() + 60
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert done.exists(), "scan did not finish in the terminal"
        # -J joins lines the terminal wrapped: a joined line longer than the pane overflowed it.
        screen = subprocess.run(
            ["tmux", "capture-pane", "-p", "-J", *(["-e"] if escapes else []), "-S", "-", "-t", session],
            capture_output=True, text=True, check=True,
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


_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


@pytest.mark.parametrize(("env", "coloured"), [("", True), ("NO_COLOR=1", False), ("NO_COLOR=", True)])
def test_no_color_turns_the_colour_off_on_a_terminal(env, coloured, tmp_path):
    lines = _scan_in_terminal(120, tmp_path, env=env, escapes=True)
    sequences = [m for line in lines for m in _COLOUR.findall(line) if m not in ("\x1b[0m", "\x1b[m")]
    assert any("unexpected-keyword" in _COLOUR.sub("", line) for line in lines), "\n".join(lines)
    assert bool(sequences) is coloured, sequences[:5]


def test_force_color_colours_the_table_in_a_pipe(tmp_path):
    import os

    command = [sys.executable, "-m", "apiaudit", "scan",
               "--consumer", str(FIXTURES / "consumers" / "driver" / "driver"),
               "--provider", str(FIXTURES / "providers" / "engine_v2" / "engine"),
               "--rules", str(FIXTURES / "providers"), "--cache-dir", str(tmp_path / "cache"), "--format", "table"]  # fmt: skip
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    plain = subprocess.run(command, capture_output=True, text=True, env=base, cwd=tmp_path)
    forced = subprocess.run(command, capture_output=True, text=True, env={**base, "FORCE_COLOR": "1"}, cwd=tmp_path)
    both = subprocess.run(command, capture_output=True, text=True, env={**base, "FORCE_COLOR": "1", "NO_COLOR": "1"}, cwd=tmp_path)
    assert "unexpected-keyword" in plain.stdout and not _COLOUR.search(plain.stdout)
    assert _COLOUR.search(forced.stdout), forced.stdout[:300]
    assert not _COLOUR.search(both.stdout)  # NO_COLOR wins
    # The same text, less the colour (the last line holds the time taken).
    assert [line.rstrip() for line in _COLOUR.sub("", forced.stdout).splitlines()[:-1]] == plain.stdout.splitlines()[:-1]


def test_long_dotted_names_break_after_a_dot_at_80_columns(tmp_path):
    """A provider line longer than its cell breaks after a dot, never mid-identifier (`start_laye` / `r`)."""
    module = "deep_provider_package.sub_module_with_a_long_name.another_nested_module"
    folder = tmp_path / "prov" / Path(*module.split(".")[:-1])
    folder.mkdir(parents=True)
    for level in range(len(module.split(".")) - 1):
        (tmp_path / "prov" / Path(*module.split(".")[: level + 1]) / "__init__.py").write_text("")
    (folder / "another_nested_module.py").write_text("class AVeryLongClassNameForTheTest:\n    present = 1\n")
    job = tmp_path / "job.py"
    job.write_text(f"from {module} import AVeryLongClassNameForTheTest, a_missing_function_name\n"
                   "AVeryLongClassNameForTheTest.a_missing_attribute_name\n")  # fmt: skip
    pair = ("--consumer", str(job), "--provider", str(tmp_path / "prov" / "deep_provider_package"))
    lines = [line.strip() for line in _scan_in_terminal(80, tmp_path, pair=pair)]
    text = "\n".join(lines)
    wanted = [f"{module}.a_missing_function_name", f"{module}.AVeryLongClassNameForTheTest.a_missing_attribute_name"]
    found = 0
    for name in wanted:
        for first, second in zip(lines, lines[1:]):
            head = first.rsplit(" ", 1)[-1]
            if len(head) > 1 and name.startswith(head) and head != name and second.startswith(name[len(head):]):
                found += 1
                assert head.endswith("."), (first, second)  # broken after a dot, the identifier whole
    assert found, text  # the names were long enough to break
    assert not [line for line in lines if len(line) > 80]


def test_piped_into_a_pager_the_output_is_still_the_table(tmp_path):
    """Issue 36, item 3: `apiaudit scan ... | less` (here `| cat`) printed JSON because stdout was
    not a terminal; the default is the table everywhere, as ruff and mypy do."""
    lines = _scan_in_terminal(120, tmp_path, pipe="| cat")
    text = "\n".join(lines)
    assert "unexpected-keyword" in text and not any(line.lstrip().startswith(("{", '"schema_version"')) for line in lines), text
    assert any(re.search(r"\d+ errors?, \d+ warnings?", line) for line in lines), text
