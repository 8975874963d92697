"""`apiaudit atlas`: bad input is one line and exit 2, before any release is listed or fetched."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from apiaudit.cli.group import cli


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--provider", "vllm>=0.12", "-o", "atlas.sarif"], "the atlas is written as .html or .json"),
        (["--provider", "vllm>=0.20,<0.11"], "is empty"),
        (["--provider", "vllm>=0.12", "--downstream", "missing.toml"], "missing.toml: no such downstream list"),
        (["--provider", "lonelylib>=1"], "no downstream to check for lonelylib"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    # Nothing listens on port 9 of localhost: a listing that got this far would fail, not hang.
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    outcome = CliRunner().invoke(cli, ["atlas", *args, "--no-progress"], env={"APIAUDIT_CACHE_DIR": str(tmp_path), "APIAUDIT_CONFIG": "none"})
    lines = outcome.stderr.strip().splitlines()
    assert outcome.exit_code == 2 and len(lines) == 1 and message in lines[0], outcome.stderr
