"""The pre-commit hook: a system hook running one `apiaudit scan`, as pre-commit would run it."""

from __future__ import annotations

import shlex
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from apiaudit.cli.group import cli

ROOT = Path(__file__).resolve().parents[1]


def test_hook_definition_and_its_entry_runs_on_a_project(tmp_path, monkeypatch):
    yaml = pytest.importorskip("yaml")
    [hook] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "apiaudit" and hook["language"] == "system" and hook["pass_filenames"] is False
    argv = shlex.split(hook["entry"])
    assert argv[:2] == ["apiaudit", "scan"]

    prov = tmp_path / "prov" / "tinyprov"
    prov.mkdir(parents=True)
    (prov / "__init__.py").write_text("def make(a, *, b):\n    return a\n")
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "ok.py").write_text("from tinyprov import make\nmake(1, b=2)\n")
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""\
        [tool.apiaudit]
        consumers = ["jobs"]
        provider = "prov/tinyprov"
    """))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("APIAUDIT_CONFIG", raising=False)
    monkeypatch.setenv("APIAUDIT_CACHE_DIR", str(tmp_path / "cache"))
    result = CliRunner().invoke(cli, argv[1:])
    assert result.exit_code == 0 and "No findings." in result.output
    (tmp_path / "jobs" / "ok.py").write_text("from tinyprov import make\nmake(1, c=2)\n")
    result = CliRunner().invoke(cli, argv[1:])
    assert result.exit_code == 1 and "unexpected-keyword" in result.output
