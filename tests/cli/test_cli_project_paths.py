"""Paths as a CI reads them: from the project root, in a real `src/` layout (issue 36, item 1).

The project holds `[tool.apiaudit] consumers = ["src/mypkg"]`; the import root is `src/`, the
repository's root is the project's. GitHub attaches an annotation only to a path the checkout
has, code scanning maps SARIF URIs the same way, and `git apply` takes a diff only with them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from apiaudit.cli.group import cli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PROVIDER = FIXTURES / "providers" / "engine_v2" / "engine"
RULES = FIXTURES / "providers"
ENGINE_PY = (
    "from engine.config import SchedConfig\n"
    "\n"
    "\n"
    "def configs():\n"
    "    return SchedConfig(max_model_len=1, is_encoder_decoder=False, chunked_prefill=True)\n"
)
FINDING_LINE = 5


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    package = root / "src" / "mypkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "engine.py").write_text(ENGINE_PY)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "mypkg"\nversion = "1.0"\n\n'
        f'[tool.apiaudit]\nconsumers = ["src/mypkg"]\nprovider = "{PROVIDER.as_posix()}"\nrules = ["{RULES.as_posix()}"]\n'
        f'cache-dir = "{(tmp_path / "cache").as_posix()}"\n'
    )
    monkeypatch.chdir(root)
    return root


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_github_annotation_names_the_file_from_the_project_root(project):
    code, out, err = invoke("scan", "--format", "github", "--no-progress")
    assert code == 1, err
    [annotation] = [line for line in out.splitlines() if line.startswith("::error")]
    assert f"file=src/mypkg/engine.py,line={FINDING_LINE}," in annotation
    assert (project / "src/mypkg/engine.py").read_text().splitlines()[FINDING_LINE - 1].count("chunked_prefill=True")


def test_paths_are_the_same_from_a_subfolder_of_the_project(project, monkeypatch):
    # The config file's folder is the root, wherever the command runs inside the project.
    monkeypatch.chdir(project / "src")
    code, out, _ = invoke("scan", "--format", "github", "--no-progress")
    assert "file=src/mypkg/engine.py," in out


def test_sarif_uri_is_relative_to_the_project_root(project):
    code, out, _ = invoke("scan", "--format", "sarif", "--no-progress")
    run = json.loads(out)["runs"][0]
    [result] = [r for r in run["results"] if r["ruleId"] == "unexpected-keyword"]
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "src/mypkg/engine.py"
    assert location["region"]["startLine"] == FINDING_LINE
    base = run["originalUriBaseIds"][location["artifactLocation"]["uriBaseId"]]["uri"]
    assert base == project.resolve().as_uri() + "/"


def test_every_text_format_names_the_project_path(project):
    for fmt in ("table", "json", "gitlab", "junit", "markdown"):
        code, out, _ = invoke("scan", "--format", fmt, "--no-progress")
        assert "src/mypkg/engine.py" in out, fmt
        assert "\nmypkg/engine.py" not in out and '"mypkg/engine.py"' not in out, fmt


def test_json_reads_back_with_import_root_paths(project):
    from apiaudit.report import report_from_dict

    code, out, _ = invoke("scan", "--format", "json", "--no-progress")
    document = json.loads(out)
    assert document["consumers"][0]["display_root"] == "src/"
    report = report_from_dict(document)
    assert {f.path for f in report.findings} == {"mypkg/engine.py"}


def test_config_ignore_may_name_the_path_a_report_prints(project):
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + '\n[[tool.apiaudit.ignores]]\nrule = "unexpected-keyword"\n'
                         'reason = "known"\npath = "src/mypkg/*"\n')  # fmt: skip
    code, out, err = invoke("scan", "--format", "github", "--no-progress")
    assert code == 0, out + err


def test_baseline_keys_stay_import_root_relative(project, tmp_path):
    # A baseline written before this change (paths from the import root) still matches.
    baseline = tmp_path / "baseline.json"
    code, _, err = invoke("scan", "--no-progress", "--write-baseline", str(baseline))
    assert code == 0, err
    assert {e["path"] for e in json.loads(baseline.read_text())["entries"]} == {"mypkg/engine.py"}
    code, out, err = invoke("scan", "--format", "github", "--no-progress", "--baseline", str(baseline))
    assert code == 0, out + err


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_fix_diff_applies_with_git_at_the_project_root(project):
    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=project, capture_output=True, text=True)

    git("init", "-q")
    code, diff, err = invoke("fix", "--no-progress")
    assert "--- a/src/mypkg/engine.py" in diff and "+++ b/src/mypkg/engine.py" in diff
    (project / "d.diff").write_text(diff)
    checked = git("apply", "--check", "d.diff")
    assert checked.returncode == 0, checked.stderr
    assert git("apply", "d.diff").returncode == 0
    assert "chunked_prefill" not in (project / "src/mypkg/engine.py").read_text()


def test_what_fix_leaves_names_the_file_from_the_project_root_only(project):
    """A file the rewriter cannot read: its line says where from the project root, and the
    reason names no other path (the import root's `mypkg/bad.py` is no file from here)."""
    (project / "src/mypkg/bad.py").write_text("def broken(:\n    pass\n")
    code, diff, err = invoke("fix", "--no-progress")
    [line] = [line for line in err.splitlines() if ": not fixed: " in line]
    assert line.startswith("src/mypkg/bad.py:1:"), line
    assert line.count("bad.py") == 1 and "the file does not parse" in line, line


def test_json_and_sarif_carry_the_exact_fix_on_the_project_path(project):
    # Issue 36, item 2: the fix as a structured edit, where `apiaudit fix` has one.
    code, out, _ = invoke("scan", "--format", "json", "--no-progress")
    [finding] = [f for f in json.loads(out)["findings"] if f["rule"] == "unexpected-keyword"]
    assert finding["fix"]["file"] == "src/mypkg/engine.py"
    [edit] = finding["fix"]["edits"]
    line = ENGINE_PY.splitlines()[FINDING_LINE - 1]
    span = edit["range"]
    assert span["start_line"] == span["end_line"] == FINDING_LINE
    assert line[span["start_column"]:span["end_column"]] == ", chunked_prefill=True" and edit["replacement"] == ""
    code, out, _ = invoke("scan", "--format", "sarif", "--no-progress")
    [result] = [r for r in json.loads(out)["runs"][0]["results"] if r["ruleId"] == "unexpected-keyword"]
    [change] = result["fixes"][0]["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "src/mypkg/engine.py"
    assert change["replacements"][0]["deletedRegion"]["startColumn"] == span["start_column"] + 1


def test_the_preflight_gate_names_the_file_from_the_project_root(project):
    """The gate's own lines (what a job script's pre-run hook prints) name the file as the
    repository does, like every report format."""
    from apiaudit.gate.layers import PreflightFailed
    from apiaudit import preflight

    with pytest.raises(PreflightFailed) as failed:
        preflight(consumers=["src/mypkg"])
    assert f"  src/mypkg/engine.py:{FINDING_LINE}:" in str(failed.value)
    code, out, err = invoke("preflight", "--no-progress")
    assert code == 1
    assert f"src/mypkg/engine.py:{FINDING_LINE}:" in out + err and "\nmypkg/engine.py" not in "\n" + out + err
