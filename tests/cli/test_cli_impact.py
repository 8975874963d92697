"""`apiaudit impact` end to end on a local git repository of a provider with two commits, as the
workflow in docs/impact.md runs it on a pull request's base and head."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from apiaudit.cli.group import cli

from tests.impact.conftest import NEW, OLD, write_list


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "HOME": str(repo), "PATH": "/usr/bin:/bin"}  # fmt: skip
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def _run(*args: str, cache: Path):
    outcome = CliRunner().invoke(cli, ["impact", *args, "--no-progress"], env={"APIAUDIT_CACHE_DIR": str(cache), "APIAUDIT_CONFIG": "none"})
    return outcome.exit_code, outcome.stdout, outcome.stderr


@pytest.fixture(scope="module")
def base_and_head(tmp_path_factory):
    """Commit 1: the old API; commit 2: the breaking change; each checked out into its own folder."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path_factory.mktemp("provider-repo")
    repo = root / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    shutil.copytree(OLD / "impactlib", repo / "impactlib")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "old API")
    shutil.rmtree(repo / "impactlib")
    shutil.copytree(NEW / "impactlib", repo / "impactlib")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "a breaking change")
    _git(repo, "worktree", "add", "-q", str(root / "base"), "HEAD~1")
    _git(repo, "worktree", "add", "-q", str(root / "head"), "HEAD")
    return root


def test_a_pull_request_that_breaks_downstreams_exits_1_with_sarif_on_its_own_lines(base_and_head, tmp_path):
    base, head = base_and_head / "base", base_and_head / "head"
    listed = write_list(tmp_path)
    code, out, err = _run(str(base), str(head), "--downstream", str(listed), "--format", "sarif", "-o", str(tmp_path / "i.sarif"),
                          cache=tmp_path / "cache")  # fmt: skip
    assert code == 1, err
    results = json.loads((tmp_path / "i.sarif").read_text())["runs"][0]["results"]
    changed = _git(base_and_head / "repo", "diff", "--name-only", "HEAD~1", "HEAD").split()
    for result in results:
        place = result["locations"][0]["physicalLocation"]
        uri, line = place["artifactLocation"]["uri"], place["region"]["startLine"]
        assert uri in changed  # a file the pull request touched, named as the repository names it
        assert (head / uri).read_text().splitlines()[line - 1].strip().startswith(("def ", "@abstractmethod"))
    code, out, _ = _run(str(base), str(head), "--downstream", str(listed), "--format", "markdown", cache=tmp_path / "cache")
    assert code == 1 and "`Request` lost `eos_token_id` (impactlib/request.py:4) breaks impact_drafter" in out


def test_a_change_no_downstream_notices_exits_0(base_and_head, tmp_path):
    listed = write_list(tmp_path, names=("impact_clean",))
    code, out, _ = _run(str(base_and_head / "base"), str(base_and_head / "head"), "--downstream", str(listed), cache=tmp_path / "cache")
    assert code == 0 and "impact_clean" in out and "clean" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("OLDSIDE", "no-such-dir/"), "no such file or directory: no-such-dir/"),
        (("OLDSIDE", "OLDSIDE", "--downstream", "missing.toml"), "missing.toml: no such downstream list"),
        (("OLDSIDE", "OLDSIDE", "--format", "junit"), "Invalid value for '--format'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(*(str(OLD) if a == "OLDSIDE" else a for a in args), cache=tmp_path / "cache")
    assert code == 2 and message in err and "Traceback" not in err
