"""The runner's own entry points without the runner extra: one line naming the command that installs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Runs a module as `python -m` does, in a Python where torch cannot be imported (None in
# sys.modules is what the import system reads as "not there").
WITHOUT_TORCH = "import runpy, sys; sys.modules['torch'] = None; module = sys.argv.pop(1); runpy.run_module(module, run_name='__main__', alter_sys=True)"


@pytest.mark.parametrize(
    ("module", "args"),
    [
        ("apiaudit.runner.tiny_model", ["out", "--conversations", "fixtures/runner/conversations.jsonl"]),
        ("apiaudit.runner.train_worker", ["params.json"]),
    ],
)
def test_an_entry_point_without_torch_is_one_line_with_the_install_command(module: str, args: list[str], tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_TORCH, module, *args],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("apiaudit: error: the runner needs torch")
    assert "bash scripts/install-runner.sh" in lines[0] and "pip install '.[runner]'" in lines[0]
    assert "apiaudit[runner]" not in lines[0]  # not on any index
    assert (ROOT / "scripts" / "install-runner.sh").is_file()
