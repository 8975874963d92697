"""The Action's script run locally: inputs as INPUT_* variables, GitHub's files as temp files.

Checks what a workflow would see: SARIF with fingerprints, annotations on stdout, the Markdown
job summary, `key=value` outputs, and the shields.io badge JSON. No network, no GitHub.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from apiaudit.action.run import ActionInputs, badge_for_matrix, main
from apiaudit.findings import CodeOrigin
from apiaudit.matrix.ranges import parse_provider_range
from apiaudit.matrix.sweep import MatrixResult, MatrixRow

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path, monkeypatch):
    prov = tmp_path / "prov" / "tinyprov"
    prov.mkdir(parents=True)
    (prov / "__init__.py").write_text("def make(a, *, b):\n    return a\n")
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "bad.py").write_text(textwrap.dedent("""\
        from tinyprov import make
        make(1, b=2, c=3)
        make(1, b=2, d=4)  # apiaudit: ignore[unexpected-keyword] -- d is stripped by our shim
    """))
    (tmp_path / "pyproject.toml").write_text('[tool.apiaudit]\nconsumers = ["jobs"]\nprovider = "prov/tinyprov"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("APIAUDIT_CONFIG", raising=False)
    return tmp_path


def _env(root: Path, **inputs: str) -> dict[str, str]:
    env = {f"INPUT_{k.upper().replace('-', '_')}": v for k, v in inputs.items()}
    env["GITHUB_STEP_SUMMARY"] = str(root / "summary.md")
    env["GITHUB_OUTPUT"] = str(root / "output.txt")
    env["INPUT_CACHE_DIR"] = str(root / "cache")
    return env


def test_scan_writes_sarif_annotations_summary_outputs_and_badge(project, capsys):
    env = _env(project, sarif="out/apiaudit.sarif", badge="badge.json")
    (project / "out").mkdir()
    assert main(env) == 1
    annotations = capsys.readouterr().out.splitlines()
    assert annotations[0].startswith("::error file=jobs/bad.py,line=2,col=1") and "unexpected keyword argument 'c'" in annotations[0]
    assert annotations[-1].startswith("::notice title=apiaudit::1 suppressed (1 inline")

    sarif = json.loads((project / "out" / "apiaudit.sarif").read_text())
    results = sarif["runs"][0]["results"]
    assert all("apiauditFinding/v1" in r["partialFingerprints"] for r in results)
    assert [r.get("suppressions", [{}])[0].get("kind") for r in results] == [None, "inSource"]

    summary = (project / "summary.md").read_text()
    assert summary.startswith("## apiaudit: jobs (") and "| error | `unexpected-keyword` | `jobs/bad.py:2` |" in summary

    outputs = dict(line.split("=", 1) for line in (project / "output.txt").read_text().splitlines())
    assert outputs["exit-code"] == "1" and outputs["errors"] == "1" and outputs["suppressed"] == "1"
    assert outputs["sarif"] == "out/apiaudit.sarif" and outputs["badge"] == "badge.json"

    badge = json.loads((project / "badge.json").read_text())
    assert badge == {"schemaVersion": 1, "label": "tinyprov", "message": "local: 1 error", "color": "red"}


def test_inputs_override_config_and_a_clean_run(project, capsys):
    env = _env(project, **{"fail-on": "never", "sarif": "", "annotations": "false", "summary": "false"})
    assert main(env) == 0
    assert capsys.readouterr().out == ""
    assert not (project / "summary.md").exists()
    (project / "jobs" / "bad.py").write_text("from tinyprov import make\nmake(1, b=2)\n")
    assert main(_env(project, badge="badge.json", sarif="")) == 0
    assert json.loads((project / "badge.json").read_text())["color"] == "brightgreen"


def test_bad_input_is_one_error_annotation_and_exit_2(project, capsys):
    assert main(_env(project, **{"fail-on": "sometimes"})) == 2
    out = capsys.readouterr().out
    assert out.startswith("::error title=apiaudit::input fail-on: 'sometimes'") and out.count("\n") == 1
    assert main(_env(project, baseline="missing.json")) == 2
    assert "missing.json does not exist" in capsys.readouterr().out


def test_a_range_runs_the_matrix_and_the_badge_is_the_compatible_range():
    assert ActionInputs.from_env({"INPUT_PROVIDER": "vllm>=0.12,<=0.17"}).is_matrix
    assert not ActionInputs.from_env({"INPUT_PROVIDER": "vllm==0.16.0"}).is_matrix
    assert not ActionInputs.from_env({"INPUT_PROVIDER": "vllm"}).is_matrix
    rows = tuple(MatrixRow(version=v, errors=e) for v, e in
                 (("0.11.0", 2), ("0.12.0", 0), ("0.13.0", 0), ("0.14.0", 0), ("0.15.0", 0), ("0.16.0", 0), ("0.17.0", 1)))  # fmt: skip
    result = MatrixResult(consumers=(CodeOrigin("speculators", "0.4.0", "/x", "release"),),
                          provider=parse_provider_range("vllm>=0.11,<=0.17"), rows=rows, declared=())  # fmt: skip
    badge = badge_for_matrix(result)
    assert badge["schemaVersion"] == 1 and badge["label"] == "vllm" and badge["color"] == "brightgreen"
    assert badge["message"] == ">=0.12.0,<=0.16.0"


def test_action_yml_is_a_composite_action_running_the_python_script():
    yaml = pytest.importorskip("yaml")
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    scripts = " ".join(step.get("run", "") for step in action["runs"]["steps"])
    assert "python -m apiaudit.action" in scripts
    audit = next(step for step in action["runs"]["steps"] if step.get("id") == "audit")
    for name in action["inputs"]:
        if name not in ("install", "upload-sarif"):
            assert f"INPUT_{name.upper().replace('-', '_')}" in audit["env"], name
